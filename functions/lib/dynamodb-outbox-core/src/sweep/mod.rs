//! The sweeper: recovers `PENDING` messages the stream path did not finish — a crash
//! between publish and mark, a destination that was down, a record that aged out of
//! the stream.
//!
//! It costs almost nothing when nothing is stuck: pending items carry `SweepShard`
//! and `SweepDueAt`, which put them in the sparse index `OutboxSweepIndex`; `SENT` and
//! `FAILED` items do not. A sweep queries each of the 16 shards for items due by now
//! (`KEYS_ONLY`), so with nothing stuck it reads 16 empty index partitions and no
//! table item, whatever the size of the table.
//!
//! For each due key the sweeper *claims* the item with one conditional update (still
//! `PENDING`, `SweepDueAt` unchanged since the query) that increments `RetryCount`,
//! moves `SweepDueAt` past the end of this invocation (a lease: a concurrent sweeper
//! will not take it) and returns the whole item. It then publishes through the same
//! path as the stream publisher ([`Publisher::process_under_claims`]), which marks it
//! `SENT`. A failed attempt records `LastError` and the next due time, exponential
//! backoff with jitter; past the attempt limit the item is dead-lettered and marked
//! `FAILED`. Both writes are conditional on the claim (`SweepDueAt` still the lease):
//! an item redriven during the attempt is left alone (`claims_lost`).
//!
//! Minimal producers write no index attributes (and foreign producers may write
//! values no sweep claims); [`ScanMode::On`] adopts their items into the index with a
//! bounded parallel scan that continues where the last sweep stopped — the cursors
//! are saved in the table, so a cold start continues too.
//!
//! Each aggregate's order holds across the sweep: an aggregate's due keys share a
//! chunk, claimed and published in waves of a few keys of each aggregate
//! ([`crate::policy::Waves`]: a failed sweep charges an attempt to one wave of a
//! backlog, not all of it), a later message never goes before an earlier one
//! that this sweep could not claim or that failed, and a rescheduled message is never
//! due before its earlier siblings ([`crate::policy::next_due_times`]).
//!
//! The sweep is split by concern: `config` (what the environment says:
//! [`SweeperConfig`]), `run` (find due keys, claim, publish, reschedule), `adopt` (scan
//! mode), `handler` (one Lambda invocation: [`handle_scheduled_event`]); every decision it makes is a plain function in
//! [`crate::policy`].

mod adopt;
mod claim;
mod config;
mod group;
mod handler;
mod run;
mod settle;

pub use adopt::{PassSummary, adopt_pass};
pub use config::{ScanMode, SweepLimits, SweeperConfig, vars};
pub use group::{GroupError, SweepGroup};
pub use handler::handle_scheduled_event;

use crate::policy::{Budget, chunk_due};
use crate::ports::{MessageSink, OutboxStore, SweepStore};
use crate::publish::Publisher;
use crate::schema::ItemKey;
use futures::StreamExt;
use std::collections::HashSet;
use serde::Serialize;

/// What one sweep did, for logs, metrics and the Lambda response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepSummary {
    /// Due keys read from the index.
    pub found: usize,
    /// Items claimed for an attempt.
    pub claimed: usize,
    /// Published by this sweep (metric `RecoveredBySweeper`).
    pub published: usize,
    /// Of those, marked `SENT` by this sweep (the others were finished concurrently
    /// by the publisher, or the mark failed and the lease will bring them back).
    pub marked: usize,
    /// Dead-lettered and marked `FAILED`.
    pub failed: usize,
    /// Attempts that failed and were rescheduled with backoff (metric `SweepRetries`).
    pub retried: usize,
    /// Not attempted: finished or claimed by someone else since the query, left for
    /// the next sweep by the time budget, the per-run bound or behind an earlier
    /// message of its aggregate that did not go (never claimed), or a store error.
    pub skipped: usize,
    /// Unindexed items adopted into the index (scan mode; metric `RecoveredByScan`).
    pub adopted: usize,
    /// Index items read by the queries (their `ScannedCount`).
    pub index_items_read: u64,
    /// Table items read by the adoption scan (its `ScannedCount`; 0 with scan mode off).
    pub scan_items_read: u64,
    /// Index queries made.
    pub index_queries: usize,
    /// Age of the oldest message found due: from its `CreatedAt` when claimed, else
    /// how long it has been due (a lower bound). Messages waiting out a backoff are
    /// counted when they come due again. Meaningful only when every shard was read
    /// (`unread_shards == 0`).
    pub oldest_pending_age_ms: Option<i64>,
    /// Index shards whose query failed: the sweep could not see what is due there, so
    /// it cannot say that nothing is pending (the age metric is left out).
    pub unread_shards: usize,
    /// Store requests that failed — index queries, scan pages, claims, reschedules,
    /// scan cursors (metric `SweepErrors`). Any makes the invocation fail, so that the
    /// function's `Errors` metric shows a sweeper that cannot do its work.
    pub errors: usize,
    /// Poison whose claim this sweep lost during its attempt — finished by someone
    /// else, or redriven by an operator (and perhaps claimed by another sweep) — so
    /// it was not marked `FAILED`: the redrive stands. Not counted in `failed`.
    pub claims_lost: usize,
    /// FIFO messages held, their attempts charged, because the order fence could not
    /// read their aggregates' pending messages (metric `FenceUnread`; also counted in
    /// `retried`).
    pub fence_unread: usize,
    /// Payloads written to S3 instead of sent inline, dead-letter claim checks
    /// included (metric `PayloadsOffloaded`).
    pub offloaded: usize,
    /// Requests of the order fence's reads that answered (metric `FenceReads`).
    pub fence_reads: usize,
}

/// The sweeper with its dependencies.
#[derive(Debug)]
pub struct Sweeper<K, S> {
    /// The publish path (and the store, which also serves the sweep, and the clock).
    pub publisher: Publisher<K, S>,
    /// Retry policy, scan mode, bounds.
    pub config: SweeperConfig,
}

/// One sweep's budget, with the instant (on the sweeper's clock) it stops starting
/// new work.
#[derive(Debug, Clone, Copy)]
struct Window {
    budget: Budget,
    stop_at_ms: i64,
    /// The worker's share of the index.
    group: SweepGroup,
}

impl<K, S> Sweeper<K, S> {
    /// A sweeper around a publish path.
    pub fn new(publisher: Publisher<K, S>, config: SweeperConfig) -> Self {
        Sweeper { publisher, config }
    }

    fn store(&self) -> &S {
        &self.publisher.store
    }

    fn expired(&self, window: &Window) -> bool {
        crate::policy::expired(window.stop_at_ms, self.publisher.clock.now_ms())
    }
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// One sweep: adopt unindexed items (scan mode), then rounds of finding due keys
    /// in every shard and claiming and publishing them chunk by chunk, while more is
    /// due than a round takes, a round claims something and the budget lasts.
    pub async fn sweep(&self, budget: Budget) -> SweepSummary {
        self.sweep_group(budget, SweepGroup::ALL).await
    }

    /// One worker's sweep: its share of the index's shards ([`SweepGroup`]), and the
    /// backstop scan for worker 0 only.
    pub async fn sweep_group(&self, budget: Budget, group: SweepGroup) -> SweepSummary {
        let window = Window {
            budget,
            stop_at_ms: budget.stop_at_ms(self.publisher.clock.now_ms()),
            group,
        };
        let mut summary = SweepSummary::default();
        let scan = self.config.scan_mode.scan_bounds(&self.config.limits);
        if let Some(bounds) = scan.filter(|_| group.scans()) {
            self.adopt_unindexed(bounds, &window, &mut summary).await;
        }
        // No count of rounds: the time budget ends a sweep, so a backlog drains at what
        // a worker can claim and publish in its window (docs/scale.md).
        let mut tried = HashSet::new();
        for round in 1usize.. {
            let claimed_before = summary.claimed;
            let (left, more) = Box::pin(self.round(&window, &mut tried, &mut summary)).await;
            let no_progress = summary.claimed == claimed_before;
            if (left == 0 && !more) || no_progress || self.expired(&window) {
                // What this sweep leaves for the next one.
                summary.skipped += left;
                break;
            }
            tracing::info!(round, left, "more is due than a round takes: reading the index again");
        }
        tracing::info!(
            found = summary.found,
            claimed = summary.claimed,
            published = summary.published,
            marked = summary.marked,
            failed = summary.failed,
            retried = summary.retried,
            skipped = summary.skipped,
            adopted = summary.adopted,
            index_items_read = summary.index_items_read,
            scan_items_read = summary.scan_items_read,
            oldest_pending_age_ms = summary.oldest_pending_age_ms.unwrap_or(0),
            unread_shards = summary.unread_shards,
            errors = summary.errors,
            claims_lost = summary.claims_lost,
            "sweep done"
        );
        summary
    }

    /// One round: due keys of every shard, at most `max_items` of them claimed and
    /// published chunk by chunk, up to `chunk_concurrency` chunks at once. Returns how
    /// many due keys it left (beyond `max_items`, or not reached before the budget ran
    /// out), and whether the index may hold more than it read. Adds the keys it tried
    /// to claim to `tried`.
    async fn round(
        &self,
        window: &Window,
        tried: &mut HashSet<ItemKey>,
        summary: &mut SweepSummary,
    ) -> (usize, bool) {
        let (due, more) = self.due_keys(window, tried, summary).await;
        let limits = self.config.limits;
        let (chunks, left) = chunk_due(due, limits.max_items, limits.chunk);
        // Chunks never share an aggregate (`chunk_due`), so running several at once
        // keeps each aggregate's order: what one chunk does, no other waits on.
        let attempts = chunks.iter().map(|keys| async move {
            let mut part = SweepSummary::default();
            if self.expired(window) {
                return (part, keys.len(), Vec::new());
            }
            // Boxed: each chunk's future holds the whole publish path; unboxed, the
            // Lambda binary's future is too deep for the compiler's layout queries
            // (see "Future depth" in the `dynamodb-outbox` crate docs).
            let keys_tried = Box::pin(self.attempt(keys, window, &mut part)).await;
            (part, 0, keys_tried)
        });
        let done: Vec<(SweepSummary, usize, Vec<ItemKey>)> = futures::stream::iter(attempts)
            .buffered(limits.chunk_concurrency.max(1))
            .collect()
            .await;
        let mut unreached = 0;
        for (part, n, keys_tried) in done {
            summary.absorb(part);
            unreached += n;
            tried.extend(keys_tried);
        }
        if unreached > 0 {
            tracing::info!(left = unreached, "time budget used up; the next sweep continues");
        }
        (left + unreached, more)
    }
}

impl SweepSummary {
    /// Adds what another part of the sweep (a chunk) did.
    fn absorb(&mut self, part: SweepSummary) {
        self.found += part.found;
        self.claimed += part.claimed;
        self.published += part.published;
        self.marked += part.marked;
        self.failed += part.failed;
        self.retried += part.retried;
        self.skipped += part.skipped;
        self.adopted += part.adopted;
        self.index_items_read += part.index_items_read;
        self.scan_items_read += part.scan_items_read;
        self.index_queries += part.index_queries;
        self.oldest_pending_age_ms = self.oldest_pending_age_ms.max(part.oldest_pending_age_ms);
        self.unread_shards += part.unread_shards;
        self.errors += part.errors;
        self.claims_lost += part.claims_lost;
        self.fence_unread += part.fence_unread;
        self.offloaded += part.offloaded;
        self.fence_reads += part.fence_reads;
    }
}

#[cfg(test)]
mod tests;
