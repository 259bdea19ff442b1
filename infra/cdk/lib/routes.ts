// Routes (OUTBOX_ROUTES, infra/CONTRACT.md): the user's destinations as CDK interfaces or as
// literal URLs/ARNs, turned into the JSON the functions read and the grants sending needs.
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { SQS_MAX_MESSAGE_BYTES, intIn } from './config';

/** What a route destination is, and the IAM action sending to it needs. */
export interface RouteTarget {
  readonly kind: 'sqs' | 'sns' | 'events';
  readonly arn: string;
  readonly action: string;
}

const SQS_URL = /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/(\d{12})\/([A-Za-z0-9_-]{1,75}(?:\.fifo)?)$/;
export const SNS_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(?:\.fifo)?$/;
const BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256}$/;

/** Parses a literal destination (CONTRACT.md): SQS queue URL, SNS topic ARN or EventBridge bus ARN. */
export function routeTarget(destination: string): RouteTarget {
  const sqsUrl = SQS_URL.exec(destination);
  if (sqsUrl) {
    // The queue URL names the partition: *.amazonaws.com.cn is aws-cn, us-gov-* regions are aws-us-gov.
    const part = destination.includes('.amazonaws.com.cn/') ? 'aws-cn' : sqsUrl[1].startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
    return { kind: 'sqs', arn: `arn:${part}:sqs:${sqsUrl[1]}:${sqsUrl[2]}:${sqsUrl[3]}`, action: 'sqs:SendMessage' };
  }
  if (SNS_ARN.test(destination)) return { kind: 'sns', arn: destination, action: 'sns:Publish' };
  if (BUS_ARN.test(destination)) return { kind: 'events', arn: destination, action: 'events:PutEvents' };
  throw new Error(
    `route destination "${destination}" is neither an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), ` +
      'an SNS topic ARN nor an EventBridge bus ARN',
  );
}

/** A destination: a queue, a topic or a bus of your app, or a literal queue URL / topic ARN / bus ARN. */
export type OutboxDestination = sqs.IQueue | sns.ITopic | events.IEventBus | string;

/** A detailed route (OUTBOX_ROUTES' object form). */
export interface OutboxRoute {
  readonly destination: OutboxDestination;
  /** SQS only: the queue's MaximumMessageSize when below 1 MiB; a larger message becomes FAILED instead of a refused call. */
  readonly maxMessageBytes?: number;
  /** EventBridge only: the events' Source (default `dynamodb-outbox`). */
  readonly source?: string;
  /**
   * SNS only: every subscription of the topic uses raw delivery, so a message is sized as SNS
   * counts it (body plus attributes). Without it a message is sized in the notification
   * envelope a subscriber queue receives (the escaped body and SNS's metadata), so that nothing
   * SNS accepts overflows a 256 KiB subscriber queue.
   */
  readonly rawDelivery?: boolean;
}

/** A route as the functions read it, and what sending needs. */
export interface ResolvedRoute {
  /** The value in OUTBOX_ROUTES (a destination, or an object with max_message_bytes / source / raw_delivery). */
  readonly json: string | { destination: string; max_message_bytes?: number; source?: string; raw_delivery?: boolean };
  readonly kind: RouteTarget['kind'];
  /** The ARN to grant the send on (a token for a queue/topic/bus of the app). */
  readonly arn: string;
  /** The destination's KMS key, when it is a KMS-encrypted queue or topic of the app. */
  readonly key?: kms.IKey;
}

const isRoute = (r: OutboxDestination | OutboxRoute): r is OutboxRoute =>
  typeof r === 'object' && r !== null && 'destination' in r && !('queueArn' in r || 'topicArn' in r || 'eventBusArn' in r);

function target(d: OutboxDestination): { url: string; kind: RouteTarget['kind']; arn: string; key?: kms.IKey } {
  if (typeof d === 'string') {
    const t = routeTarget(d);
    return { url: d, kind: t.kind, arn: t.arn };
  }
  if ('queueArn' in d) return { url: d.queueUrl, kind: 'sqs', arn: d.queueArn, key: d.encryptionMasterKey };
  if ('topicArn' in d) return { url: d.topicArn, kind: 'sns', arn: d.topicArn, key: (d as { masterKey?: kms.IKey }).masterKey };
  if ('eventBusArn' in d) return { url: d.eventBusArn, kind: 'events', arn: d.eventBusArn };
  throw new Error('a route destination must be an IQueue, ITopic, IEventBus, or a queue URL / topic ARN / bus ARN');
}

/** How the caller spells a detailed route's options (maxMessageBytes or max_message_bytes, ...). */
export interface RouteOptionNames {
  readonly size: string;
  readonly rawDelivery: string;
}

/**
 * A detailed route's size (SQS only, 1 B to 1 MiB), source (EventBridge only, 1-256
 * characters) and raw delivery (SNS only, a boolean: the functions refuse it on a queue or a
 * bus whatever its value); `spelling` names them as the caller does.
 */
export function checkRouteOptions(
  topic: string,
  kind: RouteTarget['kind'],
  options: { size?: unknown; source?: unknown; rawDelivery?: unknown },
  spelling: RouteOptionNames,
): void {
  const { size, source, rawDelivery } = options;
  const sizeName = spelling.size;
  if (size !== undefined) {
    if (kind !== 'sqs') throw new Error(`route "${topic}": ${sizeName} applies to SQS queues only (SNS and EventBridge limits are fixed)`);
    intIn(`route "${topic}" ${sizeName}`, size as number, 1, SQS_MAX_MESSAGE_BYTES);
  }
  if (source !== undefined) {
    if (kind !== 'events') throw new Error(`route "${topic}": source applies to EventBridge buses only`);
    if (typeof source !== 'string' || source.length < 1 || source.length > 256) throw new Error(`route "${topic}": source must be 1-256 characters`);
  }
  if (rawDelivery !== undefined) {
    const name = spelling.rawDelivery;
    if (kind !== 'sns') {
      throw new Error(
        `route "${topic}": ${name} applies to SNS topics only (it says the topic's subscriptions use raw delivery); remove it from this ${kind === 'sqs' ? 'SQS queue' : 'EventBridge bus'} route`,
      );
    }
    if (typeof rawDelivery !== 'boolean') throw new Error(`route "${topic}": ${name} must be true or false, got ${JSON.stringify(rawDelivery)}`);
  }
}

/** Checks a route of topic `topic`; throws an Error naming the topic. */
export function resolveRoute(topic: string, route: OutboxDestination | OutboxRoute): ResolvedRoute {
  if (!/^[A-Za-z0-9._:-]{1,256}$/.test(topic)) throw new Error(`route topic "${topic}" has characters other than A-Z a-z 0-9 . _ : -`);
  if (!isRoute(route)) {
    const t = target(route);
    return { json: t.url, kind: t.kind, arn: t.arn, key: t.key };
  }
  const t = target(route.destination);
  checkRouteOptions(
    topic,
    t.kind,
    { size: route.maxMessageBytes, source: route.source, rawDelivery: route.rawDelivery },
    { size: 'maxMessageBytes', rawDelivery: 'rawDelivery' },
  );
  const json = {
    destination: t.url,
    ...(route.maxMessageBytes !== undefined ? { max_message_bytes: route.maxMessageBytes } : {}),
    ...(route.source !== undefined ? { source: route.source } : {}),
    ...(route.rawDelivery !== undefined ? { raw_delivery: route.rawDelivery } : {}),
  };
  return { json, kind: t.kind, arn: t.arn, key: t.key };
}
