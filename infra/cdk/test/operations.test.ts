// Operating the deployment: how the sweeper is invoked, its concurrency, the alarms
// that see a dead or failing function, the deployment's metric dimension, the dashboard.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { settingsFromContext } from '../example/context.ts';
import { resolveSettings } from '../example/settings.ts';
import { dashboardBody, logicalId, synth } from './helpers.ts';

type Props = Record<string, any>;
const alarmsOf = (t: Template): Record<string, Props> =>
  Object.fromEntries(Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => [a.Properties.AlarmName, a.Properties]));
const dimensions = (a: Props) => Object.fromEntries((a.Dimensions as Array<{ Name: string; Value: unknown }>).map((d) => [d.Name, d.Value]));

describe('sweeper invocation', () => {
  let t: Template;
  before(() => {
    t = synth();
  });
  it('never retries an asynchronous sweep and drops it after 2 minutes (the schedule sends the next one)', () => {
    const configs = Object.values(t.findResources('AWS::Lambda::EventInvokeConfig'));
    assert.equal(configs.length, 1);
    assert.deepEqual(configs[0].Properties, {
      FunctionName: { Ref: logicalId(t, 'AWS::Lambda::Function', { FunctionName: 'outbox-sweeper' }) },
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 120,
    });
  });
  it('has the schedule target give up at once too (no retry, 60 s event age)', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      Targets: [Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 } })],
    });
  });
});

describe('sweeper reserved concurrency', () => {
  const reserved = (t: Template) =>
    Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-sweeper' } }))[0].Properties.ReservedConcurrentExecutions;
  it('reserves 1 by default', () => {
    assert.equal(reserved(synth()), 1);
  });
  it('can be turned off (null or 0: unreserved, for accounts with a low concurrency quota)', () => {
    assert.equal(reserved(synth({ sweeperReservedConcurrency: null })), undefined);
    assert.equal(reserved(synth({ sweeperReservedConcurrency: 0 })), undefined);
  });
  it('can be set to another number', () => {
    assert.equal(reserved(synth({ sweeperReservedConcurrency: 3 })), 3);
  });
  it('is raised to the sweep workers of one tick, each given its share of the index', () => {
    const t = synth({ sweepWorkers: 3 });
    assert.equal(reserved(t), 3);
    const rule = Object.values(t.findResources('AWS::Events::Rule'))[0];
    const inputs = rule.Properties.Targets.map((x: { Input: string }) => JSON.parse(x.Input));
    assert.deepEqual(inputs, [0, 1, 2].map((i) => ({ sweepGroup: i, sweepGroups: 3 })));
    assert.equal(rule.Properties.Targets.length, new Set(rule.Properties.Targets.map((x: { Id: string }) => x.Id)).size);
    assert.equal(Object.values(synth().findResources('AWS::Events::Rule'))[0].Properties.Targets[0].Input, undefined);
    assert.throws(() => resolveSettings({ sweepWorkers: 6 }), /sweepWorkers/);
  });
  it('reads off/none/null/0 from the context as unreserved', () => {
    for (const v of ['off', 'none', 'null', '0']) {
      const s = resolveSettings(settingsFromContext((k) => (k === 'outbox:sweeperReservedConcurrency' ? v : undefined), {}));
      assert.ok(!s.sweeperReservedConcurrency, v);
    }
    const s = resolveSettings(settingsFromContext((k) => (k === 'outbox:sweeperReservedConcurrency' ? '2' : undefined), {}));
    assert.equal(s.sweeperReservedConcurrency, 2);
  });
  it('refuses a negative or fractional value', () => {
    assert.throws(() => resolveSettings({ sweeperReservedConcurrency: -1 }), /sweeperReservedConcurrency/);
    assert.throws(() => resolveSettings({ sweeperReservedConcurrency: 1.5 }), /sweeperReservedConcurrency/);
  });
});

describe('alarms that see a dead or failing function', () => {
  let t: Template;
  let alarms: Record<string, Props>;
  before(() => {
    t = synth();
    alarms = alarmsOf(t);
  });
  // Every alarm's metric and evaluation of the outbox's own: test/contract.test.ts; the example consumer's here.
  it('evaluates the oldest-pending alarm over periods no shorter than the sweep schedule', () => {
    assert.equal(alarmsOf(synth({ sweepRateMinutes: 10 }))['outbox-OldestPendingTooOld'].Period, 600);
  });
  for (const [fn, name] of [['Consumer', 'outbox-orders-consumer']]) {
    for (const metric of ['Errors', 'Throttles']) {
      it(`alarms on ${metric} of ${name} in 3 of 3 five-minute periods`, () => {
        const a = alarms[`outbox-${fn}${metric}`];
        assert.ok(a, `alarm outbox-${fn}${metric}`);
        assert.deepEqual(
          {
            Namespace: a.Namespace,
            MetricName: a.MetricName,
            Dimensions: dimensions(a),
            Statistic: a.Statistic,
            Period: a.Period,
            EvaluationPeriods: a.EvaluationPeriods,
            DatapointsToAlarm: a.DatapointsToAlarm,
            Threshold: a.Threshold,
            ComparisonOperator: a.ComparisonOperator,
            TreatMissingData: a.TreatMissingData,
          },
          {
            Namespace: 'AWS/Lambda',
            MetricName: metric,
            Dimensions: { FunctionName: name },
            Statistic: 'Sum',
            Period: 300,
            EvaluationPeriods: 3,
            DatapointsToAlarm: 3,
            Threshold: 0,
            ComparisonOperator: 'GreaterThanThreshold',
            TreatMissingData: 'notBreaching',
          },
        );
      });
    }
  }
  it('alarms when the FIFO destination dead-letter queue holds a message', () => {
    const a = alarms['outbox-OrdersEventsDlqNotEmpty'];
    assert.ok(a);
    assert.equal(a.MetricName, 'ApproximateNumberOfMessagesVisible');
    assert.deepEqual(dimensions(a), { QueueName: 'outbox-orders-events-dlq.fifo' });
  });
  it('has 19 alarms, every one named with the prefix', () => {
    assert.equal(Object.keys(alarms).length, 19);
    for (const name of Object.keys(alarms)) assert.ok(name.startsWith('outbox-'), name);
  });
});

describe('deployment name in metrics', () => {
  it('tells every function its deployment (OUTBOX_DEPLOYMENT = prefix)', () => {
    const t = synth({ prefix: 'shop' });
    for (const fn of ['shop-publisher', 'shop-sweeper', 'shop-orders-consumer', 'shop-recovery']) {
      t.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: fn,
        Environment: { Variables: Match.objectLike({ OUTBOX_DEPLOYMENT: 'shop' }) },
      });
    }
  });
  it('selects the deployment in every alarm and dashboard metric on the outbox namespace (Service = prefix)', () => {
    const t = synth({ prefix: 'shop' });
    const custom = Object.values(alarmsOf(t)).filter((a) => a.Namespace === 'DynamoDbOutbox');
    assert.equal(custom.length, 5);
    for (const a of custom) assert.deepEqual(a.Dimensions, [{ Name: 'Service', Value: 'shop' }]);
    const outboxMetrics = dashboardBody(t).widgets.flatMap((w) => w.properties.metrics as string[][]).filter((m) => m[0] === 'DynamoDbOutbox');
    assert.ok(outboxMetrics.length >= 7);
    for (const m of outboxMetrics) assert.deepEqual(m.slice(2), ['Service', 'shop']);
  });
});

describe('dashboard', () => {
  let t: Template;
  let metrics: string[][];
  before(() => {
    t = synth();
    metrics = dashboardBody(t).widgets.flatMap((w) => w.properties.metrics as string[][]);
  });
  it('is named with the prefix', () => {
    t.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'outbox-dashboard' });
  });
  const has = (m: string[]) => assert.ok(metrics.some((x) => JSON.stringify(x) === JSON.stringify(m)), `dashboard metric ${m.join(' ')}`);
  it('shows published, failed, recovered by the sweeper, sweep retries and the oldest pending age', () => {
    for (const name of ['Published', 'Failed', 'RecoveredBySweeper', 'SweepRetries', 'OldestPendingAgeSeconds']) {
      has(['DynamoDbOutbox', name, 'Service', 'outbox']);
    }
  });
  it('shows the store requests sweeps could not make (SweepErrors) in the outbox messages widget', () => {
    const widget = dashboardBody(t).widgets.find((w) => w.properties.title === 'Outbox messages (sum per 5 minutes)')!;
    assert.ok(
      (widget.properties.metrics as string[][]).some((m) => JSON.stringify(m) === JSON.stringify(['DynamoDbOutbox', 'SweepErrors', 'Service', 'outbox'])),
      JSON.stringify(widget.properties.metrics),
    );
    assert.equal(widget.properties.stat, 'Sum');
  });
  it("shows the publisher mapping's IteratorAge", () => {
    has(['AWS/Lambda', 'IteratorAge', 'FunctionName', 'outbox-publisher']);
  });
  it('shows the depth of every dead-letter queue, and of the failure queue the recovery function consumes', () => {
    for (const q of ['outbox-dlq', 'outbox-stream-failures', 'outbox-stream-failures-dlq', 'outbox-orders-queue-dlq', 'outbox-orders-events-dlq.fifo']) {
      has(['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', q]);
    }
  });
  it('shows Errors and Duration of the four functions', () => {
    for (const fn of ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery']) {
      has(['AWS/Lambda', 'Errors', 'FunctionName', fn]);
      has(['AWS/Lambda', 'Duration', 'FunctionName', fn]);
    }
  });
  it('shows the fence deferrals and reads and the S3 offloads in one widget, the scan recoveries beside the stream recoveries', () => {
    const fence = dashboardBody(t).widgets.find((w) => w.properties.title === 'FIFO order fence and large payloads (sum per 5 minutes)')!;
    assert.deepEqual(
      fence.properties.metrics,
      ['FenceDeferred', 'FenceReads', 'PayloadsOffloaded'].map((m) => ['DynamoDbOutbox', m, 'Service', 'outbox']),
    );
    assert.equal(fence.properties.stat, 'Sum');
    const recovery = dashboardBody(t).widgets.find((w) => w.properties.title === 'Stream discards and their recovery (sum per 5 minutes)')!;
    assert.ok(
      (recovery.properties.metrics as string[][]).some((m) => JSON.stringify(m) === JSON.stringify(['DynamoDbOutbox', 'RecoveredByScan', 'Service', 'outbox'])),
      JSON.stringify(recovery.properties.metrics),
    );
  });
  it('puts every metric widget in the deployment region', () => {
    for (const w of dashboardBody(t).widgets) assert.equal(w.properties.region, 'eu-west-1');
  });
});
