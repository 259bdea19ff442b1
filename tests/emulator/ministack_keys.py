"""Refuse, as DynamoDB does, an item written without the table's key attributes.

The pinned MiniStack checks that a `PutItem` carries the table's partition and sort
keys, but not a `Put` inside `TransactWriteItems` nor a `PutRequest` inside
`BatchWriteItem`: it stores such an item under an empty key. A producer that forgot
its key names then "works" locally and leaves a phantom entry in the sweeper index,
where DynamoDB refuses the whole request with a `ValidationException` ("Missing the
key <name> in the item"). Every full-item write goes through `_validate_item`
(updates pass their own size message and are left alone: an update keeps its key),
so that is where the check is added.
"""


def missing_key_error(dynamodb, item, pk_name, sk_name):
    """DynamoDB's refusal of `item` when it lacks a key attribute, else None."""
    if not isinstance(item, dict):
        return None
    for name in (pk_name, sk_name):
        if name and name not in item:
            return dynamodb.error_response_json(
                "ValidationException",
                f"One or more parameter values were invalid: Missing the key {name} in the item",
                400,
            )
    return None


def patch_key_presence(dynamodb):
    """Wraps MiniStack's `services.dynamodb._validate_item` (see the module's docstring)."""
    validate = dynamodb._validate_item
    full_item = dynamodb._ITEM_SIZE_MSG

    def checked(item, pk_name=None, sk_name=None, size_msg=full_item):
        if size_msg == full_item:
            refused = missing_key_error(dynamodb, item, pk_name, sk_name)
            if refused:
                return refused
        return validate(item, pk_name, sk_name, size_msg)

    dynamodb._validate_item = checked
