// The sweeper's size from the expected peak. Pure code, tested without synthesizing (test/sizing.test.ts).

/**
 * How sweepWorkers and sweepShards follow from the expected peak when unset (docs/scale.md; the
 * Terraform module's local.sweep_sizing and outbox_devkit::scale::sizing the same, all checked
 * against infra/contract/settings.json):
 * enough workers to drain an outage's backlog within 20 times the outage, and enough shards that
 * in an outage at the peak every message entering the index (1 write unit: a KEYS_ONLY item under
 * 1 KB) and the workers' failed attempts (claim 2, reschedule 2) stay under 800 of AWS's 1,000
 * write units a second per partition. The other 200 are room for uneven hashing: an aggregate's
 * items share a shard, and its own table partition passes at most 200 messages a second. Never
 * below the 16 shards of before, so an upgrade keeps the count.
 */
export const SWEEP_SIZING = {
  shard_write_units: 800,
  attempt_index_writes: 4,
  /** outbox_devkit::scale::sweep_worker_rate; worker_drain_per_second: the same over a sweep's 48 s of each minute. */
  worker_attempts_per_second: 2222,
  worker_drain_per_second: 1778,
  drain_within_outage: 20,
  min_shards: 16,
} as const;

/** The workers and shards for `peak` messages a second, where not given. */
export function sweepSizing(peak: number, given: { sweepWorkers?: number | null; sweepShards?: number | null } = {}): { sweepWorkers: number; sweepShards: number } {
  const z = SWEEP_SIZING;
  const sweepWorkers = given.sweepWorkers ?? Math.min(5, Math.ceil(peak / (z.drain_within_outage * z.worker_drain_per_second)));
  const outageWrites = peak + sweepWorkers * z.worker_attempts_per_second * z.attempt_index_writes;
  const sweepShards = given.sweepShards ?? Math.max(z.min_shards, Math.ceil(outageWrites / z.shard_write_units));
  return { sweepWorkers, sweepShards };
}
