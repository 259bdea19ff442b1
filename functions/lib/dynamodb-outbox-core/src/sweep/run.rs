//! The I/O of one sweep: read due keys, claim, publish, reschedule. The decisions in
//! between are [`crate::policy`]'s.

use super::claim::Claims;
use super::settle::settle_all;
use super::{SweepSummary, Sweeper, Window};
use crate::policy::{Attempt, WAVE_PER_AGGREGATE, Waves, held_back, millis, order_attempts};
use crate::ports::{DueKey, MessageSink, OutboxStore, SweepStore};
use crate::publish::{Outcome, WorkItem};
use crate::schema::ItemKey;
use futures::StreamExt;
use std::collections::HashSet;

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Due keys of every shard, earliest first. Records how long the oldest has been
    /// due.
    pub(super) async fn due_keys(
        &self,
        window: &Window,
        summary: &mut SweepSummary,
    ) -> Vec<DueKey> {
        let due = self.find_due(window, summary).await;
        summary.found += due.len();
        for d in &due {
            let overdue = window.budget.now_ms.saturating_sub(d.due_at_ms);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(overdue));
        }
        due
    }

    /// Due keys of the worker's shards (of both counts while the count changes), each shard
    /// paged until it is exhausted, the per-run bound is reached or the budget is used
    /// up. Up to [`SweepLimits::query_concurrency`](super::SweepLimits) shards are
    /// queried at once, so a thousand shards do not open a thousand requests; a shard
    /// whose query fails is counted as unread.
    async fn find_due(&self, window: &Window, summary: &mut SweepSummary) -> Vec<DueKey> {
        let limits = self.config.limits;
        let now = window.budget.now_ms;
        let shards = window.group.shards(&self.config.publisher.key_names.sweep_shards);
        let queries = shards.into_iter().map(|shard| async move {
            let (mut keys, mut scanned, mut queries, mut failed) = (Vec::new(), 0u64, 0usize, false);
            let mut start = None;
            loop {
                queries += 1;
                match self.store().due_page(&shard, now, limits.page_size, start).await {
                    Ok(page) => {
                        scanned += page.scanned;
                        keys.extend(page.keys);
                        start = page.next;
                    }
                    Err(e) => {
                        tracing::error!(%shard, error = %e, "index query failed: this sweep cannot see what is due in the shard");
                        failed = true;
                        break;
                    }
                }
                if start.is_none() || keys.len() >= limits.max_items || self.expired(window) {
                    break;
                }
            }
            (keys, scanned, queries, failed)
        });
        let mut all = Vec::new();
        let read: Vec<_> = futures::stream::iter(queries)
            .buffer_unordered(limits.query_concurrency.max(1))
            .collect()
            .await;
        for (keys, scanned, queries, failed) in read {
            all.extend(keys);
            summary.index_items_read += scanned;
            summary.index_queries += queries;
            summary.unread_shards += usize::from(failed);
            summary.errors += usize::from(failed);
        }
        all
    }

    /// Claims a chunk of due keys, publishes what was claimed and may go now, and
    /// settles each item: in waves of a few keys of each aggregate, an aggregate
    /// leaving the chunk at its first message that did not go ([`Waves`]).
    pub(super) async fn attempt(
        &self,
        keys: &[DueKey],
        window: &Window,
        summary: &mut SweepSummary,
    ) {
        let mut waves = Waves::new(keys, WAVE_PER_AGGREGATE);
        let mut finished: HashSet<ItemKey> = HashSet::new();
        loop {
            let wave = waves.next_wave();
            if wave.is_empty() {
                break;
            }
            let stopped = self
                .attempt_wave(&wave, window, &mut finished, summary)
                .await;
            summary.skipped += waves.stop(&stopped);
            if self.expired(window) {
                summary.skipped += waves.stop_all();
                break;
            }
        }
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
