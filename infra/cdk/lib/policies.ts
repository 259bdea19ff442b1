// The least-privilege statements of the outbox's roles (infra/CONTRACT.md, "Calls the
// functions make") and of a producer: each action on exactly the resources it needs.
import * as iam from 'aws-cdk-lib/aws-iam';
import { CONTRACT } from './config';
import type { ResolvedRoute } from './routes';

/** What the statements name: the deployed (or attached) resources, as ARNs. */
export interface PolicyTargets {
  readonly tableArn: string;
  readonly streamArn: string;
  readonly deadLetterQueueArn: string;
  readonly streamFailureQueueArn: string;
  /** `<bucket>/outbox/*` when large payloads are on. */
  readonly payloadObjectsArn?: string;
  /** `<bucket>/failed/*` when large payloads are on: FAILED messages' payloads. */
  readonly failedPayloadObjectsArn?: string;
  /** The routes and the default destination. */
  readonly destinations: readonly ResolvedRoute[];
  /** Scan the table and put the scan cursors (scan mode backstop or on). */
  readonly scans: boolean;
}

const allow = (sid: string, actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
  new iam.PolicyStatement({ sid, actions, resources, conditions });

const sweepIndexArn = (t: PolicyTargets) => `${t.tableArn}/index/${CONTRACT.sweepIndexName}`;

/** The order fence reads the index shards a batch touches in one PartiQL select; never a scan of the index. */
function selectPendingKeys(t: PolicyTargets): iam.PolicyStatement[] {
  return [
    allow('SelectPendingKeys', ['dynamodb:PartiQLSelect'], [sweepIndexArn(t)]),
    new iam.PolicyStatement({
      sid: 'NoFullIndexScan',
      effect: iam.Effect.DENY,
      actions: ['dynamodb:PartiQLSelect'],
      resources: [sweepIndexArn(t)],
      conditions: { Bool: { 'dynamodb:FullTableScan': 'true' } },
    }),
  ];
}

/** Sending to the routed destinations and the outbox DLQ: no wildcard resources. */
function sendTo(t: PolicyTargets): iam.PolicyStatement[] {
  const of = (kind: ResolvedRoute['kind']) => [...new Set(t.destinations.filter((d) => d.kind === kind).map((d) => d.arn))];
  const queues = [...of('sqs'), t.deadLetterQueueArn];
  const statements = [
    allow('SendToRoutedQueues', ['sqs:SendMessage'], queues),
    // Each destination's real MaximumMessageSize, read at cold start: the same queues, nothing more.
    allow('ReadRoutedQueueSizes', ['sqs:GetQueueAttributes'], queues),
  ];
  if (of('sns').length) statements.push(allow('PublishToRoutedTopics', ['sns:Publish'], of('sns')));
  if (of('events').length) statements.push(allow('PutToRoutedBuses', ['events:PutEvents'], of('events')));
  return statements;
}

/**
 * Large payloads put under outbox/, and a FAILED message's copied to failed/ (CopyObject reads its
 * source under outbox/: GetObject there, nothing else of the bucket).
 */
const putPayloads = (t: PolicyTargets) =>
  t.payloadObjectsArn && t.failedPayloadObjectsArn
    ? [
        allow('PutLargePayloads', ['s3:PutObject'], [t.payloadObjectsArn, t.failedPayloadObjectsArn]),
        allow('KeepFailedPayloads', ['s3:GetObject'], [t.payloadObjectsArn]),
      ]
    : [];

const checkTable = (t: PolicyTargets) =>
  allow('CheckOutboxTable', ['dynamodb:DescribeTable', 'dynamodb:DescribeTimeToLive'], [t.tableArn]);

/** Publisher: stream → publish → mark SENT. */
export function publisherStatements(t: PolicyTargets): iam.PolicyStatement[] {
  return [
    // PartiQLUpdate: the marks are batched as PartiQL UPDATE statements (BatchExecuteStatement).
    allow('MarkSentOrFailed', ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate'], [t.tableArn]),
    // GetItem: the item is read before it is dead-lettered (poison already FAILED is not copied
    // twice). BatchGetItem: the current status of a redelivered batch's records, in one consistent read.
    allow('ReadOutboxItems', ['dynamodb:BatchGetItem', 'dynamodb:GetItem'], [t.tableArn]),
    allow('ReadOutboxStream', ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'], [t.streamArn]),
    allow('ReportDiscardedBatches', ['sqs:SendMessage'], [t.streamFailureQueueArn]),
    // The order fence: an aggregate's pending messages, from the sweep index (keys only) or, for
    // another producer's aggregate, from its partition.
    allow('ReadPendingSiblings', ['dynamodb:Query'], [t.tableArn, sweepIndexArn(t)]),
    // Before its first piece of work each function compares the table's keys, sweeper index, stream and TTL
    // attribute with its configuration (a wrong key name refuses work, named).
    checkTable(t),
    ...selectPendingKeys(t),
    ...sendTo(t),
    ...putPayloads(t),
  ];
}

/** Sweeper: the sparse index, claims and marks, and (backstop, on) a bounded scan from cursors saved in the table. */
export function sweeperStatements(t: PolicyTargets): iam.PolicyStatement[] {
  const update = ['dynamodb:UpdateItem', 'dynamodb:PartiQLUpdate', ...(t.scans ? ['dynamodb:Scan'] : [])];
  return [
    allow('QuerySweepIndex', ['dynamodb:Query'], [sweepIndexArn(t)]),
    // The order fence: another producer's aggregate is read from its partition.
    allow('ReadPendingSiblings', ['dynamodb:Query'], [t.tableArn]),
    ...selectPendingKeys(t),
    allow('UpdateOutboxItems', update, [t.tableArn]),
    // An item whose claim was refused, an item before it is dead-lettered, and (backstop, on) the scan cursors.
    // BatchGetItem: the order fence confirms, in one consistent read, that the siblings the (lagging) index lists still pend.
    allow('ReadOutboxItems', ['dynamodb:BatchGetItem', 'dynamodb:GetItem'], [t.tableArn]),
    // Before its first piece of work each function compares the table's keys, sweeper index, stream and TTL
    // attribute with its configuration (a wrong key name refuses work, named).
    checkTable(t),
    // The scan cursors (partition key OUTBOX#SWEEPER) and no other item: the leading key must be present and be the sweeper's.
    ...(t.scans
      ? [
          allow('SaveScanCursors', ['dynamodb:PutItem'], [t.tableArn], {
            'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [CONTRACT.scanCursorPartitionKey] },
            Null: { 'dynamodb:LeadingKeys': 'false' },
          }),
        ]
      : []),
    ...sendTo(t),
    ...putPayloads(t),
  ];
}

/** Recovery: the stream ranges of discarded batches, read back; their PENDING items put into the sweeper's index. */
export function recoveryStatements(t: PolicyTargets): iam.PolicyStatement[] {
  return [
    // GetShardIterator AT_SEQUENCE_NUMBER + GetRecords on the stream ARN of the record (which names the shard: no DescribeStream).
    allow('ReadOutboxStream', ['dynamodb:GetRecords', 'dynamodb:GetShardIterator'], [t.streamArn]),
    // A conditional UpdateItem: still PENDING and not yet indexed → the sweeper's index keys.
    allow('AdoptIntoSweepIndex', ['dynamodb:UpdateItem'], [t.tableArn]),
    // Before its first piece of work each function compares the table's keys, sweeper index, stream and TTL
    // attribute with its configuration (a wrong key name refuses work, named).
    checkTable(t),
    // What its SQS mapping calls with the role (Lambda's documented three); the function calls no SQS API.
    allow('ConsumeStreamFailures', ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], [t.streamFailureQueueArn]),
  ];
}

/**
 * What an application role needs to write outbox messages (TransactWriteItems is authorised
 * per action inside it), to offload large payloads, and to use the outbox's KMS key. Nothing else.
 */
export function producerStatements(t: { tableArn: string; payloadObjectsArn?: string; keyArn?: string }): iam.PolicyStatement[] {
  return [
    allow('WriteOutboxMessages', ['dynamodb:GetItem', 'dynamodb:PutItem'], [t.tableArn]),
    ...(t.payloadObjectsArn ? [allow('PutLargePayloads', ['s3:PutObject'], [t.payloadObjectsArn])] : []),
    ...(t.keyArn ? [allow('UseOutboxKey', ['kms:GenerateDataKey', 'kms:Decrypt'], [t.keyArn])] : []),
  ];
}
