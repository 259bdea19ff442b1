# The commands a contributor runs, each one line calling the script that does the work.
# `make` (or `make help`) lists them. Extra arguments go through ARGS, e.g.
#   make demo ARGS="--orders 1000 --rate 0"    make test ARGS=publisher
#   make package ARGS=--arm64                  make deploy-local STACK=terraform ARGS="--prefix p"

ARGS ?=
STACK ?= cdk

.DEFAULT_GOAL := help
.PHONY: help demo test ci bench package release deploy-local check-infra

help: ## list these commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

demo: ## the deployed pipeline on the local AWS, every guarantee checked (scripts/demo; ARGS: --help)
	scripts/demo $(ARGS)

test: ## the whole suite: unit, integration on two emulators, deployed, stacks, infra (tests/run; ARGS: a test filter)
	tests/run $(ARGS)

ci: ## what CI runs: fmt, clippy, rustdoc, publish dry run, cargo-shear, then the whole suite (.ci/run)
	.ci/run

bench: ## the figures of docs/benchmarks.md, about 11 minutes (scripts/bench; OUTBOX_BENCH_* to skip parts)
	scripts/bench

package: ## build the Lambda functions for deployment (scripts/package; ARGS: --arm64, --debug)
	scripts/package $(ARGS)

release: ## tag a release, after its checks and zips; dry run first (cargo xtask release; ARGS: X.Y.Z [--dry-run])
	cargo xtask release $(ARGS)

deploy-local: ## deploy STACK (cdk|terraform) into a running local AWS at OUTBOX_ENDPOINT (scripts/deploy-local; ARGS: --prefix P ...)
	scripts/deploy-local $(STACK) $(ARGS)

check-infra: ## the offline infrastructure checks: CDK, Terraform, parity (infra/check.sh)
	bash infra/check.sh
