"""The corrections of ministack_iam.py (PartiQL, batch calls, streams, leading keys,
PartiQL writes streamed and replicated), against the pinned MiniStack.

    .venv/ministack/bin/python -m unittest discover -s tests/emulator -p 'test_*.py'

(tests/run runs it.) It starts MiniStack through the launcher with AUTH=true on a free
loopback port, makes a user whose policy grants exactly what AWS requires for one
PartiQL SELECT on an index, and checks that what AWS allows is allowed and what AWS
denies is denied with the action AWS names. It also checks that MiniStack unpatched
still maps the call wrongly: when that test fails, MiniStack has fixed its mapping and
the launcher's correction should go.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import botocore.session
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ministack_iam  # noqa: E402

REGION, ACCOUNT = "us-east-1", "000000000000"
REPLICA = "eu-west-1"
TABLE, INDEX = "partiql-iam", "ByShard"


class StatementMapping(unittest.TestCase):
    def test_each_verb_is_its_partiql_action_on_its_table_or_index(self):
        cases = [
            ('SELECT "pk" FROM "t"."ix" WHERE "s" IN [?, ?]', "dynamodb:PartiQLSelect", "table/t/index/ix"),
            ("select * from t where pk = ?", "dynamodb:PartiQLSelect", "table/t"),
            ('UPDATE "t" SET "Status" = ? WHERE "pk" = ? AND "Status" = ?', "dynamodb:PartiQLUpdate", "table/t"),
            ("INSERT INTO \"t\" VALUE {'pk': ?}", "dynamodb:PartiQLInsert", "table/t"),
            ('DELETE FROM "t" WHERE "pk" = ?', "dynamodb:PartiQLDelete", "table/t"),
            ('SELECT * FROM "a""b"', "dynamodb:PartiQLSelect", 'table/a"b'),
        ]
        for statement, action, resource in cases:
            with self.subTest(statement=statement):
                self.assertEqual(ministack_iam.statement_action(statement), action)
                self.assertEqual(
                    ministack_iam.statement_resource(statement, REGION, ACCOUNT),
                    f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:{resource}",
                )

    def test_a_batch_is_one_check_per_statement(self):
        body = json.dumps({"Statements": [
            {"Statement": 'UPDATE "a" SET x = ? WHERE pk = ?'},
            {"Statement": 'DELETE FROM "b" WHERE pk = ?'},
        ]}).encode()
        self.assertEqual(ministack_iam.checks(body, REGION, ACCOUNT), [
            ("dynamodb:PartiQLUpdate", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/a"),
            ("dynamodb:PartiQLDelete", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/b"),
        ])

    def test_a_select_without_where_is_a_full_table_scan(self):
        self.assertEqual(ministack_iam.full_table_scan('SELECT * FROM "t"'), "true")
        self.assertEqual(ministack_iam.full_table_scan('SELECT * FROM "t" WHERE pk = ?'), "false")
        self.assertIsNone(ministack_iam.full_table_scan('UPDATE "t" SET a = ? WHERE pk = ?'))

    def test_a_stream_call_is_authorised_on_its_stream(self):
        from ministack.services import dynamodb_streams

        arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t/stream/2024-01-01T00:00:00.000"
        body = json.dumps({"StreamArn": arn, "ShardId": "s", "ShardIteratorType": "TRIM_HORIZON"}).encode()
        self.assertEqual(ministack_iam.stream_resource(body, dynamodb_streams._decode_iterator), arn)
        iterator = dynamodb_streams._encode_iterator("t", "s", 0, stream_arn=arn)
        body = json.dumps({"ShardIterator": iterator}).encode()
        self.assertEqual(ministack_iam.stream_resource(body, dynamodb_streams._decode_iterator), arn)
        self.assertIsNone(ministack_iam.stream_resource(b"{}", dynamodb_streams._decode_iterator))

    def test_leading_keys_are_the_partition_key_of_a_single_item_call(self):
        pk_of = {"t": "PK"}.get
        put = json.dumps({"TableName": "t", "Item": {"PK": {"S": "OUTBOX#SWEEPER"}, "SK": {"S": "x"}}})
        self.assertEqual(ministack_iam.leading_keys(put.encode(), pk_of), ["OUTBOX#SWEEPER"])
        update = json.dumps({"TableName": "t", "Key": {"PK": {"N": "7"}, "SK": {"S": "x"}}})
        self.assertEqual(ministack_iam.leading_keys(update.encode(), pk_of), ["7"])
        query = json.dumps({"TableName": "t", "KeyConditionExpression": "PK = :p"})
        self.assertIsNone(ministack_iam.leading_keys(query.encode(), pk_of))
        self.assertIsNone(ministack_iam.leading_keys(b'{"RequestItems": {}}', pk_of))

    def test_unpatched_ministack_still_asks_for_batch_actions_aws_does_not_have(self):
        from ministack.core import iam_actions

        body = b"Action=SendMessageBatch&QueueUrl=q"
        headers = {"content-type": "application/x-www-form-urlencoded"}
        self.assertEqual(
            iam_actions.extract_iam_action("sqs", "POST", "/", headers, body, {"Action": "SendMessageBatch"}),
            "sqs:SendMessageBatch",
            "MiniStack now maps SQS batch calls itself: retire the launcher's correction",
        )

    def test_unpatched_ministack_still_maps_partiql_to_a_non_existent_action(self):
        from ministack.core import iam_actions

        headers = {"x-amz-target": "DynamoDB_20120810.ExecuteStatement"}
        body = json.dumps({"Statement": f'SELECT * FROM "{TABLE}" WHERE pk = ?'}).encode()
        self.assertEqual(
            iam_actions.extract_iam_action("dynamodb", "POST", "/", headers, body, {}),
            "dynamodb:ExecuteStatement",
            "MiniStack now maps PartiQL itself: retire the launcher's correction",
        )

    def test_unpatched_ministack_still_neither_streams_nor_replicates_partiql_writes(self):
        # In this process MiniStack's dynamodb module is not patched (only the
        # launcher's `__main__` patches it).
        from ministack.core.responses import request_scope
        from ministack.services import dynamodb

        def call(operation, payload):
            headers = {"x-amz-target": f"DynamoDB_20120810.{operation}"}
            status, _, body = asyncio.run(dynamodb.handle_request(
                "POST", "/", headers, json.dumps(payload).encode(), {}))
            self.assertEqual(status, 200, body)
            return json.loads(body)

        table = "partiql-unpatched"
        with request_scope(ACCOUNT, REGION):
            call("CreateTable", {
                "TableName": table, "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}})
            call("UpdateTable", {"TableName": table, "ReplicaUpdates": [{"Create": {"RegionName": REPLICA}}]})
            call("PutItem", {"TableName": table, "Item": {"pk": {"S": "a"}, "Status": {"S": "PENDING"}}})
            call("ExecuteStatement", {"Statement": f'UPDATE "{table}" SET "Status" = ? WHERE "pk" = ?',
                                      "Parameters": [{"S": "SENT"}, {"S": "a"}]})
            here = [r["eventName"] for r in dynamodb._stream_records.get(table, [])]
        with request_scope(ACCOUNT, REPLICA):
            there = call("GetItem", {"TableName": table, "Key": {"pk": {"S": "a"}}})["Item"]["Status"]["S"]
        self.assertEqual(
            (here, there), (["INSERT"], "PENDING"),
            "MiniStack now streams or replicates PartiQL writes: retire patch_partiql_streams")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EnforcedOnMiniStack(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        port = _free_port()
        cls.endpoint = f"http://127.0.0.1:{port}"
        cls.tmp = tempfile.TemporaryDirectory()
        env = {**os.environ, "AUTH": "true", "GATEWAY_PORT": str(port), "BIND_HOST": "127.0.0.1",
               "MINISTACK_HOST": "127.0.0.1", "TMPDIR": cls.tmp.name, "LOG_LEVEL": "WARNING"}
        launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ministack_iam.py")
        cls.log = open(os.path.join(cls.tmp.name, "ministack.log"), "w")
        cls.proc = subprocess.Popen([sys.executable, launcher], env=env, cwd=cls.tmp.name,
                                    stdout=cls.log, stderr=subprocess.STDOUT)
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{cls.endpoint}/_ministack/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"MiniStack did not start; log in {cls.log.name}")
        root = cls.client("iam", "test", "test")
        db = cls.client("dynamodb", "test", "test")
        db.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "shard", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": INDEX,
                                     "KeySchema": [{"AttributeName": "shard", "KeyType": "HASH"}],
                                     "Projection": {"ProjectionType": "KEYS_ONLY"}}])
        table_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"
        root.create_user(UserName="fence-reader")
        root.put_user_policy(UserName="fence-reader", PolicyName="exactly-what-aws-requires",
                             PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                                 {"Effect": "Allow", "Action": "dynamodb:PartiQLSelect",
                                  "Resource": f"{table_arn}/index/{INDEX}"},
                                 {"Effect": "Deny", "Action": "dynamodb:PartiQLSelect",
                                  "Resource": f"{table_arn}/index/{INDEX}",
                                  "Condition": {"Bool": {"dynamodb:FullTableScan": "true"}}}]}))
        key = root.create_access_key(UserName="fence-reader")["AccessKey"]
        cls.reader = cls.client("dynamodb", key["AccessKeyId"], key["SecretAccessKey"])

    @classmethod
    def client(cls, service, key_id, secret, region=REGION):
        session = botocore.session.get_session()
        return session.create_client(service, region_name=region, endpoint_url=cls.endpoint,
                                     aws_access_key_id=key_id, aws_secret_access_key=secret)

    @classmethod
    def tearDownClass(cls):
        # MiniStack may take longer than a loaded CI machine gives it to finish on
        # SIGTERM (one run waited 10 s in vain): the tests have passed by now, so a
        # slow exit is ended with SIGKILL rather than failing the suite.
        cls.proc.terminate()
        try:
            cls.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait(timeout=10)
        cls.log.close()
        cls.tmp.cleanup()

    def denied_action(self, call):
        with self.assertRaises(ClientError) as caught:
            call()
        error = caught.exception.response["Error"]
        self.assertIn(error["Code"], ("AccessDenied", "AccessDeniedException"), error)
        return error["Message"]

    def test_the_select_aws_allows_is_allowed(self):
        answer = self.reader.execute_statement(
            Statement=f'SELECT "pk" FROM "{TABLE}"."{INDEX}" WHERE "shard" IN [?, ?]',
            Parameters=[{"S": "00"}, {"S": "01"}])
        self.assertEqual(answer["Items"], [])

    def test_a_select_on_the_table_is_denied_naming_partiql_select(self):
        message = self.denied_action(lambda: self.reader.execute_statement(
            Statement=f'SELECT "pk" FROM "{TABLE}" WHERE "pk" = ?', Parameters=[{"S": "a"}]))
        self.assertIn("dynamodb:PartiQLSelect", message)

    def test_a_scan_of_the_index_is_denied_by_the_full_table_scan_key(self):
        message = self.denied_action(lambda: self.reader.execute_statement(
            Statement=f'SELECT "pk" FROM "{TABLE}"."{INDEX}"'))
        self.assertIn("dynamodb:PartiQLSelect", message)

    def test_a_batch_send_needs_only_sqs_send_message(self):
        sqs = self.client("sqs", "test", "test")
        url = sqs.create_queue(QueueName="batch-iam")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        root = self.client("iam", "test", "test")
        root.create_user(UserName="sender")
        root.put_user_policy(UserName="sender", PolicyName="send", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": arn}]}))
        key = root.create_access_key(UserName="sender")["AccessKey"]
        sender = self.client("sqs", key["AccessKeyId"], key["SecretAccessKey"])
        sent = sender.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "x"}])
        self.assertEqual([e["Id"] for e in sent.get("Successful", [])], ["1"])
        message = self.denied_action(lambda: sender.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": "1", "ReceiptHandle": "h"}]))
        self.assertIn("sqs:DeleteMessage ", message + " ")

    def test_a_role_granted_exactly_the_stream_reads_it(self):
        db = self.client("dynamodb", "test", "test")
        created = db.create_table(
            TableName="stream-iam", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
        stream = created["TableDescription"]["LatestStreamArn"]
        db.put_item(TableName="stream-iam", Item={"pk": {"S": "a"}})
        root = self.client("iam", "test", "test")
        root.create_user(UserName="stream-reader")
        root.put_user_policy(UserName="stream-reader", PolicyName="the-stream", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": stream, "Action": [
                "dynamodb:DescribeStream", "dynamodb:GetShardIterator", "dynamodb:GetRecords"]}]}))
        key = root.create_access_key(UserName="stream-reader")["AccessKey"]
        reader = self.client("dynamodbstreams", key["AccessKeyId"], key["SecretAccessKey"])
        shard = reader.describe_stream(StreamArn=stream)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = reader.get_shard_iterator(
            StreamArn=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records = reader.get_records(ShardIterator=iterator)["Records"]
        self.assertEqual([r["dynamodb"]["Keys"]["pk"]["S"] for r in records], ["a"])
        other = stream.replace("stream-iam", "elsewhere")
        message = self.denied_action(lambda: reader.get_shard_iterator(
            StreamArn=other, ShardId=shard, ShardIteratorType="TRIM_HORIZON"))
        self.assertIn("dynamodb:GetShardIterator", message)

    def test_a_put_conditioned_on_its_leading_key_is_allowed_for_that_key_only(self):
        table_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"
        root = self.client("iam", "test", "test")
        root.create_user(UserName="cursor-writer")
        root.put_user_policy(UserName="cursor-writer", PolicyName="cursors", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": table_arn,
                "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["OUTBOX#SWEEPER"]},
                              "Null": {"dynamodb:LeadingKeys": "false"}}}]}))
        key = root.create_access_key(UserName="cursor-writer")["AccessKey"]
        writer = self.client("dynamodb", key["AccessKeyId"], key["SecretAccessKey"])
        writer.put_item(TableName=TABLE, Item={"pk": {"S": "OUTBOX#SWEEPER"}, "shard": {"S": "zz"}})
        message = self.denied_action(lambda: writer.put_item(
            TableName=TABLE, Item={"pk": {"S": "USER#1"}, "shard": {"S": "zz"}}))
        self.assertIn("dynamodb:PutItem", message)

    def test_a_batch_update_is_denied_naming_partiql_update(self):
        message = self.denied_action(lambda: self.reader.batch_execute_statement(Statements=[
            {"Statement": f'UPDATE "{TABLE}" SET "x" = ? WHERE "pk" = ?',
             "Parameters": [{"S": "1"}, {"S": "a"}]}]))
        self.assertIn("dynamodb:PartiQLUpdate", message)

    def stream_changes(self, region, table):
        """(event, pk, old Status, new Status) of every record in `table`'s stream in `region`."""
        db = self.client("dynamodb", "test", "test", region)
        streams = self.client("dynamodbstreams", "test", "test", region)
        arn = db.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        changes = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            for r in streams.get_records(ShardIterator=iterator)["Records"]:
                images = r["dynamodb"]
                status = [images.get(i, {}).get("Status", {}).get("S") for i in ("OldImage", "NewImage")]
                changes.append((r["eventName"], images["Keys"]["pk"]["S"], *status))
        return changes

    def test_partiql_writes_are_streamed_and_replicated_as_aws_does(self):
        table = "partiql-global"
        here = self.client("dynamodb", "test", "test")
        there = self.client("dynamodb", "test", "test", REPLICA)
        here.create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
        here.update_table(TableName=table, ReplicaUpdates=[{"Create": {"RegionName": REPLICA}}])
        here.execute_statement(Statement=f"INSERT INTO \"{table}\" VALUE {{'pk': ?, 'Status': ?}}",
                               Parameters=[{"S": "a"}, {"S": "PENDING"}])
        here.put_item(TableName=table, Item={"pk": {"S": "b"}, "Status": {"S": "PENDING"}})
        marked = here.batch_execute_statement(Statements=[
            {"Statement": f'UPDATE "{table}" SET "Status" = ? WHERE "pk" = ? AND "Status" = ?',
             "Parameters": [{"S": "SENT"}, {"S": pk}, {"S": "PENDING"}]} for pk in ("a", "b")])
        self.assertEqual([r.get("Error") for r in marked["Responses"]], [None, None])
        # A cancelled transaction is rolled back: nothing streamed or replicated.
        with self.assertRaises(ClientError):
            here.execute_transaction(TransactStatements=[
                {"Statement": f'UPDATE "{table}" SET "Status" = ? WHERE "pk" = ?',
                 "Parameters": [{"S": "FAILED"}, {"S": "a"}]},
                {"Statement": f'UPDATE "{table}" SET "Status" = ? WHERE "pk" = ? AND "Status" = ?',
                 "Parameters": [{"S": "FAILED"}, {"S": "b"}, {"S": "PENDING"}]}])
        there.execute_transaction(TransactStatements=[
            {"Statement": f'DELETE FROM "{table}" WHERE "pk" = ?', "Parameters": [{"S": "b"}]}])
        item = there.get_item(TableName=table, Key={"pk": {"S": "a"}}, ConsistentRead=True).get("Item")
        self.assertEqual(item["Status"]["S"], "SENT")
        self.assertNotIn("Item", here.get_item(TableName=table, Key={"pk": {"S": "b"}}, ConsistentRead=True))
        expected = [
            ("INSERT", "a", None, "PENDING"),
            ("INSERT", "b", None, "PENDING"),
            ("MODIFY", "a", "PENDING", "SENT"),
            ("MODIFY", "b", "PENDING", "SENT"),
            ("REMOVE", "b", "SENT", None),
        ]
        self.assertEqual(self.stream_changes(REGION, table), expected)
        self.assertEqual(self.stream_changes(REPLICA, table), expected)


if __name__ == "__main__":
    unittest.main()
