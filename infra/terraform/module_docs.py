#!/usr/bin/env python3
"""The inputs and outputs tables of a module's README, generated from its variables.tf and
outputs.tf, between the markers <!-- BEGIN_TF_DOCS --> and <!-- END_TF_DOCS -->: inputs by
name, type and default with a link to the settings reference, outputs with the first sentence
of their descriptions.

  module_docs.py DIR           check: exit 1 when DIR/README.md's tables are not what the
                               module declares (a variable or output missing, stale or changed)
  module_docs.py DIR --write   rewrite the tables in DIR/README.md

Run by infra/check.py for modules/outbox (python-hcl2 comes with checkov, ../requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import hcl2

BEGIN, END = "<!-- BEGIN_TF_DOCS -->", "<!-- END_TF_DOCS -->"
CONFIGURATION = "../../../../docs/configuration.md#the-deployment-settings-terraform-variables-cdk-props"


def scalar(v):
    """python-hcl2 wraps some attribute values in a one-element list; unwrap them."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    return v


def blocks(path: Path, kind: str) -> dict:
    with open(path) as fh:
        doc = hcl2.load(fh)
    return {name: {k: scalar(x) for k, x in body.items()} for block in doc.get(kind, []) for name, body in block.items()}


def expression(v) -> str:
    """An HCL expression as python-hcl2 gives it ("${string}") as its source text."""
    text = v if isinstance(v, str) else json.dumps(v)
    text = re.sub(r"^\$\{(.*)\}$", r"\1", text, flags=re.S)
    # Object types come back with Python's quoting: {'name': '${string}'} -> { name = string }.
    text = re.sub(r"'\$\{([^}']*)\}'", r"\1", text)
    return re.sub(r"'(\w+)': ", r"\1 = ", text)


def short_type(text: str) -> str:
    """A long object type as its attribute names, `object({a, b, ...})`: each attribute's own
    type is in variables.tf, and its meaning in the settings reference."""
    found = re.match(r"^((?:\w+\()*)object\(\{(.*)\}\)(\)*)$", text, re.S)
    if len(text) <= 80 or not found:
        return text
    names, depth, start = [], 0, True
    for token in re.findall(r"[(\[{]|[)\]}]|,|\w+", found.group(2)):
        depth += token in "([{" and len(token) == 1
        depth -= token in ")]}" and len(token) == 1
        if depth == 0 and token == ",":
            start = True
        elif start and depth == 0 and re.match(r"\w+$", token):
            names.append(token)
            start = False
    return f"{found.group(1)}object({{{', '.join(names)}}}){found.group(3)}"


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def first_sentence(text: str) -> str:
    """An output's description up to its first full stop: the rest (grants, caveats) is
    in outputs.tf and on the docs' reference pages."""
    head, dot, _ = " ".join(text.split()).partition(". ")
    return head + "." if dot else head


def default(body: dict) -> str:
    if "default" not in body:
        return "required"
    v = body["default"]
    return "`null`" if v is None else f"`{json.dumps(v)}`"


def tables(module: Path) -> str:
    variables = {}
    for f in sorted(module.glob("*.tf")):
        variables.update(blocks(f, "variable"))
    outputs = {}
    for f in sorted(module.glob("*.tf")):
        outputs.update(blocks(f, "output"))
    # The inputs' meanings, limits and environment are documented once, in the contract's
    # table (docs/configuration.md, generated from infra/contract/settings.json): here only
    # what Terraform itself declares, and the link.
    lines = [
        "## Inputs",
        "",
        f"Each input's meaning, limits and the variable the functions get: [docs/configuration.md]({CONFIGURATION}).",
        "",
        "| Name | Type | Default |",
        "|------|------|---------|",
    ]
    for name in sorted(variables, key=lambda n: ("default" in variables[n], n)):
        body = variables[name]
        lines.append(f"| `{name}` | `{cell(short_type(expression(body.get('type', 'any'))))}` | {cell(default(body))} |")
    lines += ["", "## Outputs", "", "| Name | Description |", "|------|-------------|"]
    for name in sorted(outputs):
        lines.append(f"| `{name}` | {cell(first_sentence(outputs[name].get('description', '')))} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    readme = args.module / "README.md"
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        print(f"{readme}: no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    current, tail = rest.split(END, 1)
    wanted = "\n" + tables(args.module) + "\n"
    if args.write:
        readme.write_text(head + BEGIN + wanted + END + tail)
        return 0
    if current != wanted:
        have = set(current.strip().splitlines())
        want = set(wanted.strip().splitlines())
        for line in sorted(want - have):
            print(f"{readme}: missing or changed: {line[:160]}", file=sys.stderr)
        for line in sorted(have - want):
            print(f"{readme}: stale: {line[:160]}", file=sys.stderr)
        print(f"{readme}: the inputs/outputs tables are not the module's; run python3 {Path(__file__).name} {args.module} --write", file=sys.stderr)
        return 1
    print(f"{readme}: every input and output of {args.module} documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
