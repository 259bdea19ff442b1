// The construct against the deployment's contract (infra/contract/settings.json), which the
// Terraform module is checked against too (modules/outbox/tests/contract.tftest.hcl): the limits
// of every plain setting (its defaults are the contract's: lib/contract.ts); with the default settings, each setting's environment
// variable in exactly the functions it names, with its default value; each role's actions;
// each function's timeout and memory; each alarm's metric and evaluation.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Template } from 'aws-cdk-lib/assertions';
import { CONTRACT, DEFAULTS, resolveOutboxSettings } from '../lib/config.ts';
import { DEPLOYMENT_CONTRACT, PLAIN_SETTINGS } from '../lib/contract.ts';
import { Outbox } from '../lib/outbox.ts';
import { ENV, asList, fakeAssetDir, statementsOf } from './helpers.ts';

type Resources = Record<string, { Properties: Record<string, any> }>;

describe('the construct follows infra/contract/settings.json', () => {
  let t: Template;
  before(() => {
    const stack = new cdk.Stack(new cdk.App(), 'Contract', { env: ENV });
    new Outbox(stack, 'Outbox', { assetDir: fakeAssetDir() });
    t = Template.fromStack(stack);
  });
  const functionEnv = (fn: string): Record<string, unknown> => {
    const f = Object.values(t.findResources('AWS::Lambda::Function') as Resources).find((r) => r.Properties.FunctionName === `outbox-${fn}`);
    assert.ok(f, `no function outbox-${fn}`);
    return f.Properties.Environment.Variables;
  };

  it('accepts each limit and refuses one past it', () => {
    for (const s of PLAIN_SETTINGS.filter((x) => x.min !== undefined)) {
      assert.doesNotThrow(() => resolveOutboxSettings({ [s.cdk!]: s.min }), `${s.cdk} = ${s.min}`);
      assert.doesNotThrow(() => resolveOutboxSettings({ [s.cdk!]: s.max }), `${s.cdk} = ${s.max}`);
      assert.throws(() => resolveOutboxSettings({ [s.cdk!]: s.min! - 1 }), new RegExp(s.cdk!), `${s.cdk} = ${s.min! - 1}`);
      assert.throws(() => resolveOutboxSettings({ [s.cdk!]: s.max! + 1 }), new RegExp(s.cdk!), `${s.cdk} = ${s.max! + 1}`);
      if (s.integer) assert.throws(() => resolveOutboxSettings({ [s.cdk!]: s.min! + 0.5 }), new RegExp(s.cdk!));
    }
    for (const s of PLAIN_SETTINGS.filter((x) => x.values !== undefined)) {
      for (const v of s.values!) assert.doesNotThrow(() => resolveOutboxSettings({ [s.cdk!]: v }), `${s.cdk} = ${String(v)}`);
      assert.throws(() => resolveOutboxSettings({ [s.cdk!]: 'not-a-value' }), new RegExp(s.cdk!));
    }
  });

  it("passes each setting's variable to exactly its functions, with its default", () => {
    const checked = DEPLOYMENT_CONTRACT.settings.filter(
      (s) => s.env && (s.env.default !== undefined || ((s.default ?? null) !== null && s.env.value === undefined)),
    );
    assert.ok(checked.length >= 10, `only ${checked.length} settings checked`);
    for (const fn of Object.keys(DEPLOYMENT_CONTRACT.functions)) {
      const env = functionEnv(fn);
      for (const s of checked) {
        const want = s.env!.default ?? String(s.default);
        if (s.env!.functions.includes(fn)) {
          const got = typeof env[s.env!.name] === 'string' ? env[s.env!.name] : JSON.stringify(env[s.env!.name]);
          assert.equal(got, want, `${fn}: ${s.env!.name}`);
        } else {
          assert.equal(env[s.env!.name], undefined, `${fn} must not get ${s.env!.name}`);
        }
      }
    }
  });

  it("grants each role the contract's actions, no more, no fewer", () => {
    for (const [fn, f] of Object.entries(DEPLOYMENT_CONTRACT.functions)) {
      const got = [...new Set(statementsOf(t, `outbox-${fn}`).flatMap((s) => asList(s.Action as string | string[]).map((a) => `${s.Effect} ${a}`)))].sort();
      assert.deepEqual(got, [...f.iam_default].sort(), fn);
    }
  });

  it("gives each function the contract's binary, timeout and memory", () => {
    for (const [fn, f] of Object.entries(DEPLOYMENT_CONTRACT.functions)) {
      assert.equal(CONTRACT.binaries[fn as keyof typeof CONTRACT.binaries], f.binary);
      const props = Object.values(t.findResources('AWS::Lambda::Function') as Resources).find((r) => r.Properties.FunctionName === `outbox-${fn}`)!.Properties;
      assert.equal(props.Timeout, f.timeout_seconds, fn);
      assert.equal(props.MemorySize, f.memory_mb, fn);
    }
  });

  it("has the contract's alarms, each with its metric and evaluation, when an alarm topic is given (none without)", () => {
    t.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    const stack = new cdk.Stack(new cdk.App(), 'Alarmed', { env: ENV });
    new Outbox(stack, 'Outbox', { assetDir: fakeAssetDir(), alarmTopic: sns.Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:ops') });
    const alarms = Object.fromEntries(
      Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm') as Resources).map((r) => [String(r.Properties.AlarmName).replace(/^outbox-/, ''), r.Properties]),
    );
    assert.deepEqual(Object.keys(alarms).sort(), Object.keys(DEPLOYMENT_CONTRACT.alarms).sort());
    const thresholds: Record<string, number> = { iterator_age_threshold_ms: DEFAULTS.iteratorAgeThresholdMs, oldest_pending_threshold_seconds: DEFAULTS.oldestPendingThresholdSeconds };
    for (const [name, a] of Object.entries(DEPLOYMENT_CONTRACT.alarms)) {
      const got = alarms[name];
      assert.deepEqual(
        [got.Namespace, got.MetricName, (got.Dimensions as Array<{ Name: string; Value: string }>).map((d) => `${d.Name} ${d.Value}`).join(' '),
          got.Statistic, got.Period, got.EvaluationPeriods, got.DatapointsToAlarm, got.Threshold, got.ComparisonOperator, got.TreatMissingData],
        [a.namespace, a.metric, a.dimension.replace('<prefix>', 'outbox'), a.statistic, typeof a.period === 'number' ? a.period : 300,
          a.evaluation_periods, a.datapoints_to_alarm, typeof a.threshold === 'number' ? a.threshold : thresholds[a.threshold], 'GreaterThanThreshold', a.missing_data],
        name,
      );
    }
  });

  it("creates the contract's table, mappings, queues and sweep schedule", () => {
    const c = DEPLOYMENT_CONTRACT;
    const one = (type: string, pick: (p: Record<string, any>) => boolean) => {
      const found = Object.values(t.findResources(type) as Resources).filter((r) => pick(r.Properties));
      assert.equal(found.length, 1, type);
      return found[0].Properties;
    };
    const table = one('AWS::DynamoDB::Table', (p) => p.TableName === 'outbox-table');
    const index = table.GlobalSecondaryIndexes[0];
    assert.deepEqual(
      [table.StreamSpecification.StreamViewType, index.IndexName, index.KeySchema, index.Projection.ProjectionType],
      [c.table.stream_view_type, c.table.sweep_index.name,
        [{ AttributeName: c.table.sweep_index.hash_key, KeyType: 'HASH' }, { AttributeName: c.table.sweep_index.range_key, KeyType: 'RANGE' }],
        c.table.sweep_index.projection],
    );
    for (const [name, type] of Object.entries(c.table.attribute_types)) {
      assert.ok(table.AttributeDefinitions.some((a: any) => a.AttributeName === name && a.AttributeType === type), name);
    }
    const stream = one('AWS::Lambda::EventSourceMapping', (p) => p.FilterCriteria !== undefined);
    assert.deepEqual(
      [stream.StartingPosition, stream.BisectBatchOnFunctionError, stream.FunctionResponseTypes],
      [c.stream_mapping.starting_position_created_table, c.stream_mapping.bisect_batch_on_function_error, c.stream_mapping.function_response_types],
    );
    const recovery = one('AWS::Lambda::EventSourceMapping', (p) => p.FilterCriteria === undefined);
    assert.deepEqual([recovery.BatchSize, recovery.FunctionResponseTypes], [c.recovery_mapping.batch_size, c.recovery_mapping.function_response_types]);
    for (const name of ['outbox-dlq', 'outbox-stream-failures', 'outbox-stream-failures-dlq']) {
      assert.equal(one('AWS::SQS::Queue', (p) => p.QueueName === name).MessageRetentionPeriod, c.queues.retention_days * 86400, name);
    }
    assert.equal(one('AWS::SQS::Queue', (p) => p.QueueName === 'outbox-stream-failures').VisibilityTimeout, c.queues.stream_failures_visibility_seconds);
    const invoke = one('AWS::Lambda::EventInvokeConfig', () => true);
    const target = one('AWS::Events::Rule', () => true).Targets[0].RetryPolicy;
    assert.deepEqual(
      [invoke.MaximumRetryAttempts, invoke.MaximumEventAgeInSeconds, target.MaximumRetryAttempts, target.MaximumEventAgeInSeconds],
      [c.sweeper_invocation.async_maximum_retry_attempts, c.sweeper_invocation.async_maximum_event_age_seconds,
        c.sweeper_invocation.schedule_target_maximum_retry_attempts, c.sweeper_invocation.schedule_target_maximum_event_age_seconds],
    );
  });

  it("reads an existing table's stream from the contract's starting position", () => {
    const stack = new cdk.Stack(new cdk.App(), 'Existing', { env: ENV });
    const table = dynamodb.Table.fromTableAttributes(stack, 'App', {
      tableName: 'app',
      tableStreamArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000',
    });
    new Outbox(stack, 'Outbox', { assetDir: fakeAssetDir(), table });
    const mappings = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::EventSourceMapping') as Resources);
    const stream = mappings.find((r) => r.Properties.FilterCriteria !== undefined)!.Properties;
    assert.equal(stream.StartingPosition, DEPLOYMENT_CONTRACT.stream_mapping.starting_position_existing_table);
  });
});
