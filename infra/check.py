#!/usr/bin/env python3
"""The infrastructure checks that infra/check.sh runs once the tools are installed.

Each check is a function; they run in order and the first failure stops the run. The last
line counts the tests that passed (tests/run greps `infra:`).

  python3 infra/check.py WORK_DIR      (infra/check.sh passes its temporary directory)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

INFRA = Path(__file__).resolve().parent
CDK, TF = INFRA / "cdk", INFRA / "terraform"
VENV_BIN = INFRA / ".venv" / "bin"
WORK = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/outbox-infra-check")
MIRROR = Path(os.environ.get("OUTBOX_TF_PROVIDER_MIRROR", "/opt/tf-plugins"))
# Terraform directories: validated (and `terraform test`ed where they have tests/) with the mirrored provider.
TF_DIRS = ("modules/outbox", "examples/orders-config", "examples/orders", "examples/basic", "examples/local",
           "examples/global-table", "examples/global-table-local")
PACKED = re.compile(r"^(package\.json|README\.md|dist/[a-z0-9-]+\.(js|d\.ts)|dist/(stream-filter|settings)\.json)$")
# Settings of the example app beside the defaults' whose templates cfn-lint reads too: every
# setting changed; the scan and the bucket off (the old boolean). test/variants.test.ts
# synthesizes them in the node:test process (two `cdk synth` runs cost ~14 CPU-s each).
VARIANTS = json.loads((CDK / "test" / "variants.json").read_text())
passed: dict[str, int] = {}


def step(title: str) -> None:
    """Prints the step's title with the CPU-seconds the checks' commands have used so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"\n==> {title} ({used.ru_utime + used.ru_stime:.0f} CPU-s)", flush=True)


def run(*cmd: str, cwd: Path = INFRA, env: dict | None = None, capture: bool = False) -> str:
    """Runs a command (its output shown, or returned with capture); a failure ends the check."""
    done = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, text=True, capture_output=capture)
    if done.returncode != 0:
        if capture:
            print(done.stdout, done.stderr, sep="\n")
        raise SystemExit(f"infra/check.py: `{' '.join(cmd)}` failed in {cwd} (exit {done.returncode})")
    return done.stdout if capture else ""


def cdk() -> None:
    # Fake function code: synthesis checks <bin>/bootstrap is an arm64 ELF executable (the
    # default architecture), so each is a 64-byte arm64 ELF header, not a Rust build.
    run(sys.executable, str(INFRA / "fake-artifacts.py"), "assets", str(WORK / "assets"), "--arch", "arm64", capture=True)
    os.environ["OUTBOX_LAMBDA_ASSET_DIR"] = str(WORK / "assets")
    step("cdk: type check (tsc --noEmit)")
    run("npx", "--no-install", "tsc", "--noEmit", "-p", ".", cwd=CDK)
    step("cdk: tests (node --test: template assertions, the contract, cdk-nag on fresh apps)")
    tap = WORK / "node-test.tap"
    # test/all.ts runs every test/*.test.ts in one process: a process per file paid ~3.5 CPU-s
    # each to load aws-cdk-lib and warm up, and synthesized again what another file had.
    variants = WORK / "variants"
    variants.mkdir(exist_ok=True)
    run("node", "--import", "tsx", "--test", "--test-reporter=spec", "--test-reporter-destination=stdout",
        "--test-reporter=tap", f"--test-reporter-destination={tap}", "test/all.ts", cwd=CDK,
        env={"OUTBOX_TEMPLATE_DIR": str(variants)})
    counts = dict(re.findall(r"^# (pass|fail) (\d+)$", tap.read_text(), re.M))
    if counts.get("fail") != "0" or int(counts.get("pass", 0)) == 0:
        raise SystemExit(f"cdk tests failed: {counts}")
    passed["node:test"] = int(counts["pass"])

    step("cdk: npm pack --dry-run (the compiled library, its stream filter and contract, the README)")
    pack = json.loads(run("npm", "pack", "--dry-run", "--json", "--loglevel=error", cwd=CDK, capture=True))[0]
    files = sorted(f["path"] for f in pack["files"])
    stray = [f for f in files if not PACKED.match(f)]
    stray += [f"(missing) {f}" for f in ("package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/stream-filter.json", "dist/settings.json") if f not in files]
    print(f"{pack['name']}@{pack['version']}: {len(files)} files, {pack['size']} bytes packed")
    if stray:
        raise SystemExit("not part of the library:\n  " + "\n  ".join(stray))

    step("cdk: synth (cdk-nag AwsSolutions runs as a validation plugin; findings fail the synth), cfn-lint")
    out = WORK / "cdk.out"
    run("npx", "--no-install", "cdk", "synth", "--quiet", "--no-notices", "--no-version-reporting", "-o", str(out), cwd=CDK)
    report = json.loads((out / "validation-report.json").read_text())
    violations = [v for r in report.get("pluginReports", []) for v in r.get("violations", [])]
    for v in violations:
        print("cdk-nag:", v["ruleName"], [c["constructPath"] for c in v["violatingConstructs"]])
    if violations:
        raise SystemExit("cdk-nag findings")
    template = out / "DynamoDbOutbox.template.json"
    resources = json.loads(template.read_text())["Resources"]
    acks = [(k, a["id"], a["reason"]) for k, r in resources.items() for a in r.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])]
    print(f"synthesized {len(resources)} resources; cdk-nag: 0 findings, {len(acks)} acknowledged:")
    for k, i, reason in acks:
        print(f"  {i} on {k}: {reason}")
    templates = [template] + [WORK / "variants" / f"{name}.template.json" for name in VARIANTS]
    missing = [str(t) for t in templates if not t.is_file()]
    if missing:
        raise SystemExit(f"test/variants.test.ts wrote no template at {', '.join(missing)}")
    run(str(VENV_BIN / "cfn-lint"), "--config-file", str(CDK / ".cfnlintrc.yaml"), *map(str, templates))
    print(f"cfn-lint: no findings in {len(templates)} templates (the defaults, {', '.join(VARIANTS)})")


def terraform() -> None:
    step("terraform: fmt -check -recursive; the contract's generated files; the module README's tables")
    run("terraform", "fmt", "-check", "-recursive", "-diff", ".", cwd=TF)
    run(sys.executable, str(INFRA / "contract" / "contract.py"))
    run(str(VENV_BIN / "python"), "module_docs.py", "modules/outbox", cwd=TF)

    step(f"terraform: validate every module and root, terraform test where there are tests (provider from {MIRROR})")
    if not list(MIRROR.glob("registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*")):
        print(f"SKIPPED: no filesystem mirror of hashicorp/aws at {MIRROR} (set OUTBOX_TF_PROVIDER_MIRROR; nothing is downloaded here):")
        print("         the modules and roots are not validated, their tests (mocked provider) do not run.")
        return checkov()
    # Terraform and the AWS provider are Go programs that spend much of their time collecting
    # garbage while they handle the provider's schema: a heap allowed to grow to 5x the live data
    # instead of 2x (GOGC=400; peak RSS ~0.6 GB) cut `terraform test` of modules/outbox from 156
    # to 108 CPU-s, measured when each run block still started its own provider (now one is
    # shared: `shared_provider`). Only memory use changes.
    os.environ.setdefault("GOGC", "400")
    rc = WORK / "terraformrc"
    rc.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path    = "{MIRROR}"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }}\n}}\n')
    with shared_provider() as attach:
        for d in TF_DIRS:
            env = {"TF_CLI_CONFIG_FILE": str(rc), "TF_DATA_DIR": str(WORK / "tf-data" / d)}
            run("terraform", "init", "-backend=false", "-input=false", cwd=TF / d, env=env, capture=True)
            attached = {**env, **attach}
            run("terraform", "validate", "-no-color", cwd=TF / d, env=attached)
            if (TF / d / "tests").is_dir():
                out = run("terraform", "test", "-no-color", cwd=TF / d, env=attached, capture=True)
                print(out)
                found = re.search(r"^Success! (\d+) passed, 0 failed", out, re.M)
                if not found:
                    raise SystemExit(f"terraform test in {d} did not pass")
                passed[f"terraform test {d}"] = int(found.group(1))

    checkov()


@contextlib.contextmanager
def shared_provider():
    """One AWS provider process for every `terraform validate` and `terraform test` run.

    Terraform starts the provider about twice per run block (176 in modules/outbox), and each
    start builds the provider's whole schema: most of the tests' CPU. Started once in its debug
    mode, the provider prints a reattach address (TF_REATTACH_PROVIDERS) and Terraform talks to
    it instead of starting its own: `terraform test` of modules/outbox went from about 190 to 80
    CPU-s. The tests are the same (the mocked provider still takes this one's schema); the
    mirror's single version is the one `terraform init` selects. Yields the environment to add.
    """
    binaries = list(MIRROR.glob("registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*"))
    if len(binaries) != 1:
        print(f"terraform: {len(binaries)} provider versions in the mirror; each run starts its own")
        yield {}
        return
    log = WORK / "provider-debug.log"
    with open(log, "w") as out:
        provider = subprocess.Popen([str(binaries[0]), "-debug"], stdout=out, stderr=subprocess.STDOUT)
    try:
        yield {"TF_REATTACH_PROVIDERS": reattach_address(provider, log)}
    finally:
        provider.terminate()
        provider.wait()


def reattach_address(provider: subprocess.Popen, log: Path) -> str:
    """The TF_REATTACH_PROVIDERS value a provider started with -debug prints once it listens."""
    for _ in range(600):
        found = re.search(r"TF_REATTACH_PROVIDERS='(.+)'", log.read_text())
        if found:
            return found.group(1)
        if provider.poll() is not None:
            break
        time.sleep(0.1)
    print(log.read_text())
    raise SystemExit("infra/check.py: the AWS provider started with -debug printed no reattach address (its output above)")


def checkov() -> None:
    step("terraform: checkov (modules and examples; skips are inline #checkov:skip with reasons)")
    out = run(str(VENV_BIN / "checkov"), "-d", ".", "--framework", "terraform", "--compact", "--quiet", "--skip-download", "--output", "cli", cwd=TF, capture=True)
    print(out)
    if re.search(r"Parsing errors: [1-9]", out):
        raise SystemExit("checkov could not parse a file (python-hcl2): rewrite the construct it trips on")
    skips = sorted({m for f in TF.rglob("*.tf") for m in re.findall(r"#checkov:skip=([A-Z0-9_]+:.*)", f.read_text())})
    print("checkov skips (each with its reason):", *skips, sep="\n  ")


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    cdk()
    terraform()
    total = sum(passed.values())
    print("\ninfra/check.sh: all infrastructure checks passed (" + ", ".join(f"{k} {n}" for k, n in passed.items()) + ")")
    step("infra checks done")
    print(f"infra: {total} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
