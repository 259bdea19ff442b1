"""Start the pinned MiniStack with IAM checked as AWS checks PartiQL, batch and stream calls.

MiniStack (AUTH=true) evaluates every call against the caller's policies, but it
names some calls by their API operation where AWS has no such IAM action:

1. **SQS's and SNS's batch calls.** AWS authorises `SendMessageBatch`,
   `DeleteMessageBatch` and `ChangeMessageVisibilityBatch` as `sqs:SendMessage`,
   `sqs:DeleteMessage` and `sqs:ChangeMessageVisibility` ("You cannot set permissions
   explicitly for SendMessageBatch...", the SQS developer guide, "Amazon SQS batch
   actions"), and SNS's `PublishBatch` as `sns:Publish`. MiniStack asks for
   `sqs:SendMessageBatch`, which no least-privilege policy grants.
2. **PartiQL.** MiniStack names a PartiQL call `ExecuteStatement` on `*`. It authorises each statement by its verb, on the table or index the
statement names (the DynamoDB developer guide, "IAM policies with PartiQL for
DynamoDB"):

    SELECT -> dynamodb:PartiQLSelect    INSERT -> dynamodb:PartiQLInsert
    UPDATE -> dynamodb:PartiQLUpdate    DELETE -> dynamodb:PartiQLDelete

on `arn:aws:dynamodb:<region>:<account>:table/<table>[/index/<index>]`. A
`BatchExecuteStatement` or `ExecuteTransaction` is one such check per statement. A
`SELECT` without a `WHERE` clause also carries `dynamodb:FullTableScan = true` (the
key a policy uses to refuse scans; with a `WHERE` clause it is `false` here, where
AWS decides by whether the clause restricts the partition key: an approximation that
can only let a scan that names a `WHERE` clause pass).

3. **DynamoDB Streams.** AWS authorises `DescribeStream`, `GetShardIterator` and
   `GetRecords` on the stream's ARN (the request's `StreamArn`, or the stream the
   `ShardIterator` was issued for). MiniStack reads only `TableName`/`RequestItems`,
   so a stream call is checked against no resource and a role granted exactly the
   stream is denied. The launcher names the stream (MiniStack's iterators carry it).
4. **`dynamodb:LeadingKeys`.** AWS sets it to the partition key value of the item a
   single-item call names (`GetItem`, `PutItem`, `UpdateItem`, `DeleteItem`: the
   `Key`, or the `Item` of a put); MiniStack never sets it, so a grant conditioned on
   it (the sweeper's `PutItem` of its scan cursors) is denied. The launcher sets it
   from the table's key schema (not for queries, scans or batches).

Without this correction a role granted exactly what AWS requires is denied locally,
and a role granted `dynamodb:ExecuteStatement` on `*` (which AWS ignores) is allowed.
This file patches those decisions in MiniStack's `core.iam_actions` (`patch`).

The launcher also installs `ministack_filters.patch_filter_criteria` (an event source
mapping's `exists: false` under a missing parent, as the publisher's filter for messages
without a home region uses it: see that module).

It also corrects one DynamoDB behaviour (`patch_partiql_streams`): in MiniStack
1.5.33 a PartiQL write (`INSERT`, `UPDATE`, `DELETE` through `ExecuteStatement`,
`BatchExecuteStatement` or `ExecuteTransaction`) changes the item but writes no
stream record and is not replicated to the table's other regions
(`services/dynamodb.py` `_partiql_insert`, `_partiql_update`, `_partiql_delete` call
`_set_item`/`_remove_item` and never `_emit_stream_event`, which the API writes call
and which also runs `_replicate_write`). On AWS a PartiQL write is an ordinary write:
it is in the table's stream and, on a global table, replicated to every replica (the
publisher's `SENT`/`FAILED` marks are batched `UPDATE`s: without this a mark made in
one region never reaches the other). The correction sends each PartiQL write through
`_emit_stream_event` with its old and new images, as `PutItem`, `UpdateItem` and
`DeleteItem` do; a transaction's writes only once it commits.

Then it runs MiniStack's own entry point; nothing else changes.
`test_ministack_iam.py` tests the corrections against the pinned MiniStack.

    .venv/ministack/bin/python tests/emulator/ministack_iam.py    # as `ministack`
"""

import contextvars
import copy
import json
import re

_VERBS = {
    "SELECT": "PartiQLSelect",
    "EXISTS": "PartiQLSelect",
    "INSERT": "PartiQLInsert",
    "UPDATE": "PartiQLUpdate",
    "DELETE": "PartiQLDelete",
}
_NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z0-9_-]+)'
_TARGET = {
    "SELECT": re.compile(rf"\bFROM\s+({_NAME})(?:\s*\.\s*({_NAME}))?", re.IGNORECASE),
    "DELETE": re.compile(rf"\bFROM\s+({_NAME})", re.IGNORECASE),
    "INSERT": re.compile(rf"\bINTO\s+({_NAME})", re.IGNORECASE),
    "UPDATE": re.compile(rf"^\s*UPDATE\s+({_NAME})", re.IGNORECASE),
}
_PARTIQL_OPERATIONS = ("ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction")
# Batch calls AWS authorises as the single call's action.
BATCH_ACTIONS = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "sns:PublishBatch": "sns:Publish",
}


def _unquote(name):
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name


def statement_verb(statement):
    """The statement's first word, upper-cased, if it is a PartiQL verb."""
    match = re.match(r"\s*([A-Za-z]+)", statement or "")
    verb = match.group(1).upper() if match else ""
    return verb if verb in _VERBS else None


def statement_action(statement):
    """The IAM action AWS authorises `statement` as, or None for no PartiQL verb."""
    verb = statement_verb(statement)
    return f"dynamodb:{_VERBS[verb]}" if verb else None


def statement_resource(statement, region, account_id):
    """The ARN of the table (or table index) `statement` reads or writes, or None."""
    verb = statement_verb(statement)
    if verb == "EXISTS":
        inner = re.search(r"\(\s*(SELECT\b.*)\)\s*$", statement, re.IGNORECASE | re.DOTALL)
        return statement_resource(inner.group(1), region, account_id) if inner else None
    pattern = _TARGET.get(verb or "")
    match = pattern.search(statement) if pattern else None
    if not match:
        return None
    arn = f"arn:aws:dynamodb:{region}:{account_id}:table/{_unquote(match.group(1))}"
    index = match.group(2) if match.lastindex and match.lastindex >= 2 else None
    return f"{arn}/index/{_unquote(index)}" if index else arn


def full_table_scan(statement):
    """`dynamodb:FullTableScan` for a SELECT (see the module's docstring), else None."""
    if statement_verb(statement) != "SELECT":
        return None
    return "false" if re.search(r"\bWHERE\b", statement, re.IGNORECASE) else "true"


def _statements(body):
    """The statements of a PartiQL request body: one, or a batch's or transaction's."""
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError):
        return []
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("Statement"), str):
        return [data["Statement"]]
    listed = data.get("Statements") or data.get("TransactStatements") or []
    return [s["Statement"] for s in listed if isinstance(s, dict) and isinstance(s.get("Statement"), str)]


def _operation(headers):
    target = headers.get("x-amz-target", "")
    return target.rsplit(".", 1)[-1] if "." in target else ""


def checks(body, region, account_id):
    """One `(action, resource)` per statement; a statement with no verb or table checks
    `dynamodb:PartiQLSelect` on `*`, which no least-privilege policy grants."""
    found = []
    for statement in _statements(body):
        action = statement_action(statement) or "dynamodb:PartiQLSelect"
        found.append((action, statement_resource(statement, region, account_id) or "*"))
    return found


def _json(body):
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def stream_resource(body, decode_iterator):
    """The stream ARN a Streams request is authorised on, or None: its `StreamArn`,
    else the stream its `ShardIterator` (decoded by `decode_iterator`) was issued for."""
    data = _json(body)
    arn = data.get("StreamArn")
    if isinstance(arn, str) and arn:
        return arn
    iterator = data.get("ShardIterator")
    decoded = decode_iterator(iterator) if isinstance(iterator, str) and iterator else None
    arn = decoded.get("arn") if isinstance(decoded, dict) else None
    return arn if isinstance(arn, str) and arn else None


def _key_text(value):
    """A key attribute's value as IAM compares it: the text of an S, N or B value."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, text), = value.items()
        if kind in ("S", "N", "B") and isinstance(text, str):
            return text
    return None


def leading_keys(body, partition_key_of):
    """`dynamodb:LeadingKeys` of a single-item call (a one-value list), or None:
    `partition_key_of(table)` names the table's partition key attribute. A request
    that names one table and an `Item` (a put) or a `Key` (a get, update or delete) is
    a single-item call; queries, scans and batches name neither."""
    data = _json(body)
    table = data.get("TableName")
    named = data.get("Item", data.get("Key"))
    pk = partition_key_of(table) if isinstance(table, str) and isinstance(named, dict) else None
    value = _key_text(named.get(pk)) if pk else None
    return [value] if value is not None else None


def _partition_key_of(table):
    """The partition key attribute of `table` in MiniStack's own state (this request's
    account and region), or None."""
    from ministack.services import dynamodb

    found = dynamodb._tables.get(table)
    return found.get("pk_name") if isinstance(found, dict) else None


def _decode_iterator(token):
    from ministack.services import dynamodb_streams

    return dynamodb_streams._decode_iterator(token)


def patch(iam_actions):
    """Correct MiniStack's mapping of PartiQL calls in its `iam_actions` module."""
    extract_action = iam_actions.extract_iam_action
    extract_resource = iam_actions.extract_resource_arn
    transaction_checks = iam_actions.dynamodb_transaction_checks
    service_context = iam_actions.dynamodb_service_context

    def corrected_action(service, method, path, headers, body, query_params):
        action = extract_action(service, method, path, headers, body, query_params)
        if service == "dynamodb" and _operation(headers) in _PARTIQL_OPERATIONS:
            statements = _statements(body)
            return statement_action(statements[0] if statements else "") or "dynamodb:PartiQLSelect"
        return BATCH_ACTIONS.get(action, action)

    def corrected_resource(service, method, path, headers, body, query_params, region, account_id):
        if service == "dynamodb" and _operation(headers) in _PARTIQL_OPERATIONS:
            found = checks(body, region, account_id)
            return found[0][1] if found else "*"
        if service in ("dynamodb", "dynamodbstreams") and "Streams" in headers.get("x-amz-target", ""):
            stream = stream_resource(body, _decode_iterator)
            if stream:
                return stream
        return extract_resource(service, method, path, headers, body, query_params, region, account_id)

    def corrected_checks(iam_action, body, region, account_id):
        # Every statement of a batch or transaction is its own check (MiniStack then
        # enforces each, and names the denied one); a single statement is the one
        # check the corrected action and resource already make.
        if iam_action.startswith("dynamodb:PartiQL") and len(_statements(body)) > 1:
            return checks(body, region, account_id)
        return transaction_checks(iam_action, body, region, account_id)

    def corrected_context(body):
        context = service_context(body)
        statements = _statements(body)
        scan = full_table_scan(statements[0]) if len(statements) == 1 else None
        if scan is not None:
            context["dynamodb:FullTableScan"] = scan
        keys = leading_keys(body, _partition_key_of)
        if keys is not None:
            context["dynamodb:LeadingKeys"] = keys
        return context

    iam_actions.extract_iam_action = corrected_action
    iam_actions.extract_resource_arn = corrected_resource
    iam_actions.dynamodb_transaction_checks = corrected_checks
    iam_actions.dynamodb_service_context = corrected_context


def _written_key(dynamodb, table, op, parsed):
    """The (partition, sort) key of the item a PartiQL write names, or None."""
    if op == "INSERT":
        item = parsed.get("item") or {}
        if isinstance(item, dict) and set(item) == {"M"}:
            item = item["M"]
        if not isinstance(item, dict) or table["pk_name"] not in item:
            return None
        pk = dynamodb._extract_key_val(item.get(table["pk_name"]))
        sk = dynamodb._extract_key_val(item.get(table["sk_name"])) if table["sk_name"] else "__no_sort__"
        return pk, sk
    pk, sk, _condition, error = dynamodb._partiql_key_target(table, parsed)
    return None if error else (pk, sk)


def patch_partiql_streams(dynamodb):
    """Stream and replicate PartiQL writes in MiniStack's `services.dynamodb` module
    (see the module's docstring): each write that succeeds goes through
    `_emit_stream_event(table, INSERT|MODIFY|REMOVE, old, new)`; inside
    `ExecuteTransaction` the writes wait for the commit (a cancelled transaction is
    rolled back and emits nothing)."""
    pending = contextvars.ContextVar("partiql_pending_writes", default=None)

    def streamed(op, write):
        def wrapper(table, parsed, *rest):
            key = _written_key(dynamodb, table, op, parsed)
            items = table["items"]
            before = copy.deepcopy(items.get(key[0], {}).get(key[1])) if key else None
            response = write(table, parsed, *rest)
            if key is None or response[0] != 200:
                return response
            after = table["items"].get(key[0], {}).get(key[1])
            if before is None and after is None:
                return response
            event = "REMOVE" if after is None else ("INSERT" if before is None else "MODIFY")
            change = (table["TableName"], event, before, copy.deepcopy(after))
            queued = pending.get()
            if queued is None:
                dynamodb._emit_stream_event(*change)
            else:
                queued.append(change)
            return response

        return wrapper

    def transaction(data):
        token = pending.set([])
        try:
            response = execute_transaction(data)
            changes = pending.get()
        finally:
            pending.reset(token)
        if response[0] == 200:
            for change in changes:
                dynamodb._emit_stream_event(*change)
        return response

    execute_transaction = dynamodb._execute_transaction
    dynamodb._partiql_insert = streamed("INSERT", dynamodb._partiql_insert)
    dynamodb._partiql_update = streamed("UPDATE", dynamodb._partiql_update)
    dynamodb._partiql_delete = streamed("DELETE", dynamodb._partiql_delete)
    dynamodb._execute_transaction = transaction


if __name__ == "__main__":
    from ministack.core import iam_actions as _iam_actions
    from ministack.services import dynamodb as _dynamodb
    from ministack.services import lambda_svc as _lambda_svc

    from ministack_filters import patch_filter_criteria
    from ministack_keys import patch_key_presence

    patch(_iam_actions)
    patch_partiql_streams(_dynamodb)
    patch_filter_criteria(_lambda_svc)
    patch_key_presence(_dynamodb)
    from ministack.app import main

    main()
