#!/usr/bin/env python3
"""The CDK app and the Terraform module must deploy the same system.

Compares, with default settings on both sides:
  * the synthesized CDK template (argument 1), and
  * the values of the provider-free module modules/outbox-config (evaluated by
    `terraform apply` on a throwaway root, no provider needed),
and checks that modules/outbox takes each compared value from module.config
(parsed with python-hcl2), so the comparison speaks for the real resources.

Compared: stream filter (and infra/stream-filter.json itself), stream and queue
mapping settings, retry settings, batch sizes, table shapes (keys, GSI, TTL
attribute, stream view type, PITR, SSE), names, function runtime/arch/env,
sweep schedule, queue settings, alarms, log retention.

Usage: check_parity.py <cdk template.json>     (run by infra/check.sh)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import hcl2  # shipped with checkov (python-hcl2), pinned in ../requirements.txt

HERE = Path(__file__).resolve().parent
TF_DIR = HERE.parent
INFRA_DIR = TF_DIR.parent
FILTER_FILE = INFRA_DIR / "stream-filter.json"

failures: list[str] = []
checked = 0


def same(what: str, cdk, tf) -> None:
    global checked
    checked += 1
    if cdk != tf:
        failures.append(f"{what}: CDK {json.dumps(cdk, sort_keys=True)} != Terraform {json.dumps(tf, sort_keys=True)}")


def terraform_config() -> dict:
    """Outputs of modules/outbox-config with default variables."""
    with tempfile.TemporaryDirectory(prefix="outbox-parity-") as tmp:
        (Path(tmp) / "main.tf").write_text(
            'module "c" {\n  source = "%s"\n}\noutput "c" {\n  value = module.c\n}\n'
            # A relative source: Terraform copies absolute-path modules away from infra/stream-filter.json.
            % Path(os.path.relpath(TF_DIR / "modules" / "outbox-config", tmp)).as_posix()
        )
        env = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
        run = lambda *args: subprocess.run(  # noqa: E731
            ["terraform", f"-chdir={tmp}", *args], check=True, capture_output=True, text=True, env=env
        )
        run("init", "-backend=false", "-no-color")
        run("apply", "-auto-approve", "-no-color")
        return json.loads(run("output", "-json", "c").stdout)


def resources_of(template: dict, rtype: str) -> list[dict]:
    return [r for r in template["Resources"].values() if r["Type"] == rtype]


def one(template: dict, rtype: str, **props) -> dict:
    found = [
        r
        for r in resources_of(template, rtype)
        if all(r.get("Properties", {}).get(k) == v for k, v in props.items())
    ]
    if len(found) != 1:
        raise SystemExit(f"CDK template: expected one {rtype} with {props}, found {len(found)}")
    return found[0]["Properties"]


def module_sources() -> dict:
    """modules/outbox/*.tf parsed: {resource type: {name: body}}."""
    out: dict = {}
    for f in sorted((TF_DIR / "modules" / "outbox").glob("*.tf")):
        with open(f) as fh:
            doc = hcl2.load(fh)
        for block in doc.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    out.setdefault(rtype, {})[name] = body
    return out


def scalar(v):
    """python-hcl2 wraps some attribute values in a one-element list; unwrap them."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    return v


def uses(what: str, expr, expected: str) -> None:
    """The module's attribute must be the module.config expression (not a copied literal)."""
    global checked
    checked += 1
    text = expr if isinstance(expr, str) else json.dumps(expr)
    if expected not in text:
        failures.append(f"modules/outbox {what} is {text!r}, expected it to use {expected}")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    template = json.loads(Path(sys.argv[1]).read_text())
    tf = terraform_config()
    src = module_sources()
    names = tf["names"]

    # ---------------------------------------------------------------- stream filter
    file_filter = json.loads(FILTER_FILE.read_text())
    stream = one(template, "AWS::Lambda::EventSourceMapping", StartingPosition="TRIM_HORIZON")
    same("stream FilterCriteria (CDK vs infra/stream-filter.json)", stream["FilterCriteria"], file_filter)
    same("stream FilterCriteria (Terraform vs infra/stream-filter.json)", tf["stream_filter"], file_filter)
    esm = src["aws_lambda_event_source_mapping"]["publisher"]
    uses("publisher filter_criteria", esm["filter_criteria"], "module.config.stream_filter.Filters")
    uses("publisher filter pattern", esm["filter_criteria"], "filter.value.Pattern")

    # ---------------------------------------------------------------- stream mapping: retries, batch size
    m = tf["stream_mapping"]
    pairs = {
        "StartingPosition": "starting_position",
        "BatchSize": "batch_size",
        "MaximumRetryAttempts": "maximum_retry_attempts",
        "MaximumRecordAgeInSeconds": "maximum_record_age_in_seconds",
        "BisectBatchOnFunctionError": "bisect_batch_on_function_error",
        "FunctionResponseTypes": "function_response_types",
        "ParallelizationFactor": "parallelization_factor",
    }
    for cfn, hcl in pairs.items():
        same(f"stream mapping {cfn}", stream.get(cfn), m[hcl])
        uses(f"publisher mapping {hcl}", esm[hcl], f"module.config.stream_mapping.{hcl}")
    same("stream mapping has an on-failure destination", "OnFailure" in stream.get("DestinationConfig", {}), True)
    uses("publisher on-failure destination", esm["destination_config"], 'stream_failures')

    consumer_esm = one(template, "AWS::Lambda::EventSourceMapping", FunctionResponseTypes=["ReportBatchItemFailures"], BatchSize=tf["consumer_mapping"]["batch_size"])
    same("consumer mapping FunctionResponseTypes", consumer_esm["FunctionResponseTypes"], tf["consumer_mapping"]["function_response_types"])
    uses("consumer mapping batch_size", src["aws_lambda_event_source_mapping"]["consumer"]["batch_size"], "module.config.consumer_mapping.batch_size")

    # ---------------------------------------------------------------- outbox table shape
    t = tf["outbox_table"]
    table = one(template, "AWS::DynamoDB::Table", TableName=names["outbox_table"])
    same(
        "outbox table key schema",
        table["KeySchema"],
        [{"AttributeName": t["hash_key"], "KeyType": "HASH"}, {"AttributeName": t["range_key"], "KeyType": "RANGE"}],
    )
    same(
        "outbox table attributes",
        sorted((a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]),
        sorted((a["name"], a["type"]) for a in t["attributes"]),
    )
    gsi = t["sweep_index"]
    same(
        "outbox table sweeper index",
        table["GlobalSecondaryIndexes"],
        [
            {
                "IndexName": gsi["name"],
                "KeySchema": [
                    {"AttributeName": gsi["hash_key"], "KeyType": "HASH"},
                    {"AttributeName": gsi["range_key"], "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": gsi["projection_type"]},
            }
        ],
    )
    same("outbox table TTL attribute", table["TimeToLiveSpecification"], {"AttributeName": t["ttl_attribute"], "Enabled": True})
    same("outbox table stream view type", table["StreamSpecification"]["StreamViewType"], t["stream_view_type"])
    same("outbox table PITR", table["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True})
    same("outbox table SSE", table["SSESpecification"]["SSEEnabled"], True)
    same("outbox table billing", table["BillingMode"], "PAY_PER_REQUEST")
    tt = src["aws_dynamodb_table"]["outbox"]
    uses("outbox table hash_key", tt["hash_key"], "local.table.hash_key")
    uses("outbox table range_key", tt["range_key"], "local.table.range_key")
    uses("outbox table stream_view_type", tt["stream_view_type"], "local.table.stream_view_type")
    uses("outbox table attributes", tt["dynamic"], "local.table.attributes")
    uses("outbox table GSI", tt["global_secondary_index"], "local.table.sweep_index.name")
    uses("outbox table TTL", tt["ttl"], "local.table.ttl_attribute")
    same("Terraform outbox table PITR", scalar(tt["point_in_time_recovery"][0]["enabled"]), True)
    same("Terraform outbox table SSE", scalar(tt["server_side_encryption"][0]["enabled"]), True)
    same("Terraform outbox table stream enabled", scalar(tt["stream_enabled"]), True)

    orders = one(template, "AWS::DynamoDB::Table", TableName=names["orders_table"])
    same("orders table key schema", orders["KeySchema"], [{"AttributeName": tf["orders_table"]["hash_key"], "KeyType": "HASH"}])
    same("orders table TTL", orders["TimeToLiveSpecification"], {"AttributeName": tf["orders_table"]["ttl_attribute"], "Enabled": True})
    same("orders table PITR", orders["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True})
    ot = src["aws_dynamodb_table"]["orders"]
    same("Terraform orders table PITR", scalar(ot["point_in_time_recovery"][0]["enabled"]), True)
    uses("orders table hash_key", ot["hash_key"], "module.config.orders_table.hash_key")

    # ---------------------------------------------------------------- functions: runtime, env (retry settings)
    fns = tf["functions"]
    env_by_fn = {"publisher": tf["publisher_environment"], "sweeper": tf["sweeper_environment"], "consumer": {}}
    for key in ("publisher", "sweeper", "consumer"):
        props = one(template, "AWS::Lambda::Function", FunctionName=names[key])
        same(f"{key} runtime", props["Runtime"], fns["runtime"])
        same(f"{key} handler", props["Handler"], fns["handler"])
        same(f"{key} architectures", props["Architectures"], fns["architectures"])
        same(f"{key} memory", props["MemorySize"], fns["memory_size"])
        same(f"{key} timeout", props["Timeout"], fns["timeouts"][key])
        env = props["Environment"]["Variables"]
        for k, v in env_by_fn[key].items():
            same(f"{key} env {k}", env.get(k), v)
        static = {k: v for k, v in env.items() if isinstance(v, str) and k.startswith("OUTBOX_") and k != "OUTBOX_TABLE_NAME"}
        same(f"{key} static OUTBOX_* env", static, env_by_fn[key])
    same("sweeper reserved concurrency", one(template, "AWS::Lambda::Function", FunctionName=names["sweeper"]).get("ReservedConcurrentExecutions"), 1)
    fsrc = src["aws_lambda_function"]["this"]
    uses("function runtime", fsrc["runtime"], "local.fn.runtime")
    uses("function architectures", fsrc["architectures"], "local.fn.architectures")
    uses("function environment", fsrc["environment"], "each.value.environment")

    # ---------------------------------------------------------------- schedule, queues, logs, alarms
    rule = resources_of(template, "AWS::Events::Rule")[0]["Properties"]
    same("sweep schedule", rule["ScheduleExpression"], tf["sweep_schedule"])
    uses("sweep schedule", src["aws_cloudwatch_event_rule"]["sweep"]["schedule_expression"], "module.config.sweep_schedule")

    q = tf["queue_settings"]
    cdk_queues = {r["Properties"]["QueueName"]: r["Properties"] for r in resources_of(template, "AWS::SQS::Queue")}
    tf_queue_names = sorted(names[k] for k in ("outbox_dlq", "stream_failures", "orders_queue", "orders_dlq", "fifo_queue", "fifo_dlq"))
    same("queue names", sorted(cdk_queues), tf_queue_names)
    for name, props in cdk_queues.items():
        same(f"queue {name} retention", props["MessageRetentionPeriod"], q["message_retention_seconds"])
        same(f"queue {name} encrypted", bool(props.get("SqsManagedSseEnabled") or props.get("KmsMasterKeyId")), True)
    same("orders queue maxReceiveCount", cdk_queues[names["orders_queue"]]["RedrivePolicy"]["maxReceiveCount"], q["max_receive_count"])
    same("FIFO queue maxReceiveCount", cdk_queues[names["fifo_queue"]]["RedrivePolicy"]["maxReceiveCount"], q["max_receive_count"])
    same("orders queue visibility", cdk_queues[names["orders_queue"]]["VisibilityTimeout"], q["consumer_visibility"])

    for props in (r["Properties"] for r in resources_of(template, "AWS::Logs::LogGroup")):
        same(f"log retention {props['LogGroupName']}", props["RetentionInDays"], tf["log_retention_days"])

    alarms = {r["Properties"]["AlarmName"]: r["Properties"] for r in resources_of(template, "AWS::CloudWatch::Alarm")}
    prefix = names["outbox_table"].removesuffix("-table")
    expected_alarms = sorted(
        [f"{prefix}-{k}" for k in tf["alarms"]["queue_not_empty"]]
        + [f"{prefix}-PublisherIteratorAge", f"{prefix}-SweeperRecovering", f"{prefix}-OldestPendingTooOld"]
    )
    same("alarm names", sorted(alarms), expected_alarms)
    for k, a in tf["alarms"]["queue_not_empty"].items():
        same(f"alarm {k} description", alarms[f"{prefix}-{k}"]["AlarmDescription"], a["description"])
    same("iterator age threshold", alarms[f"{prefix}-PublisherIteratorAge"]["Threshold"], tf["alarms"]["iterator_age_threshold_ms"])
    same("oldest pending threshold", alarms[f"{prefix}-OldestPendingTooOld"]["Threshold"], tf["alarms"]["oldest_pending_threshold_seconds"])
    for name in ("SweeperRecovering", "OldestPendingTooOld"):
        a = alarms[f"{prefix}-{name}"]
        same(f"{name} namespace", a["Namespace"], tf["metrics"]["namespace"])
        same(f"{name} dimensions", {d["Name"]: d["Value"] for d in a["Dimensions"]}, tf["metrics"]["dimensions"])

    if failures:
        print(f"parity: {len(failures)} of {checked} checks differ between CDK and Terraform:")
        for f in failures:
            print(f"  - {f}")
        return 1
    print(f"parity: CDK and Terraform agree on {checked} checks (filter, retries, batch sizes, table shape, names, alarms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
