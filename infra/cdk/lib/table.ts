// The outbox table the construct creates when it is given none: the key names, the stream,
// the sparse sweeper index, TTL, PITR and deletion protection (infra/CONTRACT.md).
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { CONTRACT, type KeyNames, type OutboxSettings } from './config';

export function outboxTable(scope: Construct, tableName: string, s: OutboxSettings, keyNames: Required<KeyNames>, key?: kms.IKey): dynamodb.Table {
  // Protected tables are also retained on stack deletion; their fixed names then stay taken.
  const t = new dynamodb.Table(scope, 'Table', {
    tableName,
    partitionKey: { name: keyNames.partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: keyNames.sortKey, type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    stream: dynamodb.StreamViewType.NEW_IMAGE,
    timeToLiveAttribute: keyNames.ttlAttribute,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: key ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
    encryptionKey: key,
    deletionProtection: s.deletionProtection,
    removalPolicy: s.deletionProtection ? cdk.RemovalPolicy.RETAIN : cdk.RemovalPolicy.DESTROY,
  });
  t.addGlobalSecondaryIndex({
    indexName: CONTRACT.sweepIndexName,
    partitionKey: { name: CONTRACT.sweepIndexPartitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: CONTRACT.sweepIndexSortKey, type: dynamodb.AttributeType.NUMBER },
    projectionType: dynamodb.ProjectionType.KEYS_ONLY,
  });
  return t;
}
