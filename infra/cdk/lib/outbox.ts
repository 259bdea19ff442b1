// The outbox on a DynamoDB table, and nothing else: publisher (stream), sweeper (schedule),
// recovery (the stream mapping's on-failure records), their roles and log groups, the outbox
// dead-letter queue and the stream-failure queue, the large-payload bucket, alarms and a
// dashboard. Routed to the destinations it is given; the names shared with the functions come
// from config.ts (infra/CONTRACT.md), the grants from policies.ts, the alarms from monitoring.ts.
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct, type IConstruct } from 'constructs';
import { checkedArtifact } from './artifact';
import { settingsEnvironment } from './contract';
import {
  type Architecture,
  CONTRACT,
  type KeyNames,
  type OutboxFunction,
  type OutboxSettings,
  type OutboxSettingsInput,
  QUEUE_RETENTION_DAYS,
  RECOVERY,
  SWEEPER_ASYNC,
  SWEEP_TARGET_RETRY,
  homeStreamFilter,
  loadStreamFilter,
  names,
  resolveKeyNames,
  resolveOutboxSettings,
} from './config';
import { largePayloadBucket } from './large-payloads';
import { outboxTable } from './table';
import { noStream, seenTable, tableMismatches, ttlOffWarning } from './table-check';
import { acknowledgeBucket, acknowledgeLargePayloadGrant, acknowledgeTerminalQueues } from './nag';
import { type AlarmDefinition, type DashboardExtras, alarmDefinitions, dashboardWidgets } from './monitoring';
import { type PolicyTargets, producerStatements, publisherStatements, recoveryStatements, sweeperStatements } from './policies';
import { type OutboxDestination, type OutboxRoute, type ResolvedRoute, resolveRoute } from './routes';

/**
 * The function code: a lambda.Code per function (a zip asset, an S3 object, an image), e.g. from
 * your own build or a release download. A function left out comes from `assetDir`.
 */
export type OutboxCode = Readonly<Partial<Record<OutboxFunction, lambda.Code>>>;

export interface OutboxProps extends OutboxSettingsInput {
  /**
   * Your table, with its stream on (NEW_IMAGE or NEW_AND_OLD_IMAGES) and the sweeper index
   * (infra/CONTRACT.md). An imported table needs `tableStreamArn`
   * (`dynamodb.Table.fromTableAttributes({ tableArn, tableStreamArn })`); a Table or TableV2 of
   * this app is checked at synth against `keyNames` and the requirements. Absent: the construct
   * creates `<prefix>-table` with the key names, the stream, the index and TTL.
   */
  readonly table?: dynamodb.ITable;
  /** The table's key and TTL attribute names (defaults PK, SK, ExpiresAt). */
  readonly keyNames?: KeyNames;
  /** Topic → destination (a queue, topic or bus, or a literal URL/ARN) or a detailed route. Only these are routed. */
  readonly routes?: Readonly<Record<string, OutboxDestination | OutboxRoute>>;
  /** Destination of topics without a route (OUTBOX_DEFAULT_DESTINATION); absent: such messages become FAILED. */
  readonly defaultDestination?: OutboxDestination;
  /** The functions' code, function by function before `assetDir` (which then needs only the others). */
  readonly code?: OutboxCode;
  /**
   * A directory holding `<bin>/bootstrap` or `<bin>/bootstrap.zip` for outbox-publisher,
   * outbox-sweeper and outbox-recovery (`cargo lambda build --release --arm64` writes
   * `target/lambda/`); each is checked to be an ELF executable of `architecture`.
   */
  readonly assetDir?: string;
  /** Customer-managed key of a created table, the queues and a created bucket; the roles may use it. */
  readonly encryptionKey?: kms.IKey;
  /** Topic that every alarm notifies; without it the outbox creates no alarms (the dashboard stays). */
  readonly alarmTopic?: sns.ITopic;
  /** Create the producer's managed policy `<prefix>-producer` (default true). `grantProduce` works either way. */
  readonly createProducerPolicy?: boolean;
  /** More of your functions and queues on the dashboard. */
  readonly dashboard?: DashboardExtras;
}

/**
 * Lambda code from a cargo lambda output directory: <assetDir>/<bin>/bootstrap or
 * <assetDir>/<bin>/bootstrap.zip, whichever is newer, refused unless it is an ELF
 * executable for `architecture`.
 */
export function functionCode(assetDir: string, bin: string, architecture: Architecture): lambda.Code {
  const artifact = checkedArtifact(assetDir, bin, architecture);
  return artifact.kind === 'zip'
    ? lambda.Code.fromAsset(artifact.path)
    : lambda.Code.fromAsset(path.dirname(artifact.path), { exclude: ['bootstrap.zip'] });
}

export class Outbox extends Construct {
  readonly settings: OutboxSettings;
  readonly keyNames: Required<KeyNames>;
  /** The region this deployment owns (OUTBOX_REGION): the stack's (a token in a region-agnostic stack). */
  readonly region: string;
  /** OUTBOX_DEFAULT_HOME_REGION: `defaultHomeRegion`, else the stack's region. */
  readonly defaultHomeRegion: string;
  /** The outbox table: yours, or the one created. */
  readonly table: dynamodb.ITable;
  readonly tableName: string;
  readonly tableArn: string;
  readonly tableStreamArn: string;
  readonly publisher: lambda.Function;
  readonly sweeper: lambda.Function;
  readonly recovery: lambda.Function;
  /** `<prefix>-dlq`: copies of FAILED messages (OUTBOX_DLQ_URL). */
  readonly deadLetterQueue: sqs.Queue;
  /** `<prefix>-stream-failures`: the stream mapping's on-failure destination, read by the recovery function. */
  readonly streamFailureQueue: sqs.Queue;
  /** `<prefix>-stream-failures-dlq`: on-failure records the recovery function could not handle. */
  readonly streamFailureDeadLetterQueue: sqs.Queue;
  /** The large-payload bucket, created or attached; undefined when largePayloads is off. */
  readonly largePayloadBucket?: import('aws-cdk-lib/aws-s3').IBucket;
  /** `<bucket>/outbox/*`, when large payloads are on. */
  readonly largePayloadObjectsArn?: string;
  /** `<bucket>/failed/*`, when large payloads are on: FAILED messages' payloads, kept as long as their items. */
  readonly failedPayloadObjectsArn?: string;
  readonly alarms: Record<string, cloudwatch.Alarm> = {};
  readonly dashboard: cloudwatch.CfnDashboard;
  /** `<prefix>-producer`, unless createProducerPolicy is false. */
  readonly producerPolicy?: iam.ManagedPolicy;
  private readonly alarmAction?: cloudwatch.IAlarmAction;
  private readonly key?: kms.IKey;

  constructor(scope: Construct, id: string, props: OutboxProps = {}) {
    super(scope, id);
    const s = resolveOutboxSettings(props);
    this.settings = s;
    this.keyNames = resolveKeyNames(props.keyNames);
    this.key = props.encryptionKey;
    // The region this deployment owns (docs/global-tables.md): the stack's, a token in a
    // region-agnostic stack.
    const region = cdk.Stack.of(this).region;
    this.region = region;
    this.defaultHomeRegion = s.defaultHomeRegion ?? region;
    const globalTable = s.globalTableRegions.length > 0;
    if (globalTable) {
      if (cdk.Token.isUnresolved(region)) {
        throw new Error(`Outbox ${this.node.path}: on a global table (globalTableRegions) the stack needs a concrete region (env: { region }): one stack per region`);
      }
      if (!s.globalTableRegions.includes(region)) {
        throw new Error(`Outbox ${this.node.path}: the stack's region ${region} is not one of globalTableRegions ${JSON.stringify(s.globalTableRegions)}`);
      }
      if (!props.table) {
        throw new Error(
          `Outbox ${this.node.path}: on a global table give \`table\`, the table's replica in ${region} (a TableV2 with its replicas, or imported with its stream ARN in this region)`,
        );
      }
    }
    const n = names(s.prefix, globalTable ? region : undefined);

    this.table = props.table ?? outboxTable(this, n.outboxTable, s, this.keyNames, this.key);
    if (!this.table.tableStreamArn) {
      // A table of this app: its own definition says what to change.
      const seen = props.table && seenTable(props.table);
      if (seen) throw new Error(`Outbox ${this.node.path}: ${noStream(seen.name)}`);
      throw new Error(
        `Outbox ${this.node.path}: the table has no stream ARN. Import it with dynamodb.Table.fromTableAttributes({ tableArn, tableStreamArn }) ` +
          '(its stream on, view type NEW_IMAGE or NEW_AND_OLD_IMAGES).',
      );
    }
    if (props.table) this.checkTable(props.table);
    this.tableName = this.table.tableName;
    this.tableArn = this.table.tableArn;
    this.tableStreamArn = this.table.tableStreamArn;

    // Copies of FAILED messages (written by the publisher and the sweeper). The stream mapping's
    // on-failure records go to the failure queue, consumed by the recovery function; what it cannot
    // handle lands on that queue's DLQ after maxReceiveCount receives, for a person.
    this.deadLetterQueue = this.queue('DeadLetterQueue', n.outboxDlq);
    this.streamFailureDeadLetterQueue = this.queue('StreamFailuresDlq', n.streamFailuresDlq);
    this.streamFailureQueue = this.queue('StreamFailures', n.streamFailures, {
      visibilityTimeout: cdk.Duration.seconds(RECOVERY.timeoutSeconds * RECOVERY.visibilityFactor),
      deadLetterQueue: { queue: this.streamFailureDeadLetterQueue, maxReceiveCount: s.maxReceiveCount },
    });

    const bucket = largePayloadBucket(this, s, this.key);
    this.largePayloadBucket = bucket;
    this.largePayloadObjectsArn = bucket?.arnForObjects(`${CONTRACT.largePayloadKeyPrefix}*`);
    this.failedPayloadObjectsArn = bucket?.arnForObjects(`${CONTRACT.failedPayloadKeyPrefix}*`);

    const routes = Object.entries(props.routes ?? {}).map(([topic, r]) => [topic, resolveRoute(topic, r)] as const);
    const fallback = props.defaultDestination !== undefined ? resolveRoute('defaultDestination', props.defaultDestination) : undefined;
    const destinations: ResolvedRoute[] = [...routes.map(([, r]) => r), ...(fallback ? [fallback] : [])];
    const policyTargets: PolicyTargets = {
      tableArn: this.tableArn,
      streamArn: this.tableStreamArn,
      deadLetterQueueArn: this.deadLetterQueue.queueArn,
      streamFailureQueueArn: this.streamFailureQueue.queueArn,
      payloadObjectsArn: this.largePayloadObjectsArn,
      failedPayloadObjectsArn: this.failedPayloadObjectsArn,
      destinations,
      scans: s.sweepScanMode !== 'off',
    };
    // Which messages this deployment owns: HomeRegion = OUTBOX_REGION, or none when OUTBOX_REGION
    // is OUTBOX_DEFAULT_HOME_REGION. The three functions get both.
    const homeEnv = { OUTBOX_REGION: region, OUTBOX_DEFAULT_HOME_REGION: this.defaultHomeRegion };
    // The settings the functions read as they are (infra/contract/settings.json); the derived
    // ones (table, routes, DLQ, default destination, bucket, region, sweep period, scan mode, shard count) here.
    const settingValues = { ...s, ...Object.fromEntries(Object.entries(this.keyNames).map(([k, v]) => [`keyNames.${k}`, v])) };
    const shardEnv = { [CONTRACT.sweepShardsEnv.count]: String(s.sweepShards) };
    const envOf = (fn: OutboxFunction) => ({ ...settingsEnvironment(fn, settingValues), ...shardEnv, ...homeEnv });
    const commonEnv: Record<string, string> = {
      OUTBOX_TABLE_NAME: this.tableName,
      OUTBOX_ROUTES: cdk.Stack.of(this).toJsonString(Object.fromEntries(routes.map(([topic, r]) => [topic, r.json]))),
      OUTBOX_DLQ_URL: this.deadLetterQueue.queueUrl,
      ...(fallback ? { OUTBOX_DEFAULT_DESTINATION: typeof fallback.json === 'string' ? fallback.json : fallback.json.destination } : {}),
      ...(bucket ? { [CONTRACT.largePayloadEnv.bucket]: bucket.bucketName } : {}),
    };
    const code = (fn: OutboxFunction): lambda.Code => {
      if (props.code?.[fn]) return props.code[fn];
      if (props.assetDir) return functionCode(props.assetDir, CONTRACT.binaries[fn], s.architecture);
      throw new Error(`Outbox ${this.node.path}: no code for the ${fn}: give \`code\` (a lambda.Code per function) or \`assetDir\` (cargo lambda's target/lambda)`);
    };

    const publisherRole = this.role('PublisherRole', 'outbox publisher', publisherStatements(policyTargets), destinations);
    this.publisher = this.fn('Publisher', n.publisher, publisherRole, code('publisher'), {
      description: 'Publishes new PENDING outbox messages from the table stream and marks them SENT',
      timeout: cdk.Duration.seconds(60),
      environment: { ...commonEnv, ...envOf('publisher') },
    });
    this.streamMapping(props.table !== undefined, publisherRole);

    const sweeperRole = this.role('SweeperRole', 'outbox sweeper', sweeperStatements(policyTargets), destinations);
    this.sweeper = this.fn('Sweeper', n.sweeper, sweeperRole, code('sweeper'), {
      description: 'Recovers outbox messages still PENDING after the grace period; FAILED + DLQ after max attempts',
      timeout: cdk.Duration.seconds(Math.min(300, s.sweepRateMinutes * 60)),
      // One sweep at a time by default; null/0: unreserved (sweeps claim items with leases, so overlap is safe).
      // Every worker of a tick runs at once (sweepWorkers): never reserve fewer.
      reservedConcurrentExecutions: s.sweeperReservedConcurrency ? Math.max(s.sweeperReservedConcurrency, s.sweepWorkers) : undefined,
      // EventBridge invokes it asynchronously: no retries of a failed or throttled sweep; the next tick comes anyway.
      retryAttempts: SWEEPER_ASYNC.maximumRetryAttempts,
      maxEventAge: cdk.Duration.seconds(SWEEPER_ASYNC.maximumEventAgeSeconds),
      environment: {
        ...commonEnv,
        ...envOf('sweeper'),
        // The schedule's period: a FIFO republish is timed to land inside SQS's
        // 5-minute deduplication window, which needs to know how often sweeps run.
        OUTBOX_SWEEP_PERIOD_SECONDS: String(s.sweepRateMinutes * 60),
        OUTBOX_SWEEP_SCAN_MODE: s.sweepScanMode,
      },
    });
    new events.Rule(this, 'SweepSchedule', {
      ruleName: n.sweepRule,
      description: 'Runs the outbox sweeper',
      schedule: events.Schedule.rate(cdk.Duration.minutes(s.sweepRateMinutes)),
      // One target per worker, each given its share of the index (one worker: the whole index).
      targets: Array.from({ length: s.sweepWorkers }, (_, i) =>
        // The next tick is the retry.
        new targets.LambdaFunction(this.sweeper, {
          retryAttempts: SWEEP_TARGET_RETRY.maximumRetryAttempts,
          maxEventAge: cdk.Duration.seconds(SWEEP_TARGET_RETRY.maximumEventAgeSeconds),
          event: s.sweepWorkers === 1 ? undefined : events.RuleTargetInput.fromObject({ sweepGroup: i, sweepGroups: s.sweepWorkers }),
        }),
      ),
    });

    const recoveryRole = this.role('RecoveryRole', 'outbox recovery', recoveryStatements(policyTargets), []);
    this.recovery = this.fn('Recovery', n.recovery, recoveryRole, code('recovery'), {
      description: "Reads the stream ranges of batches the stream mapping discarded and puts their PENDING items into the sweeper's index",
      timeout: cdk.Duration.seconds(RECOVERY.timeoutSeconds),
      environment: { OUTBOX_TABLE_NAME: this.tableName, ...envOf('recovery') },
    });
    const recoveryMapping = new lambda.EventSourceMapping(this, 'RecoveryQueueMapping', {
      target: this.recovery,
      eventSourceArn: this.streamFailureQueue.queueArn,
      batchSize: RECOVERY.batchSize,
      // A range it cannot read for now is retried; the others are deleted.
      reportBatchItemFailures: true,
      enabled: true,
    });
    recoveryMapping.node.addDependency(recoveryRole);

    this.alarmAction = props.alarmTopic ? new cwActions.SnsAction(props.alarmTopic) : undefined;
    // An alarm that notifies nobody is noise (issue 39): the contract's alarms come with a topic only.
    if (this.alarmAction) for (const [alarmId, a] of Object.entries(alarmDefinitions(s))) this.addAlarm(alarmId, a);
    this.dashboard = new cloudwatch.CfnDashboard(this, 'Dashboard', {
      dashboardName: n.dashboard,
      dashboardBody: cdk.Stack.of(this).toJsonString({
        widgets: dashboardWidgets(s, props.dashboard).map((w) => ({ ...w, properties: { ...w.properties, region: cdk.Stack.of(this).region } })),
      }),
    });

    if (props.createProducerPolicy ?? true) {
      this.producerPolicy = new iam.ManagedPolicy(this, 'ProducerPolicy', {
        managedPolicyName: n.producerPolicy,
        description: `${s.prefix}: what an application role needs to write outbox messages`,
        statements: this.producerStatements(),
      });
    }
    acknowledgeTerminalQueues([this.deadLetterQueue, this.streamFailureDeadLetterQueue]);
    if (this.largePayloadBucket) acknowledgeBucket(this.largePayloadBucket);
    for (const w of [publisherRole, sweeperRole]) this.acknowledgeLargePayloadGrant(w);
    // The producer puts under outbox/ only.
    if (this.producerPolicy && this.largePayloadBucket) {
      acknowledgeLargePayloadGrant(this.producerPolicy, this.largePayloadBucket, this.settings.largePayloadBucketName, [CONTRACT.largePayloadKeyPrefix]);
    }
  }

  /**
   * A table of this app (Table, TableV2) that does not fit the key names or the functions fails the
   * synth, each mismatch named (lib/table-check.ts); TTL off is a warning. Validated at synth, so an
   * index added after the construct counts.
   */
  private checkTable(table: dynamodb.ITable): void {
    const seen = seenTable(table);
    if (!seen) return;
    // A table's TTL is set when it is built (no method adds it later): warned once, here.
    const warning = ttlOffWarning(seen, this.keyNames);
    if (warning) cdk.Annotations.of(this).addWarningV2('dynamodb-outbox:ttl-off', warning);
    this.node.addValidation({ validate: () => tableMismatches(seenTable(table) ?? seen, this.keyNames) });
  }

  /** The producer's statements: PutItem and GetItem on the table (a retried commit reads its items back); PutObject on `<bucket>/outbox/*`; the KMS key. */
  producerStatements(): iam.PolicyStatement[] {
    return producerStatements({ tableArn: this.tableArn, payloadObjectsArn: this.largePayloadObjectsArn, keyArn: this.key?.keyArn });
  }

  /** Lets `grantee` (your application's role) write outbox messages: the producer policy, on its own policy. */
  grantProduce(grantee: iam.IGrantable): iam.Grant {
    const grants = this.producerStatements().map((st) =>
      iam.Grant.addToPrincipal({ grantee, actions: st.actions, resourceArns: st.resources }),
    );
    return grants.reduce((all, g) => all.combine(g));
  }

  /**
   * Lets `grantee` (a consumer) read large payloads: `s3:GetObject` on `<bucket>/outbox/*` and
   * `<bucket>/failed/*` (where a redriven FAILED message points), and `s3:ListBucket` on the
   * bucket, without which a missing object reads as AccessDenied instead of NoSuchKey. Undefined
   * when they are off.
   */
  grantReadLargePayloads(grantee: iam.IGrantable): iam.Grant | undefined {
    if (!this.largePayloadObjectsArn || !this.failedPayloadObjectsArn || !this.largePayloadBucket) return undefined;
    const objects = [this.largePayloadObjectsArn, this.failedPayloadObjectsArn];
    const grant = iam.Grant.addToPrincipal({ grantee, actions: ['s3:GetObject'], resourceArns: objects }).combine(
      iam.Grant.addToPrincipal({ grantee, actions: ['s3:ListBucket'], resourceArns: [this.largePayloadBucket.bucketArn] }),
    );
    if (grantee instanceof Construct) this.acknowledgeLargePayloadGrant(grantee);
    return grant;
  }

  /** Acknowledges cdk-nag's AwsSolutions-IAM5 for the `<bucket>/outbox/*` and `<bucket>/failed/*` grants on `scope` (a role or policy of yours). */
  acknowledgeLargePayloadGrant(scope: IConstruct): void {
    if (this.largePayloadBucket) acknowledgeLargePayloadGrant(scope, this.largePayloadBucket, this.settings.largePayloadBucketName);
  }

  /** An alarm named `<prefix>-<id>`, notifying the alarm topic (also for your own alarms beside the outbox's). */
  addAlarm(id: string, a: AlarmDefinition): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${this.settings.prefix}-${id}`,
      alarmDescription: a.description,
      metric: new cloudwatch.Metric({
        namespace: a.namespace,
        metricName: a.metricName,
        dimensionsMap: { ...a.dimensions },
        statistic: a.statistic,
        period: cdk.Duration.seconds(a.period),
      }),
      threshold: a.threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: a.evaluationPeriods,
      datapointsToAlarm: a.datapointsToAlarm,
      treatMissingData: a.treatMissingData === 'breaching' ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (this.alarmAction) alarm.addAlarmAction(this.alarmAction);
    this.alarms[id] = alarm;
    return alarm;
  }

  /** The encryption settings of a queue (the key's, or SQS-managed SSE), for queues of yours beside the outbox's. */
  queueEncryption(): Partial<sqs.QueueProps> {
    return this.key
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: this.key, dataKeyReuse: cdk.Duration.minutes(5) }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
  }

  /**
   * The outbox's key (docs/iam.md): Decrypt for every read of its table, stream, queues and
   * objects, GenerateDataKey for SQS sends, S3 puts and DynamoDB writes, DescribeKey. No
   * kms:Encrypt: no call encrypts with the key itself.
   */
  grantKeyUse(grantee: iam.IGrantable): void {
    this.key?.grant(grantee, 'kms:Decrypt', 'kms:DescribeKey', 'kms:GenerateDataKey');
  }

  /** A log group `/aws/lambda/<name>` of the configured retention, and the grant to write to it only. */
  logGroupFor(id: string, functionName: string, role: iam.Role): logs.LogGroup {
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: this.settings.logRetentionDays as logs.RetentionDays,
      removalPolicy: cdk.RemovalPolicy.DESTROY,
    });
    // Write to its own log group only (no AWSLambdaBasicExecutionRole: that one allows logs:* on "*").
    role.addToPolicy(new iam.PolicyStatement({ sid: 'WriteOwnLogs', actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logGroup.logGroupArn] }));
    return logGroup;
  }

  private queue(id: string, queueName: string, extra: Partial<sqs.QueueProps> = {}): sqs.Queue {
    return new sqs.Queue(this, id, {
      queueName,
      ...this.queueEncryption(),
      enforceSSL: true,
      retentionPeriod: cdk.Duration.days(QUEUE_RETENTION_DAYS),
      maxMessageSizeBytes: this.settings.maxMessageBytes, // explicit on every queue
      ...extra,
    });
  }

  private role(id: string, what: string, statements: iam.PolicyStatement[], destinations: readonly ResolvedRoute[]): iam.Role {
    const role = new iam.Role(this, id, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${this.settings.prefix}: execution role of the ${what} (least privilege)`,
    });
    for (const st of statements) role.addToPolicy(st);
    // Every function reads or writes a table, stream or queue the key encrypts.
    this.grantKeyUse(role);
    // A KMS-encrypted destination of your app: sending needs its key too.
    for (const key of new Set(destinations.map((d) => d.key).filter((k): k is kms.IKey => k !== undefined && k !== this.key))) {
      key.grant(role, 'kms:GenerateDataKey', 'kms:Decrypt');
    }
    return role;
  }

  private fn(id: string, functionName: string, role: iam.Role, code: lambda.Code, extra: Partial<lambda.FunctionProps>): lambda.Function {
    // An image has its own runtime and entry point.
    const image = code instanceof lambda.EcrImageCode || code instanceof lambda.AssetImageCode;
    return new lambda.Function(this, id, {
      functionName,
      runtime: image ? lambda.Runtime.FROM_IMAGE : lambda.Runtime.PROVIDED_AL2023,
      architecture: this.settings.architecture === 'arm64' ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
      handler: image ? lambda.Handler.FROM_IMAGE : 'bootstrap',
      code,
      memorySize: 256,
      role,
      logGroup: this.logGroupFor(id, functionName, role),
      loggingFormat: lambda.LoggingFormat.JSON,
      ...extra,
    });
  }

  /**
   * The publisher's FilterCriteria: the same in every region but for the region clause, whatever
   * the default home region (config.ts homeStreamFilter). A region-agnostic stack's region is
   * AWS::Region, resolved at deploy time.
   */
  private streamFilter(): unknown {
    return homeStreamFilter(loadStreamFilter(), this.region);
  }

  private streamMapping(attached: boolean, role: iam.Role): void {
    const mapping = new lambda.EventSourceMapping(this, 'PublisherStreamMapping', {
      target: this.publisher,
      eventSourceArn: this.tableStreamArn,
      // A created table is read from its first record; an attached one from now on: TRIM_HORIZON would
      // replay up to 24 h of its stream on the first deploy (the sweeper finds what was PENDING before).
      startingPosition: attached ? lambda.StartingPosition.LATEST : lambda.StartingPosition.TRIM_HORIZON,
      batchSize: this.settings.batchSize,
      bisectBatchOnError: true,
      retryAttempts: this.settings.streamRetryAttempts,
      maxRecordAge: cdk.Duration.seconds(this.settings.streamMaxRecordAgeSeconds),
      // AWS orders per item (partition and sort key) above 1; the FIFO order fence keeps per-aggregate order.
      parallelizationFactor: this.settings.parallelizationFactor,
      reportBatchItemFailures: true,
      enabled: true,
    });
    const cfn = mapping.node.defaultChild as lambda.CfnEventSourceMapping;
    // The stream filter file (the one source of truth) with the region clauses (config.ts
    // homeStreamFilter): this region's inserts, and those without HomeRegion (in every region).
    cfn.addPropertyOverride('FilterCriteria', this.streamFilter());
    cfn.addPropertyOverride('DestinationConfig', { OnFailure: { Destination: this.streamFailureQueue.queueArn } });
    mapping.node.addDependency(role);
  }

}
