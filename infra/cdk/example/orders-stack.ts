// The example app's stack: the Outbox construct, used as a user would, plus the orders
// example — the orders table, the orders queue and FIFO queue with their DLQs, the reference
// consumer, the routes `orders` and `orders-events` and their alarms. Deploys the same
// physical names as before the construct existed (the Rust stack tests read them by name).
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import {
  Outbox,
  type OutboxDestination,
  type OutboxRoute,
  QUEUE_RETENTION_DAYS,
  SQS_MAX_MESSAGE_BYTES,
  functionAlarms,
  functionCode,
  queueNotEmptyAlarm,
} from '../lib/index.ts';
import {
  EXAMPLE,
  EXAMPLE_TOPICS,
  type OutboxSettings,
  type OutboxSettingsInput,
  type Route,
  exampleNames,
  existingTableArn,
  resolveSettings,
} from './settings.ts';
import { settingsFromContext } from './context.ts';

export interface OutboxStackProps extends cdk.StackProps {
  readonly settings?: OutboxSettingsInput;
}

/** A context route (OUTBOX_ROUTES' spelling) as the construct's route. */
const routeOf = (r: Route): OutboxDestination | OutboxRoute =>
  typeof r === 'string'
    ? r
    : { destination: r.destination, maxMessageBytes: r.max_message_bytes, source: r.source, rawDelivery: r.raw_delivery };

export class OutboxStack extends cdk.Stack {
  readonly settings: OutboxSettings;
  readonly outbox: Outbox;
  readonly consumer: lambda.Function;

  constructor(scope: Construct, id: string, props: OutboxStackProps = {}) {
    super(scope, id, props);
    const s = resolveSettings(props.settings);
    this.settings = s;
    const n = exampleNames(s.prefix);
    const key = s.kmsKeyArn ? kms.Key.fromKeyArn(this, 'Key', s.kmsKeyArn) : undefined;
    const queueEncryption = key
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, dataKeyReuse: cdk.Duration.minutes(5) }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
    const queue = (qid: string, queueName: string, extra: Partial<sqs.QueueProps> = {}) =>
      new sqs.Queue(this, qid, {
        queueName,
        ...queueEncryption,
        enforceSSL: true,
        retentionPeriod: cdk.Duration.days(QUEUE_RETENTION_DAYS),
        maxMessageSizeBytes: s.maxMessageBytes, // explicit on every queue
        ...extra,
      });

    const consumerTimeout = cdk.Duration.seconds(30);
    // The orders queues have their own receive budget (consumerMaxReceiveCount, 10), not the
    // stream-failure queue's (maxReceiveCount): a consumer crash charges every neighbour still
    // in its batch a receive.
    const ordersDlq = queue('OrdersDlq', n.ordersDlq);
    const ordersQueue = queue('OrdersQueue', n.ordersQueue, {
      visibilityTimeout: cdk.Duration.seconds(consumerTimeout.toSeconds() * 6),
      deadLetterQueue: { queue: ordersDlq, maxReceiveCount: s.consumerMaxReceiveCount },
    });
    const fifoDlq = queue('OrdersEventsDlq', n.fifoDlq, { fifo: true });
    const fifoQueue = queue('OrdersEventsQueue', n.fifoQueue, {
      fifo: true,
      contentBasedDeduplication: false, // the outbox sets MessageDeduplicationId = MessageId
      deadLetterQueue: { queue: fifoDlq, maxReceiveCount: s.consumerMaxReceiveCount },
    });

    // Below 1 MiB the example routes say the queues' size, so the publisher treats a larger
    // message as poison instead of failing the call. Given routes pass on unchanged.
    const exampleRoute = (q: sqs.IQueue): OutboxDestination | OutboxRoute =>
      s.maxMessageBytes < SQS_MAX_MESSAGE_BYTES ? { destination: q, maxMessageBytes: s.maxMessageBytes } : q;
    const table = s.existingTable
      ? // The table's ARN comes from its stream ARN: its own partition, region and account.
        dynamodb.Table.fromTableAttributes(this, 'ExistingTable', {
          tableArn: existingTableArn(s.existingTable.streamArn),
          tableStreamArn: s.existingTable.streamArn,
        })
      : undefined;
    this.outbox = new Outbox(this, 'Outbox', {
      ...s,
      table,
      keyNames: { partitionKey: s.partitionKeyName, sortKey: s.sortKeyName, ttlAttribute: s.ttlAttributeName },
      routes: {
        [EXAMPLE_TOPICS.standard]: exampleRoute(ordersQueue),
        [EXAMPLE_TOPICS.fifo]: exampleRoute(fifoQueue),
        ...Object.fromEntries(Object.entries(s.routes).map(([topic, r]) => [topic, routeOf(r)])),
      },
      defaultDestination: s.defaultDestination,
      assetDir: s.lambdaAssetDir,
      encryptionKey: key,
      alarmTopic: s.alarmTopicArn ? sns.Topic.fromTopicArn(this, 'AlarmTopic', s.alarmTopicArn) : this.alarmTopic(n.alarmTopic, key),
      dashboard: { functionNames: [n.consumer], queueNames: [n.ordersDlq, n.fifoDlq] },
    });
    const outbox = this.outbox;

    // Reference consumer and its orders table.
    const orders = new dynamodb.Table(this, 'OrdersTable', {
      tableName: n.ordersTable,
      partitionKey: { name: EXAMPLE.ordersPartitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: EXAMPLE.ordersTtlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: key ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
      encryptionKey: key,
      deletionProtection: s.deletionProtection,
      removalPolicy: s.deletionProtection ? cdk.RemovalPolicy.RETAIN : cdk.RemovalPolicy.DESTROY,
    });
    const consumerRole = new iam.Role(this, 'ConsumerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${s.prefix}: execution role of the reference orders consumer (least privilege)`,
    });
    consumerRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ApplyOrdersOnce',
        // BusinessKeyGuard: one conditional PutItem per order (the stored item comes back on a
        // refused condition: ReturnValuesOnConditionCheckFailure needs no GetItem).
        actions: ['dynamodb:PutItem'],
        resources: [orders.tableArn],
      }),
    );
    consumerRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ConsumeOrdersQueue',
        // What its SQS mapping calls with the role (Lambda's documented three).
        actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
        resources: [ordersQueue.queueArn],
      }),
    );
    // A message that points at a large payload: the consumer reads it from the bucket (failed/: a
    // redriven FAILED message's, kept there); ListBucket so that a missing object reads as NoSuchKey
    // ("the object does not exist"), not AccessDenied.
    if (outbox.largePayloadObjectsArn && outbox.failedPayloadObjectsArn && outbox.largePayloadBucket) {
      const objects = [outbox.largePayloadObjectsArn, outbox.failedPayloadObjectsArn];
      consumerRole.addToPolicy(new iam.PolicyStatement({ sid: 'GetLargePayloads', actions: ['s3:GetObject'], resources: objects }));
      consumerRole.addToPolicy(new iam.PolicyStatement({ sid: 'TellMissingPayloads', actions: ['s3:ListBucket'], resources: [outbox.largePayloadBucket.bucketArn] }));
      outbox.acknowledgeLargePayloadGrant(consumerRole);
    }
    outbox.grantKeyUse(consumerRole);
    this.consumer = new lambda.Function(this, 'Consumer', {
      functionName: n.consumer,
      description: 'Reference consumer: applies each order exactly once (idempotent conditional writes)',
      runtime: lambda.Runtime.PROVIDED_AL2023,
      architecture: s.architecture === 'arm64' ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
      handler: 'bootstrap',
      code: functionCode(s.lambdaAssetDir, EXAMPLE.consumerBinary, s.architecture),
      memorySize: 256,
      role: consumerRole,
      logGroup: outbox.logGroupFor('Consumer', n.consumer, consumerRole),
      loggingFormat: lambda.LoggingFormat.JSON,
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

    // The example queues' alarms, beside the outbox's (same topic, same naming).
    outbox.addAlarm('ConsumerDlqNotEmpty', queueNotEmptyAlarm(n.ordersDlq, 'The orders consumer gave up on messages (conflicts or bugs); inspect and redrive.'));
    outbox.addAlarm(
      'OrdersEventsDlqNotEmpty',
      queueNotEmptyAlarm(n.fifoDlq, 'Messages of the FIFO orders-events queue were received maxReceiveCount times without being deleted; inspect and redrive.'),
    );
    for (const [alarmId, a] of Object.entries(functionAlarms(n.consumer, 'Consumer'))) outbox.addAlarm(alarmId, a);

    new cdk.CfnOutput(this, 'OutboxTableName', { value: outbox.tableName });
    new cdk.CfnOutput(this, 'OutboxDlqUrl', { value: outbox.deadLetterQueue.queueUrl });
    new cdk.CfnOutput(this, 'OrdersQueueUrl', { value: ordersQueue.queueUrl });
    new cdk.CfnOutput(this, 'OrdersEventsQueueUrl', { value: fifoQueue.queueUrl });
    new cdk.CfnOutput(this, 'OrdersTableName', { value: orders.tableName });
    if (outbox.largePayloadBucket) new cdk.CfnOutput(this, 'LargePayloadBucketName', { value: outbox.largePayloadBucket.bucketName });
    if (outbox.producerPolicy) new cdk.CfnOutput(this, 'ProducerPolicyArn', { value: outbox.producerPolicy.managedPolicyArn });
    new cdk.CfnOutput(this, 'ProducerPolicyJson', {
      value: this.toJsonString(new iam.PolicyDocument({ statements: outbox.producerStatements() }).toJSON()),
    });
  }

  /** The example's own alarm topic when none is given: the outbox creates alarms only with one (issue 39). */
  private alarmTopic(topicName: string, key?: kms.IKey): sns.ITopic {
    return new sns.Topic(this, 'AlarmTopic', {
      topicName,
      // The example's key, or SNS's AWS-managed key: never unencrypted, as the queues.
      masterKey: key ?? kms.Alias.fromAliasName(this, 'SnsManagedKey', 'alias/aws/sns'),
      enforceSSL: true,
    });
  }
}

/**
 * The example app's stack in `app`, its settings from the app's context (cdk.json, or
 * `-c outbox:<name>=<value>`), its account and region from the CDK CLI's `env`. Every synth
 * is checked against cdk-nag's AwsSolutions rules: unacknowledged findings fail it.
 */
export function addExampleStack(app: cdk.App, env: NodeJS.ProcessEnv = process.env): OutboxStack {
  const settings = settingsFromContext((k) => app.node.tryGetContext(k), env);
  const stackName = (app.node.tryGetContext('outbox:stackName') as string | undefined) ?? 'DynamoDbOutbox';
  const stack = new OutboxStack(app, 'DynamoDbOutbox', {
    stackName,
    description: 'dynamodb-outbox: transactional outbox for DynamoDB (publisher, sweeper, recovery, reference consumer)',
    env: { account: env.CDK_DEFAULT_ACCOUNT, region: env.CDK_DEFAULT_REGION },
    settings,
  });
  cdk.Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true }));
  return stack;
}
