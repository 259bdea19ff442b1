// Route options that reach OUTBOX_ROUTES as the functions parse them (the core's
// route.rs: a detailed route's destination, max_message_bytes, source, raw_delivery), and
// the options refused before deploying where the functions would refuse them at start.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Outbox, type OutboxProps } from '../lib/index.ts';
import { resolveSettings } from '../example/settings.ts';
import { ENV, fakeAssetDir, synth } from './helpers.ts';

const TABLE = 'arn:aws:dynamodb:eu-west-1:123456789012:table/app';
const STREAM = `${TABLE}/stream/2024-01-01T00:00:00.000`;
const AUDIT = 'arn:aws:sns:eu-west-1:123456789012:audit';
const LEDGER = 'arn:aws:sns:eu-west-1:123456789012:ledger.fifo';
const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/mail';
const BUS = 'arn:aws:events:eu-west-1:123456789012:event-bus/shop';

/** The construct on an imported table with `routes` (or routes built in its stack); a fresh app each time. */
function outboxWith(routes: OutboxProps['routes'] | ((stack: cdk.Stack) => OutboxProps['routes'])): Template {
  const stack = new cdk.Stack(new cdk.App(), 'App', { env: ENV });
  const table = dynamodb.Table.fromTableAttributes(stack, 'Table', { tableArn: TABLE, tableStreamArn: STREAM });
  new Outbox(stack, 'Outbox', { table, routes: typeof routes === 'function' ? routes(stack) : routes, assetDir: fakeAssetDir() });
  return Template.fromStack(stack);
}

/** OUTBOX_ROUTES of `fn`, parsed: every route here is a literal, so the value is plain JSON. */
function routesOf(t: Template, fn: string): unknown {
  const f = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: fn } }))[0];
  const value = f.Properties.Environment.Variables.OUTBOX_ROUTES;
  assert.equal(typeof value, 'string', `OUTBOX_ROUTES of ${fn} holds no token here: ${JSON.stringify(value)}`);
  return JSON.parse(value as string);
}

describe('rawDelivery: an SNS route whose subscriptions use raw delivery', () => {
  it('reaches the publisher and the sweeper as "raw_delivery", a JSON boolean (true and false alike)', () => {
    // The topic as an ITopic of the app (imported) and as a literal ARN.
    const t = outboxWith((stack) => ({
      audit: { destination: sns.Topic.fromTopicArn(stack, 'Audit', AUDIT), rawDelivery: true },
      ledger: { destination: LEDGER, rawDelivery: false },
    }));
    for (const fn of ['outbox-publisher', 'outbox-sweeper']) {
      assert.deepEqual(routesOf(t, fn), {
        audit: { destination: AUDIT, raw_delivery: true },
        ledger: { destination: LEDGER, raw_delivery: false },
      });
    }
  });

  it('is left out of OUTBOX_ROUTES when not given (the functions then size in the envelope)', () => {
    assert.deepEqual(routesOf(outboxWith({ audit: { destination: AUDIT } }), 'outbox-publisher'), { audit: { destination: AUDIT } });
  });

  for (const [what, destination] of [
    ['an SQS queue', QUEUE_URL],
    ['an EventBridge bus', BUS],
  ] as const) {
    it(`is refused on ${what}, false too (the functions refuse it there whatever its value)`, () => {
      for (const rawDelivery of [true, false]) {
        assert.throws(() => outboxWith({ x: { destination, rawDelivery } }), /route "x": rawDelivery applies to SNS topics only/);
      }
    });
  }

  it('is refused when it is not a boolean', () => {
    const rawDelivery = 'true' as unknown as boolean;
    assert.throws(() => outboxWith({ x: { destination: AUDIT, rawDelivery } }), /route "x": rawDelivery must be true or false, got "true"/);
  });
});

describe('raw_delivery in the example app\'s routes (OUTBOX_ROUTES\' spelling, as Terraform takes it)', () => {
  it('passes on unchanged to the publisher', () => {
    const t = synth({ routes: { audit: { destination: AUDIT, raw_delivery: true } } });
    const f = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: 'outbox-publisher' } }))[0];
    assert.ok(
      JSON.stringify(f.Properties.Environment.Variables.OUTBOX_ROUTES).includes(`\\"audit\\":{\\"destination\\":\\"${AUDIT}\\",\\"raw_delivery\\":true}`),
      JSON.stringify(f.Properties.Environment.Variables.OUTBOX_ROUTES),
    );
  });
  it('is refused on a queue, naming the key as the settings spell it', () => {
    assert.throws(
      () => resolveSettings({ routes: { mail: { destination: QUEUE_URL, raw_delivery: true } } }),
      /route "mail": raw_delivery applies to SNS topics only/,
    );
  });
});
