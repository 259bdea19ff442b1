#!/usr/bin/env bash
# All infrastructure checks, offline (only the npm and PyPI registries are used,
# for installs, and only when the lockfiles changed):
#   CDK:        tsc type check, node:test assertion + cdk-nag tests, npm pack contents, cdk synth, cfn-lint
#   Terraform:  fmt -check, terraform test (the provider-free configs of the module and of
#               the orders example), the module README's inputs/outputs tables, checkov; with
#               a filesystem mirror of hashicorp/aws (OUTBOX_TF_PROVIDER_MIRROR, default
#               /opt/tf-plugins): validate of the module, the orders example and the example
#               roots, and terraform test of the module against a mocked provider
#   Both:       parity check (filter, retries, batch sizes, table shape, ..., per variant of the settings)
# Usage: bash infra/check.sh      Exits non-zero on the first failure.
set -euo pipefail

INFRA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CDK="$INFRA/cdk"
TF="$INFRA/terraform"
VENV="$INFRA/.venv"
REQ="$TF/requirements.txt"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/outbox-infra-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

export CDK_DISABLE_CLI_TELEMETRY=true CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false BC_SKIP_MAPPING=TRUE
export TF_IN_AUTOMATION=1 TF_INPUT=0 NO_COLOR=1
# A CLI config that may not exist only produces warnings; use an empty one.
export TF_CLI_CONFIG_FILE="$WORK/terraformrc"
: >"$TF_CLI_CONFIG_FILE"

step() { printf '\n==> %s\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "infra/check.sh: '$1' is required but not installed" >&2; exit 1; }; }
need node
need npm
need python3
need terraform

# ---------------------------------------------------------------- installs (skipped when up to date)
step "install: npm ci (infra/cdk)"
if [[ -f "$CDK/node_modules/.outbox-lock" ]] && cmp -s "$CDK/package-lock.json" "$CDK/node_modules/.outbox-lock"; then
  echo "node_modules up to date"
else
  (cd "$CDK" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$CDK/package-lock.json" "$CDK/node_modules/.outbox-lock"
fi

step "install: Python venv with pinned cfn-lint and checkov (infra/.venv)"
if [[ -x "$VENV/bin/python" ]] && cmp -s "$REQ" "$VENV/.outbox-requirements"; then
  echo "venv up to date"
else
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQ"
  cp "$REQ" "$VENV/.outbox-requirements"
fi

# ---------------------------------------------------------------- CDK
# Fake function code: synthesis checks <bin>/bootstrap is an arm64 ELF executable (the
# default architecture), so each is a 64-byte arm64 ELF header, not a real Rust build.
ASSETS="$WORK/assets"
python3 "$INFRA/fake-artifacts.py" assets "$ASSETS" --arch arm64
export OUTBOX_LAMBDA_ASSET_DIR="$ASSETS"

cd "$CDK"
step "cdk: type check (tsc --noEmit)"
npx --no-install tsc --noEmit -p .

step "cdk: tests (node --test: template assertions, cdk-nag on fresh apps)"
node --import tsx --test \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$WORK/node-test.tap" \
  test/*.test.ts
FAIL=$(sed -n 's/^# fail //p' "$WORK/node-test.tap")
PASS=$(sed -n 's/^# pass //p' "$WORK/node-test.tap")
[[ "$FAIL" == "0" && "${PASS:-0}" -gt 0 ]] || { echo "cdk tests failed" >&2; exit 1; }

step "cdk: npm pack --dry-run (the published package holds the compiled library, its stream filter and README only)"
npm pack --dry-run --json --loglevel=error >"$WORK/pack.json"
python3 - "$WORK/pack.json" <<'EOF'
import json, re, sys
pack = json.load(open(sys.argv[1]))[0]
files = sorted(f["path"] for f in pack["files"])
allowed = re.compile(r"^(package\.json|README\.md|dist/[a-z0-9-]+\.(js|d\.ts)|dist/stream-filter\.json)$")
stray = [f for f in files if not allowed.match(f)]
stray += [f"(missing) {f}" for f in ("package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/stream-filter.json") if f not in files]
print(f"{pack['name']}@{pack['version']}: {len(files)} files, {pack['size']} bytes packed")
if stray:
    print("not part of the library:", *stray, sep="\n  ")
    sys.exit(1)
EOF

step "cdk: synth (cdk-nag AwsSolutions runs as a validation plugin; findings fail the synth)"
npx --no-install cdk synth --quiet --no-notices --no-version-reporting -o "$WORK/cdk.out" >/dev/null
TEMPLATE="$WORK/cdk.out/DynamoDbOutbox.template.json"
python3 - "$WORK/cdk.out/validation-report.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
violations = [v for r in report.get("pluginReports", []) for v in r.get("violations", [])]
for v in violations:
    print("cdk-nag:", v["ruleName"], [c["constructPath"] for c in v["violatingConstructs"]])
sys.exit(1 if violations else 0)
EOF
python3 - "$TEMPLATE" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
acks = [(k, a["id"], a["reason"]) for k, r in t["Resources"].items() for a in r.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])]
print(f"synthesized {len(t['Resources'])} resources; cdk-nag: 0 findings, {len(acks)} acknowledged:")
for k, i, reason in acks:
    print(f"  {i} on {k}: {reason}")
EOF

step "cdk: cfn-lint on the synthesized template"
"$VENV/bin/cfn-lint" --version
"$VENV/bin/cfn-lint" "$TEMPLATE"
echo "cfn-lint: no findings"

# ---------------------------------------------------------------- Terraform
cd "$TF"
step "terraform: fmt -check -recursive"
terraform fmt -check -recursive -diff .

step "terraform: test (modules/outbox-config and examples/orders-config, provider-free; validate modules/lambda-artifacts)"
TF_PASS=0
for dir in modules/outbox-config examples/orders-config; do
  (
    export TF_DATA_DIR="$WORK/tf-data/$dir"
    cd "$dir"
    terraform init -backend=false -input=false >/dev/null
    terraform validate -no-color
    terraform test -no-color | tee "$WORK/tf-test.txt"
  )
  grep -Eq '^Success! [0-9]+ passed, 0 failed' "$WORK/tf-test.txt"
  TF_PASS=$((TF_PASS + $(sed -nE 's/^Success! ([0-9]+) passed, 0 failed.*/\1/p' "$WORK/tf-test.txt")))
done
(
  export TF_DATA_DIR="$WORK/tf-data/modules/lambda-artifacts"
  cd modules/lambda-artifacts
  terraform init -backend=false -input=false >/dev/null
  terraform validate -no-color
)

step "terraform: modules/outbox/README.md documents every input and output (module_docs.py; --write regenerates)"
"$VENV/bin/python" module_docs.py modules/outbox

step "terraform: validate modules/outbox, examples/orders, examples/basic, examples/local, examples/global-table and examples/global-table-local, test modules/outbox (mocked provider)"
MIRROR="${OUTBOX_TF_PROVIDER_MIRROR:-/opt/tf-plugins}"
TF_MOCK_PASS=0
if compgen -G "$MIRROR/registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*" >/dev/null; then
  # Only the mirror: nothing is downloaded. Each directory gets its own data dir under $WORK.
  cat >"$WORK/terraformrc-mirror" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$MIRROR"
    include = ["registry.terraform.io/hashicorp/aws"]
  }
}
RC
  for dir in modules/outbox examples/orders examples/basic examples/local examples/global-table examples/global-table-local; do
    (
      export TF_CLI_CONFIG_FILE="$WORK/terraformrc-mirror" TF_DATA_DIR="$WORK/tf-data/$dir"
      cd "$dir"
      terraform init -backend=false -input=false >/dev/null
      terraform validate -no-color
      if [[ "$dir" == modules/outbox ]]; then
        terraform test -no-color | tee "$WORK/tf-mock-test.txt"
      fi
    )
  done
  grep -Eq '^Success! [0-9]+ passed, 0 failed' "$WORK/tf-mock-test.txt"
  TF_MOCK_PASS=$(sed -nE 's/^Success! ([0-9]+) passed, 0 failed.*/\1/p' "$WORK/tf-mock-test.txt")
else
  echo "SKIPPED: no filesystem mirror of hashicorp/aws at $MIRROR (set OUTBOX_TF_PROVIDER_MIRROR);"
  echo "         modules/outbox and the examples are not validated, the mocked-provider tests do not run."
fi

step "terraform: checkov (modules and example; skips are inline #checkov:skip with reasons)"
"$VENV/bin/checkov" --version
"$VENV/bin/checkov" -d . --framework terraform --compact --quiet --skip-download --output cli | tee "$WORK/checkov.txt"
# A file checkov cannot parse is skipped without failing the scan: refuse that too.
if grep -Eq 'Parsing errors: [1-9]' "$WORK/checkov.txt"; then
  "$VENV/bin/checkov" -d . --framework terraform --skip-download --output cli 2>&1 | grep -E '^Error parsing file' >&2 || true
  echo "checkov could not parse a file (python-hcl2); rewrite the construct it trips on" >&2
  exit 1
fi
echo "checkov skips (each with its reason):"
grep -rhoE '#checkov:skip=[A-Z0-9_]+:.*' --include='*.tf' . | sed 's/#checkov:skip=/  /' | sort -u

# ---------------------------------------------------------------- both
step "parity: CDK and Terraform deploy the same system -- modules/outbox with the orders example -- (default settings, every setting changed, scan mode off, KMS-encrypted large-payload bucket, key names, default home region elsewhere / named, one region of a global table)"
"$VENV/bin/python" parity/check_parity.py "$TEMPLATE" --keep "$WORK/variants"

step "cdk: cfn-lint on the templates of the other parity variants"
"$VENV/bin/cfn-lint" --config-file "$CDK/.cfnlintrc.yaml" "$WORK"/variants/*.template.json
echo "cfn-lint: no findings"

printf '\ninfra/check.sh: all infrastructure checks passed (node:test %s, terraform test %s + %s with a mocked provider)\n' "$PASS" "$TF_PASS" "$TF_MOCK_PASS"
echo "infra: $((PASS + TF_PASS + TF_MOCK_PASS)) passed, 0 failed"
