"""ministack_filters.py against the pinned MiniStack's own matcher (no server started).

    .venv/ministack/bin/python -m unittest discover -s tests/emulator -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ministack_filters  # noqa: E402
from ministack.services import lambda_svc  # noqa: E402

ORIGINAL = lambda_svc._match_esm_filter
CORRECTED = ministack_filters.corrected_matcher(ORIGINAL)

# The publisher's filters in the default home region (us-east-1) of a global table.
HOME = {"dynamodb": {"NewImage": {"HomeRegion": {"S": ["us-east-1"]}, "ItemType": {"S": ["PENDING_MESSAGE"]}}}, "eventName": ["INSERT"]}
UNHOMED = {"dynamodb": {"NewImage": {"HomeRegion": {"S": [{"exists": False}]}, "ItemType": {"S": ["PENDING_MESSAGE"]}}}, "eventName": ["INSERT"]}


def record(home=None, item_type="PENDING_MESSAGE", event="INSERT"):
    image = {"ItemType": {"S": item_type}, "PK": {"S": "ORDER#1"}}
    if home is not None:
        image["HomeRegion"] = {"S": home}
    return {"eventName": event, "dynamodb": {"NewImage": image}}


class ExistsFalseUnderAMissingParent(unittest.TestCase):
    def test_an_item_without_the_attribute_matches_exists_false_as_on_aws(self):
        self.assertTrue(CORRECTED(record(), UNHOMED))
        self.assertFalse(CORRECTED(record("us-east-1"), UNHOMED))
        self.assertFalse(CORRECTED(record(item_type="ORDER"), UNHOMED))
        self.assertFalse(CORRECTED(record(event="MODIFY"), UNHOMED))

    def test_equality_and_content_filters_are_still_ministacks(self):
        self.assertTrue(CORRECTED(record("us-east-1"), HOME))
        self.assertFalse(CORRECTED(record("eu-west-1"), HOME))
        self.assertFalse(CORRECTED(record(), HOME))
        prefix = {"dynamodb": {"NewImage": {"PK": {"S": [{"prefix": "ORDER#"}]}}}}
        self.assertTrue(CORRECTED(record(), prefix))
        exists = {"dynamodb": {"NewImage": {"HomeRegion": {"S": [{"exists": True}]}}}}
        self.assertTrue(CORRECTED(record("eu-west-1"), exists))
        self.assertFalse(CORRECTED(record(), exists))

    def test_ministack_unpatched_still_refuses_it(self):
        # When this fails, MiniStack matches `exists: false` under a missing parent
        # itself, and ministack_filters.py should go.
        self.assertFalse(ORIGINAL(record(), UNHOMED))


if __name__ == "__main__":
    unittest.main()
