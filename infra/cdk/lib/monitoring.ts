// Alarms and the dashboard, as plain data. The alarms are infra/contract/settings.json's (the
// Terraform module's are generated from it); the dashboard is the same as the module's
// (infra/terraform/modules/outbox/config.tf). Metric dimensions are the fixed physical names,
// so both stacks produce identical definitions.
import { CONTRACT, type OutboxSettings, names } from './config';
import { DEPLOYMENT_CONTRACT } from './contract';

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

/**
 * Every alarm of the outbox, by name suffix: the contract's (infra/contract/settings.json,
 * "alarms"; the Terraform module's alarms_contract.tf is generated from the same). Why each
 * treats missing data and picks its period as it does: infra/README.md, Alarms.
 */
export function alarmDefinitions(s: OutboxSettings): Record<string, AlarmDefinition> {
  const named = (text: string) => text.replaceAll('<prefix>', s.prefix);
  const setting = (name: string): number => {
    const cdk = DEPLOYMENT_CONTRACT.settings.find((x) => x.name === name)?.cdk;
    if (!cdk) throw new Error(`the contract's alarm threshold ${name} is not a setting of the construct`);
    return (s as unknown as Record<string, number>)[cdk];
  };
  return Object.fromEntries(
    Object.entries(DEPLOYMENT_CONTRACT.alarms).map(([key, a]) => {
      const [dimension, value] = a.dimension.split(' ');
      const definition: AlarmDefinition = {
        description: named(a.description),
        namespace: a.namespace,
        metricName: a.metric,
        dimensions: { [dimension]: named(value) },
        statistic: a.statistic,
        period: a.period_at_least_sweep ? Math.max(a.period, s.sweepRateMinutes * 60) : a.period,
        evaluationPeriods: a.evaluation_periods,
        datapointsToAlarm: a.datapoints_to_alarm,
        threshold: typeof a.threshold === 'number' ? a.threshold : setting(a.threshold),
        comparisonOperator: 'GreaterThanThreshold',
        treatMissingData: a.missing_data,
      };
      return [key, definition];
    }),
  );
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
