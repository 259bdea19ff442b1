// The sweeper's scan mode (OUTBOX_SWEEP_SCAN_MODE): off | backstop | on, `off` by default
// (a scan reads business items too; outbox-ops reconcile after a lost stream range) —
// `backstop` is the bounded scan (one page of <= 100 items per sweep, from a cursor
// saved in the table) that finds pending items no index knows about. The old booleans
// still work: true is `on`, false is `off` (no backstop). Under `backstop` and `on` the
// sweeper may Scan the table and PutItem its scan cursors (PK = OUTBOX#SWEEPER only);
// under `off`, neither.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { settingsFromContext } from '../example/context.ts';
import { DEFAULTS, resolveSettings } from '../example/settings.ts';
import { asList, logicalId, statementsOf, synth } from './helpers.ts';

const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

const sweeperEnv = (t: Template): Record<string, string> => {
  const fn = Object.values(t.findResources('AWS::Lambda::Function')).find((r) => r.Properties.FunctionName === 'outbox-sweeper')!;
  return fn.Properties.Environment.Variables;
};

/** Resource and condition of every sweeper statement that allows `action`. */
const sweeperGrants = (t: Template, action: string) =>
  statementsOf(t, 'outbox-sweeper')
    .filter((s) => asList(s.Action as string | string[]).includes(action))
    .map((s) => ({ Resource: s.Resource, ...(s.Condition ? { Condition: s.Condition } : {}) }));

const CURSOR_CONDITION = {
  'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['OUTBOX#SWEEPER'] },
  Null: { 'dynamodb:LeadingKeys': 'false' },
};

describe('sweepScanMode: the setting', () => {
  it('is off by default (a scan reads business items too)', () => {
    assert.equal(DEFAULTS.sweepScanMode, 'off');
    assert.equal(resolveSettings().sweepScanMode, 'off');
  });
  for (const mode of ['off', 'backstop', 'on'] as const) {
    it(`takes ${mode}`, () => assert.equal(resolveSettings({ sweepScanMode: mode }).sweepScanMode, mode));
  }
  it('takes the old booleans: true is on, false is off (no backstop)', () => {
    assert.equal(resolveSettings({ sweepScanMode: true }).sweepScanMode, 'on');
    assert.equal(resolveSettings({ sweepScanMode: false }).sweepScanMode, 'off');
  });
  for (const bad of ['yes', 'ON', 'Backstop', 'scan', 1, 0, null]) {
    it(`refuses ${JSON.stringify(bad)}, naming the setting and its values`, () => {
      assert.throws(
        () => resolveSettings({ sweepScanMode: bad as never }),
        /sweepScanMode must be off, backstop or on \(or the old true = on, false = off\), got/,
      );
    });
  }
  it('reads `-c outbox:sweepScanMode=<value>` and cdk.json values, the old booleans too', () => {
    const from = (v: unknown) => resolveSettings(settingsFromContext((k) => (k === 'outbox:sweepScanMode' ? v : undefined), {})).sweepScanMode;
    assert.equal(from('off'), 'off');
    assert.equal(from('backstop'), 'backstop');
    assert.equal(from('on'), 'on');
    assert.equal(from('true'), 'on');
    assert.equal(from('false'), 'off');
    assert.equal(from(true), 'on');
    assert.equal(from(false), 'off');
    assert.equal(from(undefined), 'off');
    assert.equal(from(''), 'off');
    assert.throws(() => from('maybe'), /sweepScanMode must be off, backstop or on/);
  });
});

describe('sweepScanMode: the sweeper', () => {
  const cases: Array<[string, Parameters<typeof synth>[0], 'off' | 'backstop' | 'on']> = [
    ['the default', {}, 'off'],
    ['backstop', { sweepScanMode: 'backstop' }, 'backstop'],
    ['on', { sweepScanMode: 'on' }, 'on'],
    ['off', { sweepScanMode: 'off' }, 'off'],
    ['the old true', { sweepScanMode: true }, 'on'],
    ['the old false', { sweepScanMode: false }, 'off'],
  ];
  for (const [name, settings, mode] of cases) {
    describe(`${name}`, () => {
      let t: Template;
      let table: { 'Fn::GetAtt': string[] };
      before(() => {
        t = synth(settings);
        table = getAtt(logicalId(t, 'AWS::DynamoDB::Table', { TableName: 'outbox-table' }));
      });
      it(`sets OUTBOX_SWEEP_SCAN_MODE=${mode}`, () => {
        assert.equal(sweeperEnv(t).OUTBOX_SWEEP_SCAN_MODE, mode);
        t.hasResourceProperties('AWS::Lambda::Function', {
          FunctionName: 'outbox-sweeper',
          Environment: { Variables: Match.objectLike({ OUTBOX_SWEEP_SCAN_MODE: mode }) },
        });
      });
      if (mode === 'off') {
        it('grants neither Scan nor PutItem', () => {
          assert.deepEqual(sweeperGrants(t, 'dynamodb:Scan'), []);
          assert.deepEqual(sweeperGrants(t, 'dynamodb:PutItem'), []);
        });
      } else {
        it('grants Scan on the table and PutItem on the scan cursors (PK = OUTBOX#SWEEPER) only', () => {
          assert.deepEqual(sweeperGrants(t, 'dynamodb:Scan'), [{ Resource: table }]);
          assert.deepEqual(sweeperGrants(t, 'dynamodb:PutItem'), [{ Resource: table, Condition: CURSOR_CONDITION }]);
        });
      }
      it('gives no other function Scan or PutItem on the outbox table', () => {
        for (const fn of ['outbox-publisher', 'outbox-recovery']) {
          const actions = statementsOf(t, fn).flatMap((s) => asList(s.Action as string | string[]));
          assert.ok(!actions.includes('dynamodb:Scan') && !actions.includes('dynamodb:PutItem'), fn);
        }
      });
    });
  }
});
