// The whole outbox system in one stack: outbox table, publisher (stream),
// sweeper (schedule), recovery (the stream mapping's on-failure records),
// destination queues, reference consumer and its table,
// least-privilege roles, alarms, a dashboard. Names shared with the functions come
// from config.ts (infra/CONTRACT.md); the stream filter from infra/stream-filter.json;
// alarms and dashboard from monitoring.ts; the code is checked by artifact.ts.
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { checkedArtifact } from './artifact.ts';
import {
  type Architecture,
  CONTRACT,
  EXAMPLE_TOPICS,
  LARGE_PAYLOAD_ABORT_MULTIPART_DAYS,
  type OutboxSettings,
  type OutboxSettingsInput,
  QUEUE_RETENTION_DAYS,
  RECOVERY,
  type Route,
  SQS_MAX_MESSAGE_BYTES,
  SWEEPER_ASYNC,
  SWEEP_TARGET_RETRY,
  destinationOf,
  existingTableArn,
  loadStreamFilter,
  names,
  resolveSettings,
  routeTarget,
} from './config.ts';
import { alarmDefinitions, dashboardWidgets } from './monitoring.ts';

export interface OutboxStackProps extends cdk.StackProps {
  readonly settings?: OutboxSettingsInput;
}

/**
 * Lambda code from the cargo lambda output directory: <assetDir>/<bin>/bootstrap
 * (`cargo lambda build`) or <assetDir>/<bin>/bootstrap.zip (`--output-format zip`),
 * whichever is newer, refused unless it is an ELF executable for `architecture`.
 */
export function functionCode(assetDir: string, bin: string, architecture: Architecture): lambda.Code {
  const artifact = checkedArtifact(assetDir, bin, architecture);
  return artifact.kind === 'zip'
    ? lambda.Code.fromAsset(artifact.path)
    : lambda.Code.fromAsset(path.dirname(artifact.path), { exclude: ['bootstrap.zip'] });
}

export class OutboxStack extends cdk.Stack {
  readonly settings: OutboxSettings;
  readonly publisher: lambda.Function;
  readonly sweeper: lambda.Function;
  readonly consumer: lambda.Function;
  readonly recovery: lambda.Function;
  readonly outboxDlq: sqs.Queue;
  /** The large-payload bucket (S3 large-payload offload) the stack creates; undefined when largePayloads is off or an existing bucket is attached. */
  readonly largePayloadBucket?: s3.Bucket;
  /** The name of the large-payload bucket in use (created or attached); undefined when largePayloads is off. */
  readonly largePayloadBucketName?: string;
  readonly alarms: Record<string, cloudwatch.Alarm> = {};

  constructor(scope: Construct, id: string, props: OutboxStackProps = {}) {
    super(scope, id, props);
    const s = resolveSettings(props.settings);
    this.settings = s;
    const n = names(s.prefix);
    const filter = loadStreamFilter();
    const key = s.kmsKeyArn ? kms.Key.fromKeyArn(this, 'Key', s.kmsKeyArn) : undefined;
    const architecture = s.architecture === 'arm64' ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64;

    // ---------------------------------------------------------------- outbox table
    // Protected tables are also retained by `cdk destroy`; their fixed names then stay taken
    // until the retained tables are deleted or imported (README: deletion protection).
    const tableProtection = {
      deletionProtection: s.deletionProtection,
      removalPolicy: s.deletionProtection ? cdk.RemovalPolicy.RETAIN : cdk.RemovalPolicy.DESTROY,
    };
    let tableName: string;
    let tableArn: string;
    let streamArn: string;
    if (s.existingTable) {
      // The table's ARN comes from its stream ARN: its own partition, region and account.
      tableName = s.existingTable.tableName;
      tableArn = existingTableArn(s.existingTable.streamArn);
      streamArn = s.existingTable.streamArn;
    } else {
      const t = new dynamodb.Table(this, 'OutboxTable', {
        tableName: n.outboxTable,
        partitionKey: { name: CONTRACT.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: CONTRACT.sortKey, type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        stream: dynamodb.StreamViewType.NEW_IMAGE,
        timeToLiveAttribute: CONTRACT.ttlAttribute,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: key ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
        encryptionKey: key,
        ...tableProtection,
      });
      t.addGlobalSecondaryIndex({
        indexName: CONTRACT.sweepIndexName,
        partitionKey: { name: CONTRACT.sweepIndexPartitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: CONTRACT.sweepIndexSortKey, type: dynamodb.AttributeType.NUMBER },
        projectionType: dynamodb.ProjectionType.KEYS_ONLY,
      });
      tableName = t.tableName;
      tableArn = t.tableArn;
      streamArn = t.tableStreamArn!;
    }
    const sweepIndexArn = `${tableArn}/index/${CONTRACT.sweepIndexName}`;

    // ---------------------------------------------------------------- queues
    const queueEncryption = key
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, dataKeyReuse: cdk.Duration.minutes(5) }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
    const queue = (id: string, queueName: string, extra: Partial<sqs.QueueProps> = {}) =>
      new sqs.Queue(this, id, {
        queueName,
        ...queueEncryption,
        enforceSSL: true,
        retentionPeriod: cdk.Duration.days(QUEUE_RETENTION_DAYS),
        maxMessageSizeBytes: s.maxMessageBytes, // explicit on every queue
        ...extra,
      });

    // Copies of FAILED messages (written by the publisher and the sweeper).
    this.outboxDlq = queue('OutboxDlq', n.outboxDlq);
    // On-failure destination of the stream mapping: metadata of discarded batches only,
    // consumed by the recovery function. What it cannot handle (a message that is no
    // on-failure record) lands on the DLQ after maxReceiveCount receives, for a person.
    const recoveryTimeout = cdk.Duration.seconds(RECOVERY.timeoutSeconds);
    const streamFailuresDlq = queue('StreamFailuresDlq', n.streamFailuresDlq);
    const streamFailures = queue('StreamFailures', n.streamFailures, {
      visibilityTimeout: cdk.Duration.seconds(recoveryTimeout.toSeconds() * RECOVERY.visibilityFactor),
      deadLetterQueue: { queue: streamFailuresDlq, maxReceiveCount: s.maxReceiveCount },
    });

    const consumerTimeout = cdk.Duration.seconds(30);
    const ordersDlq = queue('OrdersDlq', n.ordersDlq);
    const ordersQueue = queue('OrdersQueue', n.ordersQueue, {
      visibilityTimeout: cdk.Duration.seconds(consumerTimeout.toSeconds() * 6),
      deadLetterQueue: { queue: ordersDlq, maxReceiveCount: s.maxReceiveCount },
    });
    const fifoDlq = queue('OrdersEventsDlq', n.fifoDlq, { fifo: true });
    const fifoQueue = queue('OrdersEventsQueue', n.fifoQueue, {
      fifo: true,
      contentBasedDeduplication: false, // the outbox sets MessageDeduplicationId = MessageId
      deadLetterQueue: { queue: fifoDlq, maxReceiveCount: s.maxReceiveCount },
    });

    // ---------------------------------------------------------------- large-payload bucket (S3 large-payload offload)
    // Payloads too large for a destination or a DynamoDB item are stored at outbox/<MessageId> and a
    // pointer is sent. Objects expire after largePayloadRetentionDays, longer than any queue keeps a
    // pointer (QUEUE_RETENTION_DAYS). Name generated by CloudFormation (bucket names are global).
    let payloadBucket: s3.IBucket | undefined;
    if (s.largePayloads && s.largePayloadBucketName) {
      // An existing bucket: its owner sets encryption, TLS policy and lifecycle (README); the grants name it.
      payloadBucket = s3.Bucket.fromBucketName(this, 'LargePayloadBucket', s.largePayloadBucketName);
    } else if (s.largePayloads) {
      this.largePayloadBucket = new s3.Bucket(this, 'LargePayloadBucket', {
        encryption: key ? s3.BucketEncryption.KMS : s3.BucketEncryption.S3_MANAGED,
        encryptionKey: key,
        bucketKeyEnabled: key ? true : undefined, // fewer KMS requests: one data key per bucket, not per object
        enforceSSL: true,
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned: false,
        lifecycleRules: [
          { id: 'expire-large-payloads', prefix: CONTRACT.largePayloadKeyPrefix, expiration: cdk.Duration.days(s.largePayloadRetentionDays) },
          // Whole bucket: an upload that never completed is billed until it is aborted.
          { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: cdk.Duration.days(LARGE_PAYLOAD_ABORT_MULTIPART_DAYS) },
        ],
        // Like the tables: kept by `cdk destroy` unless deletion protection is off (CloudFormation
        // deletes only an empty bucket: the objects expire, or empty it first).
        removalPolicy: s.deletionProtection ? cdk.RemovalPolicy.RETAIN : cdk.RemovalPolicy.DESTROY,
      });
      payloadBucket = this.largePayloadBucket;
    }
    this.largePayloadBucketName = payloadBucket?.bucketName;
    const payloadObjects = payloadBucket?.arnForObjects(`${CONTRACT.largePayloadKeyPrefix}*`);
    const putPayloads = (role: iam.Role) => {
      if (payloadObjects) role.addToPolicy(new iam.PolicyStatement({ sid: 'PutLargePayloads', actions: ['s3:PutObject'], resources: [payloadObjects] }));
    };

    // ---------------------------------------------------------------- routes
    // Below 1 MiB the example routes say the queues' size, so the publisher treats a larger
    // message as poison instead of failing the call. Given routes pass on unchanged.
    const exampleRoute = (url: string): Route =>
      s.maxMessageBytes < SQS_MAX_MESSAGE_BYTES ? { destination: url, max_message_bytes: s.maxMessageBytes } : url;
    const routes: Record<string, Route> = {
      [EXAMPLE_TOPICS.standard]: exampleRoute(ordersQueue.queueUrl),
      [EXAMPLE_TOPICS.fifo]: exampleRoute(fifoQueue.queueUrl),
      ...s.routes,
    };
    const external = [...Object.values(s.routes).map(destinationOf), ...(s.defaultDestination ? [s.defaultDestination] : [])].map((d) =>
      routeTarget(d),
    );
    // What a function needs of the key of a KMS-encrypted table, its stream and the queues
    // (CDK's grantReadWriteData less ReEncrypt*): every function reads or writes one of them.
    const useKey = (role: iam.Role) => key?.grant(role, 'kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey');
    // The order fence reads the index shards a batch touches in one PartiQL select (`IN` on the
    // shard key: a query of each shard); never a scan of the index.
    const selectPendingKeys = (role: iam.Role) => {
      role.addToPolicy(new iam.PolicyStatement({ sid: 'SelectPendingKeys', actions: ['dynamodb:PartiQLSelect'], resources: [sweepIndexArn] }));
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'NoFullIndexScan',
          effect: iam.Effect.DENY,
          actions: ['dynamodb:PartiQLSelect'],
          resources: [sweepIndexArn],
          conditions: { Bool: { 'dynamodb:FullTableScan': 'true' } },
        }),
      );
    };
    const sendTo = (role: iam.Role) => {
      // Only the routed destinations and the outbox DLQ: no wildcard resources.
      const queues = [ordersQueue.queueArn, fifoQueue.queueArn, this.outboxDlq.queueArn, ...external.filter((t) => t.kind === 'sqs').map((t) => t.arn)];
      role.addToPolicy(new iam.PolicyStatement({ sid: 'SendToRoutedQueues', actions: ['sqs:SendMessage'], resources: queues }));
      // Each destination's real MaximumMessageSize, read at cold start: the same queues, nothing more.
      role.addToPolicy(new iam.PolicyStatement({ sid: 'ReadRoutedQueueSizes', actions: ['sqs:GetQueueAttributes'], resources: queues }));
      const sns = external.filter((t) => t.kind === 'sns').map((t) => t.arn);
      if (sns.length) role.addToPolicy(new iam.PolicyStatement({ sid: 'PublishToRoutedTopics', actions: ['sns:Publish'], resources: sns }));
      const buses = external.filter((t) => t.kind === 'events').map((t) => t.arn);
      if (buses.length) role.addToPolicy(new iam.PolicyStatement({ sid: 'PutToRoutedBuses', actions: ['events:PutEvents'], resources: buses }));
      useKey(role);
    };

    const commonEnv: Record<string, string> = {
      OUTBOX_TABLE_NAME: tableName,
      OUTBOX_ROUTES: cdk.Stack.of(this).toJsonString(routes),
      OUTBOX_DLQ_URL: this.outboxDlq.queueUrl,
      OUTBOX_TTL_DAYS: String(s.ttlDays),
      // The value of the metrics dimension Service: two deployments in one account stay apart.
      OUTBOX_DEPLOYMENT: s.prefix,
      ...(s.defaultDestination ? { OUTBOX_DEFAULT_DESTINATION: s.defaultDestination } : {}),
      ...(this.largePayloadBucketName ? { [CONTRACT.largePayloadEnv.bucket]: this.largePayloadBucketName } : {}),
      ...(s.largePayloadThresholdBytes !== undefined ? { [CONTRACT.largePayloadEnv.thresholdBytes]: String(s.largePayloadThresholdBytes) } : {}),
    };

    // ---------------------------------------------------------------- functions
    const fn = (id: string, functionName: string, bin: string, role: iam.Role, extra: Partial<lambda.FunctionProps>) => {
      const logGroup = new logs.LogGroup(this, `${id}Logs`, {
        logGroupName: `/aws/lambda/${functionName}`,
        retention: s.logRetentionDays as logs.RetentionDays,
        removalPolicy: cdk.RemovalPolicy.DESTROY,
      });
      // Write to its own log group only (no AWSLambdaBasicExecutionRole: that one allows logs:* on "*").
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'WriteOwnLogs',
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [logGroup.logGroupArn],
        }),
      );
      return new lambda.Function(this, id, {
        functionName,
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture,
        handler: 'bootstrap',
        code: functionCode(s.lambdaAssetDir, bin, s.architecture),
        memorySize: 256,
        role,
        logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        ...extra,
      });
    };
    const roleFor = (id: string, what: string) =>
      new iam.Role(this, id, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `${s.prefix}: execution role of the ${what} (least privilege)`,
      });

    // Publisher: stream → publish → mark SENT.
    const publisherRole = roleFor('PublisherRole', 'outbox publisher');
    publisherRole.addToPolicy(
      // PartiQLUpdate: the marks are batched as PartiQL UPDATE statements (BatchExecuteStatement).
      new iam.PolicyStatement({ sid: 'MarkSentOrFailed', actions: ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate'], resources: [tableArn] }),
    );
    // The item is read before it is dead-lettered: poison already FAILED is not copied twice.
    publisherRole.addToPolicy(new iam.PolicyStatement({ sid: 'ReadOutboxItems', actions: ['dynamodb:GetItem'], resources: [tableArn] }));
    publisherRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ReadOutboxStream',
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
        resources: [streamArn],
      }),
    );
    publisherRole.addToPolicy(
      new iam.PolicyStatement({ sid: 'ReportDiscardedBatches', actions: ['sqs:SendMessage'], resources: [streamFailures.queueArn] }),
    );
    // The order fence: an aggregate's pending messages, from the sweep index (keys only) or, for
    // another producer's aggregate, from its partition.
    publisherRole.addToPolicy(
      new iam.PolicyStatement({ sid: 'ReadPendingSiblings', actions: ['dynamodb:Query'], resources: [tableArn, sweepIndexArn] }),
    );
    selectPendingKeys(publisherRole);
    sendTo(publisherRole);
    putPayloads(publisherRole);
    this.publisher = fn('Publisher', n.publisher, CONTRACT.binaries.publisher, publisherRole, {
      description: 'Publishes new PENDING outbox messages from the table stream and marks them SENT',
      timeout: cdk.Duration.seconds(60),
      environment: commonEnv,
    });
    const mapping = new lambda.EventSourceMapping(this, 'PublisherStreamMapping', {
      target: this.publisher,
      eventSourceArn: streamArn,
      // A table this stack creates is read from its first record; an existing table from now on:
      // TRIM_HORIZON would replay up to 24 h of its stream on the first deploy (the sweeper finds
      // whatever was PENDING before the mapping existed).
      startingPosition: s.existingTable ? lambda.StartingPosition.LATEST : lambda.StartingPosition.TRIM_HORIZON,
      batchSize: s.batchSize,
      bisectBatchOnError: true,
      retryAttempts: s.streamRetryAttempts,
      maxRecordAge: cdk.Duration.seconds(s.streamMaxRecordAgeSeconds),
      parallelizationFactor: 1, // keep per-item order within a shard
      reportBatchItemFailures: true,
      enabled: true,
    });
    const cfnMapping = mapping.node.defaultChild as lambda.CfnEventSourceMapping;
    // Verbatim from infra/stream-filter.json: the one source of truth.
    cfnMapping.addPropertyOverride('FilterCriteria', filter);
    cfnMapping.addPropertyOverride('DestinationConfig', { OnFailure: { Destination: streamFailures.queueArn } });
    mapping.node.addDependency(publisherRole);

    // Sweeper: schedule → recover stuck PENDING via the sparse index, and (backstop, on) a
    // bounded scan of the table from cursors saved in it.
    const scans = s.sweepScanMode !== 'off';
    const sweeperRole = roleFor('SweeperRole', 'outbox sweeper');
    sweeperRole.addToPolicy(
      new iam.PolicyStatement({ sid: 'QuerySweepIndex', actions: ['dynamodb:Query'], resources: [sweepIndexArn] }),
    );
    // The order fence: another producer's aggregate is read from its partition.
    sweeperRole.addToPolicy(new iam.PolicyStatement({ sid: 'ReadPendingSiblings', actions: ['dynamodb:Query'], resources: [tableArn] }));
    selectPendingKeys(sweeperRole);
    sweeperRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'UpdateOutboxItems',
        actions: scans ? ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate', 'dynamodb:Scan'] : ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate'],
        resources: [tableArn],
      }),
    );
    // An item whose claim was refused (finished, or still pending), an item before it is
    // dead-lettered, and (backstop, on) the scan cursors.
    sweeperRole.addToPolicy(new iam.PolicyStatement({ sid: 'ReadOutboxItems', actions: ['dynamodb:GetItem'], resources: [tableArn] }));
    if (scans) {
      // The adoption scan's cursors (PK = OUTBOX#SWEEPER, SK = SCAN#<segment>), and no other item:
      // the leading key must be present and be the sweeper's.
      sweeperRole.addToPolicy(
        new iam.PolicyStatement({
          sid: 'SaveScanCursors',
          actions: ['dynamodb:PutItem'],
          resources: [tableArn],
          conditions: {
            'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [CONTRACT.scanCursorPartitionKey] },
            Null: { 'dynamodb:LeadingKeys': 'false' },
          },
        }),
      );
    }
    sendTo(sweeperRole);
    putPayloads(sweeperRole);
    this.sweeper = fn('Sweeper', n.sweeper, CONTRACT.binaries.sweeper, sweeperRole, {
      description: 'Recovers outbox messages still PENDING after the grace period; FAILED + DLQ after max attempts',
      timeout: cdk.Duration.seconds(Math.min(300, s.sweepRateMinutes * 60)),
      // One sweep at a time by default; null/0: unreserved (sweeps claim items with leases, so overlap is safe).
      reservedConcurrentExecutions: s.sweeperReservedConcurrency || undefined,
      // EventBridge invokes it asynchronously: no retries of a failed or throttled sweep; the next tick comes anyway.
      retryAttempts: SWEEPER_ASYNC.maximumRetryAttempts,
      maxEventAge: cdk.Duration.seconds(SWEEPER_ASYNC.maximumEventAgeSeconds),
      environment: {
        ...commonEnv,
        OUTBOX_MAX_ATTEMPTS: String(s.maxAttempts),
        OUTBOX_SWEEP_GRACE_SECONDS: String(s.sweepGraceSeconds),
        OUTBOX_SWEEP_SCAN_MODE: s.sweepScanMode,
      },
    });
    new events.Rule(this, 'SweepSchedule', {
      ruleName: n.sweepRule,
      description: 'Runs the outbox sweeper',
      schedule: events.Schedule.rate(cdk.Duration.minutes(s.sweepRateMinutes)),
      targets: [
        // The next tick is the retry.
        new targets.LambdaFunction(this.sweeper, {
          retryAttempts: SWEEP_TARGET_RETRY.maximumRetryAttempts,
          maxEventAge: cdk.Duration.seconds(SWEEP_TARGET_RETRY.maximumEventAgeSeconds),
        }),
      ],
    });

    // Reference consumer and its orders table.
    const orders = new dynamodb.Table(this, 'OrdersTable', {
      tableName: n.ordersTable,
      partitionKey: { name: CONTRACT.ordersPartitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: CONTRACT.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: key ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
      encryptionKey: key,
      ...tableProtection,
    });
    const consumerRole = roleFor('ConsumerRole', 'reference orders consumer');
    consumerRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ApplyOrdersOnce',
        // TransactWriteItems is authorized per action inside it: Put/Update/Delete/ConditionCheck.
        actions: ['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
        resources: [orders.tableArn],
      }),
    );
    consumerRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ConsumeOrdersQueue',
        actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
        resources: [ordersQueue.queueArn],
      }),
    );
    // A message that points at a large payload: the consumer reads it from the bucket.
    if (payloadObjects) {
      consumerRole.addToPolicy(new iam.PolicyStatement({ sid: 'GetLargePayloads', actions: ['s3:GetObject'], resources: [payloadObjects] }));
    }
    useKey(consumerRole);
    this.consumer = fn('Consumer', n.consumer, CONTRACT.binaries.consumer, consumerRole, {
      description: 'Reference consumer: applies each order exactly once (idempotent conditional writes)',
      timeout: consumerTimeout,
      environment: { ORDERS_TABLE_NAME: orders.tableName, OUTBOX_DEPLOYMENT: s.prefix },
    });
    const consumerMapping = new lambda.EventSourceMapping(this, 'ConsumerQueueMapping', {
      target: this.consumer,
      eventSourceArn: ordersQueue.queueArn,
      batchSize: s.consumerBatchSize,
      reportBatchItemFailures: true,
      enabled: true,
    });
    consumerMapping.node.addDependency(consumerRole);

    // Recovery: the stream mapping's on-failure records → the range read back from the
    // stream → the pending items of discarded records put into the sweeper's index.
    const recoveryRole = roleFor('RecoveryRole', 'outbox recovery');
    recoveryRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ReadOutboxStream',
        // GetShardIterator AT_SEQUENCE_NUMBER + GetRecords on the stream ARN of the record.
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        resources: [streamArn],
      }),
    );
    recoveryRole.addToPolicy(
      // A conditional UpdateItem: still PENDING and not yet indexed → the sweeper's index keys.
      new iam.PolicyStatement({ sid: 'AdoptIntoSweepIndex', actions: ['dynamodb:UpdateItem'], resources: [tableArn] }),
    );
    recoveryRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ConsumeStreamFailures',
        actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
        resources: [streamFailures.queueArn],
      }),
    );
    useKey(recoveryRole);
    this.recovery = fn('Recovery', n.recovery, CONTRACT.binaries.recovery, recoveryRole, {
      description: "Reads the stream ranges of batches the stream mapping discarded and puts their PENDING items into the sweeper's index",
      timeout: recoveryTimeout,
      environment: { OUTBOX_TABLE_NAME: tableName, OUTBOX_DEPLOYMENT: s.prefix },
    });
    const recoveryMapping = new lambda.EventSourceMapping(this, 'RecoveryQueueMapping', {
      target: this.recovery,
      eventSourceArn: streamFailures.queueArn,
      batchSize: RECOVERY.batchSize,
      // A range it cannot read for now is retried; the others are deleted.
      reportBatchItemFailures: true,
      enabled: true,
    });
    recoveryMapping.node.addDependency(recoveryRole);

    // ---------------------------------------------------------------- alarms and dashboard
    const action = s.alarmTopicArn ? new cwActions.SnsAction(sns.Topic.fromTopicArn(this, 'AlarmTopic', s.alarmTopicArn)) : undefined;
    for (const [id, a] of Object.entries(alarmDefinitions(s))) {
      const alarm = new cloudwatch.Alarm(this, id, {
        alarmName: `${s.prefix}-${id}`,
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
      if (action) alarm.addAlarmAction(action);
      this.alarms[id] = alarm;
    }
    new cloudwatch.CfnDashboard(this, 'Dashboard', {
      dashboardName: n.dashboard,
      dashboardBody: cdk.Stack.of(this).toJsonString({
        widgets: dashboardWidgets(s).map((w) => ({ ...w, properties: { ...w.properties, region: this.region } })),
      }),
    });

    // ---------------------------------------------------------------- outputs
    new cdk.CfnOutput(this, 'OutboxTableName', { value: tableName });
    new cdk.CfnOutput(this, 'OutboxDlqUrl', { value: this.outboxDlq.queueUrl });
    new cdk.CfnOutput(this, 'OrdersQueueUrl', { value: ordersQueue.queueUrl });
    new cdk.CfnOutput(this, 'OrdersEventsQueueUrl', { value: fifoQueue.queueUrl });
    new cdk.CfnOutput(this, 'OrdersTableName', { value: orders.tableName });
    if (this.largePayloadBucketName) new cdk.CfnOutput(this, 'LargePayloadBucketName', { value: this.largePayloadBucketName });

    // ---------------------------------------------------------------- cdk-nag acknowledgements
    // The outbox DLQ and the recovery DLQ are terminal queues that operators read; nothing consumes them
    // automatically, so a DLQ behind them would only hold the same messages again. Both are alarmed on instead.
    const deadLetter =
      'Terminal failure queue read by operators (alarmed when not empty); nothing consumes it automatically, so a DLQ of it would only move the same messages again.';
    for (const q of [this.outboxDlq, streamFailuresDlq]) {
      cdk.Validations.of(q.node.defaultChild!).acknowledge({ id: 'AwsSolutions-SQS3', reason: deadLetter });
    }
    if (this.largePayloadBucket) {
      cdk.Validations.of(this.largePayloadBucket.node.defaultChild!).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Server access logs need a second bucket (with its own logging question); this bucket holds only short-lived message payloads that the deployment\'s own roles write and read. Audit object access with CloudTrail data events on the bucket when required.',
      });
    }
    if (payloadBucket) {
      // The only wildcard: the objects under the large-payload offload key prefix (one object per message id).
      const bucketArn = this.largePayloadBucket
        ? `<${this.getLogicalId(this.largePayloadBucket.node.defaultChild as cdk.CfnElement)}.Arn>`
        : `arn:<AWS::Partition>:s3:::${s.largePayloadBucketName}`;
      const objects = `AwsSolutions-IAM5[Resource::${bucketArn}/${CONTRACT.largePayloadKeyPrefix}*]`;
      const reason = `Objects are named ${CONTRACT.largePayloadKeyPrefix}<MessageId>, one per message, unknown in advance: the grant covers that key prefix of the deployment's large-payload bucket and nothing else.`;
      for (const role of [publisherRole, sweeperRole, consumerRole]) cdk.Validations.of(role).acknowledge({ id: objects, reason });
    }
  }
}
