// Each role's exact set of actions (docs/iam.md: the calls each function makes, and the
// action each is authorised as). A grant added or removed without changing this file fails
// here; infra/contract/settings.json holds both stacks to the same actions.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Template } from 'aws-cdk-lib/assertions';
import { asList, logicalId, statementsOf, synth } from './helpers.ts';

const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

/** `<Effect> <action>` for every action the function's role names, sorted. */
const actionSet = (t: Template, fn: string) =>
  [...new Set(statementsOf(t, fn).flatMap((s) => asList(s.Action as string | string[]).map((a) => `${s.Effect} ${a}`)))].sort();

const LOGS = ['Allow logs:CreateLogStream', 'Allow logs:PutLogEvents'];
const KMS = ['Allow kms:Decrypt', 'Allow kms:DescribeKey', 'Allow kms:GenerateDataKey'];
const FENCE = ['Allow dynamodb:Query', 'Allow dynamodb:PartiQLSelect', 'Deny dynamodb:PartiQLSelect'];
// The check of the table before each function's first piece of work.
const CHECK = ['Allow dynamodb:DescribeTable', 'Allow dynamodb:DescribeTimeToLive'];
const SENDS = ['Allow sqs:SendMessage', 'Allow sqs:GetQueueAttributes', 'Allow s3:PutObject', 'Allow s3:GetObject'];

describe("each role's exact actions (the defaults: no scan, large payloads, no KMS key)", () => {
  const t = synth();
  it('publisher', () => {
    assert.deepEqual(actionSet(t, 'outbox-publisher'), [
      'Allow dynamodb:BatchGetItem', 'Allow dynamodb:GetItem', 'Allow dynamodb:UpdateItem', 'Allow dynamodb:PartiQLUpdate', ...FENCE,
      'Allow dynamodb:DescribeStream', 'Allow dynamodb:GetRecords', 'Allow dynamodb:GetShardIterator', 'Allow dynamodb:ListStreams',
      ...CHECK, ...SENDS, ...LOGS,
    ].sort());
  });
  it('sweeper', () => {
    assert.deepEqual(actionSet(t, 'outbox-sweeper'), [
      'Allow dynamodb:BatchGetItem', 'Allow dynamodb:GetItem', 'Allow dynamodb:UpdateItem', 'Allow dynamodb:PartiQLUpdate', ...FENCE,
      ...CHECK, ...SENDS, ...LOGS,
    ].sort());
  });
  it('recovery', () => {
    assert.deepEqual(actionSet(t, 'outbox-recovery'), [
      'Allow dynamodb:GetRecords', 'Allow dynamodb:GetShardIterator', 'Allow dynamodb:UpdateItem', ...CHECK,
      'Allow sqs:ReceiveMessage', 'Allow sqs:DeleteMessage', 'Allow sqs:GetQueueAttributes', ...LOGS,
    ].sort());
  });
  it('orders consumer: PutItem only on its table (BusinessKeyGuard), the queue as its mapping reads it, the payloads', () => {
    assert.deepEqual(actionSet(t, 'outbox-orders-consumer'), [
      'Allow dynamodb:PutItem', 'Allow sqs:ReceiveMessage', 'Allow sqs:DeleteMessage', 'Allow sqs:GetQueueAttributes',
      'Allow s3:GetObject', 'Allow s3:ListBucket', ...LOGS,
    ].sort());
  });
});

describe('with a KMS key: Decrypt, GenerateDataKey and DescribeKey, never Encrypt', () => {
  const t = synth({ kmsKeyArn: KEY });
  for (const fn of ['outbox-publisher', 'outbox-sweeper', 'outbox-recovery', 'outbox-orders-consumer']) {
    it(fn, () => {
      const onKey = statementsOf(t, fn).filter((s) => asList(s.Resource).includes(KEY));
      assert.deepEqual([...new Set(onKey.flatMap((s) => asList(s.Action as string | string[])))].sort(), KMS.map((a) => a.slice('Allow '.length)));
      assert.ok(!actionSet(t, fn).includes('Allow kms:Encrypt'), fn);
    });
  }
});

describe('the grants the calls added need', () => {
  const t = synth();
  const getAtt = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
  const on = (fn: string, action: string) =>
    statementsOf(t, fn).filter((s) => asList(s.Action as string | string[]).includes(action)).flatMap((s) => asList(s.Resource));
  it("the publisher (a redelivered batch's statuses) and the sweeper (the fence's confirmation) BatchGetItem only the outbox table; no other role does", () => {
    const table = getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }));
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) assert.deepEqual(on(fn, 'dynamodb:BatchGetItem'), [table], fn);
    for (const fn of ['outbox-recovery', 'outbox-orders-consumer']) assert.deepEqual(on(fn, 'dynamodb:BatchGetItem'), [], fn);
  });
  it('the consumer may ListBucket on the large-payload bucket (a missing object reads as missing, not AccessDenied)', () => {
    const bucket = Object.entries(t.findResources('AWS::S3::Bucket'))[0][0];
    const st = statementsOf(t, 'outbox-orders-consumer').filter((s) => asList(s.Action as string | string[]).includes('s3:ListBucket'));
    assert.deepEqual(st.map((s) => ({ Sid: s.Sid, Action: s.Action, Resource: s.Resource })), [
      { Sid: 'TellMissingPayloads', Action: 's3:ListBucket', Resource: getAtt(bucket) },
    ]);
  });
});
