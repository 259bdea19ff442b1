// The recovery function (issue 11): the publisher's stream mapping sends an on-failure
// record (shard and sequence range only) to <prefix>-stream-failures when Lambda
// discards a batch; outbox-recovery consumes that queue, reads the range back from the
// stream and puts the pending items it finds into the sweeper's index.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { actionsOf, asList, dashboardBody, fakeElf, logicalId, makeAssetDir, newStack, statementsOf, synth } from './helpers.ts';

const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });
type Props = Record<string, any>;
const props = (t: Template, type: string, match: Record<string, unknown>): Props =>
  (t.findResources(type) as Record<string, { Properties: Props }>)[logicalId(t, type, match)].Properties;
const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

describe('recovery function', () => {
  let t: Template;
  const queue = (name: string) => getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: name }));
  before(() => {
    t = synth();
  });

  it('runs outbox-recovery on provided.al2023 (the architecture setting), 256 MB, 60 s, JSON logs to its own log group', () => {
    const group = logicalId(t, 'AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/outbox-recovery' });
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'outbox-recovery',
      Runtime: 'provided.al2023',
      Architectures: ['arm64'],
      Handler: 'bootstrap',
      MemorySize: 256,
      Timeout: 60,
      LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: group } },
    });
    t.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/outbox-recovery', RetentionInDays: 30 });
    const x86 = synth({ architecture: 'x86_64' });
    x86.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'outbox-recovery', Architectures: ['x86_64'] });
  });
  it('knows the outbox table, its key names, its shard count, the deployment and its home regions (OUTBOX_TABLE_NAME, OUTBOX_PARTITION_KEY/SORT_KEY/TTL_ATTRIBUTE, OUTBOX_SWEEP_SHARDS, OUTBOX_DEPLOYMENT, OUTBOX_REGION, OUTBOX_DEFAULT_HOME_REGION), nothing else', () => {
    const env = props(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-recovery' }).Environment.Variables;
    assert.deepEqual(Object.keys(env).sort(), [
      'OUTBOX_DEFAULT_HOME_REGION',
      'OUTBOX_DEPLOYMENT',
      'OUTBOX_PARTITION_KEY',
      'OUTBOX_REGION',
      'OUTBOX_SORT_KEY',
      'OUTBOX_SWEEP_SHARDS',
      'OUTBOX_TABLE_NAME',
      'OUTBOX_TTL_ATTRIBUTE',
    ]);
    assert.equal(env.OUTBOX_SWEEP_SHARDS, '16');
    assert.deepEqual(env.OUTBOX_TABLE_NAME, { Ref: logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }) });
    assert.equal(env.OUTBOX_DEPLOYMENT, 'outbox');
    const shop = synth({ prefix: 'shop' });
    shop.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'shop-recovery',
      Environment: { Variables: Match.objectLike({ OUTBOX_DEPLOYMENT: 'shop' }) },
    });
  });
  it('consumes <prefix>-stream-failures, 10 records at a time, with partial batch responses', () => {
    const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).filter(
      (m) => JSON.stringify(m.Properties.EventSourceArn) === JSON.stringify(queue('outbox-stream-failures')),
    );
    assert.equal(mappings.length, 1);
    assert.deepEqual(mappings[0].Properties, {
      EventSourceArn: queue('outbox-stream-failures'),
      FunctionName: { Ref: logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-recovery' }) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      Enabled: true,
    });
  });
  it("gives the failure queue a visibility timeout of 6 × the function's timeout", () => {
    const fn = props(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-recovery' });
    const q = props(t, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures' });
    assert.ok(q.VisibilityTimeout >= 6 * fn.Timeout, `visibility ${q.VisibilityTimeout} < 6 × ${fn.Timeout}`);
    assert.equal(q.VisibilityTimeout, 360);
  });
  it('redrives the failure queue to <prefix>-stream-failures-dlq after maxReceiveCount receives', () => {
    t.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'outbox-stream-failures',
      RedrivePolicy: { deadLetterTargetArn: queue('outbox-stream-failures-dlq'), maxReceiveCount: 5 },
    });
    synth({ maxReceiveCount: 3 }).hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'outbox-stream-failures',
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }),
    });
  });
  it('makes the new DLQ like every queue: encrypted, TLS only, 14 days, MaximumMessageSize stated', () => {
    t.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'outbox-stream-failures-dlq',
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
      MaximumMessageSize: 1_048_576,
    });
    assert.equal(props(t, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures-dlq' }).RedrivePolicy, undefined);
    const id = logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures-dlq' });
    const tls = Object.values(t.findResources('AWS::SQS::QueuePolicy')).filter((p) =>
      p.Properties.Queues.some((q: { Ref: string }) => q.Ref === id),
    );
    assert.equal(tls.length, 1);
    assert.ok(
      tls[0].Properties.PolicyDocument.Statement.some((s: any) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false'),
    );
    synth({ maxMessageBytes: 262_144 }).hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'outbox-stream-failures-dlq',
      MaximumMessageSize: 262_144,
    });
    synth({ kmsKeyArn: KEY }).hasResourceProperties('AWS::SQS::Queue', { QueueName: 'outbox-stream-failures-dlq', KmsMasterKeyId: KEY });
  });

  describe('IAM', () => {
    it('has its own role: stream reads on the stream ARN, UpdateItem on the table, consume the failure queue, its own logs', () => {
      const table = logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' });
      const st = statementsOf(t, 'outbox-recovery');
      const bySid = Object.fromEntries(st.map((s) => [s.Sid, s]));
      assert.deepEqual(Object.keys(bySid).sort(), ['AdoptIntoSweepIndex', 'CheckOutboxTable', 'ConsumeStreamFailures', 'ReadOutboxStream', 'WriteOwnLogs']);
      // The check of the table before work: the table's description only, on the table alone.
      assert.deepEqual(bySid.CheckOutboxTable, { Sid: 'CheckOutboxTable', Effect: 'Allow', Action: ['dynamodb:DescribeTable', 'dynamodb:DescribeTimeToLive'], Resource: getAtt(table) });
      assert.deepEqual(bySid.ReadOutboxStream.Resource, getAtt(table, 'StreamArn'));
      assert.deepEqual([...bySid.ReadOutboxStream.Action].sort(), ['dynamodb:GetRecords', 'dynamodb:GetShardIterator']);
      assert.deepEqual(bySid.AdoptIntoSweepIndex, { Sid: 'AdoptIntoSweepIndex', Effect: 'Allow', Action: 'dynamodb:UpdateItem', Resource: getAtt(table) });
      assert.deepEqual(bySid.ConsumeStreamFailures.Resource, queue('outbox-stream-failures'));
      assert.deepEqual(
        [...bySid.ConsumeStreamFailures.Action].sort(),
        ['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage'],
      );
      const group = logicalId(t, 'AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/outbox-recovery' });
      assert.deepEqual(bySid.WriteOwnLogs.Resource, getAtt(group));
      assert.deepEqual(actionsOf(t, 'outbox-recovery'), [
        'dynamodb:DescribeTable',
        'dynamodb:DescribeTimeToLive',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:ReceiveMessage',
      ]);
      const role = props(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-recovery' }).Role;
      for (const other of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer']) {
        assert.notDeepEqual(props(t, 'AWS::Lambda::Function', { FunctionName: other }).Role, role, other);
      }
    });
    it('may use the KMS key, and only that key, when one is configured', () => {
      const k = synth({ kmsKeyArn: KEY });
      const kms = statementsOf(k, 'outbox-recovery').filter((s) => asList(s.Action as string | string[]).some((a) => a.startsWith('kms:')));
      assert.ok(kms.length > 0);
      for (const s of kms) assert.deepEqual(s.Resource, KEY);
      assert.deepEqual(
        [...new Set(actionsOf(k, 'outbox-recovery').filter((a) => a.startsWith('kms:')))].sort(),
        ['kms:Decrypt', 'kms:DescribeKey', 'kms:GenerateDataKey'],
      );
      assert.ok(!actionsOf(t, 'outbox-recovery').some((a) => a.startsWith('kms:')));
    });
  });

  it('attaches to an existing table: its stream ARN and the table ARN derived from it', () => {
    const streamArn = 'arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000';
    const e = synth({ existingTable: { tableName: 'app', streamArn } });
    const bySid = Object.fromEntries(statementsOf(e, 'outbox-recovery').map((s) => [s.Sid, s]));
    assert.equal(bySid.ReadOutboxStream.Resource, streamArn);
    assert.equal(bySid.AdoptIntoSweepIndex.Resource, 'arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app');
    e.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'outbox-recovery',
      Environment: { Variables: Match.objectLike({ OUTBOX_TABLE_NAME: 'app' }) },
    });
    e.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: getAtt(logicalId(e, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures' })),
      BatchSize: 10,
    });
  });
  it('refuses to synthesize without the outbox-recovery build, naming the file', () => {
    const dir = makeAssetDir({ binary: fakeElf('arm64') });
    fs.rmSync(path.join(dir, 'outbox-recovery'), { recursive: true, force: true });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /outbox-recovery\/bootstrap not found/);
  });
  it('refuses an outbox-recovery build of the wrong architecture', () => {
    const dir = makeAssetDir({ binary: fakeElf('arm64') });
    fs.mkdirSync(path.join(dir, 'outbox-recovery'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'outbox-recovery', 'bootstrap'), fakeElf('x86_64'));
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /outbox-recovery\/bootstrap is an x86_64 ELF executable, but the functions are deployed as arm64/);
  });
});

// The recovery alarms' metrics and evaluation: test/contract.test.ts, with every alarm of the outbox.

describe('recovery on the dashboard', () => {
  let widgets: Array<{ properties: Props }>;
  before(() => {
    widgets = dashboardBody(synth()).widgets;
  });
  const where = (m: string[]) => widgets.filter((w) => (w.properties.metrics as string[][]).some((x) => JSON.stringify(x) === JSON.stringify(m)));
  it('shows RecoveredFromStream and RecoveryRangeLost in one widget, with the discards that caused them', () => {
    const recovered = where(['DynamoDbOutbox', 'RecoveredFromStream', 'Service', 'outbox']);
    assert.equal(recovered.length, 1);
    const metrics = recovered[0].properties.metrics as string[][];
    assert.ok(metrics.some((m) => JSON.stringify(m) === JSON.stringify(['DynamoDbOutbox', 'RecoveryRangeLost', 'Service', 'outbox'])));
    assert.ok(metrics.some((m) => JSON.stringify(m) === JSON.stringify(['AWS/SQS', 'NumberOfMessagesSent', 'QueueName', 'outbox-stream-failures'])));
  });
  it('shows the depth of the new DLQ', () => {
    assert.equal(where(['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', 'outbox-stream-failures-dlq']).length, 1);
  });
  it("shows the recovery function's errors, duration and throttles", () => {
    for (const metric of ['Errors', 'Duration', 'Throttles']) {
      assert.equal(where(['AWS/Lambda', metric, 'FunctionName', 'outbox-recovery']).length, 1, metric);
    }
  });
});
