// The Outbox construct on its own, as a user's app uses it: on an imported table, routed to
// the user's queue, with its own key names. It creates the outbox and nothing else.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Outbox, type OutboxProps } from '../lib/index.ts';
import { ENV, asList, fakeAssetDir, statementsOf } from './helpers.ts';

const STREAM = 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000';
const TABLE = 'arn:aws:dynamodb:eu-west-1:123456789012:table/app';
const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:billing';

/** A user's stack: their table (imported) and queue, the outbox attached to them. */
function userStack(props: Partial<OutboxProps> = {}, withStream = true) {
  const stack = new cdk.Stack(new cdk.App(), 'App', { env: ENV });
  const table = dynamodb.Table.fromTableAttributes(stack, 'Table', { tableArn: TABLE, tableStreamArn: withStream ? STREAM : undefined });
  const billing = sqs.Queue.fromQueueArn(stack, 'Billing', QUEUE);
  const outbox = new Outbox(stack, 'Outbox', { table, routes: { billing }, assetDir: fakeAssetDir(), ...props });
  return { stack, outbox };
}

describe('the Outbox construct alone, on an imported table', () => {
  let t: Template;
  before(() => {
    t = Template.fromStack(userStack().stack);
  });

  /** Resources of each type in a template. */
  const countsOf = (tpl: Template): Record<string, number> => {
    const counts: Record<string, number> = {};
    for (const r of Object.values(tpl.toJSON().Resources as Record<string, { Type: string }>)) counts[r.Type] = (counts[r.Type] ?? 0) + 1;
    return counts;
  };
  const PLAIN = {
    'AWS::CloudWatch::Dashboard': 1,
    'AWS::Events::Rule': 1,
    'AWS::IAM::ManagedPolicy': 1,
    'AWS::IAM::Policy': 3,
    'AWS::IAM::Role': 3,
    'AWS::Lambda::EventInvokeConfig': 1,
    'AWS::Lambda::EventSourceMapping': 2,
    'AWS::Lambda::Function': 3,
    'AWS::Lambda::Permission': 1,
    'AWS::Logs::LogGroup': 3,
    'AWS::SQS::Queue': 3,
    'AWS::SQS::QueuePolicy': 3,
  };

  it('creates the outbox and nothing else: no table, no example queues, no consumer, no alarms without a topic, no bucket', () => {
    assert.deepEqual(countsOf(t), PLAIN);
    const queues = Object.values(t.findResources('AWS::SQS::Queue')).map((q) => q.Properties.QueueName).sort();
    assert.deepEqual(queues, ['outbox-dlq', 'outbox-stream-failures', 'outbox-stream-failures-dlq']);
    const functions = Object.values(t.findResources('AWS::Lambda::Function')).map((f) => f.Properties.FunctionName).sort();
    assert.deepEqual(functions, ['outbox-publisher', 'outbox-recovery', 'outbox-sweeper']);
  });

  it('adds the 15 alarms with an alarm topic and the bucket with largePayloads, nothing else', () => {
    const { stack } = userStack({ largePayloads: true, alarmTopic: sns.Topic.fromTopicArn(new cdk.Stack(), 'Ops', 'arn:aws:sns:eu-west-1:123456789012:ops') });
    const tpl = Template.fromStack(stack);
    assert.deepEqual(countsOf(tpl), { ...PLAIN, 'AWS::CloudWatch::Alarm': 15, 'AWS::S3::Bucket': 1, 'AWS::S3::BucketPolicy': 1 });
    for (const a of Object.values(tpl.findResources('AWS::CloudWatch::Alarm'))) assert.deepEqual(a.Properties.AlarmActions, ['arn:aws:sns:eu-west-1:123456789012:ops']);
  });

  it('a topic created in the same stack gets the alarms too (its ARN a token at synth)', () => {
    const stack = new cdk.Stack(new cdk.App(), 'App', { env: ENV });
    const table = dynamodb.Table.fromTableAttributes(stack, 'Table', { tableArn: TABLE, tableStreamArn: STREAM });
    const ops = new sns.Topic(stack, 'Ops', { masterKey: kms.Alias.fromAliasName(stack, 'SnsKey', 'alias/aws/sns') });
    const outbox = new Outbox(stack, 'Outbox', { table, assetDir: fakeAssetDir(), alarmTopic: ops });
    const tpl = Template.fromStack(stack);
    assert.equal(Object.keys(outbox.alarms).length, 15);
    const topicId = Object.keys(tpl.findResources('AWS::SNS::Topic'))[0];
    for (const a of Object.values(tpl.findResources('AWS::CloudWatch::Alarm'))) assert.deepEqual(a.Properties.AlarmActions, [{ Ref: topicId }]);
  });

  it("routes only the user's topics, to the user's queue", () => {
    const fn = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-publisher' } }))[0];
    const routes = JSON.stringify(fn.Properties.Environment.Variables.OUTBOX_ROUTES);
    assert.ok(routes.includes('billing') && !routes.includes('orders'), routes);
    const send = statementsOf(t, 'outbox-publisher').find((s) => s.Sid === 'SendToRoutedQueues')!;
    assert.equal(asList(send.Resource)[0], QUEUE);
  });

  it("reads the table's stream from LATEST and names the table by its ARN", () => {
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: STREAM, StartingPosition: 'LATEST' });
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'outbox-publisher', Environment: { Variables: Match.objectLike({ OUTBOX_TABLE_NAME: 'app' }) } });
  });

  it('refuses, at synth, an imported table without its stream ARN', () => {
    assert.throws(() => userStack({}, false), /the table has no stream ARN.*fromTableAttributes/);
  });

  it('refuses to build without function code, naming both ways to give it', () => {
    assert.throws(() => userStack({ assetDir: undefined }), /no code for the publisher: give `code`.*or `assetDir`/);
  });

  it('takes the code of each function from the code prop', () => {
    const code = (key: string) => lambda.Code.fromBucketV2(s3.Bucket.fromBucketName(new cdk.Stack(), 'B', 'releases'), `${key}.zip`);
    const { stack } = userStack({ assetDir: undefined, code: { publisher: code('publisher'), sweeper: code('sweeper'), recovery: code('recovery') } });
    const t = Template.fromStack(stack);
    for (const fn of ['publisher', 'sweeper', 'recovery']) {
      t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: `outbox-${fn}`, Code: { S3Bucket: 'releases', S3Key: `${fn}.zip` } });
    }
  });
});

describe('key names', () => {
  const keyNames = { partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'expires_at' };
  it('reach the three functions as OUTBOX_PARTITION_KEY, OUTBOX_SORT_KEY, OUTBOX_TTL_ATTRIBUTE', () => {
    const t = Template.fromStack(userStack({ keyNames }).stack);
    for (const name of ['outbox-publisher', 'outbox-sweeper', 'outbox-recovery']) {
      t.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: name,
        Environment: { Variables: Match.objectLike({ OUTBOX_PARTITION_KEY: 'pk', OUTBOX_SORT_KEY: 'sk', OUTBOX_TTL_ATTRIBUTE: 'expires_at' }) },
      });
    }
  });
  it("shape a created table's keys and TTL", () => {
    const stack = new cdk.Stack(new cdk.App(), 'App', { env: ENV });
    new Outbox(stack, 'Outbox', { keyNames, assetDir: fakeAssetDir() });
    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::Table', {
      TableName: 'outbox-table',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    });
  });
  it('refuses the same name twice, an attribute the outbox writes, or a default name in another role', () => {
    assert.throws(() => userStack({ keyNames: { partitionKey: 'id', sortKey: 'id' } }), /three different attribute names/);
    assert.throws(() => userStack({ keyNames: { sortKey: 'SweepShard' } }), /attribute the outbox writes itself/);
    assert.throws(() => userStack({ keyNames: { sortKey: 'Status' } }), /attribute the outbox writes itself/);
    assert.throws(() => userStack({ keyNames: { partitionKey: 'SK', sortKey: 'PK' } }), /keyNames.partitionKey: "SK" is the default name of another/);
    assert.throws(() => userStack({ keyNames: { partitionKey: 'pk', sortKey: 'ExpiresAt', ttlAttribute: 'ttl' } }), /keyNames.sortKey/);
  });
});

describe('the sweeper index shard count and the stream parallelization factor', () => {
  const envOf = (t: Template, name: string) =>
    Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: name } }))[0].Properties.Environment.Variables;
  const FUNCTIONS = ['outbox-publisher', 'outbox-sweeper', 'outbox-recovery'];

  it('tell every function 16 shards and no previous count by default, and map the stream one batch per shard', () => {
    const t = Template.fromStack(userStack().stack);
    for (const name of FUNCTIONS) {
      const env = envOf(t, name);
      assert.equal(env.OUTBOX_SWEEP_SHARDS, '16', name);
      assert.ok(!('OUTBOX_SWEEP_SHARDS_PREVIOUS' in env), name);
    }
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: STREAM, ParallelizationFactor: 1 });
  });
  it('reach every function while a change of the count is under way (OUTBOX_SWEEP_SHARDS, OUTBOX_SWEEP_SHARDS_PREVIOUS)', () => {
    const t = Template.fromStack(userStack({ sweepShards: 64, sweepShardsPrevious: 16 }).stack);
    for (const name of FUNCTIONS) {
      const env = envOf(t, name);
      assert.deepEqual([env.OUTBOX_SWEEP_SHARDS, env.OUTBOX_SWEEP_SHARDS_PREVIOUS], ['64', '16'], name);
    }
  });
  it('set the stream mapping\'s ParallelizationFactor', () => {
    const t = Template.fromStack(userStack({ parallelizationFactor: 4 }).stack);
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: STREAM, ParallelizationFactor: 4 });
  });
  it('refuse a count out of 1-1000, a previous count equal to the new one, and a factor out of 1-10', () => {
    assert.throws(() => userStack({ sweepShards: 0 }), /sweepShards must be an integer from 1 to 1000, got 0/);
    assert.throws(() => userStack({ sweepShards: 1001 }), /sweepShards must be an integer from 1 to 1000/);
    assert.throws(() => userStack({ sweepShards: 2.5 }), /sweepShards must be an integer/);
    assert.throws(() => userStack({ sweepShards: 64, sweepShardsPrevious: 64 }), /sweepShardsPrevious .* must differ from sweepShards \(64\)/);
    assert.throws(() => userStack({ sweepShardsPrevious: 2000 }), /sweepShardsPrevious must be an integer from 1 to 1000/);
    assert.throws(() => userStack({ parallelizationFactor: 11 }), /parallelizationFactor must be an integer from 1 to 10, got 11/);
    assert.throws(() => userStack({ parallelizationFactor: 0 }), /parallelizationFactor must be an integer from 1 to 10/);
  });
});

describe('grantProduce', () => {
  // With the bucket, to see its grant (off by default).
  const producer = (props: Partial<OutboxProps> = {}) => {
    const { stack, outbox } = userStack({ largePayloads: true, ...props });
    const role = new iam.Role(stack, 'AppRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    outbox.grantProduce(role);
    const t = Template.fromStack(stack);
    const policies = Object.values(t.findResources('AWS::IAM::Policy')).filter((p) =>
      (p.Properties.Roles as Array<{ Ref: string }>).some((r) => r.Ref.startsWith('AppRole')),
    );
    return { t, statements: policies.flatMap((p) => p.Properties.PolicyDocument.Statement as Array<Record<string, any>>) };
  };
  const bucketObjects = { 'Fn::Join': ['', [{ 'Fn::GetAtt': [Match.stringLikeRegexp('^OutboxLargePayloadBucket'), 'Arn'] }, '/outbox/*']] };

  it("puts outbox items on the table (and reads them back by key), puts large payloads under outbox/, nothing else", () => {
    const { statements } = producer();
    assert.equal(statements.length, 2);
    assert.deepEqual(statements[0], { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: TABLE });
    assert.equal(statements[1].Action, 's3:PutObject');
    Template.fromJSON({ Resources: { X: { Type: 'T', Properties: { R: statements[1].Resource } } } }).hasResourceProperties('T', { R: bucketObjects });
  });
  it('adds the KMS key (GenerateDataKey, Decrypt) when there is one, and no S3 when large payloads are off', () => {
    const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const stack = new cdk.Stack(new cdk.App(), 'K', { env: ENV });
    const key = kms.Key.fromKeyArn(stack, 'Key', keyArn);
    const table = dynamodb.Table.fromTableAttributes(stack, 'Table', { tableArn: TABLE, tableStreamArn: STREAM });
    const outbox = new Outbox(stack, 'Outbox', { table, encryptionKey: key, largePayloads: false, assetDir: fakeAssetDir() });
    const doc = new iam.PolicyDocument({ statements: outbox.producerStatements() }).toJSON();
    assert.deepEqual(doc.Statement, [
      { Sid: 'WriteOutboxMessages', Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: TABLE },
      { Sid: 'UseOutboxKey', Effect: 'Allow', Action: ['kms:GenerateDataKey', 'kms:Decrypt'], Resource: keyArn },
    ]);
  });
  it('is also a managed policy <prefix>-producer, attached to nothing, unless createProducerPolicy is false', () => {
    const { t } = producer();
    t.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      ManagedPolicyName: 'outbox-producer',
      PolicyDocument: { Statement: [Match.objectLike({ Sid: 'WriteOutboxMessages', Resource: TABLE }), Match.objectLike({ Sid: 'PutLargePayloads' })] },
    });
    Template.fromStack(userStack({ createProducerPolicy: false }).stack).resourceCountIs('AWS::IAM::ManagedPolicy', 0);
  });
});
