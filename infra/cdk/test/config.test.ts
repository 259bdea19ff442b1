import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { STREAM_FILTER_FILE, loadStreamFilter, names } from '../lib/config.ts';
import { routeTarget } from '../lib/routes.ts';
import { settingsFromContext } from '../example/context.ts';
import { DEFAULTS, exampleNames, resolveSettings } from '../example/settings.ts';

describe('stream filter', () => {
  it('is read from infra/stream-filter.json unchanged', () => {
    assert.deepEqual(loadStreamFilter(), JSON.parse(fs.readFileSync(STREAM_FILTER_FILE, 'utf8')));
  });
  it('selects only inserted PENDING_MESSAGE items in PENDING', () => {
    const pattern = JSON.parse(loadStreamFilter().Filters[0].Pattern);
    assert.deepEqual(pattern.eventName, ['INSERT']);
    assert.deepEqual(pattern.dynamodb.NewImage.ItemType, { S: ['PENDING_MESSAGE'] });
    assert.deepEqual(pattern.dynamodb.NewImage.Status, { S: ['PENDING'] });
  });
  it('refuses a file whose pattern is not JSON', (t) => {
    const file = `${fs.mkdtempSync('/tmp/filter-')}/f.json`;
    t.after(() => fs.rmSync(file));
    fs.writeFileSync(file, JSON.stringify({ Filters: [{ Pattern: '{not json' }] }));
    assert.throws(() => loadStreamFilter(file));
  });
  it('refuses a file without filters', (t) => {
    const file = `${fs.mkdtempSync('/tmp/filter-')}/f.json`;
    t.after(() => fs.rmSync(file));
    fs.writeFileSync(file, JSON.stringify({ Filters: [] }));
    assert.throws(() => loadStreamFilter(file), /1 to 5 filters/);
  });
});

describe('settings', () => {
  it('defaults match CONTRACT.md (max attempts 8, TTL 7 days, grace 60 s, no scan)', () => {
    const s = resolveSettings();
    assert.equal(s.maxAttempts, 8);
    assert.equal(s.ttlDays, 7);
    assert.equal(s.sweepGraceSeconds, 60);
    assert.equal(s.sweepScanMode, 'off');
    assert.equal(s.architecture, 'arm64');
    assert.equal(s.maxReceiveCount, 5);
    assert.equal(s.consumerMaxReceiveCount, 10);
    // The shard count and workers have no fixed default: chosen from the expected peak (3,000: as before).
    assert.deepEqual(s, { ...DEFAULTS, sweepShards: 16, sweepWorkers: 1 });
  });
  for (const [name, bad, message] of [
    ['prefix', 'Bad_Prefix', /prefix/],
    ['batchSize', 0, /batchSize/],
    ['batchSize', 10_001, /batchSize/],
    ['maxAttempts', 0, /maxAttempts/],
    ['ttlDays', 0, /ttlDays/],
    ['sweepRateMinutes', 1.5, /sweepRateMinutes/],
    ['streamMaxRecordAgeSeconds', -1, /streamMaxRecordAgeSeconds/],
    ['consumerBatchSize', 11, /consumerBatchSize/],
    ['consumerMaxReceiveCount', 0, /consumerMaxReceiveCount must be an integer from 1 to 1000/],
    ['consumerMaxReceiveCount', 1001, /consumerMaxReceiveCount/],
    ['consumerMaxReceiveCount', 2.5, /consumerMaxReceiveCount/],
    ['logRetentionDays', 31, /logRetentionDays/],
    ['architecture', 'sparc', /architecture/],
    ['kmsKeyArn', 'alias/mine', /kmsKeyArn/],
    ['alarmTopicArn', 'arn:aws:sqs:eu-west-1:123456789012:q', /alarmTopicArn/],
  ] as const) {
    it(`refuses ${name} = ${JSON.stringify(bad)}`, () => {
      assert.throws(() => resolveSettings({ [name]: bad }), message);
    });
  }
  it('refuses a route to something that is not a queue URL, topic ARN or bus ARN', () => {
    assert.throws(() => resolveSettings({ routes: { billing: 'billing-queue' } }), /neither an SQS queue URL/);
  });
  it('refuses a route that would shadow an example topic', () => {
    assert.throws(
      () => resolveSettings({ routes: { orders: 'https://sqs.eu-west-1.amazonaws.com/123456789012/x' } }),
      /taken by the example queues/,
    );
  });
  it('refuses an existing table whose stream belongs to another table', () => {
    assert.throws(
      () =>
        resolveSettings({
          existingTable: {
            tableName: 'app',
            streamArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/other/stream/2024-01-01T00:00:00.000',
          },
        }),
      /belongs to table "other"/,
    );
  });
  it('reads context strings from `cdk -c outbox:<name>=<value>`', () => {
    const ctx: Record<string, string> = {
      'outbox:prefix': 'shop',
      'outbox:batchSize': '50',
      'outbox:sweepScanMode': 'on',
      'outbox:routes': '{"billing":"arn:aws:sns:eu-west-1:123456789012:billing"}',
    };
    const s = resolveSettings(settingsFromContext((k) => ctx[k], {}));
    assert.equal(s.prefix, 'shop');
    assert.equal(s.batchSize, 50);
    assert.equal(s.sweepScanMode, 'on');
    assert.deepEqual(s.routes, { billing: 'arn:aws:sns:eu-west-1:123456789012:billing' });
  });
  it('takes the asset directory from OUTBOX_LAMBDA_ASSET_DIR when the context has none', () => {
    assert.equal(settingsFromContext(() => undefined, { OUTBOX_LAMBDA_ASSET_DIR: '/prebuilt' }).lambdaAssetDir, '/prebuilt');
  });
});

describe('routes', () => {
  it('turns an SQS queue URL into the queue ARN and sqs:SendMessage', () => {
    assert.deepEqual(routeTarget('https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo'), {
      kind: 'sqs',
      arn: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo',
      action: 'sqs:SendMessage',
    });
  });
  it('maps an SNS topic ARN to sns:Publish and a bus ARN to events:PutEvents', () => {
    assert.equal(routeTarget('arn:aws:sns:eu-west-1:123456789012:t').action, 'sns:Publish');
    assert.equal(routeTarget('arn:aws:events:eu-west-1:123456789012:event-bus/default').action, 'events:PutEvents');
  });
});

describe('names', () => {
  it('prefixes every physical name and keeps .fifo last', () => {
    const n = { ...names('shop'), ...exampleNames('shop') };
    assert.equal(n.outboxTable, 'shop-table');
    assert.equal(n.publisher, 'shop-publisher');
    assert.ok(n.fifoQueue.endsWith('.fifo') && n.fifoDlq.endsWith('.fifo'));
    for (const v of Object.values(n)) assert.ok(v.startsWith('shop-'), v);
  });
});
