#!/usr/bin/env python3
"""The CDK app and the Terraform module must deploy the same system.

For each variant of the settings (VARIANTS: the defaults, one that changes every
setting that changes the template, the sweeper's scan mode off, ..., and the global-table
ones: another default home region, the own one named, one region of a global table), compares
  * the synthesized CDK template (the default one is argument 1; the others are
    synthesized here with `npx cdk synth -c outbox:<name>=<value>`), and
  * the values of the provider-free module modules/outbox-config with the same
    settings (evaluated by `terraform apply` on a throwaway root, no provider),
and checks that modules/outbox takes each compared value from module.config
(parsed with python-hcl2), so the comparison speaks for the real resources.

Compared: stream filter (the same pattern text in both, CDK's intrinsics resolved in the
deployment's region; both equal to infra/stream-filter.json with the region clauses the
settings call for: HomeRegion.S = region, and HomeRegion.S exists:false in the default home
region), OUTBOX_REGION and OUTBOX_DEFAULT_HOME_REGION, stream and queue
mapping settings (starting position, retries, batch sizes, the recovery function's
mapping on the stream-failure queue), table shapes (keys, GSI, TTL attribute, stream
view type, PITR, SSE, deletion protection), names, function runtime/arch/memory/
timeout/env/reserved concurrency of the four functions, the sweeper's async invoke
config and schedule retry policy, queue settings (retention, MaximumMessageSize,
visibility, redrive: which queue goes to which DLQ after how many receives),
OUTBOX_ROUTES, IAM actions and literal resources, IAM grants per role (each action on which
resource -- deployed ones by name -- under which condition: a grant in one stack and not the
other fails; and no grant beside the compared documents: no other IAM resource in Terraform,
no managed or other inline policy on a role in either stack), alarms, the dashboard, log
retention, the large-payload bucket (created or not, encryption, lifecycle: key prefix,
expiration, incomplete multipart uploads; public access block, ownership, TLS-only policy,
the writers' OUTBOX_LARGE_PAYLOAD_BUCKET and the threshold); and that both do what the
scan-mode and large-payload settings say (OUTBOX_SWEEP_SCAN_MODE, and Scan and the scan
cursors' PutItem granted unless it is off; the bucket and its grants unless largePayloads
is false, its expiration the setting's, longer than the queues' retention).

Usage: check_parity.py <default cdk template.json> [--keep DIR]   (run by infra/check.sh;
       --keep writes the other variants' templates to DIR, for cfn-lint)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import hcl2  # shipped with checkov (python-hcl2), pinned in ../requirements.txt

HERE = Path(__file__).resolve().parent
TF_DIR = HERE.parent
INFRA_DIR = TF_DIR.parent
CDK_DIR = INFRA_DIR / "cdk"
FILTER_FILE = INFRA_DIR / "stream-filter.json"

# Settings by their CDK name; the Terraform variable is the snake_case name.
VARIANTS: dict[str, dict] = {
    "defaults": {},
    "every setting changed": {
        "prefix": "shop",
        "routes": {
            "mail": {"destination": "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", "max_message_bytes": 262144},
            "audit": "arn:aws:sns:eu-west-1:123456789012:audit",
            # SNS with raw delivery: OUTBOX_ROUTES carries "raw_delivery": true in both stacks.
            "ledger": {"destination": "arn:aws:sns:eu-west-1:123456789012:ledger", "raw_delivery": True},
            "shop": {"destination": "arn:aws:events:eu-west-1:123456789012:event-bus/shop", "source": "shop.orders"},
        },
        "defaultDestination": "https://sqs.eu-west-1.amazonaws.com/123456789012/catch-all",
        "maxAttempts": 4,
        "sweepRateMinutes": 10,
        "sweepGraceSeconds": 30,
        "sweepScanMode": "on",
        "ttlDays": 3,
        "batchSize": 50,
        # A live change of the sweeper index's shard count, and concurrent batches per stream shard.
        "sweepShards": 64,
        "sweepShardsPrevious": 16,
        "parallelizationFactor": 2,
        "streamRetryAttempts": 2,
        "streamMaxRecordAgeSeconds": 600,
        "consumerBatchSize": 5,
        # The outbox's stream-failure queue and the example's orders queues: each its own count.
        "maxReceiveCount": 3,
        "consumerMaxReceiveCount": 7,
        "maxMessageBytes": 262144,
        "sweeperReservedConcurrency": 0,
        "deletionProtection": False,
        "logRetentionDays": 90,
        "kmsKeyArn": "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "existingTable": {
            "tableName": "app",
            "streamArn": "arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000",
        },
        "alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops",
        "iteratorAgeThresholdMs": 120000,
        "oldestPendingThresholdSeconds": 900,
        "largePayloadBucketName": "shop-payloads",
        "largePayloadRetentionDays": 45,
        "largePayloadThresholdBytes": 200000,
    },
    # The default is the backstop scan and the variant above scans "on"; this one turns the
    # scan off with the old boolean (false = "off": no backstop, no Scan, no cursor PutItem),
    # and the large-payload bucket off (the other two create it).
    "scan mode off (the old false), no large-payload bucket": {"sweepScanMode": False, "largePayloads": False},
    # The variant above attaches an existing bucket; this one creates it with the KMS key (SSE-KMS).
    "KMS key, created large-payload bucket": {
        "kmsKeyArn": "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "largePayloadRetentionDays": 60,
    },
}

# Both sides set the three key names on the publisher, the sweeper and the recovery
# function, always; this variant changes all three.
VARIANTS["non-default key names"] = {"partitionKeyName": "pk", "sortKeyName": "sk", "ttlAttributeName": "expires_at"}

# Global tables (docs/global-tables.md). "{region}" is the deployment's region (the one the CDK
# app is synthesized for: the publisher's OUTBOX_REGION in the default template; Terraform gets
# it as modules/outbox-config's region), "{other}" another region. The defaults (above) make the
# deployment its own default home: two filters. Here the default home is another region (one
# filter: this region's inserts only); the own region named explicitly (two); and one region of
# a global table (the replica attached, names global to the account carrying the region).
OTHER_REGIONS = ("ap-northeast-3", "sa-east-1")
VARIANTS["default home region elsewhere"] = {"defaultHomeRegion": "{other}"}
VARIANTS["default home region named, this one"] = {"defaultHomeRegion": "{region}"}
VARIANTS["one region of a global table"] = {
    "prefix": "shop",
    "globalTableRegions": ["{other}", "{region}"],
    "defaultHomeRegion": "{other}",
    "existingTable": {
        "tableName": "app",
        "streamArn": "arn:aws:dynamodb:{region}:123456789012:table/app/stream/2024-01-01T00:00:00.000",
    },
}


def with_regions(settings, region: str):
    """A variant's settings with "{region}" and "{other}" filled in."""
    other = next(r for r in OTHER_REGIONS if r != region)
    if isinstance(settings, dict):
        return {k: with_regions(x, region) for k, x in settings.items()}
    if isinstance(settings, list):
        return [with_regions(x, region) for x in settings]
    if isinstance(settings, str):
        return settings.replace("{region}", region).replace("{other}", other)
    return settings


def resolved(value, template: dict, region: str):
    """A CDK property with the intrinsics CloudFormation would resolve in `region`: Ref
    AWS::Region, Fn::Join, Fn::If on the template's Fn::Equals conditions (AWS::NoValue drops a
    list element or key); other tokens are kept."""
    def cond(name: str) -> bool:
        c = template.get("Conditions", {})[name]
        a, b = c["Fn::Equals"]
        return resolved(a, template, region) == resolved(b, template, region)
    if isinstance(value, list):
        out = [resolved(x, template, region) for x in value]
        return [x for x in out if x is not NO_VALUE]
    if isinstance(value, dict):
        if value == {"Ref": "AWS::Region"}:
            return region
        if value == {"Ref": "AWS::NoValue"}:
            return NO_VALUE
        if set(value) == {"Fn::If"}:
            name, yes, no = value["Fn::If"]
            return resolved(yes if cond(name) else no, template, region)
        if set(value) == {"Fn::Join"}:
            sep, parts = value["Fn::Join"]
            parts = [resolved(x, template, region) for x in parts]
            if all(isinstance(x, str) for x in parts):
                return sep.join(parts)
            return {"Fn::Join": [sep, parts]}
        out = {k: resolved(x, template, region) for k, x in value.items()}
        return {k: x for k, x in out.items() if x is not NO_VALUE}
    return value


NO_VALUE = object()


def template_region(template: dict) -> str:
    """The region the CDK app was synthesized for (the CLI's default region), from the
    publisher's OUTBOX_REGION; PARITY_DEPLOYMENT_REGION when it is the AWS::Region token."""
    for r in resources_of(template, "AWS::Lambda::Function"):
        region = r["Properties"].get("Environment", {}).get("Variables", {}).get("OUTBOX_REGION")
        if region is not None:
            return region if isinstance(region, str) else PARITY_DEPLOYMENT_REGION
    raise SystemExit("CDK template: no function with OUTBOX_REGION")


PARITY_DEPLOYMENT_REGION = "ap-southeast-2"


def expected_filter(region: str, default_home: str) -> dict:
    """What both stacks must deploy (an independent statement of the rule): each filter of
    infra/stream-filter.json with NewImage.HomeRegion.S = [region], then, in the default home
    region, each with NewImage.HomeRegion.S = [{"exists": false}]."""
    base = [json.loads(f["Pattern"]) for f in json.loads(FILTER_FILE.read_text())["Filters"]]
    def clause(p: dict, c) -> dict:
        d = dict(p.get("dynamodb", {}))
        d["NewImage"] = {**d.get("NewImage", {}), "HomeRegion": {"S": [c]}}
        return {**p, "dynamodb": d}
    patterns = [clause(p, region) for p in base] + ([clause(p, {"exists": False}) for p in base] if default_home == region else [])
    return {"Filters": patterns}


# Variables whose modules/outbox default differs from modules/outbox-config's (the one compared
# with CDK's), and why.
KNOWN_DEFAULT_DIFFERENCES = {
    "max_message_bytes": "modules/outbox (and examples/orders) default to 262144 because hashicorp/aws before 6.8.0 refuses more and the module supports 5.x; the compared default is 1 MiB, CDK's",
}

# The sweeper's scan mode a setting means: off | backstop | on, the old booleans true = on,
# false = off; "backstop" when unset.
SCAN_MODE_DEFAULT = "backstop"


def scan_mode_of(settings: dict) -> str:
    v = settings.get("sweepScanMode", SCAN_MODE_DEFAULT)
    return ("on" if v else "off") if isinstance(v, bool) else v


# The large-payload bucket's defaults (both stacks): created, payloads kept 30 days.
LARGE_PAYLOADS_DEFAULT = True
LARGE_PAYLOAD_RETENTION_DAYS_DEFAULT = 30

failures: list[str] = []
checked = 0
# VARIANTS with "{region}" and "{other}" filled in (main()).
VARIANTS_RESOLVED: dict[str, dict] = {}


def same(what: str, cdk, tf) -> None:
    global checked
    checked += 1
    if cdk != tf:
        failures.append(f"{what}: CDK {json.dumps(cdk, sort_keys=True)} != Terraform {json.dumps(tf, sort_keys=True)}")


def same_set(what: str, cdk: list, tf: list) -> None:
    """Like same(), for sets: a difference names only what one side has and the other has not."""
    global checked
    checked += 1
    only_cdk = [x for x in cdk if x not in tf]
    only_tf = [x for x in tf if x not in cdk]
    if only_cdk or only_tf:
        failures.append(f"{what}: only in CDK {json.dumps(only_cdk)}; only in Terraform {json.dumps(only_tf)}")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def tf_value(v):
    """A CDK setting as the Terraform variable value (objects with snake_case keys, except routes)."""
    if isinstance(v, dict):
        return {snake(k): tf_value(x) for k, x in v.items()}
    return v


def cdk_context(name: str, v) -> str:
    if v is None:
        return f"outbox:{name}=off"
    if isinstance(v, bool):
        return f"outbox:{name}={'true' if v else 'false'}"
    if isinstance(v, (dict, list)):
        return f"outbox:{name}={json.dumps(v)}"
    return f"outbox:{name}={v}"


def synth(settings: dict, outdir: Path) -> dict:
    """The CDK template of a variant (the asset directory comes from OUTBOX_LAMBDA_ASSET_DIR)."""
    args = [a for k, v in settings.items() for a in ("-c", cdk_context(k, v))]
    p = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet", "--no-notices", "--no-version-reporting", "-o", str(outdir), *args],
        cwd=CDK_DIR, capture_output=True, text=True,
    )
    if p.returncode != 0:
        raise SystemExit(f"cdk synth {' '.join(args)} failed:\n{p.stdout}\n{p.stderr}")
    return json.loads((outdir / "DynamoDbOutbox.template.json").read_text())


def large_payload_bucket_placeholder(settings: dict) -> str:
    """The large-payload bucket ARN as modules/outbox passes it: none when off, a placeholder for
    the created bucket, and for an attached one a placeholder that tf_resource turns into the ARN
    the module builds (arn:<partition>:s3:::<name>)."""
    if not settings.get("largePayloads", LARGE_PAYLOADS_DEFAULT):
        return "null"
    name = settings.get("largePayloadBucketName")
    return f'"PARITY:bucket:{name}"' if name else '"PARITY:bucket"'


# The settings the orders example takes too (examples/orders-config); consumer_batch_size and
# consumer_max_receive_count (its queues' maxReceiveCount) are the example's only: the outbox's
# max_receive_count is its stream-failure queue's.
ORDERS_SETTINGS = ("prefix", "consumer_batch_size", "consumer_max_receive_count", "max_message_bytes", "deletion_protection", "kms_key_arn", "architecture")
EXAMPLE_ONLY_SETTINGS = ("consumer_batch_size", "consumer_max_receive_count")
# A queue URL of no region (a local AWS's form): modules/outbox-config puts such a queue in
# resources.region, so its ARN is arn:aws:sqs:<PARITY_REGION>:000000000000:<name>, which
# tf_resource names queue:<name> -- as the routes name the example queues here.
PARITY_REGION = "parity-region"
PARITY_QUEUE_URL = "http://parity.invalid/000000000000/"


def terraform_config(settings: dict, region: str) -> dict:
    """The Terraform side of one variant: the outputs of modules/outbox-config and of
    examples/orders-config (the orders example) with the variant's settings, wired as
    examples/basic wires modules/outbox and examples/orders (the example's routes added to
    `routes`, its DLQs and consumer on the dashboard), with placeholder resources; merged into
    one view of the deployed system (names, functions, policies, alarms, ...)."""
    variables = {snake(k): (v if k == "routes" else tf_value(v)) for k, v in settings.items()}
    with tempfile.TemporaryDirectory(prefix="outbox-parity-") as tmp:
        # A relative source: Terraform copies absolute-path modules away from infra/stream-filter.json.
        rel = lambda d: Path(os.path.relpath(TF_DIR / d, tmp)).as_posix()  # noqa: E731
        outbox_args = "\n".join(f"  {k} = var.{k}" for k in variables if k not in EXAMPLE_ONLY_SETTINGS and k != "routes")
        orders_args = "\n".join(f"  {k} = var.{k}" for k in variables if k in ORDERS_SETTINGS)
        decls = "\n".join(f'variable "{k}" {{\n  type = any\n}}' for k in variables)
        user_routes = "var.routes" if "routes" in variables else "{}"
        # Resources as modules/outbox and examples/orders pass them: placeholders (dropped when
        # comparing), except the example queue URLs (named after the queues) and an existing table's ARN.
        (Path(tmp) / "main.tf").write_text(
            f"""{decls}
module "c" {{
  source = "{rel("modules/outbox-config")}"
{outbox_args}
  routes                   = merge(module.o.routes, {user_routes})
  dashboard_queue_names    = module.o.dashboard.queue_names
  dashboard_function_names = module.o.dashboard.function_names
  region                   = "{region}"
  resources = {{
    outbox_table_arn          = {"module.c.existing_table.arn" if "existing_table" in variables else '"PARITY:table"'}
    outbox_stream_arn         = {"module.c.existing_table.stream_arn" if "existing_table" in variables else '"PARITY:stream"'}
    outbox_dlq_arn            = "PARITY:outbox-dlq"
    stream_failures_queue_arn = "PARITY:stream-failures"
    log_group_arns            = {{ publisher = "PARITY:logs", sweeper = "PARITY:logs", recovery = "PARITY:logs" }}
    large_payload_bucket_arn  = {large_payload_bucket_placeholder(settings)}
    region                    = "{PARITY_REGION}"
  }}
}}
module "o" {{
  source = "{rel("examples/orders-config")}"
{orders_args}
  queue_urls = {{ standard = "{PARITY_QUEUE_URL}${{module.o.names.orders_queue}}", fifo = "{PARITY_QUEUE_URL}${{module.o.names.fifo_queue}}" }}
  resources = {{
    orders_table_arn      = "PARITY:orders-table"
    orders_queue_arn      = "PARITY:orders-queue"
    log_group_arn         = "PARITY:logs"
    large_payload_objects = module.c.large_payload_objects
  }}
}}
output "c" {{
  value = module.c
}}
output "o" {{
  value = module.o
}}
"""
        )
        (Path(tmp) / "terraform.tfvars.json").write_text(json.dumps(variables))
        env = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
        run = lambda *args: subprocess.run(  # noqa: E731
            ["terraform", f"-chdir={tmp}", *args], check=True, capture_output=True, text=True, env=env
        )
        run("init", "-backend=false", "-no-color")
        try:
            run("apply", "-auto-approve", "-no-color")
        except subprocess.CalledProcessError as e:
            raise SystemExit(f"terraform apply of modules/outbox-config and examples/orders-config failed:\n{e.stdout}\n{e.stderr}")
        return with_example(json.loads(run("output", "-json", "c").stdout), json.loads(run("output", "-json", "o").stdout))


def with_example(c: dict, o: dict) -> dict:
    """modules/outbox-config's outputs with the orders example's added, as one deployed system."""
    consumer = o["consumer"]
    return {
        **c,
        "names": {**c["names"], **o["names"]},
        "functions": {
            **c["functions"],
            "timeouts": {**c["functions"]["timeouts"], "consumer": consumer["timeout"]},
            "reserved_concurrency": {**c["functions"]["reserved_concurrency"], "consumer": consumer["reserved_concurrency"]},
        },
        # The example's consumer runs like the outbox's functions (the same runtime, handler, architecture, memory).
        "consumer_function": consumer,
        "consumer_mapping": o["consumer_mapping"],
        "consumer_environment": consumer["environment"],
        "orders_table": o["orders_table"],
        "example_tables": o["tables"],
        "example_queue_settings": o["queue_settings"],
        "example_queues": o["queues"],
        "policies": {**c["policies"], "consumer": o["policy"]},
        "alarms": {**c["alarms"], **o["alarms"]},
        "queue_settings": {**c["queue_settings"], "consumer_visibility": o["queues"]["orders_queue"]["visibility"]},
    }


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


FUNCTIONS = ("publisher", "sweeper", "consumer", "recovery")
QUEUES = ("outbox_dlq", "stream_failures", "stream_failures_dlq")  # the module's own; the example's: examples/orders-config


def module_sources(directory: str = "modules/outbox") -> dict:
    """<directory>/*.tf parsed: {resource type: {name: body}}, the locals under "locals" and
    the variables under "variable"."""
    out: dict = {}
    for f in sorted((TF_DIR / directory).glob("*.tf")):
        with open(f) as fh:
            doc = hcl2.load(fh)
        for block in doc.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    out.setdefault(rtype, {})[name] = body
        for block in doc.get("locals", []):
            out.setdefault("locals", {}).update({k: v for k, v in block.items() if not k.startswith("__")})
        for block in doc.get("variable", []):
            out.setdefault("variable", {}).update(block)
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


def holds(what: str, condition: bool, where: str = "modules/outbox") -> None:
    """A property of the Terraform module (or of `where`) on its own."""
    global checked
    checked += 1
    if not condition:
        failures.append(f"{where}: {what}")


def joined(value, tokens) -> str:
    """A CDK string value (plain, or Fn::Join of strings and tokens) as text; tokens mapped by `tokens`."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else tokens(p) for p in value["Fn::Join"][1])


def literal_strings(v) -> list[str]:
    """The plain strings of a policy Resource (CDK tokens and Terraform placeholders dropped)."""
    items = v if isinstance(v, list) else [v]
    return [x for x in items if isinstance(x, str) and not x.startswith(("PARITY:", f"arn:aws:sqs:{PARITY_REGION}:"))]


def cdk_resource(template: dict, value, names: dict) -> str:
    """A CDK policy Resource as a name both stacks can be compared by: `table`, `stream`,
    `orders-table`, `queue:<name>`, `logs:*` for the deployed resources (a GetAtt, or a
    Fn::Join of one with text), the string itself for a literal ARN."""
    if isinstance(value, str):
        return value
    if value == {"Ref": "AWS::Partition"}:
        return "PARTITION"
    if "Fn::GetAtt" in value:
        rid, attr = value["Fn::GetAtt"]
        r = template["Resources"][rid]
        props = r.get("Properties", {})
        if r["Type"] == "AWS::DynamoDB::Table":
            table = "table" if props.get("TableName") == names["outbox_table"] else "orders-table" if props.get("TableName") == names["orders_table"] else rid
            return {"Arn": table, "StreamArn": "stream"}.get(attr, f"{table}.{attr}")
        if r["Type"] == "AWS::SQS::Queue" and attr == "Arn":
            return f"queue:{props['QueueName']}"
        if r["Type"] == "AWS::Logs::LogGroup" and attr == "Arn":
            return "logs:*"  # CloudFormation's log group Arn ends with :*
        if r["Type"] == "AWS::S3::Bucket" and attr == "Arn":
            return "bucket"
        return json.dumps(value, sort_keys=True)
    if "Fn::Join" in value and value["Fn::Join"][0] == "":
        return "".join(cdk_resource(template, p, names) for p in value["Fn::Join"][1])
    return json.dumps(value, sort_keys=True)


def tf_resource(value: str, names: dict) -> str:
    """A Terraform policy Resource by the same names: the PARITY: placeholders of
    terraform_config (a placeholder may be followed by text: the index, the log streams)."""
    placeholders = {
        "PARITY:table": "table",
        "PARITY:stream": "stream",
        "PARITY:orders-table": "orders-table",
        "PARITY:outbox-dlq": f"queue:{names['outbox_dlq']}",
        "PARITY:stream-failures": f"queue:{names['stream_failures']}",
        "PARITY:orders-queue": f"queue:{names['orders_queue']}",
        f"arn:aws:sqs:{PARITY_REGION}:000000000000:": "queue:",  # a queue routed by a URL of PARITY_QUEUE_URL
        "PARITY:logs": "logs",
        "PARITY:bucket": "bucket",
        "PARITY:bucket:": "arn:PARTITION:s3:::",  # an attached bucket, by name
    }
    for placeholder in sorted(placeholders, key=len, reverse=True):
        if value.startswith(placeholder):
            return placeholders[placeholder] + value[len(placeholder):]
    return value


def grants(statements: list, resource) -> list:
    """Every (effect, action, resource, condition) a role's statements allow, sorted: what a
    role may do, however the statements are split or named."""
    return sorted(
        {
            (s["Effect"], a, resource(r), json.dumps(s.get("Condition"), sort_keys=True))
            for s in statements
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
            for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
        }
    )


# The IAM resources modules/outbox and the orders example may declare, each with the only
# attribute that may carry permissions and the module.config output it must be.
TF_IAM_SOURCES = {
    "modules/outbox": {
        ("aws_iam_role", "function"): None,
        ("aws_iam_role_policy", "function"): "module.config.policy_json[each.key]",
        ("aws_iam_policy", "producer"): "module.config.producer_policy_json",
    },
    "examples/orders": {
        ("aws_iam_role", "consumer"): None,
        ("aws_iam_role_policy", "consumer"): "module.config.policy_json",
    },
}
# Role attributes that would grant beside the compared policy documents.
TF_ROLE_GRANTS = ("inline_policy", "managed_policy_arns")


def compare_iam_sources(where: str, src: dict) -> None:
    """Every grant of the Terraform roles comes from the compared policy documents: no other IAM
    resource (a policy attachment, another inline policy), no inline or managed policies on a
    role, each policy's document module.config's. A grant written beside them would be in one
    stack and not the other without the grant comparison seeing it."""
    allowed = TF_IAM_SOURCES[where]
    declared = {(rtype, name) for rtype, named in src.items() if rtype.startswith("aws_iam_") for name in named}
    holds(f"the IAM resources of {where} are {sorted(allowed)} (found {sorted(declared)})", declared == set(allowed))
    for (rtype, name), expected in allowed.items():
        body = src.get(rtype, {}).get(name, {})
        if expected is None:
            holds(f"{rtype}.{name} of {where} carries no {' or '.join(TF_ROLE_GRANTS)}", not any(k in body for k in TF_ROLE_GRANTS))
        else:
            uses(f"{where} {rtype}.{name} policy", body.get("policy"), expected)


def cdk_role_statements(template: dict) -> dict[str, list]:
    """Each role's statements: its AWS::IAM::Policy documents and any inline Policies of the role.
    A managed policy attached to a function's role would grant beside them: refused."""
    by_role: dict[str, list] = {}
    for p in resources_of(template, "AWS::IAM::Policy"):
        for role in p["Properties"]["Roles"]:
            by_role.setdefault(role["Ref"], []).extend(p["Properties"]["PolicyDocument"]["Statement"])
    for rid, r in template["Resources"].items():
        if r["Type"] != "AWS::IAM::Role":
            continue
        for inline in r.get("Properties", {}).get("Policies", []):
            by_role.setdefault(rid, []).extend(inline["PolicyDocument"]["Statement"])
        same(f"CDK role {rid} managed policies (none: its grants are the compared ones)", r.get("Properties", {}).get("ManagedPolicyArns"), None)
    for p in resources_of(template, "AWS::IAM::ManagedPolicy"):
        same(f"CDK managed policy {p['Properties'].get('ManagedPolicyName')} roles (none: the producer's is for your application)", p["Properties"].get("Roles"), None)
    return by_role


def compare_module_sources(src: dict, example: dict) -> None:
    """modules/outbox takes every compared value from module.config, and so does the orders
    example (examples/orders, its own module.config: examples/orders-config)."""
    compare_iam_sources("modules/outbox", src)
    compare_iam_sources("examples/orders", example)
    esm = src["aws_lambda_event_source_mapping"]["publisher"]
    uses("publisher filter_criteria", esm["filter_criteria"], "module.config.stream_filter.Filters")
    uses("publisher filter pattern", esm["filter_criteria"], "filter.value.Pattern")
    for hcl in ("starting_position", "batch_size", "maximum_retry_attempts", "maximum_record_age_in_seconds",
                "bisect_batch_on_function_error", "function_response_types", "parallelization_factor"):
        uses(f"publisher mapping {hcl}", esm[hcl], f"module.config.stream_mapping.{hcl}")
    uses("publisher on-failure destination", esm["destination_config"], "stream_failures")
    holds("no consumer mapping in modules/outbox (the orders example has its own)", "consumer" not in src["aws_lambda_event_source_mapping"])
    uses("example consumer mapping batch_size", example["aws_lambda_event_source_mapping"]["consumer"]["batch_size"], "module.config.consumer_mapping.batch_size")
    uses("example consumer mapping response types", example["aws_lambda_event_source_mapping"]["consumer"]["function_response_types"], "module.config.consumer_mapping.function_response_types")
    rec = src["aws_lambda_event_source_mapping"].get("recovery", {})
    uses("recovery mapping function", rec.get("function_name"), 'aws_lambda_function.this[\\"recovery\\"]')
    uses("recovery mapping source", rec.get("event_source_arn"), 'local.all_queues[\\"stream_failures\\"]')
    for hcl in ("batch_size", "function_response_types"):
        uses(f"recovery mapping {hcl}", rec.get(hcl), f"module.config.recovery_mapping.{hcl}")

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
    holds("modules/outbox creates one table, the outbox table (the orders table is the example's)", sorted(src["aws_dynamodb_table"]) == ["outbox"])
    ot = example["aws_dynamodb_table"]["orders"]
    same("Terraform orders table PITR", scalar(ot["point_in_time_recovery"][0]["enabled"]), True)
    uses("orders table hash_key", ot["hash_key"], "module.config.orders_table.hash_key")
    for name, t in (("outbox", tt), ("orders", ot)):
        uses(f"{name} table deletion protection", t.get("deletion_protection_enabled"), "module.config.tables.deletion_protection")
        # prevent_destroy cannot follow a variable, and it breaks `terraform destroy` of any deployment.
        holds(f"the {name} table must not set lifecycle prevent_destroy (deletion protection is var.deletion_protection)",
              "prevent_destroy" not in json.dumps(t.get("lifecycle", [])))

    holds("modules/outbox has no orders consumer", "consumer" not in json.dumps(scalar(src["locals"].get("functions"))))
    efn = example["aws_lambda_function"]["consumer"]
    for attr in ("runtime", "handler", "architectures", "memory_size", "timeout", "reserved_concurrent_executions"):
        uses(f"example consumer {attr}", efn[attr], "local.consumer.")
    uses("example consumer environment", efn["environment"], "local.consumer.environment")
    uses("example consumer code", efn["filename"], "module.config.artifacts.consumer")
    fsrc = src["aws_lambda_function"]["this"]
    uses("function runtime", fsrc["runtime"], "local.fn.runtime")
    uses("function architectures", fsrc["architectures"], "local.fn.architectures")
    uses("function environment", fsrc["environment"], "local.environment[each.key]")
    uses("function reserved concurrency", fsrc["reserved_concurrent_executions"], "module.config.functions.reserved_concurrency")
    uses("function code", fsrc["filename"], "module.config.artifacts")
    invoke = src.get("aws_lambda_function_event_invoke_config", {}).get("sweeper", {})
    uses("sweeper async maximum_retry_attempts", invoke.get("maximum_retry_attempts"), "module.config.sweeper_async_invoke.maximum_retry_attempts")
    uses("sweeper async maximum_event_age_in_seconds", invoke.get("maximum_event_age_in_seconds"), "module.config.sweeper_async_invoke.maximum_event_age_in_seconds")
    uses("sweep target retry policy", src["aws_cloudwatch_event_target"]["sweep"]["retry_policy"], "module.config.sweep_target_retry")
    uses("sweep schedule", src["aws_cloudwatch_event_rule"]["sweep"]["schedule_expression"], "module.config.sweep_schedule")

    for kind in ("dead_letter", "destination"):
        for where, body, settings in (("modules/outbox", src, "local.queue_settings"), ("examples/orders", example, "module.config.queue_settings")):
            q = body["aws_sqs_queue"][kind]
            uses(f"{where} {kind} queues max_message_size", q.get("max_message_size"), f"{settings}.max_message_size")
            uses(f"{where} {kind} queues retention", q.get("message_retention_seconds"), f"{settings}.message_retention_seconds")
            uses(f"{where} {kind} queues visibility", q.get("visibility_timeout_seconds"), "each.value.visibility")
    for where, body, settings in (("modules/outbox", src, "local.queue_settings"), ("examples/orders", example, "module.config.queue_settings")):
        uses(f"{where} destination queues redrive target", body["aws_sqs_queue"]["destination"].get("redrive_policy"), "aws_sqs_queue.dead_letter[each.value.dlq].arn")
        uses(f"{where} destination queues maxReceiveCount", body["aws_sqs_queue"]["destination"].get("redrive_policy"), f"{settings}.max_receive_count")
    uses("examples/orders queues", example["aws_sqs_queue"]["destination"].get("for_each"), "module.config.queues")
    queues = scalar(src["locals"]["queues"])
    holds(f"local.queues has every queue of module.config.names ({sorted(QUEUES)}), found {sorted(queues)}", sorted(queues) == sorted(QUEUES))
    for key, q in queues.items():
        holds(f"local.queues.{key}.name is {q.get('name')!r}, expected local.names.{key}", q.get("name") == f"${{local.names.{key}}}")
    uses("stream-failure queue visibility", queues.get("stream_failures", {}).get("visibility"), "local.queue_settings.stream_failures_visibility")

    ealarm = example["aws_cloudwatch_metric_alarm"]["this"]
    uses("example alarms for_each", ealarm["for_each"], "module.config.alarms")
    for attr in ("namespace", "metric_name", "dimensions", "statistic", "period", "evaluation_periods",
                 "datapoints_to_alarm", "threshold", "comparison_operator", "treat_missing_data"):
        uses(f"example alarm {attr}", ealarm[attr], f"each.value.{attr}")
    alarm = src["aws_cloudwatch_metric_alarm"]
    holds(f"one alarm resource for every alarm of module.config.alarms, found {sorted(alarm)}", sorted(alarm) == ["this"])
    if "this" not in alarm:
        return
    uses("alarms for_each", alarm["this"]["for_each"], "module.config.alarms")
    for attr in ("namespace", "metric_name", "dimensions", "statistic", "period", "evaluation_periods",
                 "datapoints_to_alarm", "threshold", "comparison_operator", "treat_missing_data"):
        uses(f"alarm {attr}", alarm["this"][attr], f"each.value.{attr}")
    # The large-payload bucket: every setting from module.config.large_payloads (local.large_payloads).
    holds("local.large_payloads is module.config.large_payloads", scalar(src["locals"].get("large_payloads")) == "${module.config.large_payloads}")
    s3 = {k: src.get(k, {}) for k in ("aws_s3_bucket", "aws_s3_bucket_public_access_block", "aws_s3_bucket_ownership_controls",
                                       "aws_s3_bucket_server_side_encryption_configuration", "aws_s3_bucket_lifecycle_configuration", "aws_s3_bucket_policy")}
    bucket = s3["aws_s3_bucket"].get("large_payloads", {})
    uses("large-payload bucket count", bucket.get("count"), "local.large_payloads.create")
    uses("large-payload bucket_prefix", bucket.get("bucket_prefix"), "local.large_payloads.bucket_prefix")
    for rtype, body in s3.items():
        for name, r in body.items():
            uses(f"{rtype}.{name} count", r.get("count"), "local.large_payloads.create")
    pab = s3["aws_s3_bucket_public_access_block"].get("large_payloads", {})
    holds("the large-payload bucket blocks all public access",
          all(scalar(pab.get(k)) is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets")))
    own = s3["aws_s3_bucket_ownership_controls"].get("large_payloads", {})
    holds("the large-payload bucket disables ACLs (BucketOwnerEnforced)", "BucketOwnerEnforced" in json.dumps(own.get("rule")))
    sse = json.dumps(s3["aws_s3_bucket_server_side_encryption_configuration"].get("large_payloads", {}).get("rule"))
    for attr in ("sse_algorithm", "kms_key_arn", "bucket_key_enabled"):
        uses(f"large-payload bucket encryption {attr}", sse, f"local.large_payloads.{attr}")
    life = json.dumps(s3["aws_s3_bucket_lifecycle_configuration"].get("large_payloads", {}).get("rule"))
    for attr in ("lifecycle_rule_id", "key_prefix", "retention_days", "abort_rule_id", "abort_incomplete_multipart_days"):
        uses(f"large-payload bucket lifecycle {attr}", life, f"local.large_payloads.{attr}")
    holds("the large-payload lifecycle rule is enabled", '"Enabled"' in life)
    pol = json.dumps(s3["aws_s3_bucket_policy"].get("large_payloads_tls_only", {}).get("policy"))
    holds("the large-payload bucket policy denies requests without TLS on the bucket and its objects",
          all(x in pol for x in ("Deny", "aws:SecureTransport", "false", "s3:*", "/*")))
    uses("OUTBOX_LARGE_PAYLOAD_BUCKET", src["locals"].get("common_environment"), "module.config.large_payloads.env.bucket")

    # The defaults a user of modules/outbox gets are the ones compared (modules/outbox-config's),
    # except where a provider version forces a difference.
    config_vars = module_sources("modules/outbox-config")["variable"]
    for name, body in sorted(src["variable"].items()):
        if name in config_vars and name not in KNOWN_DEFAULT_DIFFERENCES:
            mine, theirs = scalar(body.get("default")), scalar(config_vars[name].get("default"))
            holds(f"variable {name}: modules/outbox's default {mine!r} is modules/outbox-config's {theirs!r}", mine == theirs)
    for name, why in KNOWN_DEFAULT_DIFFERENCES.items():
        holds(f"variable {name} is listed as a known default difference ({why}) but its defaults agree",
              scalar(src["variable"][name].get("default")) != scalar(config_vars[name].get("default")))

    # Likewise the orders example's: examples/orders passes its variables to examples/orders-config
    # (the compared one), so a default given in both must be the same.
    example_vars = module_sources("examples/orders")["variable"]
    example_config_vars = module_sources("examples/orders-config")["variable"]
    for name, body in sorted(example_vars.items()):
        if name in example_config_vars and "default" in body and name not in KNOWN_DEFAULT_DIFFERENCES:
            mine, theirs = scalar(body.get("default")), scalar(example_config_vars[name].get("default"))
            holds(f"variable {name} defaults to {mine!r}, examples/orders-config's to {theirs!r}: they must agree", mine == theirs, "examples/orders")

    dash = src["aws_cloudwatch_dashboard"]["outbox"]
    uses("dashboard name", dash["dashboard_name"], "module.config.dashboard.name")
    uses("dashboard widgets", dash["dashboard_body"], "module.config.dashboard.widgets")


def compare(variant: str, template: dict, tf: dict, module_queues: dict) -> None:
    """Every compared value of one variant (module_queues: local.queues of modules/outbox, parsed;
    the example's queues come with tf)."""
    names = tf["names"]
    tf_queues = {**module_queues, **tf["example_queues"]}
    v = f"[{variant}]"
    fn_ids = {
        key: next(k for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["FunctionName"] == names[key])
        for key in FUNCTIONS
    }
    queue_names = {r_id: r["Properties"]["QueueName"] for r_id, r in template["Resources"].items() if r["Type"] == "AWS::SQS::Queue"}

    # ---------------------------------------------------------------- stream filter, mappings
    file_filter = json.loads(FILTER_FILE.read_text())
    stream = [r["Properties"] for r in resources_of(template, "AWS::Lambda::EventSourceMapping") if "FilterCriteria" in r["Properties"]]
    if len(stream) != 1:
        raise SystemExit(f"CDK template {v}: expected one stream mapping with FilterCriteria, found {len(stream)}")
    stream = stream[0]
    home = tf["home_regions"]
    region = home["region"]
    cdk_filter = resolved(stream["FilterCriteria"], template, region)
    same(f"{v} stream FilterCriteria (CDK, resolved in {region}) vs Terraform: the same pattern text", cdk_filter, tf["stream_filter"])
    same(f"{v} stream filter base (Terraform) is infra/stream-filter.json", tf["stream_filter_file"], file_filter)
    settings = VARIANTS_RESOLVED[variant]
    default_home = settings.get("defaultHomeRegion", region)
    want = expected_filter(region, default_home)
    for side, got in (("CDK", cdk_filter), ("Terraform", tf["stream_filter"])):
        same(f"{v} stream filters ({side}): the file's with HomeRegion.S = {region}{' and, the default home, HomeRegion.S exists:false' if default_home == region else ''}",
             [json.loads(f["Pattern"]) for f in got["Filters"]], want["Filters"])
    same(f"{v} home regions (Terraform) are the settings'", [home["region"], home["default_home_region"], home["regions"]],
         [region, default_home, settings.get("globalTableRegions", [])])
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
        same(f"{v} stream mapping {cfn}", stream.get(cfn), m[hcl])
    same(f"{v} stream mapping has an on-failure destination", "OnFailure" in stream.get("DestinationConfig", {}), True)
    if tf["existing_table"]:
        same(f"{v} stream mapping source (existing table)", stream["EventSourceArn"], tf["existing_table"]["stream_arn"])

    consumer_esm = one(template, "AWS::Lambda::EventSourceMapping", FunctionName={"Ref": fn_ids["consumer"]})
    same(f"{v} consumer mapping BatchSize", consumer_esm["BatchSize"], tf["consumer_mapping"]["batch_size"])
    same(f"{v} consumer mapping FunctionResponseTypes", consumer_esm["FunctionResponseTypes"], tf["consumer_mapping"]["function_response_types"])
    same(f"{v} consumer mapping source", queue_names.get(consumer_esm["EventSourceArn"]["Fn::GetAtt"][0]), names["orders_queue"])
    recovery_esm = one(template, "AWS::Lambda::EventSourceMapping", FunctionName={"Ref": fn_ids["recovery"]})
    same(f"{v} recovery mapping BatchSize", recovery_esm["BatchSize"], tf["recovery_mapping"]["batch_size"])
    same(f"{v} recovery mapping FunctionResponseTypes", recovery_esm["FunctionResponseTypes"], tf["recovery_mapping"]["function_response_types"])
    same(f"{v} recovery mapping source", queue_names.get(recovery_esm["EventSourceArn"]["Fn::GetAtt"][0]), names["stream_failures"])

    # ---------------------------------------------------------------- tables
    tables = {r["Properties"]["TableName"]: r for r in resources_of(template, "AWS::DynamoDB::Table")}
    protection = tf["tables"]["deletion_protection"]
    if tf["existing_table"]:
        same(f"{v} tables (existing outbox table: only the orders table is created)", sorted(tables), [names["orders_table"]])
    else:
        t = tf["outbox_table"]
        table = tables[names["outbox_table"]]["Properties"]
        same(
            f"{v} outbox table key schema",
            table["KeySchema"],
            [{"AttributeName": t["hash_key"], "KeyType": "HASH"}, {"AttributeName": t["range_key"], "KeyType": "RANGE"}],
        )
        same(
            f"{v} outbox table attributes",
            sorted((a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]),
            sorted((a["name"], a["type"]) for a in t["attributes"]),
        )
        gsi = t["sweep_index"]
        same(
            f"{v} outbox table sweeper index",
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
        same(f"{v} outbox table TTL attribute", table["TimeToLiveSpecification"], {"AttributeName": t["ttl_attribute"], "Enabled": True})
        same(f"{v} outbox table stream view type", table["StreamSpecification"]["StreamViewType"], t["stream_view_type"])
        same(f"{v} outbox table PITR", table["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True})
        same(f"{v} outbox table SSE", table["SSESpecification"]["SSEEnabled"], True)
        same(f"{v} outbox table billing", table["BillingMode"], "PAY_PER_REQUEST")
    orders = tables[names["orders_table"]]["Properties"]
    same(f"{v} orders table key schema", orders["KeySchema"], [{"AttributeName": tf["orders_table"]["hash_key"], "KeyType": "HASH"}])
    same(f"{v} orders table TTL", orders["TimeToLiveSpecification"], {"AttributeName": tf["orders_table"]["ttl_attribute"], "Enabled": True})
    same(f"{v} orders table PITR", orders["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True})
    for name, r in tables.items():
        same(f"{v} table {name} deletion protection", r["Properties"].get("DeletionProtectionEnabled"), protection)
        # CDK retains protected tables on `cdk destroy`; unprotected ones are deleted, as by `terraform destroy`.
        same(f"{v} table {name} deletion policy", r.get("DeletionPolicy"), "Retain" if protection else "Delete")

    # ---------------------------------------------------------------- functions
    fns = tf["functions"]
    env_by_fn = {
        "publisher": tf["publisher_environment"],
        "sweeper": tf["sweeper_environment"],
        "consumer": tf["consumer_environment"],
        "recovery": tf["recovery_environment"],
    }
    for key in FUNCTIONS:
        props = one(template, "AWS::Lambda::Function", FunctionName=names[key])
        own = tf["consumer_function"] if key == "consumer" else fns  # the example's consumer: examples/orders-config
        same(f"{v} {key} runtime", props["Runtime"], own["runtime"])
        same(f"{v} {key} handler", props["Handler"], own["handler"])
        same(f"{v} {key} architectures", props["Architectures"], own["architectures"])
        same(f"{v} {key} memory", props["MemorySize"], own["memory_size"])
        same(f"{v} {key} timeout", props["Timeout"], fns["timeouts"][key])
        same(f"{v} {key} reserved concurrency", props.get("ReservedConcurrentExecutions"), fns["reserved_concurrency"][key])
        env = resolved(props["Environment"]["Variables"], template, tf["home_regions"]["region"])
        static = {k: x for k, x in env.items() if isinstance(x, str) and k.startswith("OUTBOX_") and k != "OUTBOX_TABLE_NAME"}
        same(f"{v} {key} static OUTBOX_* env", static, env_by_fn[key])
        # The names of the variables modules/outbox fills in from deployed resources (table name,
        # routes, DLQ URL; functions.tf local.environment): the mocked-provider tests check them there.
        tf_dynamic = {"publisher": ["OUTBOX_DLQ_URL", "OUTBOX_ROUTES", "OUTBOX_TABLE_NAME"], "consumer": ["ORDERS_TABLE_NAME"], "recovery": ["OUTBOX_TABLE_NAME"]}
        if tf["large_payloads"]["create"]:
            tf_dynamic["publisher"].append(tf["large_payloads"]["env"]["bucket"])  # the created bucket's name
        tf_dynamic["sweeper"] = tf_dynamic["publisher"]
        same(f"{v} {key} environment variable names", sorted(env), sorted([*env_by_fn[key], *tf_dynamic[key]]))
        if key in ("publisher", "sweeper"):
            routes = joined(env["OUTBOX_ROUTES"], lambda t: PARITY_QUEUE_URL + queue_names[t["Ref"]])
            same(f"{v} {key} OUTBOX_ROUTES", json.loads(routes), json.loads(tf["routes_json"]))
        if key == "recovery":
            same(
                f"{v} recovery function's failure queue visibility >= 6 x its timeout (CDK)",
                one(template, "AWS::SQS::Queue", QueueName=names["stream_failures"])["VisibilityTimeout"] >= 6 * props["Timeout"],
                True,
            )
            same(f"{v} recovery function's failure queue visibility >= 6 x its timeout (Terraform)", tf["queue_settings"]["stream_failures_visibility"] >= 6 * fns["timeouts"]["recovery"], True)
        if tf["existing_table"] and key != "consumer":
            same(f"{v} {key} OUTBOX_TABLE_NAME (existing table)", env["OUTBOX_TABLE_NAME"], tf["existing_table"]["name"])

    sweeper_id = fn_ids["sweeper"]
    invoke = [r["Properties"] for r in resources_of(template, "AWS::Lambda::EventInvokeConfig")]
    same(f"{v} async invoke configs (the sweeper's only)", [i["FunctionName"] for i in invoke], [{"Ref": sweeper_id}])
    same(
        f"{v} sweeper async invoke config",
        {"maximum_retry_attempts": invoke[0].get("MaximumRetryAttempts"), "maximum_event_age_in_seconds": invoke[0].get("MaximumEventAgeInSeconds")},
        tf["sweeper_async_invoke"],
    )

    # ---------------------------------------------------------------- IAM: actions and literal resources
    by_role = cdk_role_statements(template)
    for key in FUNCTIONS:
        role = one(template, "AWS::Lambda::Function", FunctionName=names[key])["Role"]["Fn::GetAtt"][0]
        cdk_st = by_role[role]
        tf_st = tf["policies"][key]["Statement"]
        acts = lambda st: sorted({a for s in st for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])})  # noqa: E731
        lits = lambda st: sorted({r for s in st for r in literal_strings(s["Resource"])})  # noqa: E731
        same(f"{v} {key} IAM actions", acts(cdk_st), acts(tf_st))
        same(f"{v} {key} IAM literal resources (routes, KMS key, existing table)", lits(cdk_st), lits(tf_st))
        if key == "sweeper":
            # Both stacks do what the setting says, not merely the same thing: the mode reaches
            # OUTBOX_SWEEP_SCAN_MODE, and Scan and the cursors' PutItem are granted unless it is off.
            mode = scan_mode_of(VARIANTS_RESOLVED[variant])
            cdk_env = one(template, "AWS::Lambda::Function", FunctionName=names[key])["Environment"]["Variables"]
            same(f"{v} sweeper OUTBOX_SWEEP_SCAN_MODE (CDK) is the setting's", cdk_env.get("OUTBOX_SWEEP_SCAN_MODE"), mode)
            same(f"{v} sweeper OUTBOX_SWEEP_SCAN_MODE (Terraform) is the setting's", tf["sweeper_environment"].get("OUTBOX_SWEEP_SCAN_MODE"), mode)
            for side, st in (("CDK", cdk_st), ("Terraform", tf_st)):
                granted = [a for a in ("dynamodb:Scan", "dynamodb:PutItem") if a in acts(st)]
                same(f"{v} sweeper Scan and scan-cursor PutItem under scan mode {mode} ({side})", granted, [] if mode == "off" else ["dynamodb:Scan", "dynamodb:PutItem"])
        # Each action on exactly which resource under which condition (the scan cursors'
        # dynamodb:LeadingKeys, GetQueueAttributes on exactly the queues SendMessage reaches, ...).
        same_set(
            f"{v} {key} IAM grants (effect, action, resource, condition)",
            grants(cdk_st, lambda r: cdk_resource(template, r, names)),
            grants(tf_st, lambda r: tf_resource(r, names)),
        )

    # ---------------------------------------------------------------- the producer's policy
    # What an application role gets to write outbox messages: the same grants, however the
    # statements are named (a managed policy in both).
    producer = one(template, "AWS::IAM::ManagedPolicy", ManagedPolicyName=names["producer_policy"])
    same_set(
        f"{v} producer policy grants (effect, action, resource, condition)",
        grants(producer["PolicyDocument"]["Statement"], lambda r: cdk_resource(template, r, names)),
        grants(tf["producer_policy"]["Statement"], lambda r: tf_resource(r, names)),
    )

    # ---------------------------------------------------------------- schedule
    rule = resources_of(template, "AWS::Events::Rule")[0]["Properties"]
    same(f"{v} sweep schedule", rule["ScheduleExpression"], tf["sweep_schedule"])
    retry = rule["Targets"][0].get("RetryPolicy", {})
    same(
        f"{v} sweep target retry policy",
        {"maximum_retry_attempts": retry.get("MaximumRetryAttempts"), "maximum_event_age_in_seconds": retry.get("MaximumEventAgeInSeconds")},
        tf["sweep_target_retry"],
    )

    # ---------------------------------------------------------------- queues, logs
    q = tf["queue_settings"]
    cdk_queues = {r["Properties"]["QueueName"]: r["Properties"] for r in resources_of(template, "AWS::SQS::Queue")}
    tf_queue_names = sorted(names[k] for k in tf_queues)
    same(f"{v} queue names", sorted(cdk_queues), tf_queue_names)
    for name, props in cdk_queues.items():
        same(f"{v} queue {name} retention", props["MessageRetentionPeriod"], q["message_retention_seconds"])
        same(f"{v} queue {name} MaximumMessageSize", props.get("MaximumMessageSize"), q["max_message_size"])
        same(f"{v} queue {name} encrypted", bool(props.get("SqsManagedSseEnabled") or props.get("KmsMasterKeyId")), True)
    # Which queue redrives to which DLQ, after how many receives (Terraform: local.queues of modules/outbox).
    same(
        f"{v} redrive (queue -> DLQ, maxReceiveCount)",
        {
            name: (queue_names[p["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]], p["RedrivePolicy"]["maxReceiveCount"])
            for name, p in cdk_queues.items()
            if "RedrivePolicy" in p
        },
        {
            names[k]: (names[x["dlq"]], (tf["example_queue_settings"] if k in tf["example_queues"] else q)["max_receive_count"])
            for k, x in tf_queues.items()
            if x.get("dlq")
        },
    )
    same(f"{v} orders queue visibility", cdk_queues[names["orders_queue"]]["VisibilityTimeout"], q["consumer_visibility"])
    same(f"{v} stream-failure queue visibility", cdk_queues[names["stream_failures"]]["VisibilityTimeout"], q["stream_failures_visibility"])

    for props in (r["Properties"] for r in resources_of(template, "AWS::Logs::LogGroup")):
        same(f"{v} log retention {props['LogGroupName']}", props["RetentionInDays"], tf["log_retention_days"])

    # ---------------------------------------------------------------- large-payload bucket (S3 claim check)
    lp = tf["large_payloads"]
    settings = VARIANTS_RESOLVED[variant]
    wanted = settings.get("largePayloads", LARGE_PAYLOADS_DEFAULT)
    buckets = {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::S3::Bucket"}
    existing = settings.get("largePayloadBucketName") if wanted else None
    same(f"{v} large-payload bucket created (CDK) as the settings say", len(buckets), 1 if wanted and not existing else 0)
    same(f"{v} large-payload bucket created (Terraform) as the settings say", (lp["enabled"], lp["create"]), (wanted, wanted and not existing))
    same(f"{v} large-payload bucket attached (Terraform)", lp["existing_name"], existing)
    same(f"{v} large-payload bucket output (CDK)", "LargePayloadBucketName" in template.get("Outputs", {}), wanted)
    env_var = lp["env"]["bucket"]
    for key in FUNCTIONS:
        env = one(template, "AWS::Lambda::Function", FunctionName=names[key])["Environment"]["Variables"]
        writer = key in ("publisher", "sweeper")
        same(f"{v} {key} has {env_var} (CDK)", env_var in env, wanted and writer)
        if env_var in env:
            same(f"{v} {key} {env_var} is the bucket's name (CDK)", env[env_var], existing or {"Ref": next(iter(buckets), None)})
    same(f"{v} OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES (Terraform) is the setting's",
         tf["publisher_environment"].get(lp["env"]["threshold_bytes"]),
         None if settings.get("largePayloadThresholdBytes") is None else str(settings["largePayloadThresholdBytes"]))
    if wanted and buckets:
        bid, bucket = next(iter(buckets.items()))
        props = bucket["Properties"]
        retention = settings.get("largePayloadRetentionDays", LARGE_PAYLOAD_RETENTION_DAYS_DEFAULT)
        same(f"{v} large-payload retention (Terraform) is the setting's", lp["retention_days"], retention)
        rules = [
            {"Id": lp["lifecycle_rule_id"], "Prefix": lp["key_prefix"], "Status": "Enabled", "ExpirationInDays": lp["retention_days"]},
            {"Id": lp["abort_rule_id"], "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": lp["abort_incomplete_multipart_days"]}},
        ]
        same(f"{v} large-payload lifecycle", props.get("LifecycleConfiguration"), {"Rules": rules})
        same(f"{v} large-payload retention > every queue's retention",
             lp["retention_days"] * 86400 > max([q["message_retention_seconds"], *(p["MessageRetentionPeriod"] for p in cdk_queues.values())]), True)
        default = {"SSEAlgorithm": lp["sse_algorithm"], **({"KMSMasterKeyID": lp["kms_key_arn"]} if lp["kms_key_arn"] else {})}
        same(f"{v} large-payload encryption", props.get("BucketEncryption"), {
            "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": default, **({"BucketKeyEnabled": True} if lp["bucket_key_enabled"] else {})}]})
        same(f"{v} large-payload encryption uses the stack's KMS key", lp["kms_key_arn"], settings.get("kmsKeyArn"))
        same(f"{v} large-payload public access block (CDK)", props.get("PublicAccessBlockConfiguration"),
             {k: True for k in ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")})
        same(f"{v} large-payload ownership (CDK)", props.get("OwnershipControls"), {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
        same(f"{v} large-payload versioning (CDK: none)", props.get("VersioningConfiguration"), None)
        policies = [r["Properties"] for r in resources_of(template, "AWS::S3::BucketPolicy") if r["Properties"]["Bucket"] == {"Ref": bid}]
        same(f"{v} large-payload bucket policy (CDK): deny without TLS", [
            (st["Effect"], st["Action"], st.get("Condition")) for p in policies for st in p["PolicyDocument"]["Statement"]
        ], [("Deny", "s3:*", {"Bool": {"aws:SecureTransport": "false"}})])

    # ---------------------------------------------------------------- alarms
    prefix = names["outbox_table"].removesuffix("-table")
    cdk_alarms = {}
    for r in resources_of(template, "AWS::CloudWatch::Alarm"):
        a = r["Properties"]
        cdk_alarms[a["AlarmName"]] = {
            "description": a["AlarmDescription"],
            "namespace": a["Namespace"],
            "metric_name": a["MetricName"],
            "dimensions": {d["Name"]: d["Value"] for d in a["Dimensions"]},
            "statistic": a["Statistic"],
            "period": a["Period"],
            "evaluation_periods": a["EvaluationPeriods"],
            "datapoints_to_alarm": a.get("DatapointsToAlarm"),
            "threshold": a["Threshold"],
            "comparison_operator": a["ComparisonOperator"],
            "treat_missing_data": a["TreatMissingData"],
            "actions": a.get("AlarmActions", []),
        }
    topic = VARIANTS_RESOLVED[variant].get("alarmTopicArn")  # outbox-config has no alarm actions; modules/outbox notifies this topic
    actions = [topic] if topic else []
    tf_alarms = {f"{prefix}-{k}": {**a, "actions": actions} for k, a in tf["alarms"].items()}
    same(f"{v} alarm names", sorted(cdk_alarms), sorted(tf_alarms))
    for name in sorted(set(cdk_alarms) & set(tf_alarms)):
        same(f"{v} alarm {name}", cdk_alarms[name], tf_alarms[name])

    # ---------------------------------------------------------------- dashboard
    dashboards = [r["Properties"] for r in resources_of(template, "AWS::CloudWatch::Dashboard")]
    same(f"{v} dashboard names", [d["DashboardName"] for d in dashboards], [tf["dashboard"]["name"]])
    body = json.loads(joined(dashboards[0]["DashboardBody"], lambda t: "REGION" if t == {"Ref": "AWS::Region"} else json.dumps(t)))
    # The deployment's region: the AWS::Region token, or the region the app was synthesized for.
    regions = {w["properties"].pop("region", None) for w in body["widgets"]}
    same(f"{v} dashboard: every widget has the deployment region", len(regions) == 1 and None not in regions, True)
    # The same lines in each widget, in any order: the outbox's functions and queues come
    # before those the caller adds (the orders consumer, the example DLQs).
    same(f"{v} dashboard widgets", unordered_metrics(body["widgets"]), unordered_metrics(tf["dashboard"]["widgets"]))


def unordered_metrics(widgets: list) -> list:
    return [{**w, "properties": {**w["properties"], "metrics": sorted(w["properties"]["metrics"], key=json.dumps)}} for w in widgets]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("template", type=Path, help="the CDK template synthesized with the default settings")
    parser.add_argument("--keep", type=Path, help="write the other variants' CDK templates here")
    args = parser.parse_args()

    src = module_sources()
    compare_module_sources(src, module_sources("examples/orders"))
    tf_queues = scalar(src["locals"]["queues"])
    default_template = json.loads(args.template.read_text())
    # Every variant is synthesized in the same environment: the default template's region.
    region = template_region(default_template)
    for variant, settings in VARIANTS.items():
        VARIANTS_RESOLVED[variant] = with_regions(settings, region)
    for i, (variant, settings) in enumerate(VARIANTS_RESOLVED.items()):
        if not settings:
            template = default_template
        else:
            with tempfile.TemporaryDirectory(prefix="outbox-parity-cdk-") as out:
                template = synth(settings, Path(out))
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"variant-{i}.template.json").write_text(json.dumps(template, indent=1))
        holds(f"[{variant}] the CDK app is synthesized for {region}, like the default template", template_region(template) == region, "parity")
        compare(variant, template, terraform_config(settings, region), tf_queues)

    if failures:
        print(f"parity: {len(failures)} of {checked} checks differ between CDK and Terraform:")
        for f in failures:
            print(f"  - {f}")
        return 1
    print(
        f"parity: CDK and Terraform agree on {checked} checks over {len(VARIANTS)} variants of the settings "
        f"({', '.join(VARIANTS)}): filter, mappings, tables, names, functions, async invoke, IAM grants, queues, redrive, routes, large-payload bucket, alarms, dashboard"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
