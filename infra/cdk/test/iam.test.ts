// IAM for what the publisher and the sweeper read and write besides publishing and
// marking: the item read before dead-lettering it (GetItem; poison already FAILED is not
// copied twice), the sweeper's read of an item whose claim was refused (GetItem), its
// adoption scan's cursor items (PutItem, unless the scan mode is off, on PK = OUTBOX#SWEEPER only),
// and each SQS destination's MaximumMessageSize, read at cold start (GetQueueAttributes
// on exactly the queues they may send messages to).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Template } from 'aws-cdk-lib/assertions';
import { CONTRACT } from '../lib/config.ts';
import { asList, logicalId, statementsOf, synth } from './helpers.ts';

const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

/** Resource and condition of every statement of the function's role that allows `action`. */
function grants(t: Template, fn: string, action: string): Array<{ Resource: unknown; Condition?: unknown }> {
  return statementsOf(t, fn)
    .filter((s) => asList(s.Action as string | string[]).includes(action))
    .map((s) => ({ Resource: s.Resource, ...(s.Condition ? { Condition: s.Condition } : {}) }));
}

/** The resources of the statements that allow `action` (each statement's list flattened). */
const resourcesOf = (t: Template, fn: string, action: string) => grants(t, fn, action).flatMap((g) => asList(g.Resource));

const LEADING_KEY_IS_THE_SWEEPER = {
  'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['OUTBOX#SWEEPER'] },
  Null: { 'dynamodb:LeadingKeys': 'false' },
};

describe('GetItem on the outbox table', () => {
  let t: Template;
  let table: { 'Fn::GetAtt': string[] };
  before(() => {
    t = synth();
    table = getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }));
  });
  it('lets the publisher read an item before dead-lettering it: on the outbox table, unconditioned', () => {
    assert.deepEqual(grants(t, 'outbox-publisher', 'dynamodb:GetItem'), [{ Resource: table }]);
  });
  it('lets the sweeper read an item whose claim was refused: on the outbox table, unconditioned', () => {
    assert.deepEqual(grants(t, 'outbox-sweeper', 'dynamodb:GetItem'), [{ Resource: table }]);
  });
  it('gives the recovery function and the consumer no GetItem (the consumer\'s conditional put returns the stored item)', () => {
    assert.deepEqual(grants(t, 'outbox-recovery', 'dynamodb:GetItem'), []);
    assert.deepEqual(resourcesOf(t, 'outbox-orders-consumer', 'dynamodb:GetItem'), []);
  });
  it('reads an existing table by the ARN derived from its stream', () => {
    const streamArn = 'arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000';
    const e = synth({ existingTable: { tableName: 'app', streamArn } });
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) {
      assert.deepEqual(resourcesOf(e, fn, 'dynamodb:GetItem'), ['arn:aws:dynamodb:us-east-2:210987654321:table/app'], fn);
    }
  });
});

describe("the sweeper's scan cursors (PutItem)", () => {
  it('are not written with the scan mode off: no function may PutItem on the outbox table', () => {
    const t = synth({ sweepScanMode: 'off' });
    for (const fn of ['outbox-publisher', 'outbox-sweeper', 'outbox-recovery']) assert.deepEqual(grants(t, fn, 'dynamodb:PutItem'), [], fn);
  });
  it('backstop and on: PutItem on the outbox table, only for items whose partition key is OUTBOX#SWEEPER', () => {
    const t = synth({ sweepScanMode: 'backstop' });
    const table = getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }));
    assert.deepEqual(grants(t, 'outbox-sweeper', 'dynamodb:PutItem'), [{ Resource: table, Condition: LEADING_KEY_IS_THE_SWEEPER }]);
    // The condition holds the partition key the functions write (infra/CONTRACT.md), and
    // nothing else rides on that statement.
    const st = statementsOf(t, 'outbox-sweeper').find((s) => asList(s.Action as string | string[]).includes('dynamodb:PutItem'))!;
    assert.deepEqual(asList(st.Action as string | string[]), ['dynamodb:PutItem']);
    assert.equal(CONTRACT.scanCursorPartitionKey, 'OUTBOX#SWEEPER');
    for (const fn of ['outbox-publisher', 'outbox-recovery']) assert.deepEqual(grants(t, fn, 'dynamodb:PutItem'), [], fn);
  });
  it('and GetItem stays unconditioned (the sweeper reads outbox items too)', () => {
    const t = synth({ sweepScanMode: 'on' });
    assert.ok(grants(t, 'outbox-sweeper', 'dynamodb:GetItem').every((g) => g.Condition === undefined));
  });
});

describe('GetQueueAttributes on the destinations (their MaximumMessageSize, read at cold start)', () => {
  const routes = {
    mail: { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/mail', max_message_bytes: 262_144 },
    billing: 'https://sqs.eu-west-1.amazonaws.com/123456789012/billing',
    audit: 'arn:aws:sns:eu-west-1:123456789012:audit',
    shop: { destination: 'arn:aws:events:eu-west-1:123456789012:event-bus/shop', source: 'shop.orders' },
  };
  it('on the example queues and the outbox DLQ, not on the stream-failure queue', () => {
    const t = synth();
    const queue = (name: string) => getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: name }));
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) {
      assert.deepEqual(grants(t, fn, 'sqs:GetQueueAttributes'), [
        { Resource: [queue('outbox-orders-queue'), queue('outbox-orders-events.fifo'), queue('outbox-dlq')] },
      ], fn);
    }
  });
  it('on exactly the queues each function may send outbox messages to (routes, default destination), nothing on topics or buses', () => {
    const t = synth({ routes, defaultDestination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/catch-all' });
    const failures = getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures' }));
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) {
      const sizes = resourcesOf(t, fn, 'sqs:GetQueueAttributes');
      // SendMessage also goes to the stream-failure queue (the publisher reports discarded batches there): not a destination.
      const sends = resourcesOf(t, fn, 'sqs:SendMessage').filter((r) => JSON.stringify(r) !== JSON.stringify(failures));
      assert.deepEqual(sizes, sends, fn);
      for (const arn of ['billing', 'mail', 'catch-all'].map((q) => `arn:aws:sqs:eu-west-1:123456789012:${q}`)) assert.ok(sizes.includes(arn), `${fn} ${arn}`);
      assert.ok(!sizes.some((r) => typeof r === 'string' && !r.startsWith('arn:aws:sqs:')), fn);
    }
  });
  it('gives the consumer and the recovery function GetQueueAttributes on their own trigger queue only', () => {
    const t = synth({ routes });
    const queue = (name: string) => getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: name }));
    assert.deepEqual(resourcesOf(t, 'outbox-orders-consumer', 'sqs:GetQueueAttributes'), [queue('outbox-orders-queue')]);
    assert.deepEqual(resourcesOf(t, 'outbox-recovery', 'sqs:GetQueueAttributes'), [queue('outbox-stream-failures')]);
  });
});
