// cdk-nag AwsSolutions checks. Each case synthesizes a *fresh* App: Template.fromStack
// caches the synthesis of an app, and validation plugins only run on app.synth().
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { OutboxSettingsInput } from '../example/settings.ts';
import { Outbox } from '../lib/index.ts';
import { ENV, fakeAssetDir, newStack, synthValidated, type Violation } from './helpers.ts';

/** Synthesizes with the AwsSolutions pack; returns the findings and the acknowledgements written to the template. */
function nag(build: (app: cdk.App) => cdk.Stack) {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-nag-'));
  try {
    const app = new cdk.App({ outdir });
    const stack = build(app);
    cdk.Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { writeSuppressionsToCloudFormation: true }));
    const { violations, template: text } = synthValidated(app, stack);
    const template = JSON.parse(text);
    const acks = Object.entries(template.Resources as Record<string, { Metadata?: any; Properties?: any }>).flatMap(([id, r]) =>
      (r.Metadata?.cdk_nag?.rules_to_suppress ?? []).map((a: { id: string; reason: string }) => ({
        resource: r.Properties?.QueueName ?? id,
        id: a.id,
        reason: a.reason,
      })),
    );
    return { violations, acks };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

const describeViolations = (v: Violation[]) =>
  v.map((x) => `${x.ruleName}: ${x.violatingConstructs.map((c) => c.constructPath).join(', ')}`).join('\n');

const variants: Record<string, OutboxSettingsInput> = {
  'default settings': {},
  'KMS key, scan mode on, extra routes, alarm topic': {
    kmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
    sweepScanMode: 'on',
    routes: {
      billing: 'https://sqs.eu-west-1.amazonaws.com/123456789012/billing',
      audit: 'arn:aws:sns:eu-west-1:123456789012:audit',
    },
    alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
  },
  'existing large-payload bucket': { largePayloadBucketName: 'shop-payloads' },
  'existing table, scan mode off, no large-payload bucket': {
    sweepScanMode: 'off',
    largePayloads: false,
    existingTable: { tableName: 'app', streamArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000' },
  },
};

describe('cdk-nag AwsSolutions', () => {
  for (const [name, settings] of Object.entries(variants)) {
    it(`finds nothing unacknowledged (${name})`, () => {
      const { violations } = nag((app) => newStack(settings, app));
      assert.equal(violations.length, 0, describeViolations(violations));
    });
  }

  it("finds nothing unacknowledged (the construct alone on a user's table, with grantProduce)", () => {
    const { violations } = nag((app) => {
      const stack = new cdk.Stack(app, 'User', { env: ENV });
      const table = dynamodb.Table.fromTableAttributes(stack, 'Table', {
        tableArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/app',
        tableStreamArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000',
      });
      const billing = new sqs.Queue(stack, 'Billing', { enforceSSL: true, deadLetterQueue: { queue: new sqs.Queue(stack, 'BillingDlq', { enforceSSL: true }), maxReceiveCount: 5 } });
      cdk.Validations.of(stack.node.findChild('BillingDlq').node.defaultChild!).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'The test user\'s own dead-letter queue: terminal, read by a person.' });
      const outbox = new Outbox(stack, 'Outbox', { table, routes: { billing }, assetDir: fakeAssetDir() });
      const role = new iam.Role(stack, 'AppRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      outbox.grantProduce(role);
      outbox.acknowledgeLargePayloadGrant(role);
      return stack;
    });
    assert.equal(violations.length, 0, describeViolations(violations));
  });

  it('acknowledges only SQS3 on the two terminal dead-letter queues, S1 on the large-payload bucket and its key prefix in IAM5 (writers, consumer, producer policy), each with a reason', () => {
    const { acks } = nag((app) => newStack({}, app));
    // The outbox's resources are inside the Outbox construct (logical ids Outbox...); the producer
    // policy's PutObject on the key prefix is acknowledged like the writers' grants.
    const objects = 'AwsSolutions-IAM5[Resource::<OutboxLargePayloadBucket101AB72E.Arn>/outbox/*]';
    // FAILED messages' payloads, kept under failed/: the writers put them, the consumer reads a redriven one.
    const failed = 'AwsSolutions-IAM5[Resource::<OutboxLargePayloadBucket101AB72E.Arn>/failed/*]';
    assert.deepEqual(
      acks.map((a) => `${a.resource} ${a.id}`).sort(),
      [
        `ConsumerRoleACB9B9F3 ${objects}`,
        `ConsumerRoleDefaultPolicy2C8B36A4 ${objects}`,
        `ConsumerRoleACB9B9F3 ${failed}`,
        `ConsumerRoleDefaultPolicy2C8B36A4 ${failed}`,
        'OutboxLargePayloadBucket101AB72E AwsSolutions-S1',
        `OutboxProducerPolicy303620C7 ${objects}`,
        `OutboxPublisherRoleDefaultPolicy22778E0C ${objects}`,
        `OutboxPublisherRoleDDD7B5A3 ${objects}`,
        `OutboxSweeperRoleCFD2EA24 ${objects}`,
        `OutboxSweeperRoleDefaultPolicy7CD010AD ${objects}`,
        `OutboxPublisherRoleDefaultPolicy22778E0C ${failed}`,
        `OutboxPublisherRoleDDD7B5A3 ${failed}`,
        `OutboxSweeperRoleCFD2EA24 ${failed}`,
        `OutboxSweeperRoleDefaultPolicy7CD010AD ${failed}`,
        'outbox-dlq AwsSolutions-SQS3',
        'outbox-stream-failures-dlq AwsSolutions-SQS3',
      ].sort(),
    );
    for (const a of acks) assert.ok(a.reason.length > 60, `reason for ${a.id} on ${a.resource} is too short: ${a.reason}`);
  });

  it('does report a finding when there is one (the check is live)', () => {
    const { violations } = nag((app) => {
      const stack = new cdk.Stack(app, 'Bad');
      new sqs.Queue(stack, 'Plain', { encryption: sqs.QueueEncryption.UNENCRYPTED });
      return stack;
    });
    assert.ok(violations.some((v) => v.ruleName === 'AwsSolutions-SQS2'), describeViolations(violations));
    assert.ok(violations.some((v) => v.ruleName === 'AwsSolutions-SQS4'), describeViolations(violations));
  });
});
