// A table of the app (Table, TableV2) given to the construct is checked at synth: each way it
// differs from the key names and what the functions need fails the synth, naming the setting,
// the table's value and what to do (lib/table-check.ts); TTL off is a warning. An imported
// table is left to the functions' own check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type KeyNames, Outbox } from '../lib/index.ts';
import { ENV, fakeAssetDir } from './helpers.ts';

const { STRING, NUMBER } = dynamodb.AttributeType;
const TENANT_KEYS: KeyNames = { partitionKey: 'tenant_id', sortKey: 'entity_id', ttlAttribute: 'expires_at' };

/** A user's table keyed tenant_id / entity_id with TTL on expires_at, changed by `props`; `index`: the sweeper index. */
function tenantTable(stack: cdk.Stack, props: Partial<dynamodb.TableProps> = {}, index = true): dynamodb.Table {
  const table = new dynamodb.Table(stack, 'App', {
    tableName: 'app',
    partitionKey: { name: 'tenant_id', type: STRING },
    sortKey: { name: 'entity_id', type: STRING },
    stream: dynamodb.StreamViewType.NEW_IMAGE,
    timeToLiveAttribute: 'expires_at',
    ...props,
  });
  if (index) {
    table.addGlobalSecondaryIndex({
      indexName: 'OutboxSweepIndex',
      partitionKey: { name: 'SweepShard', type: STRING },
      sortKey: { name: 'SweepDueAt', type: NUMBER },
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
  }
  return table;
}

/** The synth's validation errors (empty when it passes). */
function synthErrors(app: cdk.App): string[] {
  try {
    app.synth();
    return [];
  } catch (e) {
    return String((e as Error).message)
      .split('\n')
      .filter((l) => l.includes('[Stack/Outbox]'));
  }
}

function outboxOn(build: (stack: cdk.Stack) => dynamodb.ITable, keyNames?: KeyNames) {
  const app = new cdk.App();
  const stack = new cdk.Stack(app, 'Stack', { env: ENV });
  new Outbox(stack, 'Outbox', { table: build(stack), keyNames, assetDir: fakeAssetDir() });
  return { app, stack };
}

describe('a table of the app, checked at synth', () => {
  it('passes when keys, stream, TTL and index match, the index added after the construct included', () => {
    const app = new cdk.App();
    const stack = new cdk.Stack(app, 'Stack', { env: ENV });
    const table = tenantTable(stack, {}, false);
    new Outbox(stack, 'Outbox', { table, keyNames: TENANT_KEYS, assetDir: fakeAssetDir() });
    table.addGlobalSecondaryIndex({ indexName: 'OutboxSweepIndex', partitionKey: { name: 'SweepShard', type: STRING }, sortKey: { name: 'SweepDueAt', type: NUMBER } });
    assert.deepEqual(synthErrors(app), []);
  });

  it('refuses key names and a TTL attribute other than the settings, naming each and the fix', () => {
    const errors = synthErrors(outboxOn((s) => tenantTable(s)).app);
    assert.equal(errors.length, 3, errors.join('\n'));
    assert.match(errors[0], /table "app" does not match keyNames\.partitionKey: configured "PK", the table's partition key is "tenant_id"\. Set keyNames: \{ partitionKey: 'tenant_id' \}/);
    assert.match(errors[1], /keyNames\.sortKey: configured "SK", the table's sort key is "entity_id"/);
    assert.match(errors[2], /has TTL on "expires_at", but keyNames\.ttlAttribute is "ExpiresAt": set keyNames: \{ ttlAttribute: 'expires_at' \}/);
  });

  it('refuses a stream without new images, a numeric key and a missing index', () => {
    const { app } = outboxOn(
      (s) => tenantTable(s, { partitionKey: { name: 'tenant_id', type: NUMBER }, stream: dynamodb.StreamViewType.KEYS_ONLY }, false),
      TENANT_KEYS,
    );
    const errors = synthErrors(app).join('\n');
    assert.match(errors, /its partition key "tenant_id" is of type N, and the outbox writes its keys as strings/);
    assert.match(errors, /has a stream of view type KEYS_ONLY, and the publisher reads each item from its record's new image/);
    assert.match(errors, /has no index OutboxSweepIndex \(its global secondary indexes: none\).*add the global secondary index OutboxSweepIndex keyed SweepShard \(STRING\) \/ SweepDueAt \(NUMBER\)/);
  });

  it('refuses an index keyed otherwise', () => {
    const { app } = outboxOn((s) => {
      const t = tenantTable(s, {}, false);
      t.addGlobalSecondaryIndex({ indexName: 'OutboxSweepIndex', partitionKey: { name: 'shard', type: STRING }, sortKey: { name: 'SweepDueAt', type: STRING } });
      return t;
    }, TENANT_KEYS);
    assert.match(synthErrors(app).join('\n'), /its index OutboxSweepIndex has partition key "shard" and has SweepDueAt of type S, and the sweeper needs SweepShard \(STRING\) \/ SweepDueAt \(NUMBER\)/);
  });

  it('refuses a table without a stream when the construct is built, saying what to set', () => {
    assert.throws(() => outboxOn((s) => tenantTable(s, { stream: undefined }), TENANT_KEYS), /table "app" has no stream.*set stream: dynamodb\.StreamViewType\.NEW_IMAGE/);
  });

  it('warns, without failing, when TTL is off', () => {
    const { app, stack } = outboxOn((s) => tenantTable(s, { timeToLiveAttribute: undefined }), TENANT_KEYS);
    assert.deepEqual(synthErrors(app), []);
    Annotations.fromStack(stack).hasWarning('/Stack/Outbox', Match.stringLikeRegexp('table "app" has TTL off: SENT items are never deleted'));
  });

  it('checks a TableV2 alike', () => {
    const { app } = outboxOn(
      (s) =>
        new dynamodb.TableV2(s, 'App', {
          partitionKey: { name: 'PK', type: STRING },
          sortKey: { name: 'SK', type: STRING },
          dynamoStream: dynamodb.StreamViewType.NEW_IMAGE,
          timeToLiveAttribute: 'ExpiresAt',
        }),
    );
    assert.match(synthErrors(app).join('\n'), /table "Stack\/App" has no index OutboxSweepIndex/);
  });

  it('leaves an imported table to the functions', () => {
    const { app } = outboxOn((s) =>
      dynamodb.Table.fromTableAttributes(s, 'App', { tableName: 'app', tableStreamArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000' }),
    );
    assert.deepEqual(synthErrors(app), []);
  });
});

describe('code, function by function', () => {
  it('takes an image for one function and the asset directory for the others', () => {
    const stack = new cdk.Stack(new cdk.App(), 'Stack', { env: ENV });
    const repository = ecr.Repository.fromRepositoryName(stack, 'Repo', 'outbox-publisher');
    new Outbox(stack, 'Outbox', { code: { publisher: lambda.Code.fromEcrImage(repository, { tagOrDigest: 'v1' }) }, assetDir: fakeAssetDir() });
    const t = Template.fromStack(stack);
    const fn = (name: string) => Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: name } }))[0].Properties;
    assert.equal(fn('outbox-publisher').PackageType, 'Image');
    assert.equal(fn('outbox-publisher').Runtime, undefined);
    assert.equal(fn('outbox-publisher').Handler, undefined);
    assert.equal(fn('outbox-sweeper').Runtime, 'provided.al2023');
    assert.equal(fn('outbox-sweeper').Handler, 'bootstrap');
  });
});
