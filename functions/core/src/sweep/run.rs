//! The I/O of one sweep: read due keys, claim, publish, reschedule; adopt unindexed
//! items in scan mode. The decisions in between are [`crate::policy`]'s.

use super::{SweepSummary, Sweeper, Window};
use crate::failure::Failure;
use crate::policy::{
    Attempt, AttemptVerdict, adopted_due, attempt_of, judge_attempt, millis, next_due_times,
    order_attempts,
};
use crate::ports::{Claim, DueKey, MarkOutcome, MessageSink, OutboxStore, PageToken, SweepStore};
use crate::publish::WorkItem;
use crate::schema::{ItemKey, all_sweep_shards, sweep_shard};
use futures::StreamExt;
use std::sync::PoisonError;

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Due keys of every shard, earliest first, within the per-run bound; the rest
    /// are counted as skipped. Records how long the oldest has been due.
    pub(super) async fn due_keys(
        &self,
        window: &Window,
        summary: &mut SweepSummary,
    ) -> Vec<DueKey> {
        let mut due = self.find_due(window, summary).await;
        summary.found = due.len();
        due.sort_by_key(|d| d.due_at_ms);
        if due.len() > self.config.limits.max_items {
            summary.skipped += due.len() - self.config.limits.max_items;
            due.truncate(self.config.limits.max_items);
        }
        for d in &due {
            let overdue = window.budget.now_ms.saturating_sub(d.due_at_ms);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(overdue));
        }
        due
    }

    /// Due keys of every shard, each shard paged until it is exhausted, the per-run
    /// bound is reached or the budget is used up. Shards are queried concurrently.
    async fn find_due(&self, window: &Window, summary: &mut SweepSummary) -> Vec<DueKey> {
        let limits = self.config.limits;
        let now = window.budget.now_ms;
        let shards = all_sweep_shards().map(|shard| async move {
            let mut keys = Vec::new();
            let mut scanned = 0u64;
            let mut queries = 0usize;
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
                        tracing::error!(%shard, error = %e, "index query failed; the next sweep retries this shard");
                        break;
                    }
                }
                if start.is_none() || keys.len() >= limits.max_items || self.expired(window) {
                    break;
                }
            }
            (keys, scanned, queries)
        });
        let mut all = Vec::new();
        for (keys, scanned, queries) in futures::future::join_all(shards).await {
            all.extend(keys);
            summary.index_items_read += scanned;
            summary.index_queries += queries;
        }
        all
    }

    /// Claims a chunk of due keys, publishes what was claimed, and settles each item.
    pub(super) async fn attempt(
        &self,
        keys: &[DueKey],
        window: &Window,
        summary: &mut SweepSummary,
    ) {
        let now = window.budget.now_ms;
        let lease_until = now.saturating_add(millis(window.budget.lease));
        let mut attempts = self.claim_all(keys, lease_until, summary).await;
        summary.claimed += attempts.len();
        for a in attempts.iter().filter(|a| a.created_at > 0) {
            let age = now.saturating_sub(a.created_at);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(age));
        }
        order_attempts(&mut attempts);
        let work: Vec<WorkItem> = attempts
            .iter()
            .enumerate()
            .map(|(i, a)| WorkItem {
                id: i.to_string(),
                work: a.work.clone(),
            })
            .collect();
        let outcomes = self.publisher.process(&work).await;
        let mut failed: Vec<(&Attempt, String)> = Vec::new();
        for (a, outcome) in attempts.iter().zip(&outcomes) {
            let (pk, sk, attempt) = (&a.key.pk, &a.key.sk, a.retry_count);
            match judge_attempt(outcome) {
                AttemptVerdict::Recovered { marked } => {
                    summary.published += 1;
                    summary.marked += usize::from(marked);
                    tracing::info!(aggregate = %pk, %sk, attempt, marked, "recovered by the sweeper");
                }
                AttemptVerdict::DeadLettered { reason } => {
                    summary.failed += 1;
                    tracing::warn!(aggregate = %pk, %sk, attempt, %reason, "dead-lettered");
                }
                AttemptVerdict::Reschedule { reason } => failed.push((a, reason)),
            }
        }
        summary.retried += failed.len();
        self.reschedule_all(&failed, now, lease_until).await;
    }

    /// Claims each key, concurrently; what was lost or could not be claimed is
    /// skipped (the next sweep sees it again).
    async fn claim_all(
        &self,
        keys: &[DueKey],
        lease_until: i64,
        summary: &mut SweepSummary,
    ) -> Vec<Attempt> {
        let max_attempts = self.config.max_attempts;
        let results: Vec<(ItemKey, Result<Claim, Failure>)> =
            futures::stream::iter(keys.iter().map(|d| async move {
                let r = self.store().claim(&d.key, d.due_at_ms, lease_until).await;
                (d.key.clone(), r)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        let mut attempts = Vec::with_capacity(results.len());
        for (key, result) in results {
            match result {
                Ok(Claim::Claimed(item)) => attempts.push(attempt_of(*item, max_attempts)),
                Ok(Claim::Lost) => summary.skipped += 1,
                Err(e) => {
                    tracing::warn!(aggregate = %key.pk, sk = %key.sk, error = %e, "claim failed; the next sweep retries");
                    summary.skipped += 1;
                }
            }
        }
        attempts
    }

    /// Records each failed attempt's reason and next due time, under our claim.
    async fn reschedule_all(&self, failed: &[(&Attempt, String)], now: i64, lease_until: i64) {
        let keys: Vec<(&ItemKey, u32)> = failed
            .iter()
            .map(|(a, _)| (&a.key, a.retry_count))
            .collect();
        let dues = next_due_times(
            &keys,
            now,
            self.config.base_backoff,
            self.config.max_backoff,
        );
        let settled: Vec<Result<MarkOutcome, Failure>> =
            futures::stream::iter(failed.iter().zip(dues).map(|((a, reason), next)| {
                tracing::warn!(aggregate = %a.key.pk, sk = %a.key.sk, attempt = a.retry_count,
                    next_due_ms = next, %reason, "attempt failed; retrying later");
                self.store().reschedule(&a.key, lease_until, next, reason)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        for r in settled {
            if let Err(e) = r {
                // The lease runs out instead; the item is retried then.
                tracing::warn!(error = %e, "could not record the failed attempt; the claim's lease brings the item back");
            }
        }
    }

    /// Scan mode: adopts pending items without index attributes into the index,
    /// reading a bounded number of pages per segment and remembering where each
    /// segment stopped.
    pub(super) async fn adopt_unindexed(&self, window: &Window, summary: &mut SweepSummary) {
        let segments = self.config.limits.scan_segments.max(1);
        let starts: Vec<Option<PageToken>> = {
            let cursors = self
                .scan_cursors
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (0..segments as usize)
                .map(|s| cursors.get(s).cloned().flatten())
                .collect()
        };
        let runs = starts.into_iter().enumerate().map(|(segment, start)| {
            let segment = u32::try_from(segment).unwrap_or(0);
            self.adopt_segment(segment, segments, start, window)
        });
        let results = futures::future::join_all(runs).await;
        let mut next = Vec::with_capacity(results.len());
        for (start, scanned, adopted) in results {
            next.push(start);
            summary.scan_items_read += scanned;
            summary.adopted += adopted;
        }
        *self
            .scan_cursors
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = next;
    }

    /// Reads a bounded number of pages of one scan segment, adopting what it finds;
    /// returns where it stopped, the items read and the items adopted.
    async fn adopt_segment(
        &self,
        segment: u32,
        segments: u32,
        mut start: Option<PageToken>,
        window: &Window,
    ) -> (Option<PageToken>, u64, usize) {
        let limits = self.config.limits;
        let (mut scanned, mut adopted) = (0u64, 0usize);
        for _ in 0..limits.scan_pages_per_segment.max(1) {
            let page = match self
                .store()
                .unindexed_page(segment, segments, limits.scan_page_size, start.clone())
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(segment, error = %e, "adoption scan failed; the next sweep retries");
                    break;
                }
            };
            scanned += page.scanned;
            start = page.next;
            for item in page.items {
                let due = adopted_due(item.created_at_ms, window.budget.now_ms, self.config.grace);
                match self
                    .store()
                    .adopt(&item.key, &sweep_shard(&item.key.pk), due)
                    .await
                {
                    Ok(MarkOutcome::Marked) => adopted += 1,
                    Ok(MarkOutcome::AlreadyFinished) => {}
                    Err(e) => {
                        tracing::warn!(aggregate = %item.key.pk, sk = %item.key.sk, error = %e, "could not adopt; the scan finds it again");
                    }
                }
            }
            if start.is_none() || self.expired(window) {
                break;
            }
        }
        (start, scanned, adopted)
    }
}
