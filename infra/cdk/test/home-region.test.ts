// Global tables (docs/global-tables.md): the region a deployment owns, the default home region of
// items without HomeRegion, the publisher's filter and the functions' environment; names global to
// the account carry the region on a global table. The Terraform module's tests check the same
// (modules/outbox/tests/home_region.tftest.hcl).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Template } from 'aws-cdk-lib/assertions';
import { Outbox } from '../lib/index.ts';
import { STREAM_FILTER_FILE, canonicalJson, homeStreamFilter, loadStreamFilter, resolveOutboxSettings } from '../lib/config.ts';
import { settingsFromContext } from '../example/context.ts';
import { fakeAssetDir, synth } from './helpers.ts';

const FUNCTIONS = ['outbox-publisher', 'outbox-sweeper', 'outbox-recovery'];
const REPLICA_STREAM = 'arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000';

function envOf(t: Template, functionName: string): Record<string, unknown> {
  const fn = Object.values(t.findResources('AWS::Lambda::Function')).find((r) => r.Properties.FunctionName === functionName);
  assert.ok(fn, functionName);
  return fn.Properties.Environment.Variables;
}
function filterOf(t: Template): { Filters: unknown[] } {
  const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).filter((m) => m.Properties.FilterCriteria);
  assert.equal(mappings.length, 1);
  return mappings[0].Properties.FilterCriteria;
}
const homeOf = (f: unknown) => JSON.parse((f as { Pattern: string }).Pattern).dynamodb.NewImage.HomeRegion;

/** A stack of `env` with the outbox attached to a replica of a global table (or a table of its own). */
function outboxStack(env: { account?: string; region?: string } | undefined, props: Record<string, unknown> = {}): Template {
  const app = new cdk.App();
  const stack = new cdk.Stack(app, 'Region', { env });
  const table = props.attach
    ? dynamodb.Table.fromTableAttributes(stack, 'Replica', { tableArn: REPLICA_STREAM.split('/stream/')[0], tableStreamArn: REPLICA_STREAM })
    : undefined;
  new Outbox(stack, 'Outbox', { assetDir: fakeAssetDir(), table, ...props });
  return Template.fromStack(stack);
}

describe('home region: the publisher filter', () => {
  it('adds HomeRegion.S = region to every filter of the file, and HomeRegion.S exists:false, in every region', () => {
    const base = { Filters: [{ Pattern: '{"eventName":["INSERT"],"dynamodb":{"NewImage":{"Status":{"S":["PENDING"]}}}}' }, { Pattern: '{"eventName":["MODIFY"]}' }] };
    const f = homeStreamFilter(base, 'eu-west-1').Filters.map((x) => JSON.parse(x.Pattern));
    assert.deepEqual(f, [
      { eventName: ['INSERT'], dynamodb: { NewImage: { Status: { S: ['PENDING'] }, HomeRegion: { S: ['eu-west-1'] } } } },
      { eventName: ['MODIFY'], dynamodb: { NewImage: { HomeRegion: { S: ['eu-west-1'] } } } },
      { eventName: ['INSERT'], dynamodb: { NewImage: { Status: { S: ['PENDING'] }, HomeRegion: { S: [{ exists: false }] } } } },
      { eventName: ['MODIFY'], dynamodb: { NewImage: { HomeRegion: { S: [{ exists: false }] } } } },
    ]);
  });
  it('writes patterns as Terraform does: keys sorted, no spaces, <>& escaped', () => {
    const [homed, unhomed] = homeStreamFilter(loadStreamFilter(), 'eu-west-1').Filters;
    assert.equal(
      homed.Pattern,
      '{"dynamodb":{"NewImage":{"HomeRegion":{"S":["eu-west-1"]},"ItemType":{"S":["PENDING_MESSAGE"]},"Status":{"S":["PENDING"]}}},"eventName":["INSERT"]}',
    );
    assert.equal(
      unhomed.Pattern,
      '{"dynamodb":{"NewImage":{"HomeRegion":{"S":[{"exists":false}]},"ItemType":{"S":["PENDING_MESSAGE"]},"Status":{"S":["PENDING"]}}},"eventName":["INSERT"]}',
    );
    assert.equal(canonicalJson({ b: ['<&>'], a: 1 }), '{"a":1,"b":["\\u003c\\u0026\\u003e"]}');
  });
  it('keeps infra/stream-filter.json the base: it has no region clause of its own', () => {
    assert.ok(!fs.readFileSync(STREAM_FILTER_FILE, 'utf8').includes('HomeRegion'));
  });
  it('refuses a file whose filters, doubled by the region clauses, exceed Lambda\'s 5', () => {
    const three = { Filters: [1, 2, 3].map((i) => ({ Pattern: `{"eventName":["E${i}"]}` })) };
    assert.throws(() => homeStreamFilter(three, 'eu-west-1'), /more than 5 filters/);
    assert.equal(homeStreamFilter({ Filters: three.Filters.slice(0, 2) }, 'eu-west-1').Filters.length, 4);
  });
});

describe('home region: deployments', () => {
  it('a single-region deployment owns its region and the items without HomeRegion', () => {
    const t = synth();
    assert.deepEqual(filterOf(t).Filters.map(homeOf), [{ S: ['eu-west-1'] }, { S: [{ exists: false }] }]);
    for (const fn of FUNCTIONS) {
      const env = envOf(t, fn);
      assert.equal(env.OUTBOX_REGION, 'eu-west-1', fn);
      assert.equal(env.OUTBOX_DEFAULT_HOME_REGION, 'eu-west-1', fn);
    }
    const dashboards = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
    assert.equal(dashboards[0].Properties.DashboardName, 'outbox-dashboard');
    t.hasResourceProperties('AWS::IAM::ManagedPolicy', { ManagedPolicyName: 'outbox-producer' });
  });
  // Issue 36, finding 9: the filter does not name the default home region. Every region's
  // publisher receives the inserts without HomeRegion and decides at run time, from
  // OUTBOX_DEFAULT_HOME_REGION, whether they are its own, so moving the default home is a change
  // of that variable (docs/global-tables.md), not of the mapping. Before, only the default home's
  // filter had the unhomed clause: after the default home moved to this region, its publisher
  // never saw a minimal producer's insert.
  it('another default home region: the same filter as the default home\'s, and every function is told both regions', () => {
    const t = synth({ defaultHomeRegion: 'us-east-1' });
    assert.deepEqual(filterOf(t), filterOf(synth()));
    assert.deepEqual(filterOf(t).Filters.map(homeOf), [{ S: ['eu-west-1'] }, { S: [{ exists: false }] }]);
    assert.ok(!JSON.stringify(filterOf(t)).includes('us-east-1'), 'the filter never names the default home region');
    for (const fn of FUNCTIONS) {
      assert.deepEqual([envOf(t, fn).OUTBOX_REGION, envOf(t, fn).OUTBOX_DEFAULT_HOME_REGION], ['eu-west-1', 'us-east-1'], fn);
    }
  });
  it('the own region named as the default home: both filters', () => {
    assert.equal(filterOf(synth({ defaultHomeRegion: 'eu-west-1' })).Filters.length, 2);
  });
  it('a region-agnostic stack: the region is AWS::Region, and a named default home region changes no filter', () => {
    const agnostic = outboxStack(undefined);
    const f = filterOf(agnostic).Filters;
    assert.equal(f.length, 2);
    assert.ok(JSON.stringify(f[0]).includes('"Ref":"AWS::Region"'));
    assert.deepEqual(envOf(agnostic, 'outbox-publisher').OUTBOX_REGION, { Ref: 'AWS::Region' });
    assert.deepEqual(envOf(agnostic, 'outbox-publisher').OUTBOX_DEFAULT_HOME_REGION, { Ref: 'AWS::Region' });

    const named = outboxStack(undefined, { defaultHomeRegion: 'us-east-1' });
    assert.deepEqual(filterOf(named), filterOf(agnostic));
    assert.equal(named.toJSON().Conditions, undefined, 'no deploy-time condition on the default home region');
    assert.equal(envOf(named, 'outbox-sweeper').OUTBOX_DEFAULT_HOME_REGION, 'us-east-1');
  });
});

describe('home region: one region of a global table', () => {
  const global = { globalTableRegions: ['us-east-1', 'eu-west-1'], defaultHomeRegion: 'us-east-1', attach: true, prefix: 'shop' };
  it('reads the replica stream of its region, its own inserts and those without HomeRegion (eu-west-1 is not the default home: its publisher skips them)', () => {
    const t = outboxStack({ account: '123456789012', region: 'eu-west-1' }, global);
    const mapping = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).find((m) => m.Properties.FilterCriteria);
    assert.equal(mapping?.Properties.EventSourceArn, REPLICA_STREAM);
    assert.deepEqual(filterOf(t).Filters.map(homeOf), [{ S: ['eu-west-1'] }, { S: [{ exists: false }] }]);
  });
  it('in the default home region, the same clauses', () => {
    const t = outboxStack({ account: '123456789012', region: 'us-east-1' }, global);
    assert.deepEqual(filterOf(t).Filters.map(homeOf), [{ S: ['us-east-1'] }, { S: [{ exists: false }] }]);
    for (const fn of ['shop-publisher', 'shop-sweeper', 'shop-recovery']) {
      assert.deepEqual([envOf(t, fn).OUTBOX_REGION, envOf(t, fn).OUTBOX_DEFAULT_HOME_REGION], ['us-east-1', 'us-east-1'], fn);
    }
  });
  it('names what is global to the account with the region (the producer policy, the dashboard); regional names stay', () => {
    const alarmTopic = sns.Topic.fromTopicArn(new cdk.Stack(), 'Ops', 'arn:aws:sns:eu-west-1:123456789012:ops');
    const t = outboxStack({ account: '123456789012', region: 'eu-west-1' }, { ...global, alarmTopic });
    t.hasResourceProperties('AWS::IAM::ManagedPolicy', { ManagedPolicyName: 'shop-producer-eu-west-1' });
    t.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'shop-dashboard-eu-west-1' });
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'shop-publisher' });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-OutboxDlqNotEmpty' });
    // The roles are not named (CloudFormation makes their names unique): nothing to collide.
    for (const r of Object.values(t.findResources('AWS::IAM::Role'))) assert.equal(r.Properties.RoleName, undefined);
  });
  it('refuses a global table without the replica, in a region-agnostic stack, or outside its regions', () => {
    assert.throws(() => outboxStack({ region: 'eu-west-1' }, { ...global, attach: false }), /give `table`/);
    assert.throws(() => outboxStack(undefined, global), /concrete region/);
    assert.throws(() => outboxStack({ region: 'ap-south-1' }, global), /not one of globalTableRegions/);
  });
  it('refuses a global table without the default home region, or with one outside it', () => {
    assert.throws(() => resolveOutboxSettings({ globalTableRegions: ['us-east-1', 'eu-west-1'] }), /defaultHomeRegion is required/);
    assert.throws(() => resolveOutboxSettings({ globalTableRegions: ['us-east-1', 'eu-west-1'], defaultHomeRegion: 'ap-south-1' }), /one of globalTableRegions/);
    assert.throws(() => resolveOutboxSettings({ globalTableRegions: ['eu-west-1'], defaultHomeRegion: 'eu-west-1' }), /at least one other/);
    assert.throws(() => resolveOutboxSettings({ defaultHomeRegion: 'Europe' }), /AWS region name/);
  });
  it('the example app reads both settings from the context', () => {
    const ctx: Record<string, unknown> = { 'outbox:defaultHomeRegion': 'us-east-1', 'outbox:globalTableRegions': 'us-east-1, eu-west-1' };
    const s = settingsFromContext((k) => ctx[k], {});
    assert.equal(s.defaultHomeRegion, 'us-east-1');
    assert.deepEqual(s.globalTableRegions, ['us-east-1', 'eu-west-1']);
    ctx['outbox:globalTableRegions'] = '["us-east-1","eu-west-1"]';
    assert.deepEqual(settingsFromContext((k) => ctx[k], {}).globalTableRegions, ['us-east-1', 'eu-west-1']);
  });
});

describe('home region: a stack per region on a TableV2 with replicas (infra/README.md, "On a global table")', () => {
  it('the table\'s stack reads its own stream; the replica\'s stack the replica\'s stream in its region', () => {
    const app = new cdk.App();
    const common = { globalTableRegions: ['us-east-1', 'eu-west-1'], defaultHomeRegion: 'us-east-1', assetDir: fakeAssetDir() };
    const home = new cdk.Stack(app, 'Outbox-us-east-1', { env: { account: '123456789012', region: 'us-east-1' } });
    const table = new dynamodb.TableV2(home, 'Table', {
      tableName: 'outbox-table',
      partitionKey: { name: 'PK', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'SK', type: dynamodb.AttributeType.STRING },
      dynamoStream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      timeToLiveAttribute: 'ExpiresAt',
      globalSecondaryIndexes: [
        {
          indexName: 'OutboxSweepIndex',
          partitionKey: { name: 'SweepShard', type: dynamodb.AttributeType.STRING },
          sortKey: { name: 'SweepDueAt', type: dynamodb.AttributeType.NUMBER },
          projectionType: dynamodb.ProjectionType.KEYS_ONLY,
        },
      ],
      replicas: [{ region: 'eu-west-1' }],
    });
    new Outbox(home, 'Outbox', { ...common, table });
    const eu = new cdk.Stack(app, 'Outbox-eu-west-1', { env: { account: '123456789012', region: 'eu-west-1' } });
    new Outbox(eu, 'Outbox', {
      ...common,
      table: dynamodb.TableV2.fromTableAttributes(eu, 'Replica', { tableName: 'outbox-table', tableStreamArn: REPLICA_STREAM }),
    });

    const h = Template.fromStack(home);
    const replicas = Object.values(h.findResources('AWS::DynamoDB::GlobalTable'))[0].Properties.Replicas.map((r: { Region: string }) => r.Region).sort();
    assert.deepEqual(replicas, ['eu-west-1', 'us-east-1']);
    const homeMapping = Object.values(h.findResources('AWS::Lambda::EventSourceMapping')).find((m) => m.Properties.FilterCriteria);
    assert.deepEqual(homeMapping?.Properties.EventSourceArn, { 'Fn::GetAtt': [Object.keys(h.findResources('AWS::DynamoDB::GlobalTable'))[0], 'StreamArn'] });
    assert.deepEqual(filterOf(h).Filters.map(homeOf), [{ S: ['us-east-1'] }, { S: [{ exists: false }] }]);

    const e = Template.fromStack(eu);
    const euMapping = Object.values(e.findResources('AWS::Lambda::EventSourceMapping')).find((m) => m.Properties.FilterCriteria);
    assert.equal(euMapping?.Properties.EventSourceArn, REPLICA_STREAM);
    assert.deepEqual(filterOf(e).Filters.map(homeOf), [{ S: ['eu-west-1'] }, { S: [{ exists: false }] }]);
    e.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'outbox-dashboard-eu-west-1' });
    h.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'outbox-dashboard-us-east-1' });
  });
});
