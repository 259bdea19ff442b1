// Settings of the example app: the outbox construct's settings as plain values (what
// `cdk -c outbox:<name>=<value>` and cdk.json can say), plus the orders example's own.
// Pure code, no constructs. Unlike the library, the example knows this repository's layout.
import * as path from 'node:path';
import {
  DEFAULTS as OUTBOX_DEFAULTS,
  type OutboxSettings as OutboxConstructSettings,
  type SweepScanMode,
  intIn,
  resolveKeyNames,
  resolveOutboxSettings,
} from '../lib/config.ts';
import { SNS_ARN, type RouteTarget, checkRouteOptions, routeTarget } from '../lib/routes.ts';

/** The repository root (where `cargo lambda build` writes target/lambda/<bin>/bootstrap). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** The orders example's names (infra/CONTRACT.md). */
export const EXAMPLE = {
  ordersPartitionKey: 'id',
  /** TTL attribute of the orders table (processed-message markers). */
  ordersTtlAttribute: 'ExpiresAt',
  consumerBinary: 'orders-consumer',
} as const;

/** Topics routed to the example queues. */
export const EXAMPLE_TOPICS = { standard: 'orders', fifo: 'orders-events' } as const;

/** An existing outbox table to attach to instead of creating one. */
export interface ExistingTable {
  readonly tableName: string;
  /** The table's stream ARN; the stream must be enabled with view type NEW_IMAGE (or NEW_AND_OLD_IMAGES). */
  readonly streamArn: string;
}

/** A detailed route as OUTBOX_ROUTES spells it (passed on unchanged). */
export interface RouteObject {
  readonly destination: string;
  readonly max_message_bytes?: number;
  readonly source?: string;
  readonly raw_delivery?: boolean;
}
/** A route: a destination, or a detailed route. */
export type Route = string | RouteObject;

/** Everything the example app can be told. */
export interface OutboxSettings extends OutboxConstructSettings {
  /** Extra routes: topic → SQS queue URL, SNS topic ARN or EventBridge bus ARN, or a RouteObject. Beside the example routes. */
  readonly routes: Readonly<Record<string, Route>>;
  /** Optional destination for topics without a route (OUTBOX_DEFAULT_DESTINATION). */
  readonly defaultDestination?: string;
  /** SQS event source mapping batch size of the reference consumer. */
  readonly consumerBatchSize: number;
  /**
   * maxReceiveCount of the orders queue and the FIFO orders-events queue before their DLQs
   * (not the outbox's stream-failure queue: that is `maxReceiveCount`). 10, not 5: frequent
   * random consumer crashes charge every neighbour still in the batch a receive, and 5 lets
   * innocent messages reach the DLQ (functions/lib/dynamodb-outbox-idempotency/README.md,
   * "A message that kills the process").
   */
  readonly consumerMaxReceiveCount: number;
  /** Customer-managed KMS key for the tables and queues; AWS-managed / SQS-managed SSE when absent. */
  readonly kmsKeyArn?: string;
  readonly existingTable?: ExistingTable;
  /** SNS topic that alarms notify; the example creates `<prefix>-alarms` when absent. */
  readonly alarmTopicArn?: string;
  /** The outbox table's key and TTL attribute names. */
  readonly partitionKeyName: string;
  readonly sortKeyName: string;
  readonly ttlAttributeName: string;
  /** Directory holding <bin>/bootstrap (cargo lambda build output). */
  readonly lambdaAssetDir: string;
}

export const DEFAULTS: OutboxSettings = {
  ...OUTBOX_DEFAULTS,
  // The example shows the claim check, which the construct leaves off by default.
  largePayloads: true,
  routes: {},
  consumerBatchSize: 10,
  consumerMaxReceiveCount: 10,
  partitionKeyName: 'PK',
  sortKeyName: 'SK',
  ttlAttributeName: 'ExpiresAt',
  lambdaAssetDir: path.join(REPO_ROOT, 'target', 'lambda'),
};

/** Checks a route (a destination or a RouteObject); throws an Error naming the topic. */
export function checkRoute(topic: string, route: Route): RouteTarget {
  if (typeof route === 'string') return routeTarget(route);
  if (route === null || typeof route !== 'object' || Array.isArray(route)) {
    throw new Error(`route "${topic}" must be a destination or {"destination": ..., "max_message_bytes": N, "source": S, "raw_delivery": true}`);
  }
  for (const key of Object.keys(route)) {
    if (!['destination', 'max_message_bytes', 'source', 'raw_delivery'].includes(key)) {
      throw new Error(`route "${topic}" has an unknown key "${key}" (destination, max_message_bytes, source, raw_delivery)`);
    }
  }
  if (typeof route.destination !== 'string') throw new Error(`route "${topic}" needs a "destination" (queue URL, topic ARN or bus ARN)`);
  const target = routeTarget(route.destination);
  checkRouteOptions(
    topic,
    target.kind,
    { size: route.max_message_bytes, source: route.source, rawDelivery: route.raw_delivery },
    { size: 'max_message_bytes', rawDelivery: 'raw_delivery' },
  );
  return target;
}

/** What a user may set: any of the settings; the scan mode also as the old boolean (true: on, false: off). */
export type OutboxSettingsInput = Partial<Omit<OutboxSettings, 'sweepScanMode'>> & {
  readonly sweepScanMode?: SweepScanMode | boolean;
};

/** Applies defaults and validates; throws an Error naming the bad setting. */
export function resolveSettings(overrides: OutboxSettingsInput = {}): OutboxSettings {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  const merged = { ...DEFAULTS, ...defined };
  const s: OutboxSettings = { ...merged, ...resolveOutboxSettings(merged) };
  intIn('consumerBatchSize', s.consumerBatchSize, 1, 10);
  intIn('consumerMaxReceiveCount', s.consumerMaxReceiveCount, 1, 1000);
  resolveKeyNames({ partitionKey: s.partitionKeyName, sortKey: s.sortKeyName, ttlAttribute: s.ttlAttributeName });
  for (const [topic, route] of Object.entries(s.routes)) {
    if (!/^[A-Za-z0-9._:-]{1,256}$/.test(topic)) throw new Error(`route topic "${topic}" has characters other than A-Z a-z 0-9 . _ : -`);
    if (topic === EXAMPLE_TOPICS.standard || topic === EXAMPLE_TOPICS.fifo) {
      throw new Error(`route topic "${topic}" is taken by the example queues this app creates`);
    }
    checkRoute(topic, route);
  }
  if (s.defaultDestination !== undefined) routeTarget(s.defaultDestination);
  if (s.kmsKeyArn !== undefined && !/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(s.kmsKeyArn)) {
    throw new Error(`kmsKeyArn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got "${s.kmsKeyArn}"`);
  }
  if (s.alarmTopicArn !== undefined && !SNS_ARN.test(s.alarmTopicArn)) {
    throw new Error(`alarmTopicArn must be an SNS topic ARN, got "${s.alarmTopicArn}"`);
  }
  if (s.existingTable !== undefined) {
    const { tableName, streamArn } = s.existingTable;
    if (!/^[A-Za-z0-9_.-]{3,255}$/.test(tableName ?? '')) throw new Error(`existingTable.tableName is not a table name: "${tableName}"`);
    const m = /^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table\/([A-Za-z0-9_.-]+)\/stream\/[0-9A-Za-z:.T-]+$/.exec(streamArn ?? '');
    if (!m) throw new Error(`existingTable.streamArn must be the table's stream ARN, got "${streamArn}"`);
    if (m[1] !== tableName) throw new Error(`existingTable.streamArn belongs to table "${m[1]}", not "${tableName}"`);
  }
  return s;
}

/** The ARN of an existing table: its stream ARN without "/stream/<label>" (the table's own partition, region and account). */
export function existingTableArn(streamArn: string): string {
  const at = streamArn.indexOf('/stream/');
  if (at < 0) throw new Error(`"${streamArn}" is not a DynamoDB stream ARN`);
  return streamArn.slice(0, at);
}

/** Physical names of the orders example (the Terraform example computes the same ones). */
export function exampleNames(prefix: string) {
  return {
    ordersTable: `${prefix}-orders`,
    consumer: `${prefix}-orders-consumer`,
    ordersQueue: `${prefix}-orders-queue`,
    ordersDlq: `${prefix}-orders-queue-dlq`,
    fifoQueue: `${prefix}-orders-events.fifo`,
    fifoDlq: `${prefix}-orders-events-dlq.fifo`,
    alarmTopic: `${prefix}-alarms`,
  };
}
