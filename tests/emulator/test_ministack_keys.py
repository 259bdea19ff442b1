"""ministack_keys.py against the pinned MiniStack's own DynamoDB handlers (no server started).

    .venv/ministack/bin/python -m unittest discover -s tests/emulator -p 'test_*.py'
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ministack_keys  # noqa: E402
from ministack.services import dynamodb  # noqa: E402

TABLE = "keys-test"


def call(handler, body):
    status, _headers, payload = handler(body)[:3]
    text = payload.decode() if isinstance(payload, bytes) else payload
    return status, json.loads(text or "{}")


class AnItemWithoutItsKeysIsRefused(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ministack_keys.patch_key_presence(dynamodb)
        call(dynamodb._create_table, {
            "TableName": TABLE,
            "KeySchema": [{"AttributeName": "tenant_id", "KeyType": "HASH"},
                          {"AttributeName": "entity_id", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": "tenant_id", "AttributeType": "S"},
                                     {"AttributeName": "entity_id", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        })

    def test_a_transactions_put_without_the_sort_key_is_a_validation_error(self):
        status, body = call(dynamodb._transact_write_items, {"TransactItems": [
            {"Put": {"TableName": TABLE, "Item": {"tenant_id": {"S": "t"}, "PK": {"S": "x"}}}},
        ]})
        self.assertEqual(status, 400)
        self.assertIn("Missing the key entity_id in the item", body.get("message", body.get("Message", "")))

    def test_a_batch_put_without_the_partition_key_is_a_validation_error(self):
        status, body = call(dynamodb._batch_write_item, {"RequestItems": {TABLE: [
            {"PutRequest": {"Item": {"entity_id": {"S": "e"}}}},
        ]}})
        self.assertEqual(status, 400)
        self.assertIn("Missing the key tenant_id in the item", body.get("message", body.get("Message", "")))

    def test_an_item_with_its_keys_is_stored(self):
        status, _ = call(dynamodb._transact_write_items, {"TransactItems": [
            {"Put": {"TableName": TABLE, "Item": {"tenant_id": {"S": "t"}, "entity_id": {"S": "e"}}}},
        ]})
        self.assertEqual(status, 200)


if __name__ == "__main__":
    unittest.main()
