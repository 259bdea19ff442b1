// Configuration of the outbox construct: defaults, validation, and the names shared
// with the Rust functions (infra/CONTRACT.md). Pure code, no constructs, so it is
// tested without synthesizing anything.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkLimits, contractDefaults } from './contract';
import { sweepSizing } from './sizing';

/**
 * The stream FilterCriteria. Its one source of truth is infra/stream-filter.json; the
 * package build copies it beside the compiled code (dist/stream-filter.json), so an
 * installed package reads its own copy and a checkout reads the repository's file.
 */
export const STREAM_FILTER_FILE =
  [path.join(__dirname, 'stream-filter.json'), path.resolve(__dirname, '..', '..', 'stream-filter.json')].find((f) => fs.existsSync(f)) ??
  path.join(__dirname, 'stream-filter.json');

/** Names fixed by infra/CONTRACT.md. Change them there first. */
export const CONTRACT = {
  streamViewType: 'NEW_IMAGE',
  sweepIndexName: 'OutboxSweepIndex',
  sweepIndexPartitionKey: 'SweepShard',
  sweepIndexSortKey: 'SweepDueAt',
  metricsNamespace: 'DynamoDbOutbox',
  /** The one metrics dimension; its value is the deployment's OUTBOX_DEPLOYMENT (the prefix). */
  metricsDimension: 'Service',
  /**
   * Partition key of the sweeper's scan cursor items (sort key SCAN#<segment>): not outbox items
   * (no ItemType). The only items the sweeper may PutItem (unless the scan mode is off).
   */
  scanCursorPartitionKey: 'OUTBOX#SWEEPER',
  /**
   * The large-payload bucket (S3 large-payload offload): payloads too large for a destination or a
   * DynamoDB item are stored at `<largePayloadKeyPrefix><MessageId>` and a pointer is sent.
   */
  largePayloadKeyPrefix: 'outbox/',
  /**
   * A FAILED message's payload whose only copy was under `largePayloadKeyPrefix` is copied here
   * (CopyObject) and its dead-letter copy and item point here: no lifecycle rule covers it, as no
   * TTL ends a FAILED item.
   */
  failedPayloadKeyPrefix: 'failed/',
  largePayloadEnv: { bucket: 'OUTBOX_LARGE_PAYLOAD_BUCKET', thresholdBytes: 'OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES' },
  /** The key names of the outbox table, always passed to the three functions. */
  keyNameEnv: { partitionKey: 'OUTBOX_PARTITION_KEY', sortKey: 'OUTBOX_SORT_KEY', ttlAttribute: 'OUTBOX_TTL_ATTRIBUTE' },
  /**
   * The sweeper index's shard count, always passed to the three functions, and the count before
   * while it changes (docs/operations.md). Producers must write with the same count.
   */
  sweepShardsEnv: { count: 'OUTBOX_SWEEP_SHARDS', previous: 'OUTBOX_SWEEP_SHARDS_PREVIOUS' },
  /** The most shard values the functions accept (dynamodb-outbox-core's MAX_SWEEP_SHARDS). */
  maxSweepShards: 1000,
  /** Lambda's bounds of a stream mapping's parallelization factor. */
  maxParallelizationFactor: 10,
  /** cargo lambda's binary names: <assetDir>/<bin>/bootstrap. */
  binaries: { publisher: 'outbox-publisher', sweeper: 'outbox-sweeper', recovery: 'outbox-recovery' },
} as const;

/** The outbox's three functions. */
export type OutboxFunction = keyof typeof CONTRACT.binaries;

/** Attribute names of the outbox table's keys and TTL (all strings; the table always has a sort key). */
export interface KeyNames {
  /** Default `PK`. */
  readonly partitionKey?: string;
  /** Default `SK`. */
  readonly sortKey?: string;
  /** Default `ExpiresAt` (epoch seconds, set when an item becomes SENT). */
  readonly ttlAttribute?: string;
}
export const DEFAULT_KEY_NAMES: Required<KeyNames> = { partitionKey: 'PK', sortKey: 'SK', ttlAttribute: 'ExpiresAt' };

/** The attributes the outbox writes itself (infra/CONTRACT.md): no key or TTL may be named like one. */
const OUTBOX_ATTRIBUTES: readonly string[] = [
  'ItemType', 'Topic', 'Payload', 'Status', 'RetryCount', 'MessageId', 'CreatedAt', 'Sequence', 'SweepShard', 'SweepDueAt',
  'SentAt', 'FailedAt', 'LastError', 'PayloadOn', 'PayloadSize', 'Segments', 'Cursor',
];

/** The key names with defaults applied; refuses names DynamoDB would refuse or that collide. */
export function resolveKeyNames(k: KeyNames = {}): Required<KeyNames> {
  const defined = Object.fromEntries(Object.entries(k).filter(([, v]) => v !== undefined));
  const r: Required<KeyNames> = { ...DEFAULT_KEY_NAMES, ...defined };
  for (const [name, v] of Object.entries(r)) {
    if (typeof v !== 'string' || v.length < 1 || v.length > 255) throw new Error(`keyNames.${name} must be 1-255 characters, got ${JSON.stringify(v)}`);
  }
  if (new Set(Object.values(r)).size !== 3) throw new Error(`keyNames must be three different attribute names, got ${JSON.stringify(r)}`);
  for (const v of Object.values(r)) {
    if (OUTBOX_ATTRIBUTES.includes(v)) throw new Error(`keyNames: "${v}" is an attribute the outbox writes itself (${OUTBOX_ATTRIBUTES.join(', ')})`);
  }
  // The functions rename the three to PK, SK and ExpiresAt when they read an item: one of
  // those names in another role (partition key "SK") would overwrite a key.
  for (const [role, v] of Object.entries(r) as Array<[keyof KeyNames, string]>) {
    const own = DEFAULT_KEY_NAMES[role];
    if (Object.values(DEFAULT_KEY_NAMES).includes(v) && v !== own) {
      throw new Error(`keyNames.${role}: "${v}" is the default name of another of the three; PK, SK and ExpiresAt may each name only their own role`);
    }
  }
  return r;
}

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
 * Retention of every queue the construct creates, in days (SQS's longest). Large payloads must
 * outlive any message that points at them: largePayloadRetentionDays must be longer.
 */
export const QUEUE_RETENTION_DAYS = 14;
/** Incomplete multipart uploads to the large-payload bucket are aborted after this many days. */
export const LARGE_PAYLOAD_ABORT_MULTIPART_DAYS = 1;

export type Architecture = 'arm64' | 'x86_64';

/**
 * OUTBOX_SWEEP_SCAN_MODE: how the sweeper looks for PENDING items no index knows about.
 * `off` (the default: a scan reads business items too; after a lost stream range,
 * `outbox-ops reconcile`): only the index. `backstop`: one page of at most 100 items per
 * sweep, from a cursor saved in the table — a slow, cheap pass over the whole table.
 * `on`: 4 segments × 2 pages of 1000 items per sweep, for tables whose producers rarely
 * index their items. Under `backstop` and `on` the sweeper may Scan the table and PutItem
 * its scan cursors (partition key OUTBOX#SWEEPER).
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

/** The construct's plain settings (the Terraform module's variables of the same snake_case names). */
export interface OutboxSettings {
  /** Prefix of every physical name (functions, queues, alarms, created table). */
  readonly prefix: string;
  /** OUTBOX_MAX_ATTEMPTS: sweeper attempts before a message becomes FAILED. */
  readonly maxAttempts: number;
  /** Sweeper schedule, in minutes. */
  readonly sweepRateMinutes: number;
  /** OUTBOX_SWEEP_GRACE_SECONDS. */
  readonly sweepGraceSeconds: number;
  /** OUTBOX_SWEEP_SCAN_MODE: off | backstop | on (see SWEEP_SCAN_MODES). */
  readonly sweepScanMode: SweepScanMode;
  /** OUTBOX_TTL_DAYS: how long SENT items stay before TTL deletes them. */
  readonly ttlDays: number;
  /** Stream event source mapping batch size. */
  readonly batchSize: number;
  /**
   * Stream event source mapping: concurrent batches per stream shard (1-10, default 1). Above 1
   * AWS keeps the order of each item (partition and sort key), not of each partition key, and
   * per-aggregate order on FIFO routes is not kept (the order fence reads a sweeper index that
   * lags writes: docs/guarantees.md). Keep 1 on tables with FIFO routes.
   */
  readonly parallelizationFactor: number;
  /**
   * OUTBOX_SWEEP_SHARDS: partition values of the sweeper's index (1-1000); unset: chosen from
   * `expectedPeakMessagesPerSecond` (sweepSizing). Producers must use the same.
   */
  readonly sweepShards: number;
  /**
   * OUTBOX_SWEEP_SHARDS_PREVIOUS: while `sweepShards` changes on a live table, the count before; the
   * functions then also read the old shards. Drop it once `outbox-ops shards --move` reports nothing left.
   */
  readonly sweepShardsPrevious?: number;
  /** Stream event source mapping: retries of a failed batch before it goes to the on-failure destination. */
  readonly streamRetryAttempts: number;
  /** Stream event source mapping: oldest record age (seconds) still delivered. */
  readonly streamMaxRecordAgeSeconds: number;
  /** maxReceiveCount of the stream-failure queue before its DLQ. */
  readonly maxReceiveCount: number;
  /** MaximumMessageSize of the queues the construct creates. */
  readonly maxMessageBytes: number;
  /** Reserved concurrency of the sweeper; null or 0: unreserved. Concurrent sweeps are safe (leases). */
  readonly sweeperReservedConcurrency: number | null;
  /**
   * Sweeper invocations on each tick (1-5, the targets of one rule), each given its share of the
   * index ({"sweepGroup": i, "sweepGroups": n}: shards i mod n); the reserved concurrency is raised to it.
   * Unset: chosen from `expectedPeakMessagesPerSecond` (sweepSizing).
   */
  readonly sweepWorkers: number;
  /** The peak message rate the deployment is sized for, a destination outage included (sweepSizing). */
  readonly expectedPeakMessagesPerSecond: number;
  /** Deletion protection of a created table, and RETAIN (on) or DESTROY (off) of it and the created bucket. */
  readonly deletionProtection: boolean;
  /** CloudWatch Logs retention, in days. */
  readonly logRetentionDays: number;
  /** The large-payload bucket (created, or attached by name); false: no bucket, no S3 grants. */
  readonly largePayloads: boolean;
  /** Attach this existing bucket instead of creating one (its encryption, policy and lifecycle are then its owner's). */
  readonly largePayloadBucketName?: string;
  /** Days a large payload stays in a created bucket; longer than any queue's retention. */
  readonly largePayloadRetentionDays: number;
  /** OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES, unset by default (the functions then decide by each destination's limit). */
  readonly largePayloadThresholdBytes?: number;
  readonly architecture: Architecture;
  /** Publisher IteratorAge alarm threshold, milliseconds. */
  readonly iteratorAgeThresholdMs: number;
  /** OldestPendingAgeSeconds alarm threshold, seconds. */
  readonly oldestPendingThresholdSeconds: number;
  /**
   * OUTBOX_DEFAULT_HOME_REGION: the home region of outbox items without a `HomeRegion` attribute
   * (minimal producers'). Absent: the stack's region. On a global table every region's
   * deployment must set the same value (required there). The functions read it at run time and
   * the stream filter does not name it: moving the default home is a change of this value, in the
   * order of docs/global-tables.md ("Moving the default home").
   */
  readonly defaultHomeRegion?: string;
  /**
   * The regions of the global table the outbox runs on (this stack's among them), one deployment
   * per region; empty (the default): a single-region table. When set, the construct needs
   * `table` (the replica in this region), `defaultHomeRegion` and a stack with a concrete region,
   * and the names global to the account (the producer policy, the dashboard) carry the region.
   */
  readonly globalTableRegions: readonly string[];
}

/** The defaults: infra/contract/settings.json's (the Terraform module's too, except where a setting says why not). */
export const DEFAULTS: OutboxSettings = contractDefaults() as unknown as OutboxSettings;

/** What a user may set: any of the settings; the scan mode also as the old boolean (true: on, false: off). */
export type OutboxSettingsInput = Partial<Omit<OutboxSettings, 'sweepScanMode'>> & {
  readonly sweepScanMode?: SweepScanMode | boolean;
};

/** Retention values CloudWatch Logs accepts. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

export function intIn(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
}

/** Applies defaults to the plain settings and validates them; throws an Error naming the bad setting. */
export function resolveOutboxSettings(overrides: OutboxSettingsInput = {}): OutboxSettings {
  const known = Object.keys(DEFAULTS).concat(['largePayloadBucketName', 'largePayloadThresholdBytes', 'sweepShardsPrevious', 'defaultHomeRegion', 'sweepShards', 'sweepWorkers']);
  const defined = Object.fromEntries(Object.entries(overrides).filter(([k, v]) => v !== undefined && known.includes(k)));
  const merged = { ...DEFAULTS, ...defined };
  const s: OutboxSettings = {
    ...merged,
    ...sweepSizing(merged.expectedPeakMessagesPerSecond, merged),
    sweepScanMode: sweepScanModeOf(merged.sweepScanMode),
  };
  if (!/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/.test(s.prefix)) {
    throw new Error(`prefix must be 2-32 characters of a-z, 0-9 and "-", starting with a letter, got "${s.prefix}"`);
  }
  // Ranges, whole numbers and allowed values: the contract's (stream records live 24 h, so
  // streamMaxRecordAgeSeconds is bounded: -1, infinite, is refused on purpose). The peak comes
  // before the sizes chosen from it, so a bad peak is named first.
  checkLimits(s as unknown as Record<string, unknown>);
  if (s.sweepShardsPrevious !== undefined) {
    intIn('sweepShardsPrevious', s.sweepShardsPrevious, 1, CONTRACT.maxSweepShards);
    if (s.sweepShardsPrevious === s.sweepShards) {
      throw new Error(`sweepShardsPrevious is the count being changed from; it must differ from sweepShards (${s.sweepShards}), or be left out`);
    }
  }
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
  if (s.defaultHomeRegion !== undefined && !REGION.test(s.defaultHomeRegion)) {
    throw new Error(`defaultHomeRegion must be an AWS region name (e.g. us-east-1), got ${JSON.stringify(s.defaultHomeRegion)}`);
  }
  const regions = s.globalTableRegions;
  if (!Array.isArray(regions) || regions.some((r) => typeof r !== 'string' || !REGION.test(r)) || new Set(regions).size !== regions.length) {
    throw new Error(`globalTableRegions must be distinct AWS region names, got ${JSON.stringify(regions)}`);
  }
  if (regions.length === 1) throw new Error(`globalTableRegions holds the global table's regions, this one and at least one other; got ${JSON.stringify(regions)}`);
  if (regions.length > 0 && (s.defaultHomeRegion === undefined || !regions.includes(s.defaultHomeRegion))) {
    throw new Error(
      'On a global table (globalTableRegions set) defaultHomeRegion is required and must be one of globalTableRegions: every region\'s deployment must name the same one',
    );
  }
  return s;
}

/** An AWS region name (the Terraform module checks the same). */
export const REGION = /^[a-z]{2}(-[a-z]+)+-[0-9]+$/;

/**
 * JSON text with object keys sorted and no spaces, escaping <, >, & and U+2028/2029 as
 * Terraform's jsonencode does: both stacks write a filter pattern as the same text.
 */
export function canonicalJson(v: unknown): string {
  const sorted = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(sorted)
      : x !== null && typeof x === 'object'
        ? Object.fromEntries(Object.keys(x as object).sort().map((k) => [k, sorted((x as Record<string, unknown>)[k])]))
        : x;
  const escapes: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029' };
  return JSON.stringify(sorted(v)).replace(/[<>&\u2028\u2029]/g, (c) => escapes[c]);
}

/** The outbox item attribute naming the region whose deployment publishes it (docs/global-tables.md). */
export const HOME_REGION_ATTRIBUTE = 'HomeRegion';

/**
 * The publisher's FilterCriteria in `region` (a region name, or a CDK token of one): each filter
 * of `base` (infra/stream-filter.json) with the region clause in NewImage,
 *   "HomeRegion": {"S": ["<region>"]}
 * and each again for items without a HomeRegion, in every region,
 *   "HomeRegion": {"S": [{"exists": false}]}
 * The filter does not name the default home region: which region publishes an item without a
 * HomeRegion is the publisher's run-time decision (OUTBOX_DEFAULT_HOME_REGION; the others skip
 * it), so moving the default home is a change of that variable, not of the mapping (issue 36,
 * finding 9; docs/global-tables.md). The cost: a region that is not the default home is invoked
 * for a minimal producer's inserts and drops them.
 * Lambda passes a record that matches any one filter. `exists` is tested on the leaf
 * (HomeRegion.S), not on HomeRegion: "Exists matching only works on leaf nodes. It does not work
 * on intermediate nodes" (Lambda filters with EventBridge's rule syntax,
 * https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax,
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html#eb-filtering-exists-matching;
 * the DynamoDB page's "Using the Exists operator",
 * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html#filtering-ddb-exists:
 * in DynamoDB JSON an attribute is an intermediate node, its type key the leaf).
 * Patterns are canonicalJson text, as the Terraform module writes them.
 */
export function homeStreamFilter(base: StreamFilterCriteria, region: string): { Filters: Array<{ Pattern: string }> } {
  const withHome = (clause: unknown) =>
    base.Filters.map((f) => {
      const p = JSON.parse(f.Pattern) as Record<string, any>;
      const dynamodb = { ...(p.dynamodb ?? {}), NewImage: { ...(p.dynamodb?.NewImage ?? {}), [HOME_REGION_ATTRIBUTE]: { S: [clause] } } };
      return { Pattern: canonicalJson({ ...p, dynamodb }) };
    });
  const filters = [...withHome(region), ...withHome({ exists: false })];
  if (filters.length > 5 || filters.some((f) => f.Pattern.length > 4096)) {
    throw new Error('With the region clauses the stream filter has more than 5 filters (every region doubles the file\'s: its own and the unhomed clause) or a pattern over 4096 characters: shorten infra/stream-filter.json');
  }
  return { Filters: filters };
}

export interface StreamFilterCriteria {
  readonly Filters: ReadonlyArray<{ readonly Pattern: string }>;
}

/** Reads and validates the stream filter. The patterns are passed on verbatim. */
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

/**
 * Physical names of what the construct creates, one place (the Terraform module computes the same
 * ones). `globalRegion`: on a global table, the stack's region, carried by the names that are
 * global to the account (the producer policy, the dashboard).
 */
export function names(prefix: string, globalRegion?: string) {
  const g = globalRegion ? `-${globalRegion}` : '';
  return {
    outboxTable: `${prefix}-table`,
    publisher: `${prefix}-publisher`,
    sweeper: `${prefix}-sweeper`,
    recovery: `${prefix}-recovery`,
    outboxDlq: `${prefix}-dlq`,
    streamFailures: `${prefix}-stream-failures`,
    streamFailuresDlq: `${prefix}-stream-failures-dlq`,
    sweepRule: `${prefix}-sweep-schedule`,
    dashboard: `${prefix}-dashboard${g}`,
    producerPolicy: `${prefix}-producer${g}`,
  };
}
