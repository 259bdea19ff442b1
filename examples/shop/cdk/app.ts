// The shop's own CDK app: its table, queue and consumer, with the outbox attached by
// the `Outbox` construct of dynamodb-outbox-cdk (installed from its package).
//   npx cdk deploy -c name=shop -c lambdaDir=<dir of shop-*/bootstrap.zip, as cargo lambda lays them out>
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Outbox } from 'dynamodb-outbox-cdk';

const app = new cdk.App();
const name = (app.node.tryGetContext('name') as string | undefined) ?? 'shop';
const lambdaDir = app.node.tryGetContext('lambdaDir') as string;
// Each function is the shop's own binary (src/bin/shop-*.rs), zipped as cargo lambda does.
const shopCode = (bin: string) => lambda.Code.fromAsset(`${lambdaDir}/${bin}/bootstrap.zip`);
const architecture = (app.node.tryGetContext('architecture') as string | undefined) === 'x86_64' ? 'x86_64' : 'arm64';

const stack = new cdk.Stack(app, 'Shop', { stackName: name });

// The shop's single table; what the outbox needs of it: a NEW_IMAGE stream, the sweeper
// index and a TTL attribute (the shop's own `expires_at`).
const table = new dynamodb.Table(stack, 'Table', {
  tableName: `${name}-table`,
  partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
  sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  stream: dynamodb.StreamViewType.NEW_IMAGE,
  timeToLiveAttribute: 'expires_at',
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  removalPolicy: cdk.RemovalPolicy.DESTROY,
});
table.addGlobalSecondaryIndex({
  indexName: 'OutboxSweepIndex',
  partitionKey: { name: 'SweepShard', type: dynamodb.AttributeType.STRING },
  sortKey: { name: 'SweepDueAt', type: dynamodb.AttributeType.NUMBER },
  projectionType: dynamodb.ProjectionType.KEYS_ONLY,
});

const dlq = new sqs.Queue(stack, 'OrdersDlq', {
  queueName: `${name}-order-placed-dlq`,
  enforceSSL: true,
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  retentionPeriod: cdk.Duration.days(14),
});
const orders = new sqs.Queue(stack, 'Orders', {
  queueName: `${name}-order-placed`,
  enforceSSL: true,
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  visibilityTimeout: cdk.Duration.minutes(3),
  deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
});

const outbox = new Outbox(stack, 'Outbox', {
  prefix: `${name}-outbox`,
  table,
  keyNames: { partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'expires_at' },
  routes: { 'order-placed': orders },
  code: { publisher: shopCode('shop-publisher'), sweeper: shopCode('shop-sweeper'), recovery: shopCode('shop-recovery') },
  architecture,
});

const consumer = new lambda.Function(stack, 'Consumer', {
  functionName: `${name}-consumer`,
  runtime: lambda.Runtime.PROVIDED_AL2023,
  handler: 'bootstrap',
  architecture: architecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64,
  code: shopCode('shop-consumer'),
  timeout: cdk.Duration.seconds(30),
  environment: { SHOP_TABLE_NAME: table.tableName },
});
table.grant(consumer, 'dynamodb:PutItem');
consumer.addEventSource(new SqsEventSource(orders, { batchSize: 10, reportBatchItemFailures: true }));

// The shop application's role gets exactly what writing outbox messages needs.
const shopApp = new iam.Role(stack, 'ShopApp', {
  roleName: `${name}-app`,
  assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
});
outbox.grantProduce(shopApp);

new cdk.CfnOutput(stack, 'TableName', { value: table.tableName });
if (outbox.producerPolicy) new cdk.CfnOutput(stack, 'ProducerPolicyArn', { value: outbox.producerPolicy.managedPolicyArn });
app.synth();
