// Configuration of the outbox deployment: defaults, validation, and the names
// shared with the Rust functions (infra/CONTRACT.md). Pure code, no constructs,
// so it is tested without synthesizing anything.
import * as fs from 'node:fs';
import * as path from 'node:path';
const here = __dirname;

/** infra/ — the directory that holds CONTRACT.md and stream-filter.json. */
export const INFRA_DIR = path.resolve(here, '..', '..');
/** The repository root (where `cargo lambda build` writes target/lambda/<bin>/bootstrap). */
export const REPO_ROOT = path.resolve(INFRA_DIR, '..');
/** The one source of truth for the stream FilterCriteria. */
export const STREAM_FILTER_FILE = path.join(INFRA_DIR, 'stream-filter.json');

/** Names fixed by infra/CONTRACT.md. Change them there first. */
export const CONTRACT = {
  partitionKey: 'PK',
  sortKey: 'SK',
  ttlAttribute: 'ExpiresAt',
  streamViewType: 'NEW_IMAGE',
  sweepIndexName: 'OutboxSweepIndex',
  sweepIndexPartitionKey: 'SweepShard',
  sweepIndexSortKey: 'SweepDueAt',
  ordersPartitionKey: 'id',
  metricsNamespace: 'DynamoDbOutbox',
  /** The one metrics dimension; its value is the deployment's OUTBOX_DEPLOYMENT (the prefix). */
  metricsDimension: 'Service',
  /**
   * Partition key of the sweeper's scan cursor items (SK = SCAN#<segment>): not outbox items
   * (no ItemType). The only items the sweeper may PutItem (unless the scan mode is off).
   */
  scanCursorPartitionKey: 'OUTBOX#SWEEPER',
  /**
   * The large-payload bucket (S3 large-payload offload): payloads too large for a destination or a
   * DynamoDB item are stored at `<largePayloadKeyPrefix><MessageId>` and a pointer is sent.
   * Publisher and sweeper PutObject there, the orders consumer GetObject; nothing else.
   */
  largePayloadKeyPrefix: 'outbox/',
  largePayloadEnv: { bucket: 'OUTBOX_LARGE_PAYLOAD_BUCKET', thresholdBytes: 'OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES' },
  binaries: {
    publisher: 'outbox-publisher',
    sweeper: 'outbox-sweeper',
    consumer: 'orders-consumer',
    recovery: 'outbox-recovery',
  },
} as const;

/** Topics routed to the example queues this app creates. */
export const EXAMPLE_TOPICS = { standard: 'orders', fifo: 'orders-events' } as const;

/** SQS's largest message, and the MaximumMessageSize of every queue unless maxMessageBytes says otherwise. */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;

/**
 * EventBridge invokes the sweeper asynchronously. A failed or throttled sweep is not
 * worth retrying for hours (Lambda's default: 2 retries within 6 h): the schedule sends
 * the next one. The schedule's target gives up at once as well.
 */
export const SWEEPER_ASYNC = { maximumRetryAttempts: 0, maximumEventAgeSeconds: 120 } as const;
export const SWEEP_TARGET_RETRY = { maximumRetryAttempts: 0, maximumEventAgeSeconds: 60 } as const;

/**
 * The recovery function and its SQS mapping on <prefix>-stream-failures. The queue's
 * visibility timeout is `visibilityFactor` × the function's timeout (AWS's advice for an
 * SQS trigger), so a message is not handed out again while an invocation still works on it.
 */
export const RECOVERY = { timeoutSeconds: 60, batchSize: 10, visibilityFactor: 6 } as const;

/**
 * Retention of every queue the app creates, in days (SQS's longest). Large payloads must
 * outlive any message that points at them: largePayloadRetentionDays must be longer.
 */
export const QUEUE_RETENTION_DAYS = 14;
/** Incomplete multipart uploads to the large-payload bucket are aborted after this many days. */
export const LARGE_PAYLOAD_ABORT_MULTIPART_DAYS = 1;

export type Architecture = 'arm64' | 'x86_64';

/**
 * OUTBOX_SWEEP_SCAN_MODE: how the sweeper looks for PENDING items no index knows about.
 * `off`: only the index. `backstop` (the default): one page of at most 100 items per
 * sweep, from a cursor saved in the table — a slow, cheap pass over the whole table.
 * `on`: 4 segments × 2 pages of 1000 items per sweep, for tables whose producers rarely
 * index their items. Under `backstop` and `on` the sweeper may Scan the table and PutItem
 * its scan cursors (PK = OUTBOX#SWEEPER).
 */
export const SWEEP_SCAN_MODES = ['off', 'backstop', 'on'] as const;
export type SweepScanMode = (typeof SWEEP_SCAN_MODES)[number];

/**
 * The scan mode of a setting: one of SWEEP_SCAN_MODES, or the old boolean (true: `on`,
 * false: `off` — no backstop), as a value or as the text of `-c outbox:sweepScanMode=...`.
 */
export function sweepScanModeOf(v: unknown): SweepScanMode {
  if (v === true || v === 'true') return 'on';
  if (v === false || v === 'false') return 'off';
  if (typeof v === 'string' && (SWEEP_SCAN_MODES as readonly string[]).includes(v)) return v as SweepScanMode;
  throw new Error(
    `sweepScanMode must be off, backstop or on (or the old true = on, false = off), got ${JSON.stringify(v) ?? String(v)}`,
  );
}

/** An existing outbox table to attach to instead of creating one. */
export interface ExistingTable {
  readonly tableName: string;
  /** The table's stream ARN; the stream must be enabled with view type NEW_IMAGE (or NEW_AND_OLD_IMAGES). */
  readonly streamArn: string;
}

/**
 * A detailed route (OUTBOX_ROUTES, passed on unchanged): the destination, the queue's
 * MaximumMessageSize when below 1 MiB (SQS only), the events' Source (EventBridge only).
 */
export interface RouteObject {
  readonly destination: string;
  readonly max_message_bytes?: number;
  readonly source?: string;
}
/** A route: a destination, or a detailed route. */
export type Route = string | RouteObject;

/** Everything a user can set. All optional; see DEFAULTS. */
export interface OutboxSettings {
  /** Prefix of every physical name (table, functions, queues, alarms). */
  readonly prefix: string;
  /** Extra routes: topic → SQS queue URL, SNS topic ARN or EventBridge bus ARN, or a RouteObject. Merged with the example routes. */
  readonly routes: Readonly<Record<string, Route>>;
  /** Optional destination for topics without a route (OUTBOX_DEFAULT_DESTINATION). */
  readonly defaultDestination?: string;
  /** OUTBOX_MAX_ATTEMPTS: sweeper attempts before a message becomes FAILED. */
  readonly maxAttempts: number;
  /** Sweeper schedule, in minutes. */
  readonly sweepRateMinutes: number;
  /** OUTBOX_SWEEP_GRACE_SECONDS. */
  readonly sweepGraceSeconds: number;
  /**
   * OUTBOX_SWEEP_SCAN_MODE: off | backstop | on (see SWEEP_SCAN_MODES). Except under `off`,
   * the sweeper role may also Scan the table and PutItem its scan cursors (PK = OUTBOX#SWEEPER).
   */
  readonly sweepScanMode: SweepScanMode;
  /** OUTBOX_TTL_DAYS: how long SENT items stay before TTL deletes them. */
  readonly ttlDays: number;
  /** Stream event source mapping batch size. */
  readonly batchSize: number;
  /** Stream event source mapping: retries of a failed batch before it goes to the on-failure destination. */
  readonly streamRetryAttempts: number;
  /** Stream event source mapping: oldest record age (seconds) still delivered. */
  readonly streamMaxRecordAgeSeconds: number;
  /** SQS event source mapping batch size of the reference consumer. */
  readonly consumerBatchSize: number;
  /** maxReceiveCount of the destination queues before their DLQ. */
  readonly maxReceiveCount: number;
  /** MaximumMessageSize of every queue this app creates (below 1 MiB the example routes say so to the publisher). */
  readonly maxMessageBytes: number;
  /**
   * Reserved concurrency of the sweeper; null or 0: unreserved (accounts with a low
   * concurrency quota). Concurrent sweeps are safe: a sweep claims each item with a lease.
   */
  readonly sweeperReservedConcurrency: number | null;
  /**
   * DynamoDB deletion protection of both tables, and their removal policy: RETAIN when on
   * (cdk destroy leaves them), DESTROY when off (throwaway deployments).
   */
  readonly deletionProtection: boolean;
  /** CloudWatch Logs retention, in days. */
  readonly logRetentionDays: number;
  /**
   * Create the large-payload bucket (S3 large-payload offload) and pass its name to the publisher and
   * the sweeper (OUTBOX_LARGE_PAYLOAD_BUCKET); false: no bucket, no S3 grants.
   */
  readonly largePayloads: boolean;
  /**
   * Attach this existing bucket instead of creating one (its encryption, policy and lifecycle
   * are then its owner's: see infra/README.md); the grants and OUTBOX_LARGE_PAYLOAD_BUCKET name it.
   */
  readonly largePayloadBucketName?: string;
  /** Days a large payload stays in the bucket (lifecycle expiration); longer than any queue's retention. */
  readonly largePayloadRetentionDays: number;
  /** OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES, unset by default (the functions then decide by each destination's limit). */
  readonly largePayloadThresholdBytes?: number;
  readonly architecture: Architecture;
  /** Customer-managed KMS key for the tables and queues; AWS-managed / SQS-managed SSE when absent. */
  readonly kmsKeyArn?: string;
  readonly existingTable?: ExistingTable;
  /** SNS topic that alarms notify; alarms have no action when absent. */
  readonly alarmTopicArn?: string;
  /** Publisher IteratorAge alarm threshold, milliseconds. */
  readonly iteratorAgeThresholdMs: number;
  /** OldestPendingAgeSeconds alarm threshold, seconds. */
  readonly oldestPendingThresholdSeconds: number;
  /** Directory holding <bin>/bootstrap (cargo lambda build output). */
  readonly lambdaAssetDir: string;
}

export const DEFAULTS: OutboxSettings = {
  prefix: 'outbox',
  routes: {},
  maxAttempts: 8,
  sweepRateMinutes: 1,
  sweepGraceSeconds: 60,
  sweepScanMode: 'backstop',
  ttlDays: 7,
  batchSize: 100,
  streamRetryAttempts: 5,
  streamMaxRecordAgeSeconds: 3600,
  consumerBatchSize: 10,
  maxReceiveCount: 5,
  maxMessageBytes: SQS_MAX_MESSAGE_BYTES,
  sweeperReservedConcurrency: 1,
  deletionProtection: true,
  logRetentionDays: 30,
  largePayloads: true,
  largePayloadRetentionDays: 30,
  architecture: 'arm64',
  iteratorAgeThresholdMs: 60_000,
  oldestPendingThresholdSeconds: 600,
  lambdaAssetDir: path.join(REPO_ROOT, 'target', 'lambda'),
};

/** Retention values CloudWatch Logs accepts. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

export interface StreamFilterCriteria {
  readonly Filters: ReadonlyArray<{ readonly Pattern: string }>;
}

/** Reads and validates infra/stream-filter.json. The patterns are passed on verbatim. */
export function loadStreamFilter(file: string = STREAM_FILTER_FILE): StreamFilterCriteria {
  const raw: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
  const filters = (raw as { Filters?: unknown }).Filters;
  if (!Array.isArray(filters) || filters.length === 0 || filters.length > 5) {
    throw new Error(`${file}: "Filters" must be a list of 1 to 5 filters`);
  }
  for (const f of filters) {
    const pattern = (f as { Pattern?: unknown }).Pattern;
    if (typeof pattern !== 'string') throw new Error(`${file}: every filter needs a string "Pattern"`);
    JSON.parse(pattern); // a pattern is JSON text; fail here rather than at deploy time
    if (pattern.length > 4096) throw new Error(`${file}: a Pattern is limited to 4096 characters`);
  }
  return raw as StreamFilterCriteria;
}

/** What a route destination is, and the IAM action/resource that sending to it needs. */
export interface RouteTarget {
  readonly kind: 'sqs' | 'sns' | 'events';
  readonly arn: string;
  readonly action: string;
}

const SQS_URL = /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/(\d{12})\/([A-Za-z0-9_-]{1,75}(?:\.fifo)?)$/;
const SNS_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(?:\.fifo)?$/;
const BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256}$/;

/** Parses a destination (CONTRACT.md): SQS queue URL, SNS topic ARN or EventBridge bus ARN. */
export function routeTarget(destination: string): RouteTarget {
  const sqs = SQS_URL.exec(destination);
  if (sqs) {
    // The queue URL names the partition: *.amazonaws.com.cn is aws-cn, us-gov-* regions are aws-us-gov.
    const part = destination.includes('.amazonaws.com.cn/') ? 'aws-cn' : sqs[1].startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
    return { kind: 'sqs', arn: `arn:${part}:sqs:${sqs[1]}:${sqs[2]}:${sqs[3]}`, action: 'sqs:SendMessage' };
  }
  if (SNS_ARN.test(destination)) return { kind: 'sns', arn: destination, action: 'sns:Publish' };
  if (BUS_ARN.test(destination)) return { kind: 'events', arn: destination, action: 'events:PutEvents' };
  throw new Error(
    `route destination "${destination}" is neither an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), ` +
      'an SNS topic ARN nor an EventBridge bus ARN',
  );
}

/** Checks a route (a destination or a RouteObject); throws an Error naming the topic. */
export function checkRoute(topic: string, route: Route): RouteTarget {
  if (typeof route === 'string') return routeTarget(route);
  if (route === null || typeof route !== 'object' || Array.isArray(route)) {
    throw new Error(`route "${topic}" must be a destination or {"destination": ..., "max_message_bytes": N, "source": S}`);
  }
  for (const key of Object.keys(route)) {
    if (!['destination', 'max_message_bytes', 'source'].includes(key)) {
      throw new Error(`route "${topic}" has an unknown key "${key}" (destination, max_message_bytes, source)`);
    }
  }
  if (typeof route.destination !== 'string') throw new Error(`route "${topic}" needs a "destination" (queue URL, topic ARN or bus ARN)`);
  const target = routeTarget(route.destination);
  if (route.max_message_bytes !== undefined) {
    if (target.kind !== 'sqs') throw new Error(`route "${topic}": max_message_bytes applies to SQS queues only (SNS and EventBridge limits are fixed)`);
    intIn(`route "${topic}" max_message_bytes`, route.max_message_bytes, 1, SQS_MAX_MESSAGE_BYTES);
  }
  if (route.source !== undefined) {
    if (target.kind !== 'events') throw new Error(`route "${topic}": source applies to EventBridge buses only`);
    if (typeof route.source !== 'string' || route.source.length < 1 || route.source.length > 256) {
      throw new Error(`route "${topic}": source must be 1-256 characters`);
    }
  }
  return target;
}

/** The destination of a route. */
export const destinationOf = (route: Route): string => (typeof route === 'string' ? route : route.destination);

function intIn(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
}

/** What a user may set: any of the settings; the scan mode also as the old boolean (true: on, false: off). */
export type OutboxSettingsInput = Partial<Omit<OutboxSettings, 'sweepScanMode'>> & {
  readonly sweepScanMode?: SweepScanMode | boolean;
};

/** Applies defaults and validates; throws an Error naming the bad setting. */
export function resolveSettings(overrides: OutboxSettingsInput = {}): OutboxSettings {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  const merged = { ...DEFAULTS, ...defined };
  const s: OutboxSettings = { ...merged, sweepScanMode: sweepScanModeOf(merged.sweepScanMode) };
  if (!/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/.test(s.prefix)) {
    throw new Error(`prefix must be 2-32 characters of a-z, 0-9 and "-", starting with a letter, got "${s.prefix}"`);
  }
  intIn('maxAttempts', s.maxAttempts, 1, 100);
  intIn('sweepRateMinutes', s.sweepRateMinutes, 1, 1440);
  intIn('sweepGraceSeconds', s.sweepGraceSeconds, 0, 86_400);
  intIn('ttlDays', s.ttlDays, 1, 365);
  intIn('batchSize', s.batchSize, 1, 10_000);
  intIn('streamRetryAttempts', s.streamRetryAttempts, 0, 10_000);
  // Stream records live 24 h; -1 (infinite) is refused on purpose: the age must be bounded.
  intIn('streamMaxRecordAgeSeconds', s.streamMaxRecordAgeSeconds, 60, 86_400);
  intIn('consumerBatchSize', s.consumerBatchSize, 1, 10);
  intIn('maxReceiveCount', s.maxReceiveCount, 1, 1000);
  intIn('maxMessageBytes', s.maxMessageBytes, 1024, SQS_MAX_MESSAGE_BYTES);
  if (typeof s.largePayloads !== 'boolean') throw new Error('largePayloads must be true or false');
  // A pointer may wait on a queue (or its DLQ) for up to QUEUE_RETENTION_DAYS: its payload must still be there.
  if (!Number.isInteger(s.largePayloadRetentionDays) || s.largePayloadRetentionDays <= QUEUE_RETENTION_DAYS || s.largePayloadRetentionDays > 3650) {
    throw new Error(
      `largePayloadRetentionDays must be an integer longer than the queues' ${QUEUE_RETENTION_DAYS}-day retention (${QUEUE_RETENTION_DAYS + 1} to 3650), got ${s.largePayloadRetentionDays}`,
    );
  }
  if (s.largePayloadBucketName !== undefined) {
    if (!s.largePayloads) throw new Error('largePayloadBucketName needs largePayloads (it names the bucket to use)');
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(s.largePayloadBucketName) || s.largePayloadBucketName.includes('..')) {
      throw new Error(`largePayloadBucketName must be an S3 bucket name (3-63 characters of a-z, 0-9, "." and "-"), got "${s.largePayloadBucketName}"`);
    }
  }
  if (s.largePayloadThresholdBytes !== undefined) {
    if (!s.largePayloads) throw new Error('largePayloadThresholdBytes needs largePayloads (there is no bucket to put payloads in)');
    intIn('largePayloadThresholdBytes', s.largePayloadThresholdBytes, 1, SQS_MAX_MESSAGE_BYTES);
  }
  if (s.sweeperReservedConcurrency !== null) intIn('sweeperReservedConcurrency', s.sweeperReservedConcurrency, 0, 10_000);
  if (typeof s.deletionProtection !== 'boolean') throw new Error('deletionProtection must be true or false');
  intIn('iteratorAgeThresholdMs', s.iteratorAgeThresholdMs, 1000, 86_400_000);
  intIn('oldestPendingThresholdSeconds', s.oldestPendingThresholdSeconds, 60, 86_400 * 14);
  if (!LOG_RETENTION_DAYS.includes(s.logRetentionDays)) {
    throw new Error(`logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(', ')}, got ${s.logRetentionDays}`);
  }
  if (s.architecture !== 'arm64' && s.architecture !== 'x86_64') {
    throw new Error(`architecture must be arm64 or x86_64, got ${String(s.architecture)}`);
  }
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

/** Physical names, one place (the Terraform module computes the same ones). */
export function names(prefix: string) {
  return {
    outboxTable: `${prefix}-table`,
    ordersTable: `${prefix}-orders`,
    publisher: `${prefix}-publisher`,
    sweeper: `${prefix}-sweeper`,
    consumer: `${prefix}-orders-consumer`,
    recovery: `${prefix}-recovery`,
    outboxDlq: `${prefix}-dlq`,
    streamFailures: `${prefix}-stream-failures`,
    streamFailuresDlq: `${prefix}-stream-failures-dlq`,
    ordersQueue: `${prefix}-orders-queue`,
    ordersDlq: `${prefix}-orders-queue-dlq`,
    fifoQueue: `${prefix}-orders-events.fifo`,
    fifoDlq: `${prefix}-orders-events-dlq.fifo`,
    sweepRule: `${prefix}-sweep-schedule`,
    dashboard: `${prefix}-dashboard`,
  };
}

/** Parses the CDK context (strings from `-c key=value`, or JSON values from cdk.json) into overrides. */
export function settingsFromContext(get: (key: string) => unknown, env: NodeJS.ProcessEnv = process.env): OutboxSettingsInput {
  const str = (k: string): string | undefined => {
    const v = get(`outbox:${k}`);
    return v === undefined || v === null || v === '' ? undefined : String(v);
  };
  const num = (k: string): number | undefined => {
    const v = str(k);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (Number.isNaN(n)) throw new Error(`context outbox:${k} must be a number, got "${v}"`);
    return n;
  };
  const bool = (k: string): boolean | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    if (v === true || v === 'true' || v === 'on') return true;
    if (v === false || v === 'false' || v === 'off') return false;
    throw new Error(`context outbox:${k} must be true/false (or on/off), got "${String(v)}"`);
  };
  // off | backstop | on, or the old true/false (a JSON boolean in cdk.json): checked by resolveSettings.
  const scanMode = (k: string): SweepScanMode | boolean | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    return typeof v === 'boolean' ? v : (String(v) as SweepScanMode);
  };
  const json = <T>(k: string): T | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return v as T;
    try {
      return JSON.parse(v) as T;
    } catch (e) {
      throw new Error(`context outbox:${k} must be JSON: ${(e as Error).message}`);
    }
  };
  const nullableNum = (k: string): number | null | undefined => {
    const v = get(`outbox:${k}`);
    if (v === null || (typeof v === 'string' && ['off', 'none', 'null'].includes(v))) return null;
    return num(k);
  };
  return {
    prefix: str('prefix'),
    routes: json<Record<string, Route>>('routes'),
    defaultDestination: str('defaultDestination'),
    maxAttempts: num('maxAttempts'),
    sweepRateMinutes: num('sweepRateMinutes'),
    sweepGraceSeconds: num('sweepGraceSeconds'),
    sweepScanMode: scanMode('sweepScanMode'),
    ttlDays: num('ttlDays'),
    batchSize: num('batchSize'),
    streamRetryAttempts: num('streamRetryAttempts'),
    streamMaxRecordAgeSeconds: num('streamMaxRecordAgeSeconds'),
    consumerBatchSize: num('consumerBatchSize'),
    maxReceiveCount: num('maxReceiveCount'),
    maxMessageBytes: num('maxMessageBytes'),
    sweeperReservedConcurrency: nullableNum('sweeperReservedConcurrency'),
    deletionProtection: bool('deletionProtection'),
    logRetentionDays: num('logRetentionDays'),
    largePayloads: bool('largePayloads'),
    largePayloadBucketName: str('largePayloadBucketName'),
    largePayloadRetentionDays: num('largePayloadRetentionDays'),
    largePayloadThresholdBytes: num('largePayloadThresholdBytes'),
    architecture: str('architecture') as Architecture | undefined,
    kmsKeyArn: str('kmsKeyArn'),
    existingTable: json<ExistingTable>('existingTable'),
    alarmTopicArn: str('alarmTopicArn'),
    iteratorAgeThresholdMs: num('iteratorAgeThresholdMs'),
    oldestPendingThresholdSeconds: num('oldestPendingThresholdSeconds'),
    lambdaAssetDir: str('lambdaAssetDir') ?? (env.OUTBOX_LAMBDA_ASSET_DIR || undefined),
  };
}
