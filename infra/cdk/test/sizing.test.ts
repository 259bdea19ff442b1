// The sweeper's size from the expected peak (issue 38, item 3): unless given, sweepShards keeps
// every index partition under AWS's 1,000 write units a second in a destination outage at the
// peak, and sweepWorkers drains that outage's backlog at a twentieth of the peak. The Terraform
// module's twin: modules/outbox/tests/sizing.tftest.hcl.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveOutboxSettings } from '../lib/config.ts';
import { SWEEP_SIZING } from '../lib/sizing.ts';
import { DEPLOYMENT_CONTRACT } from '../lib/contract.ts';
import { synth } from './helpers.ts';

/** AWS's write units a second per partition (DynamoDB developer guide, "Burst and adaptive capacity"). */
const PARTITION_WRITE_UNITS = 1_000;

/**
 * Index write units a second on each shard in an outage at `peak`: every message enters the index
 * (1 unit), and each worker's failed attempts claim (2) and reschedule (2) at its full rate.
 */
const outageWritesPerShard = (peak: number, s: { sweepShards: number; sweepWorkers: number }) =>
  (peak + s.sweepWorkers * SWEEP_SIZING.worker_attempts_per_second * 4) / s.sweepShards;

describe('sweeper sizing from expectedPeakMessagesPerSecond', () => {
  it("uses the contract's numbers", () => {
    const { $comment: _, ...sizing } = (DEPLOYMENT_CONTRACT as unknown as { sweep_sizing: Record<string, unknown> }).sweep_sizing;
    assert.deepEqual(SWEEP_SIZING, sizing);
  });

  it('keeps the defaults of before: 16 shards, one worker', () => {
    const s = resolveOutboxSettings();
    assert.deepEqual([s.expectedPeakMessagesPerSecond, s.sweepShards, s.sweepWorkers], [3_000, 16, 1]);
    assert.ok(outageWritesPerShard(s.expectedPeakMessagesPerSecond, s) <= 800);
  });

  it('at 100,000 msg/s gives enough shards that an outage stays under the per-partition limit, and workers that drain at 5,000/s', () => {
    const s = resolveOutboxSettings({ expectedPeakMessagesPerSecond: 100_000 });
    assert.deepEqual([s.sweepShards, s.sweepWorkers], [159, 3]);
    const perShard = outageWritesPerShard(100_000, s);
    assert.ok(perShard <= 0.8 * PARTITION_WRITE_UNITS, `${perShard} write units/s per shard`);
    assert.ok(s.sweepWorkers * SWEEP_SIZING.worker_drain_per_second >= 5_000);
    // What the stack deploys: the count in every function, a schedule target per worker.
    const t = synth({ expectedPeakMessagesPerSecond: 100_000 });
    for (const fn of ['publisher', 'sweeper', 'recovery']) {
      const f = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { FunctionName: `outbox-${fn}` } }))[0];
      assert.equal(f.Properties.Environment.Variables.OUTBOX_SWEEP_SHARDS, '159', fn);
    }
    assert.equal(Object.values(t.findResources('AWS::Events::Rule'))[0].Properties.Targets.length, 3);
  });

  it('holds for every peak it accepts', () => {
    for (let peak = 1; peak <= 700_000; peak += 997) {
      const s = resolveOutboxSettings({ expectedPeakMessagesPerSecond: peak });
      assert.ok(outageWritesPerShard(peak, s) <= 800 && s.sweepShards <= 1000, `peak ${peak}: ${s.sweepShards} shards`);
      assert.ok(s.sweepWorkers === 5 || s.sweepWorkers * SWEEP_SIZING.worker_drain_per_second >= peak / 20, `peak ${peak}`);
    }
    assert.throws(() => resolveOutboxSettings({ expectedPeakMessagesPerSecond: 700_001 }), /expectedPeakMessagesPerSecond/);
  });

  it('lets a given sweepShards or sweepWorkers win, the other still chosen', () => {
    const both = resolveOutboxSettings({ expectedPeakMessagesPerSecond: 100_000, sweepShards: 64, sweepWorkers: 2 });
    assert.deepEqual([both.sweepShards, both.sweepWorkers], [64, 2]);
    // Shards are chosen for the workers given: 5 workers' attempts need more room than 3.
    const workers = resolveOutboxSettings({ expectedPeakMessagesPerSecond: 100_000, sweepWorkers: 5 });
    assert.deepEqual([workers.sweepShards, workers.sweepWorkers], [181, 5]);
    assert.equal(resolveOutboxSettings({ expectedPeakMessagesPerSecond: 100_000, sweepShards: 64 }).sweepWorkers, 3);
    assert.throws(() => resolveOutboxSettings({ expectedPeakMessagesPerSecond: 100_000, sweepShardsPrevious: 159 }), /sweepShardsPrevious/);
  });
});
