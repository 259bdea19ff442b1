// Alarms and the dashboard, as plain data (the Terraform module defines the same in
// infra/terraform/modules/outbox/config.tf; both are checked against infra/contract/settings.json). Metric
// dimensions are the fixed physical names from names(), so both stacks produce
// identical definitions.
import { CONTRACT, type OutboxSettings, names } from './config';

/** One CloudWatch alarm, named `<prefix>-<key>`. */
export interface AlarmDefinition {
  readonly description: string;
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly statistic: string;
  readonly period: number;
  readonly evaluationPeriods: number;
  readonly datapointsToAlarm: number;
  readonly threshold: number;
  readonly comparisonOperator: 'GreaterThanThreshold';
  readonly treatMissingData: 'breaching' | 'notBreaching';
}

const FUNCTIONS = { publisher: 'Publisher', sweeper: 'Sweeper', recovery: 'Recovery' } as const;
const FUNCTION_ALARMS = {
  Errors: 'fails invocations in 3 consecutive 5-minute periods (a crash, a timeout, a bad configuration): read its log group.',
  Throttles: "is throttled in 3 consecutive 5-minute periods: raise its reserved concurrency or the account's concurrency quota.",
} as const;

/** An alarm as soon as the queue named `queueName` holds a message (a dead-letter queue). */
export function queueNotEmptyAlarm(queueName: string, description: string): AlarmDefinition {
  return {
    description,
    namespace: 'AWS/SQS',
    metricName: 'ApproximateNumberOfMessagesVisible',
    dimensions: { QueueName: queueName },
    statistic: 'Maximum',
    period: 300,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    threshold: 0,
    comparisonOperator: 'GreaterThanThreshold',
    treatMissingData: 'notBreaching',
  };
}

/**
 * Alarms on a count of the functions' own metrics (namespace DynamoDbOutbox): any in 5 minutes.
 * Each is emitted only when it happens or as 0 on every run, so missing data is no breach.
 * StatusReadFailed, RecoveryRangeUnfinished and AlreadySettledSkipped are on the dashboard
 * only (README: Alarms).
 */
const OUTBOX_COUNT_ALARMS: Record<string, { readonly metric: string; readonly description: string }> = {
  AccessDenied: {
    metric: 'AccessDenied',
    description:
      "AWS denied a call of an outbox function for a missing permission (AccessDenied > 0 in 5 minutes): a role lacks a grant, whatever the function did next (a fallback that worked does not hide it). The function's log names the IAM action: compare its role with docs/iam.md and add the grant.",
  },
  FenceUnread: {
    metric: 'FenceUnread',
    description:
      "The FIFO order fence could not read an aggregate's pending messages (a read refused or failing, or more pending keys than it reads): those messages are held and charged an attempt at each sweep, so they end FAILED if the cause lasts. Read the publisher's and the sweeper's logs for the cause.",
  },
  RecoveryRangeLost: {
    metric: 'RecoveryRangeLost',
    description:
      "Discarded stream records were past the stream's 24 h retention when the recovery function read them: their items are found only by the sweeper's backstop scan.",
  },
  SweeperRecovering: {
    metric: 'RecoveredBySweeper',
    description: 'The sweeper had to publish messages the stream path missed: the stream path is unhealthy.',
  },
};

/** `<title>Errors` and `<title>Throttles` of the function named `functionName`. */
export function functionAlarms(functionName: string, title: string): Record<string, AlarmDefinition> {
  const alarms: Record<string, AlarmDefinition> = {};
  for (const [metric, what] of Object.entries(FUNCTION_ALARMS)) {
    alarms[`${title}${metric}`] = {
      description: `${functionName} ${what}`,
      namespace: 'AWS/Lambda',
      metricName: metric,
      dimensions: { FunctionName: functionName },
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      threshold: 0,
      comparisonOperator: 'GreaterThanThreshold',
      treatMissingData: 'notBreaching',
    };
  }
  return alarms;
}

/** Every alarm of the outbox, by name suffix. */
export function alarmDefinitions(s: OutboxSettings): Record<string, AlarmDefinition> {
  const n = names(s.prefix);
  const outbox = { [CONTRACT.metricsDimension]: s.prefix };
  const alarms: Record<string, AlarmDefinition> = {
    OutboxDlqNotEmpty: queueNotEmptyAlarm(n.outboxDlq, 'Outbox messages became FAILED (see LastError on the item); inspect, fix, redrive.'),
    RecoveryDlqNotEmpty: queueNotEmptyAlarm(
      n.streamFailuresDlq,
      "The recovery function failed on-failure records maxReceiveCount times (not an on-failure record, or a range it could not read); read them and its logs, fix, redrive to the failure queue within the stream's 24 h.",
    ),
  };
  for (const [key, { metric, description }] of Object.entries(OUTBOX_COUNT_ALARMS)) {
    alarms[key] = {
      description,
      namespace: CONTRACT.metricsNamespace,
      metricName: metric,
      dimensions: outbox,
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      threshold: 0,
      comparisonOperator: 'GreaterThanThreshold',
      treatMissingData: 'notBreaching',
    };
  }
  // The failure queue is consumed by the recovery function, so its depth says little: a
  // message *sent* to it means the stream mapping discarded records.
  alarms.StreamDiscards = {
    description:
      "The stream mapping gave up on stream records (retries or maximum record age) and sent their ranges to the failure queue; the recovery function is putting their items back into the sweeper's index. Check the publisher.",
    namespace: 'AWS/SQS',
    metricName: 'NumberOfMessagesSent',
    dimensions: { QueueName: n.streamFailures },
    statistic: 'Sum',
    period: 300,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    threshold: 0,
    comparisonOperator: 'GreaterThanThreshold',
    treatMissingData: 'notBreaching',
  };
  alarms.PublisherIteratorAge = {
    description: 'The publisher falls behind the table stream (records older than the threshold).',
    namespace: 'AWS/Lambda',
    metricName: 'IteratorAge',
    dimensions: { FunctionName: n.publisher },
    statistic: 'Maximum',
    period: 60,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    threshold: s.iteratorAgeThresholdMs,
    comparisonOperator: 'GreaterThanThreshold',
    treatMissingData: 'notBreaching',
  };
  // The sweeper reports the age every run (0 when nothing is due), so no data means no
  // sweeper: breaching. A message in backoff (up to 15 minutes) is not due in between, so
  // any breach in the last 3 periods keeps the alarm: it does not flap while stuck. The
  // period is never shorter than the schedule, or every period without a sweep would breach.
  alarms.OldestPendingTooOld = {
    description:
      'A PENDING outbox message is older than the threshold, or the sweeper reports nothing (missing data is breaching): delivery is stuck or the sweeper is not running.',
    namespace: CONTRACT.metricsNamespace,
    metricName: 'OldestPendingAgeSeconds',
    dimensions: outbox,
    statistic: 'Maximum',
    period: Math.max(300, s.sweepRateMinutes * 60),
    evaluationPeriods: 3,
    datapointsToAlarm: 1,
    threshold: s.oldestPendingThresholdSeconds,
    comparisonOperator: 'GreaterThanThreshold',
    treatMissingData: 'breaching',
  };
  for (const [fn, title] of Object.entries(FUNCTIONS) as Array<[keyof typeof FUNCTIONS, string]>) {
    Object.assign(alarms, functionAlarms(n[fn], title));
  }
  return alarms;
}

/** A metric widget of the dashboard, without its "region" (the stack adds it). */
export interface Widget {
  readonly type: 'metric';
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly properties: {
    readonly title: string;
    readonly view: 'timeSeries';
    readonly stacked: boolean;
    readonly stat: string;
    readonly period: number;
    readonly metrics: string[][];
    readonly annotations?: { readonly horizontal: Array<{ readonly label: string; readonly value: number }> };
  };
}

/** More of your resources on the outbox's dashboard, by physical name (e.g. your consumers and their dead-letter queues). */
export interface DashboardExtras {
  /** Shown beside the outbox's functions in the errors, duration and throttles widgets. */
  readonly functionNames?: readonly string[];
  /** Shown beside the outbox's dead-letter and failure queues. */
  readonly queueNames?: readonly string[];
}

/** The dashboard's widgets, two per row. */
export function dashboardWidgets(s: OutboxSettings, extras: DashboardExtras = {}): Widget[] {
  const n = names(s.prefix);
  const outbox = (metric: string) => [CONTRACT.metricsNamespace, metric, CONTRACT.metricsDimension, s.prefix];
  const functions = [n.publisher, n.sweeper, n.recovery, ...(extras.functionNames ?? [])];
  const fns = (metric: string) => functions.map((f) => ['AWS/Lambda', metric, 'FunctionName', f]);
  const common = { view: 'timeSeries', stacked: false } as const;
  const widgets: Array<Widget['properties']> = [
    {
      title: 'Outbox messages (sum per 5 minutes)',
      ...common,
      stat: 'Sum',
      period: 300,
      metrics: ['Published', 'PublishFailed', 'Failed', 'RecoveredBySweeper', 'SweepRetries', 'SweepErrors', 'AlreadySettledSkipped'].map(outbox),
    },
    {
      title: 'Oldest PENDING message (seconds)',
      ...common,
      stat: 'Maximum',
      period: 300,
      metrics: [outbox('OldestPendingAgeSeconds')],
      annotations: { horizontal: [{ label: 'OldestPendingTooOld', value: s.oldestPendingThresholdSeconds }] },
    },
    {
      title: 'Publisher stream IteratorAge (ms)',
      ...common,
      stat: 'Maximum',
      period: 60,
      metrics: [['AWS/Lambda', 'IteratorAge', 'FunctionName', n.publisher]],
      annotations: { horizontal: [{ label: 'PublisherIteratorAge', value: s.iteratorAgeThresholdMs }] },
    },
    {
      title: 'Stream discards and their recovery (sum per 5 minutes)',
      ...common,
      stat: 'Sum',
      period: 300,
      metrics: [
        ['AWS/SQS', 'NumberOfMessagesSent', 'QueueName', n.streamFailures],
        outbox('RecoveredFromStream'),
        outbox('RecoveryRangeLost'),
        outbox('RecoveryRangeUnfinished'),
        outbox('RecoveredByScan'),
      ],
    },
    {
      title: 'Dead-letter and failure queues (messages visible)',
      ...common,
      stat: 'Maximum',
      period: 300,
      metrics: [n.outboxDlq, n.streamFailures, n.streamFailuresDlq, ...(extras.queueNames ?? [])].map((q) => [
        'AWS/SQS',
        'ApproximateNumberOfMessagesVisible',
        'QueueName',
        q,
      ]),
    },
    { title: 'Function errors', ...common, stat: 'Sum', period: 300, metrics: fns('Errors') },
    { title: 'Function duration (ms, maximum)', ...common, stat: 'Maximum', period: 300, metrics: fns('Duration') },
    { title: 'Function throttles', ...common, stat: 'Sum', period: 300, metrics: fns('Throttles') },
    {
      title: 'Denied calls and reads the functions could not make (sum per 5 minutes)',
      ...common,
      stat: 'Sum',
      period: 300,
      metrics: ['AccessDenied', 'FenceUnread', 'StatusReadFailed'].map(outbox),
    },
    {
      title: 'FIFO order fence and large payloads (sum per 5 minutes)',
      ...common,
      stat: 'Sum',
      period: 300,
      metrics: ['FenceDeferred', 'FenceReads', 'PayloadsOffloaded'].map(outbox),
    },
  ];
  return widgets.map((properties, i) => ({ type: 'metric', x: (i % 2) * 12, y: Math.floor(i / 2) * 6, width: 12, height: 6, properties }));
}
