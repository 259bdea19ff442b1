// cdk-nag (AwsSolutions) acknowledgements of the construct, each with its reason (written to
// the template). Core CDK's Validations API: the construct does not depend on cdk-nag.
import * as cdk from 'aws-cdk-lib';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { CONTRACT } from './config';

/** Terminal queues that operators read (alarmed when not empty): a DLQ behind them would only hold the same messages again. */
export function acknowledgeTerminalQueues(queues: sqs.Queue[]): void {
  const reason =
    'Terminal failure queue read by operators (alarmed when not empty); nothing consumes it automatically, so a DLQ of it would only move the same messages again.';
  for (const q of queues) cdk.Validations.of(q.node.defaultChild!).acknowledge({ id: 'AwsSolutions-SQS3', reason });
}

/** A created large-payload bucket has no server access logs. */
export function acknowledgeBucket(bucket: s3.IBucket): void {
  const created = bucket.node.defaultChild;
  if (!created) return;
  cdk.Validations.of(created).acknowledge({
    id: 'AwsSolutions-S1',
    reason:
      "Server access logs need a second bucket (with its own logging question); this bucket holds only short-lived message payloads that the deployment's own roles write and read. Audit object access with CloudTrail data events on the bucket when required.",
  });
}

/** The wildcards: the objects under the large-payload key prefixes (one object per message id). */
export function acknowledgeLargePayloadGrant(
  scope: IConstruct,
  bucket: s3.IBucket,
  existingName?: string,
  prefixes: readonly string[] = [CONTRACT.largePayloadKeyPrefix, CONTRACT.failedPayloadKeyPrefix],
): void {
  const created = bucket.node.defaultChild as cdk.CfnElement | undefined;
  const bucketArn = created ? `<${cdk.Stack.of(bucket).getLogicalId(created)}.Arn>` : `arn:<AWS::Partition>:s3:::${existingName}`;
  for (const prefix of prefixes) {
    cdk.Validations.of(scope).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${bucketArn}/${prefix}*]`,
      reason: `Objects are named ${prefix}<MessageId>, one per message, unknown in advance: the grant covers that key prefix of the deployment's large-payload bucket and nothing else.`,
    });
  }
}
