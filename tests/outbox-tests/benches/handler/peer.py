#!/usr/bin/env python3
"""The publisher's per-record work in plain Python, as a peer for the `handler` bench.

Same records (the event files the Rust bench writes to HANDLER_BENCH_EVENTS), same
work, no I/O and no boto3: parse the event's JSON bytes, keep new PENDING outbox
items, deserialize their DynamoDB JSON, decode the message, route by topic, build the
SQS SendMessageBatch entries (message attributes, FIFO group and deduplication ids),
and chunk them into calls of at most 10 entries within the batch byte limit, never
two messages of one group in one FIFO call. Prints records per second on one core.

    python3 tests/outbox-tests/benches/handler/peer.py DIR
"""

import json
import os
import re
import sys
import time
import uuid
from decimal import Decimal

ROUTES = {
    "orders": "https://sqs.eu-west-1.amazonaws.com/1/orders",
    "ledger": "https://sqs.eu-west-1.amazonaws.com/1/ledger.fifo",
}
MAX_ENTRIES = 10
MAX_BATCH_BYTES = 1024 * 1024
MAX_MESSAGE_BYTES = 1024 * 1024
FIFO_OK = re.compile(r"^[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$")
NAMESPACE = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")


def deserialize(value):
    """One DynamoDB JSON attribute value as a Python value (as boto3's TypeDeserializer)."""
    (kind, v), = value.items()
    if kind == "S":
        return v
    if kind == "N":
        return Decimal(v)
    if kind == "BOOL":
        return v
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: deserialize(x) for k, x in v.items()}
    if kind == "L":
        return [deserialize(x) for x in v]
    if kind in ("SS", "NS", "BS"):
        return set(v)
    return v


def fifo_id(value):
    if FIFO_OK.match(value):
        return value
    return "h-%016x-%d" % (hash(value) & 0xFFFFFFFFFFFFFFFF, len(value))


def decode(record):
    """The message of a stream record, or None when it is not for the publisher."""
    if record.get("eventName") != "INSERT":
        return None
    image = record["dynamodb"].get("NewImage") or {}
    if image.get("ItemType", {}).get("S") != "PENDING_MESSAGE":
        return None
    if image.get("Status", {}).get("S") != "PENDING":
        return None
    item = {k: deserialize(v) for k, v in image.items()}
    pk, sk = item["PK"], item["SK"]
    message_id = item.get("MessageId") or str(uuid.uuid5(NAMESPACE, pk + "\n" + sk))
    return {
        "pk": pk,
        "sk": sk,
        "id": message_id,
        "topic": item["Topic"],
        "payload": item["Payload"],
        "created_at": int(item.get("CreatedAt", 0)),
        "sequence": record["dynamodb"].get("SequenceNumber"),
    }


def entry(msg, fifo):
    attributes = {
        "outbox-message-id": {"DataType": "String", "StringValue": msg["id"]},
        "outbox-topic": {"DataType": "String", "StringValue": msg["topic"]},
        "outbox-aggregate": {"DataType": "String", "StringValue": msg["pk"]},
    }
    if msg["created_at"] > 0:
        attributes["outbox-created-at"] = {"DataType": "Number", "StringValue": str(msg["created_at"])}
    e = {"MessageBody": msg["payload"], "MessageAttributes": attributes}
    if fifo:
        e["MessageGroupId"] = fifo_id(msg["pk"])
        e["MessageDeduplicationId"] = fifo_id(msg["id"])
    size = len(msg["payload"].encode()) + sum(
        len(n) + len(a["DataType"]) + len(a["StringValue"]) for n, a in attributes.items()
    )
    return e, size


def handle(raw):
    event = json.loads(raw)
    calls = {}  # destination -> list of calls: [entries, bytes, groups]
    for record in event["Records"]:
        msg = decode(record)
        if msg is None:
            continue
        dest = ROUTES.get(msg["topic"])
        if dest is None:
            continue
        fifo = dest.endswith(".fifo")
        e, size = entry(msg, fifo)
        if size > MAX_MESSAGE_BYTES:
            continue
        chain = calls.setdefault(dest, [])
        for call in chain:
            if len(call[0]) < MAX_ENTRIES and call[1] + size <= MAX_BATCH_BYTES and not (fifo and msg["pk"] in call[2]):
                break
        else:
            call = [[], 0, set()]
            chain.append(call)
        e["Id"] = str(len(call[0]))
        call[0].append(e)
        call[1] += size
        call[2].add(msg["pk"])
    return sum(len(c[0]) for chain in calls.values() for c in chain), len(event["Records"])


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("HANDLER_BENCH_EVENTS", ".")
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            raw = f.read()
        records = entries = 0
        start = time.perf_counter()
        while time.perf_counter() - start < 3.0:
            built, n = handle(raw)
            entries += built
            records += n
        rate = records / (time.perf_counter() - start)
        print(f"python peer: {name:<26} {len(raw):>7} B of JSON: {rate:>9.0f} records/s from JSON bytes, on one core ({entries} entries built)")


if __name__ == "__main__":
    main()
