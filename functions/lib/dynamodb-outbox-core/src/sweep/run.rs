//! The I/O of one sweep: read due keys, claim, publish, reschedule. The decisions in
//! between are [`crate::policy`]'s.

use super::claim::Claims;
use super::settle::settle_all;
use super::{SweepSummary, Sweeper, Window};
use crate::policy::{
    Attempt, WAVE_PER_AGGREGATE, Waves, held_back, millis, next_ask, order_attempts,
};
use crate::ports::{DueKey, MessageSink, OutboxStore, PageToken, SweepStore};
use crate::publish::{Outcome, WorkItem};
use crate::schema::ItemKey;
use futures::StreamExt;
use std::collections::HashSet;

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Due keys of every shard, earliest first, but for those this sweep already
    /// `tried` to claim; and whether a shard may hold more than were read. Records
    /// how long the oldest has been due.
    pub(super) async fn due_keys(
        &self,
        window: &Window,
        tried: &HashSet<ItemKey>,
        summary: &mut SweepSummary,
    ) -> (Vec<DueKey>, bool) {
        let (due, more) = self.find_due(window, tried, summary).await;
        summary.found += due.len();
        for d in &due {
            let overdue = window.budget.now_ms.saturating_sub(d.due_at_ms);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(overdue));
        }
        (due, more)
    }

    /// Due keys of the worker's shards (of both counts while the count changes), at
    /// most about a round's worth ([`SweepLimits::max_items`](super::SweepLimits)):
    /// each shard asked for its share of what is missing, in passes, until the round
    /// has enough, every shard ran dry or the budget is used up ([`next_ask`]); and
    /// whether a shard may hold more. Up to
    /// [`SweepLimits::query_concurrency`](super::SweepLimits) shards are queried at
    /// once, so a thousand shards do not open a thousand requests; a shard whose
    /// query fails is counted as unread and not asked again this round.
    ///
    /// A key this sweep already `tried` to claim is passed over, not counted: the
    /// index lags its claims (a global secondary index is updated after the table),
    /// so the next round may still find them where they were, at the front of their
    /// shards; taken again, their claims would fail, and a round that claims nothing
    /// ends the sweep.
    async fn find_due(
        &self,
        window: &Window,
        tried: &HashSet<ItemKey>,
        summary: &mut SweepSummary,
    ) -> (Vec<DueKey>, bool) {
        let limits = self.config.limits;
        let now = window.budget.now_ms;
        let page = usize::try_from(limits.page_size).unwrap_or(1);
        let mut reads: Vec<ShardRead> = window
            .group
            .shards(&self.config.publisher.key_names.sweep_shards)
            .into_iter()
            .map(|shard| ShardRead { shard, start: None, open: true })
            .collect();
        let mut all = Vec::new();
        for pass in 0usize.. {
            let open = reads.iter().filter(|r| r.open).count();
            let ask = next_ask(limits.max_items, all.len(), open, page);
            // The first pass always runs: each shard's earliest key tells the age.
            if ask == 0 || (pass > 0 && self.expired(window)) {
                break;
            }
            let limit = i32::try_from(ask).unwrap_or(i32::MAX);
            let pages: Vec<_> = futures::stream::iter(reads.iter_mut().filter(|r| r.open).map(
                |r| async move {
                    let page = self.store().due_page(&r.shard, now, limit, r.start.take()).await;
                    (r, page)
                },
            ))
            .buffer_unordered(limits.query_concurrency.max(1))
            .collect()
            .await;
            for (read, page) in pages {
                summary.index_queries += 1;
                match page {
                    Ok(page) => {
                        summary.index_items_read += page.scanned;
                        all.extend(page.keys.into_iter().filter(|d| !tried.contains(&d.key)));
                        read.open = page.next.is_some();
                        read.start = page.next;
                    }
                    Err(e) => {
                        let shard = &read.shard;
                        tracing::error!(%shard, error = %e, "index query failed: this sweep cannot see what is due in the shard");
                        read.open = false;
                        summary.unread_shards += 1;
                        summary.errors += 1;
                    }
                }
            }
        }
        let more = reads.iter().any(|r| r.open);
        (all, more)
    }

    /// Claims a chunk of due keys, publishes what was claimed and may go now, and
    /// settles each item: in waves of a few keys of each aggregate, an aggregate
    /// leaving the chunk at its first message that did not go ([`Waves`]). Returns the
    /// keys it tried to claim.
    pub(super) async fn attempt(
        &self,
        keys: &[DueKey],
        window: &Window,
        summary: &mut SweepSummary,
    ) -> Vec<ItemKey> {
        let mut waves = Waves::new(keys, WAVE_PER_AGGREGATE);
        let mut finished: HashSet<ItemKey> = HashSet::new();
        let mut tried = Vec::new();
        loop {
            let wave = waves.next_wave();
            if wave.is_empty() {
                break;
            }
            tried.extend(wave.iter().map(|d| d.key.clone()));
            let stopped = self
                .attempt_wave(&wave, window, &mut finished, summary)
                .await;
            summary.skipped += waves.stop(&stopped);
            if self.expired(window) {
                summary.skipped += waves.stop_all();
                break;
            }
        }
        tried
    }

    /// One wave: claims its keys, publishes what was claimed and may go now, and
    /// settles each item. Adds what it finished to `finished` (the fence of a later
    /// wave must not wait behind them: the index may still list them for a while),
    /// and returns the aggregates that must not go on in this sweep.
    async fn attempt_wave(
        &self,
        keys: &[DueKey],
        window: &Window,
        finished: &mut HashSet<ItemKey>,
        summary: &mut SweepSummary,
    ) -> HashSet<String> {
        let now = window.budget.now_ms;
        let lease_until = now.saturating_add(millis(window.budget.lease));
        let Claims {
            mut attempts,
            conditions,
            gates,
        } = self.claim_all(keys, lease_until, summary).await;
        for a in attempts.iter().filter(|a| a.created_at > 0) {
            let age = now.saturating_sub(a.created_at);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(age));
        }
        order_attempts(&mut attempts);
        let holds = held_back(&attempts, &gates);
        let work = work_of(&attempts, &holds);
        let (outcomes, effort) = self
            .publisher
            .process_counted(&work, finished, &conditions)
            .await;
        summary.offloaded += effort.offloaded;
        summary.fence_reads += effort.fence_reads;
        let mut stopped: HashSet<String> = gates.iter().map(|g| g.aggregate.clone()).collect();
        stopped.extend(note_finished(&work, &outcomes, finished));
        let settle = settle_all(&attempts, holds, outcomes, summary);
        summary.retried += settle.len();
        stopped.extend(settle.iter().map(|s| s.attempt.key.pk.clone()));
        self.reschedule_all(&settle, now, lease_until, summary)
            .await;
        stopped
    }
}

/// Where a round's reading of one index shard stands.
struct ShardRead {
    shard: String,
    /// Where its next page starts.
    start: Option<PageToken>,
    /// Whether it may hold more due keys (no page said it was done, none failed).
    open: bool,
}

/// The work of the attempts no gate holds back, in publish order.
fn work_of(attempts: &[Attempt], holds: &[Option<i64>]) -> Vec<WorkItem> {
    attempts
        .iter()
        .zip(holds)
        .filter(|(_, hold)| hold.is_none())
        .enumerate()
        .map(|(i, (a, _))| WorkItem {
            id: i.to_string(),
            work: a.work.clone(),
        })
        .collect()
}

/// Adds what the publish finished to `finished`, and returns the aggregates of what
/// it published but could not mark: still pending (and charged) as far as this sweep
/// knows, so its aggregate goes no further, as after a failure. So too for what it
/// lost the claim of: it may be pending under a newer claim, ahead of the later
/// messages of its aggregate.
fn note_finished(
    work: &[WorkItem],
    outcomes: &[Outcome],
    finished: &mut HashSet<ItemKey>,
) -> Vec<String> {
    let mut unmarked = Vec::new();
    for (key, outcome) in work
        .iter()
        .zip(outcomes)
        .filter_map(|(w, o)| Some((w.work.key()?, o)))
    {
        if outcome.finished_here() {
            finished.insert(key.clone());
        } else if matches!(
            outcome,
            Outcome::Sent { marked: false } | Outcome::ClaimLost { .. }
        ) {
            unmarked.push(key.pk.clone());
        }
    }
    unmarked
}
