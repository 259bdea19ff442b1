#!/usr/bin/env bash
# The resources a Terraform root would create, one address a line, sorted:
#   module.outbox.aws_lambda_function.this["publisher"]
# for comparing a root's plan with an expected list (the adoption test). Nothing is applied;
# planning needs no AWS account when the root's provider skips its checks (examples/local),
# otherwise the credentials of the account planned for.
#
#   infra/terraform/list-planned-resources.sh DIR [--names] [-- PLAN ARGS...]
#     --names   print "<address> <physical name>" (name, function_name, queue name, ... when
#               known at plan) instead of the address alone
#   e.g. infra/terraform/list-planned-resources.sh infra/terraform/examples/local -- \
#          -var endpoint=http://127.0.0.1:4566 -var lambda_asset_dir=$PWD/target/lambda
#
# Providers come from the filesystem mirror TF_PLUGIN_MIRROR (default /opt/tf-plugins) when
# it holds hashicorp/aws, else from the registry. The working state (.terraform, the plan)
# lives in a temporary directory; DIR is left as it was.
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n '2,17p' "$0" >&2; exit 2; }
dir=$(cd "$1" && pwd); shift
names=false
if [[ "${1:-}" == --names ]]; then names=true; shift; fi
if [[ "${1:-}" == -- ]]; then shift; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/planned-resources.XXXXXX")
# init writes DIR/.terraform.lock.hcl; remove it again unless it was there before.
lock="$dir/.terraform.lock.hcl" keep_lock=false
[[ -e "$lock" ]] && keep_lock=true
trap 'rm -rf "$work"; $keep_lock || rm -f "$lock"' EXIT
export TF_IN_AUTOMATION=1 TF_INPUT=0 TF_DATA_DIR="$work/data" TF_CLI_CONFIG_FILE="$work/terraformrc"
mirror="${TF_PLUGIN_MIRROR:-/opt/tf-plugins}"
if [[ -d "$mirror/registry.terraform.io/hashicorp/aws" ]]; then
  printf 'provider_installation {\n  filesystem_mirror {\n    path    = "%s"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n  direct { exclude = ["registry.terraform.io/hashicorp/aws"] }\n}\n' "$mirror" >"$TF_CLI_CONFIG_FILE"
else
  : >"$TF_CLI_CONFIG_FILE"
fi
terraform -chdir="$dir" init -backend=false -input=false -no-color >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; exit 1; }
# -refresh=false, an empty state: everything the root declares is planned as created.
terraform -chdir="$dir" plan -input=false -no-color -refresh=false -state="$work/empty.tfstate" -out="$work/plan" "$@" >"$work/plan.log" 2>&1 \
  || { cat "$work/plan.log" >&2; exit 1; }
terraform -chdir="$dir" show -json "$work/plan" >"$work/plan.json"
python3 - "$work/plan.json" "$names" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
with_names = sys.argv[2] == "true"
rows = []
for rc in plan.get("resource_changes", []):
    if rc.get("mode") != "managed" or "create" not in rc["change"]["actions"]:
        continue
    after = rc["change"].get("after") or {}
    name = next((after[k] for k in ("name", "function_name", "alarm_name", "dashboard_name", "bucket_prefix", "statement_id") if isinstance(after.get(k), str)), "")
    rows.append(f"{rc['address']} {name}".rstrip() if with_names else rc["address"])
print("\n".join(sorted(rows)))
PY
