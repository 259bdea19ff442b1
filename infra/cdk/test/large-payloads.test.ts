// The large-payload bucket (S3 large-payload offload, infra/CONTRACT.md): payloads too large for a
// destination or a DynamoDB item are stored at outbox/<MessageId> and a pointer is sent.
// The bucket, its lifecycle and policy, the functions' environment and grants.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Template } from 'aws-cdk-lib/assertions';
import { QUEUE_RETENTION_DAYS } from '../lib/config.ts';
import { settingsFromContext } from '../example/context.ts';
import { resolveSettings } from '../example/settings.ts';
import { actionsOf, asList, statementsOf, synth } from './helpers.ts';

const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const FUNCTIONS = ['outbox-publisher', 'outbox-sweeper', 'outbox-orders-consumer', 'outbox-recovery'];

function bucketOf(t: Template): { id: string; props: Record<string, any>; resource: Record<string, any> } {
  const buckets = Object.entries(t.findResources('AWS::S3::Bucket'));
  assert.equal(buckets.length, 1, 'one bucket');
  const [id, resource] = buckets[0];
  return { id, props: resource.Properties, resource };
}

const envOf = (t: Template, fn: string): Record<string, unknown> =>
  Object.values(t.findResources('AWS::Lambda::Function')).find((r) => r.Properties.FunctionName === fn)!.Properties.Environment.Variables;

/** The S3 grants of a function's role: action -> resources. */
function s3Grants(t: Template, fn: string): Array<{ action: string; resource: unknown }> {
  return statementsOf(t, fn).flatMap((s) =>
    asList(s.Action as string | string[])
      .filter((a) => a.startsWith('s3:'))
      .flatMap((action) => asList(s.Resource).map((resource) => ({ action, resource }))),
  );
}

describe('the large-payload bucket (default settings)', () => {
  let t: Template;
  let bucket: ReturnType<typeof bucketOf>;
  before(() => {
    t = synth();
    bucket = bucketOf(t);
  });
  it('is encrypted with S3-managed keys when no KMS key is given', () => {
    assert.deepEqual(bucket.props.BucketEncryption, {
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
  });
  it('blocks all public access and disables ACLs (bucket owner enforced), no versioning', () => {
    assert.deepEqual(bucket.props.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.deepEqual(bucket.props.OwnershipControls, { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] });
    assert.equal(bucket.props.VersioningConfiguration, undefined);
  });
  it('expires payloads under outbox/ after 30 days and aborts incomplete multipart uploads (whole bucket) after 1 day', () => {
    assert.deepEqual(bucket.props.LifecycleConfiguration, {
      Rules: [
        { Id: 'expire-large-payloads', Prefix: 'outbox/', Status: 'Enabled', ExpirationInDays: 30 },
        { Id: 'abort-incomplete-uploads', Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
      ],
    });
  });
  it('keeps payloads longer than any queue keeps a message', () => {
    const retention = Object.values(t.findResources('AWS::SQS::Queue')).map((q) => q.Properties.MessageRetentionPeriod as number);
    assert.ok(retention.length > 0);
    assert.ok(Math.max(...retention) <= QUEUE_RETENTION_DAYS * 86_400);
    assert.ok(bucket.props.LifecycleConfiguration.Rules[0].ExpirationInDays * 86_400 > Math.max(...retention));
  });
  it('refuses requests without TLS (bucket policy: deny aws:SecureTransport = false on the bucket and its objects)', () => {
    const policies = Object.values(t.findResources('AWS::S3::BucketPolicy'));
    assert.equal(policies.length, 1);
    assert.deepEqual(policies[0].Properties.Bucket, { Ref: bucket.id });
    const [deny] = policies[0].Properties.PolicyDocument.Statement;
    assert.equal(deny.Effect, 'Deny');
    assert.equal(deny.Action, 's3:*');
    assert.deepEqual(deny.Principal, { AWS: '*' });
    assert.deepEqual(deny.Condition, { Bool: { 'aws:SecureTransport': 'false' } });
    assert.deepEqual(deny.Resource, [
      { 'Fn::GetAtt': [bucket.id, 'Arn'] },
      { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket.id, 'Arn'] }, '/*']] },
    ]);
  });
  it('is retained by cdk destroy while deletion protection is on', () => {
    assert.equal(bucket.resource.DeletionPolicy, 'Retain');
    assert.equal(bucketOf(synth({ deletionProtection: false })).resource.DeletionPolicy, 'Delete');
  });
  it('gives its name to the publisher and the sweeper (OUTBOX_LARGE_PAYLOAD_BUCKET), and to no other function', () => {
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) assert.deepEqual(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_BUCKET, { Ref: bucket.id }, fn);
    for (const fn of ['outbox-orders-consumer', 'outbox-recovery']) assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_BUCKET, undefined, fn);
  });
  it('leaves OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES unset by default', () => {
    for (const fn of FUNCTIONS) assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES, undefined, fn);
  });
  it('lets the publisher and the sweeper put, and the consumer get, objects under outbox/ and failed/ only; the recovery function nothing', () => {
    const objects = { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket.id, 'Arn'] }, '/outbox/*']] };
    const failed = { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket.id, 'Arn'] }, '/failed/*']] };
    // A FAILED message's payload is copied from outbox/ (GetObject there) to failed/.
    const writes = [
      { action: 's3:PutObject', resource: objects },
      { action: 's3:PutObject', resource: failed },
      { action: 's3:GetObject', resource: objects },
    ];
    assert.deepEqual(s3Grants(t, 'outbox-publisher'), writes);
    assert.deepEqual(s3Grants(t, 'outbox-sweeper'), writes);
    assert.deepEqual(s3Grants(t, 'outbox-orders-consumer'), [
      { action: 's3:GetObject', resource: objects },
      { action: 's3:GetObject', resource: failed },
      { action: 's3:ListBucket', resource: { 'Fn::GetAtt': [bucket.id, 'Arn'] } },
    ]);
    assert.deepEqual(s3Grants(t, 'outbox-recovery'), []);
  });
  it('outputs the bucket name', () => {
    assert.deepEqual(t.findOutputs('LargePayloadBucketName').LargePayloadBucketName.Value, { Ref: bucket.id });
  });
});

describe('the large-payload bucket with a KMS key', () => {
  let t: Template;
  before(() => {
    t = synth({ kmsKeyArn: KEY });
  });
  it('is encrypted with that key (SSE-KMS, S3 Bucket Key on)', () => {
    assert.deepEqual(bucketOf(t).props.BucketEncryption, {
      ServerSideEncryptionConfiguration: [
        { BucketKeyEnabled: true, ServerSideEncryptionByDefault: { KMSMasterKeyID: KEY, SSEAlgorithm: 'aws:kms' } },
      ],
    });
  });
  it('lets the writers generate data keys and the reader decrypt with it', () => {
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) assert.ok(actionsOf(t, fn).includes('kms:GenerateDataKey'), fn);
    assert.ok(actionsOf(t, 'outbox-orders-consumer').includes('kms:Decrypt'));
    const kms = statementsOf(t, 'outbox-publisher').filter((s) => asList(s.Action as string[]).some((a) => a.startsWith('kms:')));
    assert.deepEqual(kms.flatMap((s) => asList(s.Resource)), [KEY]);
  });
});

describe('largePayloads = false', () => {
  it('creates no bucket, passes no bucket name and grants no S3 action', () => {
    const t = synth({ largePayloads: false });
    assert.equal(Object.keys(t.findResources('AWS::S3::Bucket')).length, 0);
    assert.equal(Object.keys(t.findResources('AWS::S3::BucketPolicy')).length, 0);
    for (const fn of FUNCTIONS) {
      assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_BUCKET, undefined, fn);
      assert.deepEqual(s3Grants(t, fn), [], fn);
    }
    assert.equal(t.findOutputs('LargePayloadBucketName').LargePayloadBucketName, undefined);
  });
});

describe('an existing large-payload bucket (largePayloadBucketName)', () => {
  let t: Template;
  before(() => {
    t = synth({ largePayloadBucketName: 'shop-payloads' });
  });
  it('is attached, not created: no bucket, no bucket policy', () => {
    assert.equal(Object.keys(t.findResources('AWS::S3::Bucket')).length, 0);
    assert.equal(Object.keys(t.findResources('AWS::S3::BucketPolicy')).length, 0);
  });
  it('is named to the publisher and the sweeper, and output', () => {
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_BUCKET, 'shop-payloads', fn);
    for (const fn of ['outbox-orders-consumer', 'outbox-recovery']) assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_BUCKET, undefined, fn);
    assert.equal(t.findOutputs('LargePayloadBucketName').LargePayloadBucketName.Value, 'shop-payloads');
  });
  it('gets the same grants, on its outbox/ and failed/ objects (in the stack\'s partition)', () => {
    const objects = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::shop-payloads/outbox/*']] };
    const failed = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::shop-payloads/failed/*']] };
    const writes = [
      { action: 's3:PutObject', resource: objects },
      { action: 's3:PutObject', resource: failed },
      { action: 's3:GetObject', resource: objects },
    ];
    assert.deepEqual(s3Grants(t, 'outbox-publisher'), writes);
    assert.deepEqual(s3Grants(t, 'outbox-sweeper'), writes);
    assert.deepEqual(s3Grants(t, 'outbox-orders-consumer'), [
      { action: 's3:GetObject', resource: objects },
      { action: 's3:GetObject', resource: failed },
      { action: 's3:ListBucket', resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::shop-payloads']] } },
    ]);
    assert.deepEqual(s3Grants(t, 'outbox-recovery'), []);
  });
  it('must be a bucket name, and needs largePayloads', () => {
    assert.throws(() => resolveSettings({ largePayloadBucketName: 'Bad_Name' }), /largePayloadBucketName must be an S3 bucket name/);
    assert.throws(() => resolveSettings({ largePayloadBucketName: 'a..b' }), /largePayloadBucketName/);
    assert.throws(() => resolveSettings({ largePayloads: false, largePayloadBucketName: 'shop-payloads' }), /needs largePayloads/);
  });
});

describe('large-payload settings', () => {
  it('pass the threshold to the publisher and the sweeper', () => {
    const t = synth({ largePayloadThresholdBytes: 200_000 });
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) assert.equal(envOf(t, fn).OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES, '200000', fn);
  });
  it('set the expiration', () => {
    assert.equal(bucketOf(synth({ largePayloadRetentionDays: 90 })).props.LifecycleConfiguration.Rules[0].ExpirationInDays, 90);
  });
  it('refuse a retention not longer than the queues keep messages (14 days)', () => {
    assert.throws(() => resolveSettings({ largePayloadRetentionDays: 14 }), /largePayloadRetentionDays .*longer than the queues' 14-day retention/);
    assert.throws(() => resolveSettings({ largePayloadRetentionDays: 20.5 }), /largePayloadRetentionDays/);
    assert.equal(resolveSettings({ largePayloadRetentionDays: 15 }).largePayloadRetentionDays, 15);
  });
  it('refuse a threshold out of range or without a bucket', () => {
    assert.throws(() => resolveSettings({ largePayloadThresholdBytes: 0 }), /largePayloadThresholdBytes/);
    assert.throws(() => resolveSettings({ largePayloadThresholdBytes: 2_000_000 }), /largePayloadThresholdBytes/);
    assert.throws(() => resolveSettings({ largePayloads: false, largePayloadThresholdBytes: 1000 }), /needs largePayloads/);
  });
  it('are read from the context', () => {
    const ctx: Record<string, string> = {
      'outbox:largePayloads': 'false',
      'outbox:largePayloadRetentionDays': '45',
      'outbox:largePayloadBucketName': 'shop-payloads',
    };
    const s = settingsFromContext((k) => ctx[k], {});
    assert.equal(s.largePayloads, false);
    assert.equal(s.largePayloadRetentionDays, 45);
    assert.equal(s.largePayloadBucketName, 'shop-payloads');
    assert.equal(settingsFromContext((k) => ({ 'outbox:largePayloadThresholdBytes': '1000' })[k], {}).largePayloadThresholdBytes, 1000);
  });
});
