// The large-payload bucket (S3 large-payload offload): payloads too large for a destination or
// a DynamoDB item are stored at outbox/<MessageId> and a pointer is sent. Objects expire after
// largePayloadRetentionDays, longer than any queue keeps a pointer (QUEUE_RETENTION_DAYS).
import * as cdk from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { CONTRACT, LARGE_PAYLOAD_ABORT_MULTIPART_DAYS, type OutboxSettings } from './config';

/**
 * The bucket the settings ask for: none when largePayloads is off, the existing one named by
 * largePayloadBucketName (its owner sets encryption, TLS policy and lifecycle), else a new one
 * whose name CloudFormation generates (bucket names are global).
 */
export function largePayloadBucket(scope: Construct, s: OutboxSettings, key?: kms.IKey): s3.IBucket | undefined {
  if (!s.largePayloads) return undefined;
  if (s.largePayloadBucketName) return s3.Bucket.fromBucketName(scope, 'LargePayloadBucket', s.largePayloadBucketName);
  return new s3.Bucket(scope, 'LargePayloadBucket', {
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
    // Like a created table: kept on stack deletion unless deletion protection is off (CloudFormation
    // deletes only an empty bucket: the objects expire, or empty it first).
    removalPolicy: s.deletionProtection ? cdk.RemovalPolicy.RETAIN : cdk.RemovalPolicy.DESTROY,
  });
}
