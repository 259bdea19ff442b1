// The functions' own signals (functions/lib/dynamodb-outbox-core/src/metrics.rs): alarms where
// an operator must act -- AccessDenied (a role lacks a grant) and FenceUnread (FIFO messages
// held and charged because the order fence could not read) -- and the dashboard for the ones
// that repair themselves (StatusReadFailed, RecoveryRangeUnfinished, AlreadySettledSkipped).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Template } from 'aws-cdk-lib/assertions';
import { dashboardBody, synth } from './helpers.ts';

type Props = Record<string, any>;
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:ops';
const alarmsOf = (t: Template): Record<string, Props> =>
  Object.fromEntries(Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => [a.Properties.AlarmName, a.Properties]));

describe('alarms on the functions own signals', () => {
  let alarms: Record<string, Props>;
  before(() => {
    alarms = alarmsOf(synth({ prefix: 'shop', alarmTopicArn: TOPIC }));
  });
  for (const metric of ['AccessDenied', 'FenceUnread']) {
    it(`shop-${metric}: any ${metric} in one 5-minute period of the deployment, no data no breach, on the alarm topic`, () => {
      const a = alarms[`shop-${metric}`];
      assert.ok(a, `alarm shop-${metric} among ${Object.keys(alarms).join(', ')}`);
      const { AlarmDescription, AlarmName, ...rest } = a;
      assert.deepEqual(rest, {
        Namespace: 'DynamoDbOutbox',
        MetricName: metric,
        Dimensions: [{ Name: 'Service', Value: 'shop' }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 1,
        DatapointsToAlarm: 1,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [TOPIC],
      });
      assert.ok(AlarmDescription.length > 0 && AlarmName === `shop-${metric}`);
    });
  }
  it('says what to do: the grant to add (docs/iam.md), and that held FIFO messages end FAILED', () => {
    assert.match(alarms['shop-AccessDenied'].AlarmDescription, /docs\/iam\.md/);
    assert.match(alarms['shop-FenceUnread'].AlarmDescription, /FAILED/);
  });
  it('does not alarm on StatusReadFailed, RecoveryRangeUnfinished or AlreadySettledSkipped (each repairs itself; a lasting cause has its own alarm)', () => {
    const watched = Object.values(alarms).map((a) => a.MetricName);
    for (const metric of ['StatusReadFailed', 'RecoveryRangeUnfinished', 'AlreadySettledSkipped']) assert.ok(!watched.includes(metric), metric);
  });
});

describe('the functions own signals on the dashboard', () => {
  let widgets: Array<{ properties: Props }>;
  before(() => {
    widgets = dashboardBody(synth()).widgets;
  });
  const widgetOf = (metric: string) =>
    widgets.filter((w) => (w.properties.metrics as string[][]).some((m) => JSON.stringify(m) === JSON.stringify(['DynamoDbOutbox', metric, 'Service', 'outbox'])));
  it('shows AccessDenied, FenceUnread and StatusReadFailed together, summed per 5 minutes', () => {
    const [widget, ...more] = widgetOf('AccessDenied');
    assert.ok(widget && more.length === 0, 'one widget shows AccessDenied');
    assert.deepEqual(widgetOf('FenceUnread'), [widget]);
    assert.deepEqual(widgetOf('StatusReadFailed'), [widget]);
    assert.equal(widget.properties.stat, 'Sum');
  });
  it('shows RecoveryRangeUnfinished beside the discards and their recovery', () => {
    assert.deepEqual(
      widgetOf('RecoveryRangeUnfinished').map((w) => w.properties.title),
      ['Stream discards and their recovery (sum per 5 minutes)'],
    );
  });
  it('shows AlreadySettledSkipped with the outbox messages', () => {
    assert.deepEqual(widgetOf('AlreadySettledSkipped').map((w) => w.properties.title), ['Outbox messages (sum per 5 minutes)']);
  });
});
