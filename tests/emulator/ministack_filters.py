"""Correct MiniStack's event source mapping filter for `exists: false` under a missing parent.

Lambda's event filtering applies `exists` to leaf nodes only; for a DynamoDB stream the
leaf under an attribute is its type (`"HomeRegion": {"S": [{"exists": false}]}`), and the
rule matches a record whose image has no `HomeRegion` at all (the Lambda developer guide,
"Using event filtering with a DynamoDB event source", "Using the Exists operator"; the
same semantics as SNS's key matching). MiniStack 1.5.33's `_match_esm_filter`
(`services/lambda_svc.py`) refuses any nested pattern whose parent key the record lacks,
so that rule never matches there: the publisher's second filter (messages that name no
home region, on a global table's default home) would drop every minimal producer's
message on the local AWS while AWS delivers it.

`patch_filter_criteria` replaces the matcher with one that reads a missing parent as an
empty object: a nested pattern then matches only when every rule under it holds of
nothing (an `exists: false`), as on AWS. A parent that is there but is not an object
still refuses a nested pattern.
"""


def _matches_rules(key, record, rules, value_matches):
    """Whether one of `rules` (a pattern leaf: values and content filters) holds of
    `record[key]`, deferring every rule but `exists` to MiniStack's `value_matches`."""
    for rule in rules:
        if isinstance(rule, dict) and "exists" in rule:
            if bool(rule["exists"]) == (key in record):
                return True
        elif value_matches(key, record, rule):
            return True
    return False


def corrected_matcher(original):
    """A `_match_esm_filter` that reads a missing parent as `{}`; leaves are decided by
    `original` (one rule at a time), so its content filters stay MiniStack's."""

    def value_matches(key, record, rule):
        return original(record, {key: [rule]})

    def match(record, pattern):
        if not isinstance(pattern, dict):
            return False
        for key, sub in pattern.items():
            value = record.get(key) if isinstance(record, dict) else None
            if isinstance(sub, dict):
                if value is None:
                    value = {}
                if not isinstance(value, dict) or not match(value, sub):
                    return False
            elif isinstance(sub, list):
                if not _matches_rules(key, record, sub, value_matches):
                    return False
            elif value != sub:
                return False
        return True

    return match


def patch_filter_criteria(lambda_svc):
    """Install the corrected matcher in MiniStack's `services.lambda_svc`."""
    lambda_svc._match_esm_filter = corrected_matcher(lambda_svc._match_esm_filter)
