#!/usr/bin/env bash
# All infrastructure checks, offline (only the npm and PyPI registries are used, for installs,
# and only when the lockfiles changed). This script installs the tools; infra/check.py runs:
#   CDK:        tsc, node:test (template assertions, the contract, cdk-nag, the example app
#               under two other settings), npm pack contents, cdk synth (cdk-nag as a
#               validation plugin), cfn-lint on the default template and the two others
#   Terraform:  fmt -check; the files infra/contract/contract.py generates; the module README's
#               tables; with a filesystem mirror of hashicorp/aws (OUTBOX_TF_PROVIDER_MIRROR,
#               default /opt/tf-plugins): validate of the module and every example root, and
#               terraform test (mocked provider) of the module and the orders example; checkov
#   Both:       the contract, infra/contract/settings.json: each stack's tests check it
# Usage: bash infra/check.sh      Exits non-zero on the first failure.
set -euo pipefail

INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CDK="$INFRA/cdk"
VENV="$INFRA/.venv"
REQ="$INFRA/terraform/requirements.txt"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/outbox-infra-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

export CDK_DISABLE_CLI_TELEMETRY=true CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false BC_SKIP_MAPPING=TRUE
export TF_IN_AUTOMATION=1 TF_INPUT=0 NO_COLOR=1
# A CLI config that may not exist only produces warnings; use an empty one.
export TF_CLI_CONFIG_FILE="$WORK/terraformrc-empty"
: >"$TF_CLI_CONFIG_FILE"

for tool in node npm python3 terraform; do
  command -v "$tool" >/dev/null 2>&1 || { echo "infra/check.sh: '$tool' is required but not installed" >&2; exit 1; }
done

echo "==> install: npm ci (infra/cdk), when its lockfile changed"
if ! cmp -s "$CDK/package-lock.json" "$CDK/node_modules/.outbox-lock" 2>/dev/null; then
  (cd "$CDK" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$CDK/package-lock.json" "$CDK/node_modules/.outbox-lock"
fi

echo "==> install: Python venv with pinned cfn-lint and checkov (infra/.venv), when its requirements changed"
if ! [[ -x "$VENV/bin/python" ]] || ! cmp -s "$REQ" "$VENV/.outbox-requirements"; then
  rm -rf "$VENV"
  if [[ -n "${OUTBOX_UV:-}" ]]; then # uv, from cargo xtask test: ~2 CPU-s against pip's ~60
    "$OUTBOX_UV" venv --quiet --python python3 "$VENV"
    "$OUTBOX_UV" pip install --quiet --python "$VENV/bin/python" -r "$REQ"
  else
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQ"
  fi
  cp "$REQ" "$VENV/.outbox-requirements"
fi

"$VENV/bin/python" "$INFRA/check.py" "$WORK"
