//! How the stacks choose `sweep_workers` and `sweep_shards` from the expected peak
//! (infra/contract/settings.json `sweep_sizing`; the CDK's `SWEEP_SIZING`, the Terraform
//! module's `local.sweep_sizing`): the same rule here, so that what this model lifts a
//! deployment to is what the stacks deploy. Its numbers are the contract's, and the
//! contract's rates are this model's (both checked by the tests).
//!
//! Enough workers to drain an outage's backlog within [`DRAIN_WITHIN_OUTAGE`] times the
//! outage, and enough shards that in an outage at the peak every message entering the
//! index (1 write unit) and the workers' failed attempts stay under
//! [`SHARD_WRITE_UNITS`] a second per index partition.

/// Index write units a second each shard is sized for: AWS's 1,000 per partition less
/// one aggregate's 200 messages a second, room for uneven hashing (an aggregate's items
/// share a shard).
pub const SHARD_WRITE_UNITS: f64 = 800.0;
/// Index write units a failed attempt costs: its claim and its reschedule each move the
/// item's `SweepDueAt` (2 each).
pub const ATTEMPT_INDEX_WRITES: f64 = 4.0;
/// Attempts a second one worker makes while it works ([`super::sweep_worker_rate`]).
pub const WORKER_ATTEMPTS_PER_SECOND: f64 = 2_222.0;
/// Messages a second one worker drains over a tick ([`super::drain_rate`]).
pub const WORKER_DRAIN_PER_SECOND: f64 = 1_778.0;
/// A backlog drains within this many times the outage that built it.
pub const DRAIN_WITHIN_OUTAGE: f64 = 20.0;
/// The fewest shards chosen: the 16 of before, so an upgrade keeps the count.
pub const MIN_SHARDS: u32 = 16;
/// The most workers: one EventBridge rule's five targets (`sweep_workers`, 1–5).
pub const MAX_WORKERS: u32 = 5;

/// The workers the stacks choose for `peak` messages a second.
pub fn sweep_workers(peak: f64) -> u32 {
    let needed = (peak / (DRAIN_WITHIN_OUTAGE * WORKER_DRAIN_PER_SECOND)).ceil();
    whole(needed).clamp(1, MAX_WORKERS)
}

/// The shards the stacks choose for `peak` messages a second swept by `workers`.
pub fn sweep_shards(peak: f64, workers: u32) -> u32 {
    whole((outage_index_writes(peak, workers) / SHARD_WRITE_UNITS).ceil()).max(MIN_SHARDS)
}

/// Index write units a second in an outage at `peak`: every message entering the
/// index, and each worker's failed attempts at its full rate.
pub fn outage_index_writes(peak: f64, workers: u32) -> f64 {
    peak + f64::from(workers) * WORKER_ATTEMPTS_PER_SECOND * ATTEMPT_INDEX_WRITES
}

/// A non-negative whole number of at most `u32::MAX` as one (NaN: 0).
fn whole(n: f64) -> u32 {
    if n >= f64::from(u32::MAX) {
        u32::MAX
    } else if n > 0.0 {
        // In range and whole: the cast is exact.
        n as u32
    } else {
        0
    }
}
