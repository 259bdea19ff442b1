import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { before, describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { STREAM_FILTER_FILE, homeStreamFilter } from '../lib/config.ts';
import { settingsFromContext } from '../example/context.ts';
import { resolveSettings } from '../example/settings.ts';
import { actionsOf, asList, fakeAssetDir, fakeElf, fakeZip, logicalId, newStack, statementsOf, synth } from './helpers.ts';

const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

describe('default deployment', () => {
  let t: Template;
  before(() => {
    t = synth();
  });

  describe('outbox table', () => {
    it('has PK/SK string keys, on-demand billing and deletion protection', () => {
      t.hasResourceProperties('AWS::DynamoDB::Table', {
        TableName: 'outbox-table',
        KeySchema: [
          { AttributeName: 'PK', KeyType: 'HASH' },
          { AttributeName: 'SK', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: Match.arrayWith([
          { AttributeName: 'PK', AttributeType: 'S' },
          { AttributeName: 'SK', AttributeType: 'S' },
        ]),
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
      });
    });
    it('streams NEW_IMAGE, expires on ExpiresAt, has PITR and SSE', () => {
      t.hasResourceProperties('AWS::DynamoDB::Table', {
        TableName: 'outbox-table',
        StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
        TimeToLiveSpecification: { AttributeName: 'ExpiresAt', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      });
    });
    it('has the sparse KEYS_ONLY sweeper index SweepShard (S) / SweepDueAt (N)', () => {
      t.hasResourceProperties('AWS::DynamoDB::Table', {
        TableName: 'outbox-table',
        AttributeDefinitions: Match.arrayWith([
          { AttributeName: 'SweepShard', AttributeType: 'S' },
          { AttributeName: 'SweepDueAt', AttributeType: 'N' },
        ]),
        GlobalSecondaryIndexes: [
          {
            IndexName: 'OutboxSweepIndex',
            KeySchema: [
              { AttributeName: 'SweepShard', KeyType: 'HASH' },
              { AttributeName: 'SweepDueAt', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
        ],
      });
    });
    it('is retained when the stack is deleted', () => {
      t.hasResource('AWS::DynamoDB::Table', { Properties: { TableName: 'outbox-table' }, DeletionPolicy: 'Retain' });
    });
  });

  describe('publisher', () => {
    it('runs the cargo lambda bootstrap on provided.al2023 arm64', () => {
      t.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: 'outbox-publisher',
        Runtime: 'provided.al2023',
        Architectures: ['arm64'],
        Handler: 'bootstrap',
        LoggingConfig: Match.objectLike({ LogFormat: 'JSON' }),
      });
    });
    it('gets the table, routes, DLQ, TTL and large-payload bucket from the environment (CONTRACT.md)', () => {
      const fn = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-publisher' } }))[0];
      const env = fn.Properties.Environment.Variables;
      assert.deepEqual(Object.keys(env).sort(), [
        'OUTBOX_DEFAULT_HOME_REGION',
        'OUTBOX_DEPLOYMENT',
        'OUTBOX_DLQ_URL',
        'OUTBOX_LARGE_PAYLOAD_BUCKET',
        'OUTBOX_PARTITION_KEY',
        'OUTBOX_REGION',
        'OUTBOX_ROUTES',
        'OUTBOX_SORT_KEY',
        'OUTBOX_SWEEP_SHARDS',
        'OUTBOX_TABLE_NAME',
        'OUTBOX_TTL_ATTRIBUTE',
        'OUTBOX_TTL_DAYS',
      ]);
      assert.deepEqual([env.OUTBOX_PARTITION_KEY, env.OUTBOX_SORT_KEY, env.OUTBOX_TTL_ATTRIBUTE], ['PK', 'SK', 'ExpiresAt']);
      assert.equal(env.OUTBOX_SWEEP_SHARDS, '16');
      assert.equal(env.OUTBOX_DEPLOYMENT, 'outbox');
      assert.deepEqual(env.OUTBOX_TABLE_NAME, { Ref: logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }) });
      assert.deepEqual(env.OUTBOX_DLQ_URL, { Ref: logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-dlq' }) });
      assert.equal(env.OUTBOX_TTL_DAYS, '7');
      // OUTBOX_ROUTES is a JSON object: {"orders": <orders queue URL>, "orders-events": <FIFO queue URL>}
      const joined = JSON.stringify(env.OUTBOX_ROUTES);
      assert.match(joined, /\\"orders\\":\\"/);
      assert.match(joined, /\\"orders-events\\":\\"/);
      assert.ok(joined.includes(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-queue' })));
      assert.ok(joined.includes(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-events.fifo' })));
    });
    it('reads the stream with the FilterCriteria of infra/stream-filter.json, with the region clauses', () => {
      const file = JSON.parse(fs.readFileSync(STREAM_FILTER_FILE, 'utf8'));
      const mapping = Object.values(t.findResources('AWS::Lambda::EventSourceMapping', { Properties: { StartingPosition: 'TRIM_HORIZON' } }));
      assert.equal(mapping.length, 1);
      assert.deepEqual(mapping[0].Properties.FilterCriteria, homeStreamFilter(file, 'eu-west-1'));
    });
    it('maps the stream from TRIM_HORIZON with partial batch responses, bisect, bounded retries and age', () => {
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }), 'StreamArn'),
        FunctionName: { Ref: logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-publisher' }) },
        StartingPosition: 'TRIM_HORIZON',
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 5,
        MaximumRecordAgeInSeconds: 3600,
        BatchSize: 100,
        ParallelizationFactor: 1,
        DestinationConfig: { OnFailure: { Destination: getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-stream-failures' })) } },
      });
    });
  });

  describe('sweeper', () => {
    it('runs on provided.al2023 arm64, one at a time, with the sweep settings', () => {
      t.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: 'outbox-sweeper',
        Runtime: 'provided.al2023',
        Architectures: ['arm64'],
        Handler: 'bootstrap',
        ReservedConcurrentExecutions: 1,
        Environment: {
          Variables: Match.objectLike({
            OUTBOX_MAX_ATTEMPTS: '8',
            OUTBOX_SWEEP_GRACE_SECONDS: '60',
            OUTBOX_SWEEP_PERIOD_SECONDS: '60',
            OUTBOX_SWEEP_SCAN_MODE: 'off',
            OUTBOX_TTL_DAYS: '7',
            OUTBOX_ROUTES: Match.anyValue(),
            OUTBOX_DLQ_URL: Match.anyValue(),
            OUTBOX_TABLE_NAME: Match.anyValue(),
          }),
        },
      });
    });
    it('is invoked by an EventBridge schedule every minute', () => {
      t.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: getAtt(logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-sweeper' })) })],
      });
      t.hasResourceProperties('AWS::Lambda::Permission', {
        Principal: 'events.amazonaws.com',
        FunctionName: getAtt(logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-sweeper' })),
      });
    });
  });

  describe('queues', () => {
    it('encrypts every queue (SQS-managed SSE by default)', () => {
      const queues = Object.values(t.findResources('AWS::SQS::Queue'));
      assert.equal(queues.length, 7);
      for (const q of queues) assert.equal(q.Properties.SqsManagedSseEnabled, true, q.Properties.QueueName);
    });
    it('denies every request without TLS on every queue', () => {
      const queueIds = Object.keys(t.findResources('AWS::SQS::Queue')).sort();
      const policies = Object.values(t.findResources('AWS::SQS::QueuePolicy'));
      const covered = policies.flatMap((p) => {
        const deny = p.Properties.PolicyDocument.Statement.find(
          (s: any) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false',
        );
        assert.ok(deny, 'TLS deny statement');
        return p.Properties.Queues.map((q: { Ref: string }) => q.Ref);
      });
      assert.deepEqual(covered.sort(), queueIds);
    });
    // 10, not the stream-failure queue's 5: with frequent random consumer crashes 5 dead-letters
    // innocent neighbours (functions/lib/dynamodb-outbox-idempotency/README.md).
    it('redrives the standard destination to its DLQ after 10 receives', () => {
      t.hasResourceProperties('AWS::SQS::Queue', {
        QueueName: 'outbox-orders-queue',
        VisibilityTimeout: 180,
        RedrivePolicy: { deadLetterTargetArn: getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-queue-dlq' })), maxReceiveCount: 10 },
      });
    });
    it('redrives the FIFO destination to a FIFO DLQ after 10 receives', () => {
      t.hasResourceProperties('AWS::SQS::Queue', {
        QueueName: 'outbox-orders-events.fifo',
        FifoQueue: true,
        RedrivePolicy: { deadLetterTargetArn: getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-events-dlq.fifo' })), maxReceiveCount: 10 },
      });
      t.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'outbox-orders-events-dlq.fifo', FifoQueue: true });
    });
    it('leaves the stream-failure queue at 5 receives beside them', () => {
      t.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'outbox-stream-failures', RedrivePolicy: Match.objectLike({ maxReceiveCount: 5 }) });
    });
    it('keeps failed messages 14 days', () => {
      for (const name of ['outbox-dlq', 'outbox-stream-failures', 'outbox-stream-failures-dlq', 'outbox-orders-queue-dlq', 'outbox-orders-events-dlq.fifo']) {
        t.hasResourceProperties('AWS::SQS::Queue', { QueueName: name, MessageRetentionPeriod: 1_209_600 });
      }
    });
  });

  describe('reference consumer', () => {
    it('consumes the orders queue with partial batch responses', () => {
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-queue' })),
        FunctionName: { Ref: logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-orders-consumer' }) },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BatchSize: 10,
      });
    });
    it('runs on provided.al2023 arm64 and knows its table', () => {
      t.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: 'outbox-orders-consumer',
        Runtime: 'provided.al2023',
        Architectures: ['arm64'],
        Handler: 'bootstrap',
        Environment: { Variables: { ORDERS_TABLE_NAME: { Ref: logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-orders' }) } } },
      });
    });
    it('has an orders table keyed by id with TTL, PITR and SSE', () => {
      t.hasResourceProperties('AWS::DynamoDB::Table', {
        TableName: 'outbox-orders',
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        TimeToLiveSpecification: { AttributeName: 'ExpiresAt', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      });
    });
  });

  describe('IAM', () => {
    it('gives each function its own role', () => {
      const roles = Object.values(t.findResources('AWS::Lambda::Function')).map((f) => JSON.stringify(f.Properties.Role));
      assert.equal(new Set(roles).size, 4);
      t.resourceCountIs('AWS::IAM::Role', 4);
    });
    it('allows no wildcard action and no wildcard resource anywhere, and denies only full scans of the sweep index', () => {
      for (const p of Object.values(t.findResources('AWS::IAM::Policy'))) {
        for (const s of p.Properties.PolicyDocument.Statement) {
          for (const a of asList(s.Action as string | string[])) assert.ok(!a.includes('*'), `action ${a}`);
          for (const r of asList(s.Resource)) assert.notEqual(r, '*');
          // The one Deny: no PartiQL select may scan the sweep index.
          assert.equal(s.Effect, s.Sid === 'NoFullIndexScan' ? 'Deny' : 'Allow');
        }
      }
      // The one managed policy is the producer's, for the application's role: attached to no role here.
      const managed = Object.values(t.findResources('AWS::IAM::ManagedPolicy'));
      assert.deepEqual(managed.map((p) => [p.Properties.ManagedPolicyName, p.Properties.Roles]), [['outbox-producer', undefined]]);
      for (const r of Object.values(t.findResources('AWS::IAM::Role'))) assert.equal(r.Properties.ManagedPolicyArns, undefined);
    });
    it('lets the publisher only update and read items of the outbox table, read its stream and send to routes + DLQ', () => {
      const table = logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' });
      const queue = (name: string) => getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: name }));
      const st = statementsOf(t, 'outbox-publisher');
      const bySid = Object.fromEntries(st.map((s) => [s.Sid, s]));
      assert.deepEqual(bySid.MarkSentOrFailed, {
        Sid: 'MarkSentOrFailed',
        Effect: 'Allow',
        Action: ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate'],
        Resource: getAtt(table),
      });
      assert.deepEqual(bySid.ReadOutboxStream.Resource, getAtt(table, 'StreamArn'));
      assert.deepEqual(
        [...bySid.ReadOutboxStream.Action].sort(),
        ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
      );
      assert.deepEqual(bySid.SendToRoutedQueues.Resource, [queue('outbox-orders-queue'), queue('outbox-orders-events.fifo'), queue('outbox-dlq')]);
      assert.deepEqual(bySid.ReportDiscardedBatches.Resource, queue('outbox-stream-failures'));
      assert.deepEqual(bySid.ReadOutboxItems, {
        Sid: 'ReadOutboxItems',
        Effect: 'Allow',
        Action: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
        Resource: getAtt(table),
      });
      // The order fence reads an aggregate's pending messages: the index, or a partition.
      assert.deepEqual(bySid.ReadPendingSiblings, {
        Sid: 'ReadPendingSiblings',
        Effect: 'Allow',
        Action: 'dynamodb:Query',
        Resource: [getAtt(table), { 'Fn::Join': ['', [getAtt(table), '/index/OutboxSweepIndex']] }],
      });
      // And reads the index shards a batch touches in one PartiQL select, never a scan of it.
      const index = { 'Fn::Join': ['', [getAtt(table), '/index/OutboxSweepIndex']] };
      assert.deepEqual(bySid.SelectPendingKeys, { Sid: 'SelectPendingKeys', Effect: 'Allow', Action: 'dynamodb:PartiQLSelect', Resource: index });
      assert.deepEqual(bySid.NoFullIndexScan, {
        Sid: 'NoFullIndexScan',
        Effect: 'Deny',
        Action: 'dynamodb:PartiQLSelect',
        Resource: index,
        Condition: { Bool: { 'dynamodb:FullTableScan': 'true' } },
      });
      assert.deepEqual(actionsOf(t, 'outbox-publisher').filter((a) => a.startsWith('dynamodb:') && !bySid.ReadOutboxStream.Action.includes(a)), [
        'dynamodb:BatchGetItem',
        'dynamodb:DescribeTable', // the check of the table before work (CheckOutboxTable)
        'dynamodb:DescribeTimeToLive',
        'dynamodb:GetItem',
        'dynamodb:PartiQLSelect',
        'dynamodb:PartiQLUpdate',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
      ]);
    });
    it('lets the sweeper query the sweep index and (the order fence) partitions, update and read items, and (no scan by default) neither scan the table nor put scan cursors', () => {
      const table = logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' });
      const bySid = Object.fromEntries(statementsOf(t, 'outbox-sweeper').map((s) => [s.Sid, s]));
      assert.deepEqual(bySid.QuerySweepIndex.Action, 'dynamodb:Query');
      assert.deepEqual(bySid.QuerySweepIndex.Resource, { 'Fn::Join': ['', [getAtt(table), '/index/OutboxSweepIndex']] });
      // The order fence reads another producer's aggregate from its partition.
      assert.deepEqual(bySid.ReadPendingSiblings, { Sid: 'ReadPendingSiblings', Effect: 'Allow', Action: 'dynamodb:Query', Resource: getAtt(table) });
      assert.deepEqual(bySid.UpdateOutboxItems, {
        Sid: 'UpdateOutboxItems',
        Effect: 'Allow',
        Action: ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate'],
        Resource: getAtt(table),
      });
      const actions = [...new Set(actionsOf(t, 'outbox-sweeper'))]; // Query: on the index and (the fence) the table
      assert.deepEqual(bySid.ReadOutboxItems, {
        Sid: 'ReadOutboxItems',
        Effect: 'Allow',
        Action: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
        Resource: getAtt(table),
      });
      assert.equal(bySid.SaveScanCursors, undefined);
      assert.deepEqual(bySid.SelectPendingKeys.Resource, { 'Fn::Join': ['', [getAtt(table), '/index/OutboxSweepIndex']] });
      assert.deepEqual(bySid.NoFullIndexScan.Effect, 'Deny');
      assert.deepEqual(actions, [
        'dynamodb:BatchGetItem',
        'dynamodb:DescribeTable', // the check of the table before work (CheckOutboxTable)
        'dynamodb:DescribeTimeToLive',
        'dynamodb:GetItem',
        'dynamodb:PartiQLSelect',
        'dynamodb:PartiQLUpdate',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:GetObject', // a FAILED message's payload copied to failed/ (test/large-payloads.test.ts)
        's3:PutObject', // large payloads (test/large-payloads.test.ts)
        'sqs:GetQueueAttributes',
        'sqs:SendMessage',
      ]);
    });
    it('lets the consumer write only its orders table and receive/delete only its queue', () => {
      const orders = getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-orders' }));
      const queue = getAtt(logicalId(t, 'AWS::SQS::Queue', { QueueName: 'outbox-orders-queue' }));
      const bySid = Object.fromEntries(statementsOf(t, 'outbox-orders-consumer').map((s) => [s.Sid, s]));
      assert.deepEqual(bySid.ApplyOrdersOnce.Resource, orders);
      // BusinessKeyGuard's conditional PutItem, nothing else.
      assert.deepEqual(bySid.ApplyOrdersOnce.Action, 'dynamodb:PutItem');
      assert.deepEqual(bySid.ConsumeOrdersQueue.Resource, queue);
      assert.ok(bySid.ConsumeOrdersQueue.Action.includes('sqs:ReceiveMessage') && bySid.ConsumeOrdersQueue.Action.includes('sqs:DeleteMessage'));
      assert.ok(!actionsOf(t, 'outbox-orders-consumer').some((a) => a.startsWith('sqs:Send')));
    });
    it('lets each function write only to its own log group', () => {
      for (const name of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery']) {
        const logs = statementsOf(t, name).find((s) => s.Sid === 'WriteOwnLogs')!;
        const group = logicalId(t, 'AWS::Logs::LogGroup', { LogGroupName: `/aws/lambda/${name}` });
        assert.deepEqual(logs.Resource, getAtt(group));
      }
    });
  });

  describe('observability', () => {
    it('keeps each function log group 30 days and wires it to the function', () => {
      for (const name of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery']) {
        t.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: `/aws/lambda/${name}`, RetentionInDays: 30 });
        t.hasResourceProperties('AWS::Lambda::Function', {
          FunctionName: name,
          LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalId(t, 'AWS::Logs::LogGroup', { LogGroupName: `/aws/lambda/${name}` }) } },
        });
      }
    });
    const queueAlarm = (alarm: string, queue: string) =>
      it(`alarms (${alarm}) as soon as ${queue} holds a message`, () => {
        t.hasResourceProperties('AWS::CloudWatch::Alarm', {
          AlarmName: `outbox-${alarm}`,
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: queue }],
          Statistic: 'Maximum',
          ComparisonOperator: 'GreaterThanThreshold',
          Threshold: 0,
          TreatMissingData: 'notBreaching',
        });
      });
    queueAlarm('OutboxDlqNotEmpty', 'outbox-dlq');
    queueAlarm('ConsumerDlqNotEmpty', 'outbox-orders-queue-dlq');
    queueAlarm('RecoveryDlqNotEmpty', 'outbox-stream-failures-dlq');
    queueAlarm('OrdersEventsDlqNotEmpty', 'outbox-orders-events-dlq.fifo');
    it('alarms when the publisher iterator age exceeds one minute', () => {
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'outbox-PublisherIteratorAge',
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: 'outbox-publisher' }],
        Statistic: 'Maximum',
        Threshold: 60_000,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    });
    it('alarms when the sweeper recovers anything (EMF metric RecoveredBySweeper, Service=outbox)', () => {
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'outbox-SweeperRecovering',
        Namespace: 'DynamoDbOutbox',
        MetricName: 'RecoveredBySweeper',
        Dimensions: [{ Name: 'Service', Value: 'outbox' }],
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    });
    it('alarms when the oldest PENDING message is older than 10 minutes', () => {
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'outbox-OldestPendingTooOld',
        Namespace: 'DynamoDbOutbox',
        MetricName: 'OldestPendingAgeSeconds',
        Dimensions: [{ Name: 'Service', Value: 'outbox' }],
        Statistic: 'Maximum',
        Threshold: 600,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    });
    it("notifies the example's own encrypted topic <prefix>-alarms when no alarm topic is given", () => {
      const topics = t.findResources('AWS::SNS::Topic');
      assert.deepEqual(Object.values(topics).map((r) => r.Properties.TopicName), ['outbox-alarms']);
      assert.ok(Object.values(topics)[0].Properties.KmsMasterKeyId, 'the topic is encrypted');
      for (const a of Object.values(t.findResources('AWS::CloudWatch::Alarm'))) assert.deepEqual(a.Properties.AlarmActions, [{ Ref: Object.keys(topics)[0] }]);
      t.resourceCountIs('AWS::CloudWatch::Alarm', 19);
    });
  });
});

describe('parameters', () => {
  it('applies prefix, batch size, retries, record age, TTL, attempts and sweep rate', () => {
    const t = synth({
      prefix: 'shop',
      batchSize: 25,
      streamRetryAttempts: 2,
      streamMaxRecordAgeSeconds: 600,
      ttlDays: 3,
      maxAttempts: 4,
      sweepRateMinutes: 5,
      logRetentionDays: 90,
    });
    t.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'shop-table' });
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 25, MaximumRetryAttempts: 2, MaximumRecordAgeInSeconds: 600 });
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'shop-sweeper',
      Environment: { Variables: Match.objectLike({ OUTBOX_MAX_ATTEMPTS: '4', OUTBOX_TTL_DAYS: '3' }) },
    });
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'shop-publisher', Environment: { Variables: Match.objectLike({ OUTBOX_TTL_DAYS: '3' }) } });
    t.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
    t.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/shop-publisher', RetentionInDays: 90 });
  });
  it('gives the orders queues consumerMaxReceiveCount and the stream-failure queue maxReceiveCount, each its own', () => {
    const receives = (t: Template) =>
      Object.fromEntries(
        Object.values(t.findResources('AWS::SQS::Queue'))
          .filter((q) => q.Properties.RedrivePolicy)
          .map((q) => [q.Properties.QueueName, q.Properties.RedrivePolicy.maxReceiveCount]),
      );
    const fromContext = (ctx: Record<string, string>) => synth(settingsFromContext((k) => ctx[k], { OUTBOX_LAMBDA_ASSET_DIR: fakeAssetDir() }));
    assert.deepEqual(receives(fromContext({ 'outbox:consumerMaxReceiveCount': '20' })), {
      'outbox-orders-queue': 20,
      'outbox-orders-events.fifo': 20,
      'outbox-stream-failures': 5,
    });
    assert.deepEqual(receives(fromContext({ 'outbox:maxReceiveCount': '3' })), {
      'outbox-orders-queue': 10,
      'outbox-orders-events.fifo': 10,
      'outbox-stream-failures': 3,
    });
  });
  it('grants exactly the actions extra routes need, on exactly their resources', () => {
    const t = synth({
      routes: {
        billing: 'https://sqs.eu-west-1.amazonaws.com/123456789012/billing',
        audit: 'arn:aws:sns:eu-west-1:123456789012:audit',
        analytics: 'arn:aws:events:eu-west-1:123456789012:event-bus/analytics',
      },
    });
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) {
      const bySid = Object.fromEntries(statementsOf(t, fn).map((s) => [s.Sid, s]));
      assert.ok(asList(bySid.SendToRoutedQueues.Resource).includes('arn:aws:sqs:eu-west-1:123456789012:billing'));
      assert.deepEqual(bySid.PublishToRoutedTopics, {
        Sid: 'PublishToRoutedTopics',
        Effect: 'Allow',
        Action: 'sns:Publish',
        Resource: 'arn:aws:sns:eu-west-1:123456789012:audit',
      });
      assert.deepEqual(bySid.PutToRoutedBuses.Resource, 'arn:aws:events:eu-west-1:123456789012:event-bus/analytics');
    }
    const fn = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-publisher' } }))[0];
    const routes = JSON.stringify(fn.Properties.Environment.Variables.OUTBOX_ROUTES);
    assert.ok(routes.includes('https://sqs.eu-west-1.amazonaws.com/123456789012/billing'));
    assert.ok(routes.includes('arn:aws:events:eu-west-1:123456789012:event-bus/analytics'));
  });
  it('passes the default destination on and lets the functions send to it', () => {
    const t = synth({ defaultDestination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/catch-all' });
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'outbox-publisher',
      Environment: { Variables: Match.objectLike({ OUTBOX_DEFAULT_DESTINATION: 'https://sqs.eu-west-1.amazonaws.com/123456789012/catch-all' }) },
    });
    const send = statementsOf(t, 'outbox-sweeper').find((s) => s.Sid === 'SendToRoutedQueues')!;
    assert.ok(asList(send.Resource).includes('arn:aws:sqs:eu-west-1:123456789012:catch-all'));
  });
  it('grants Scan to the sweeper unless the scan mode is off', () => {
    const t = synth({ sweepScanMode: 'on' });
    const update = statementsOf(t, 'outbox-sweeper').find((s) => s.Sid === 'UpdateOutboxItems')!;
    assert.deepEqual(update.Action, ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate', 'dynamodb:Scan']);
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'outbox-sweeper',
      Environment: { Variables: Match.objectLike({ OUTBOX_SWEEP_SCAN_MODE: 'on' }) },
    });
    assert.ok(!actionsOf(t, 'outbox-publisher').includes('dynamodb:Scan'));
    const off = synth({ sweepScanMode: 'off' });
    assert.deepEqual(statementsOf(off, 'outbox-sweeper').find((s) => s.Sid === 'UpdateOutboxItems')!.Action, ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate']);
    assert.ok(!actionsOf(off, 'outbox-sweeper').includes('dynamodb:Scan'));
  });
  it('builds for x86_64 when asked', () => {
    const t = synth({ architecture: 'x86_64' });
    for (const f of Object.values(t.findResources('AWS::Lambda::Function'))) assert.deepEqual(f.Properties.Architectures, ['x86_64']);
  });
  it('encrypts tables and queues with a customer-managed key when one is given', () => {
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const t = synth({ kmsKeyArn: key });
    for (const name of ['outbox-table', 'outbox-orders']) {
      t.hasResourceProperties('AWS::DynamoDB::Table', { TableName: name, SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: key } });
    }
    for (const q of Object.values(t.findResources('AWS::SQS::Queue'))) {
      assert.equal(q.Properties.KmsMasterKeyId, key, q.Properties.QueueName);
      assert.equal(q.Properties.SqsManagedSseEnabled, undefined);
    }
    for (const fn of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery']) {
      const kms = statementsOf(t, fn).filter((s) => asList(s.Action as string | string[]).some((a) => a.startsWith('kms:')));
      assert.ok(kms.length > 0, fn);
      for (const s of kms) assert.deepEqual(s.Resource, key);
    }
  });
  it('lets every function use the key the way a KMS-encrypted table needs (decrypt, generate data key, describe; no encrypt)', () => {
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const t = synth({ kmsKeyArn: key });
    for (const fn of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery']) {
      const kms = actionsOf(t, fn).filter((a) => a.startsWith('kms:'));
      assert.deepEqual([...new Set(kms)].sort(), ['kms:Decrypt', 'kms:DescribeKey', 'kms:GenerateDataKey'], fn);
    }
  });
  it('sends alarms to the given SNS topic', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:ops';
    const t = synth({ alarmTopicArn: topic });
    for (const a of Object.values(t.findResources('AWS::CloudWatch::Alarm'))) assert.deepEqual(a.Properties.AlarmActions, [topic]);
  });
  it('attaches to an existing table instead of creating one', () => {
    const streamArn = 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000';
    const t = synth({ existingTable: { tableName: 'app', streamArn } });
    t.resourceCountIs('AWS::DynamoDB::Table', 1); // only the orders table
    t.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'outbox-orders' });
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: streamArn });
    const pub = Object.fromEntries(statementsOf(t, 'outbox-publisher').map((s) => [s.Sid, s]));
    assert.deepEqual(pub.ReadOutboxStream.Resource, streamArn);
    assert.deepEqual(pub.MarkSentOrFailed.Resource, 'arn:aws:dynamodb:eu-west-1:123456789012:table/app');
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'outbox-publisher', Environment: { Variables: Match.objectLike({ OUTBOX_TABLE_NAME: 'app' }) } });
  });
  it('starts an existing table\'s stream at LATEST: TRIM_HORIZON would replay up to a day of records on first deploy', () => {
    const streamArn = 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000';
    const t = synth({ existingTable: { tableName: 'app', streamArn } });
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: streamArn, StartingPosition: 'LATEST' });
  });
  it("derives an existing table's ARN (region, account, partition) from its stream ARN, not from the deployment", () => {
    const streamArn = 'arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000';
    const t = synth({ existingTable: { tableName: 'app', streamArn } });
    const table = 'arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app';
    const pub = Object.fromEntries(statementsOf(t, 'outbox-publisher').map((s) => [s.Sid, s]));
    assert.deepEqual(pub.MarkSentOrFailed.Resource, table);
    const sweeper = Object.fromEntries(statementsOf(t, 'outbox-sweeper').map((s) => [s.Sid, s]));
    assert.deepEqual(sweeper.QuerySweepIndex.Resource, `${table}/index/OutboxSweepIndex`);
    assert.deepEqual(sweeper.UpdateOutboxItems.Resource, table);
  });
  it('refuses to synthesize without the cargo lambda build output, saying how to build it', () => {
    assert.throws(() => newStack({ lambdaAssetDir: `${fakeAssetDir()}/missing` }), /cargo lambda build --release --arm64/);
  });
});

describe('function code', () => {
  it('also takes the zip that `cargo lambda build --output-format zip` writes', (t) => {
    const dir = fs.mkdtempSync('/tmp/outbox-zip-');
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    for (const bin of ['outbox-publisher', 'outbox-sweeper', 'orders-consumer', 'outbox-recovery']) {
      fs.mkdirSync(`${dir}/${bin}`);
      fs.writeFileSync(`${dir}/${bin}/bootstrap.zip`, fakeZip(fakeElf('arm64')));
    }
    const tpl = synth({ lambdaAssetDir: dir });
    tpl.resourceCountIs('AWS::Lambda::Function', 4);
  });
});

describe('queue message size', () => {
  it('sets MaximumMessageSize explicitly on every queue: 1 MiB by default', () => {
    const queues = Object.values(synth().findResources('AWS::SQS::Queue'));
    assert.equal(queues.length, 7);
    for (const q of queues) assert.equal(q.Properties.MaximumMessageSize, 1_048_576, q.Properties.QueueName);
  });
  it('applies maxMessageBytes to every queue and tells the publisher through the example routes', () => {
    const t = synth({ maxMessageBytes: 262_144 });
    for (const q of Object.values(t.findResources('AWS::SQS::Queue'))) assert.equal(q.Properties.MaximumMessageSize, 262_144, q.Properties.QueueName);
    const fn = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-publisher' } }))[0];
    const routes = JSON.stringify(fn.Properties.Environment.Variables.OUTBOX_ROUTES);
    // {"orders":{"destination":<url>,"max_message_bytes":262144},"orders-events":{...}}
    assert.equal(routes.match(/\\"max_message_bytes\\":262144/g)?.length, 2, routes);
    assert.match(routes, /\\"orders\\":\{\\"destination\\":\\"/);
  });
  it('refuses a size SQS does not allow', () => {
    assert.throws(() => resolveSettings({ maxMessageBytes: 1023 }), /maxMessageBytes/);
    assert.throws(() => resolveSettings({ maxMessageBytes: 1_048_577 }), /maxMessageBytes/);
  });
});

describe('detailed routes', () => {
  const routes = {
    mail: { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/mail', max_message_bytes: 262_144 },
    shop: { destination: 'arn:aws:events:eu-west-1:123456789012:event-bus/shop', source: 'shop.orders' },
    audit: { destination: 'arn:aws:sns:eu-west-1:123456789012:audit' },
    billing: 'https://sqs.eu-west-1.amazonaws.com/123456789012/billing',
  };
  it('passes route objects to OUTBOX_ROUTES unchanged', () => {
    const t = synth({ routes });
    const fn = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-sweeper' } }))[0];
    const env = fn.Properties.Environment.Variables.OUTBOX_ROUTES;
    // The joined template string holds the JSON text: parse it back (the example queue URLs are tokens).
    const text = (env['Fn::Join'][1] as unknown[]).map((p) => (typeof p === 'string' ? p : 'TOKEN')).join('');
    const parsed = JSON.parse(text);
    for (const [topic, route] of Object.entries(routes)) assert.deepEqual(parsed[topic], route, topic);
  });
  it('derives IAM from each destination', () => {
    const t = synth({ routes });
    const bySid = Object.fromEntries(statementsOf(t, 'outbox-publisher').map((s) => [s.Sid, s]));
    assert.ok(asList(bySid.SendToRoutedQueues.Resource).includes('arn:aws:sqs:eu-west-1:123456789012:mail'));
    assert.ok(asList(bySid.SendToRoutedQueues.Resource).includes('arn:aws:sqs:eu-west-1:123456789012:billing'));
    assert.deepEqual(bySid.PublishToRoutedTopics.Resource, 'arn:aws:sns:eu-west-1:123456789012:audit');
    assert.deepEqual(bySid.PutToRoutedBuses.Resource, 'arn:aws:events:eu-west-1:123456789012:event-bus/shop');
  });
  it('reads route objects from the context JSON', () => {
    const ctx: Record<string, string> = { 'outbox:routes': JSON.stringify(routes) };
    assert.deepEqual(resolveSettings(settingsFromContext((k) => ctx[k], {})).routes, routes);
  });
  for (const [why, route, message] of [
    ['without a destination', { max_message_bytes: 1024 }, /needs a "destination"/],
    ['to a bad destination', { destination: 'billing' }, /neither an SQS queue URL/],
    ['with a size on an SNS topic', { destination: 'arn:aws:sns:eu-west-1:123456789012:t', max_message_bytes: 1024 }, /max_message_bytes applies to SQS queues only/],
    ['with a size over 1 MiB', { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q', max_message_bytes: 1_048_577 }, /max_message_bytes/],
    ['with a fractional size', { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q', max_message_bytes: 1.5 }, /max_message_bytes/],
    ['with a source on a queue', { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q', source: 'x' }, /source applies to EventBridge buses only/],
    ['with an unknown key', { destination: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q', max_bytes: 1 }, /unknown key "max_bytes"/],
  ] as const) {
    it(`refuses a route ${why}`, () => {
      assert.throws(() => resolveSettings({ routes: { x: route as never } }), message);
    });
  }
});

describe('deletion protection and retention', () => {
  it('protects and retains both tables by default', () => {
    const t = synth();
    for (const name of ['outbox-table', 'outbox-orders']) {
      t.hasResource('AWS::DynamoDB::Table', { Properties: Match.objectLike({ TableName: name, DeletionProtectionEnabled: true }), DeletionPolicy: 'Retain' });
    }
  });
  it('lets a throwaway deployment turn both off (cdk destroy then deletes the tables, so the names are free again)', () => {
    const t = synth({ deletionProtection: false });
    for (const name of ['outbox-table', 'outbox-orders']) {
      t.hasResource('AWS::DynamoDB::Table', { Properties: Match.objectLike({ TableName: name, DeletionProtectionEnabled: false }), DeletionPolicy: 'Delete' });
    }
  });
  it('reads deletionProtection from the context', () => {
    assert.equal(resolveSettings(settingsFromContext((k) => (k === 'outbox:deletionProtection' ? 'false' : undefined), {})).deletionProtection, false);
  });
});
