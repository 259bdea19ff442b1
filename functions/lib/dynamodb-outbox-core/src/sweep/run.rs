//! The I/O of one sweep: read due keys, claim, publish, reschedule. The decisions in
//! between are [`crate::policy`]'s.

use super::{SweepSummary, Sweeper, Window};
use crate::failure::{Failure, FailureKind};
use crate::policy::{
    Attempt, AttemptVerdict, Gate, HELD_BACK, Retrying, WAVE_PER_AGGREGATE, Waves, attempt_of,
    held_back, judge_attempt, millis, next_due_times, order_attempts, order_key, unclaimable,
};
use crate::ports::{Claim, DueKey, MarkOutcome, MessageSink, OutboxStore, SweepStore};
use crate::publish::{Outcome, WorkItem};
use crate::schema::{ItemKey, STATUS, Status, all_sweep_shards, string_attr};
use futures::StreamExt;
use std::collections::HashSet;

/// What the claims of one chunk gave: attempts to make, and the earlier messages the
/// later ones of their aggregate must wait behind.
#[derive(Debug, Default)]
struct Claims {
    attempts: Vec<Attempt>,
    gates: Vec<Gate>,
}

/// A message to reschedule, with why, whether it was sent at all, and what it must
/// not be due before.
struct Settle<'a> {
    attempt: &'a Attempt,
    reason: String,
    attempted: bool,
    not_before: i64,
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Due keys of every shard, earliest first. Records how long the oldest has been
    /// due.
    pub(super) async fn due_keys(
        &self,
        window: &Window,
        summary: &mut SweepSummary,
    ) -> Vec<DueKey> {
        let due = self.find_due(window, summary).await;
        summary.found = due.len();
        for d in &due {
            let overdue = window.budget.now_ms.saturating_sub(d.due_at_ms);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(overdue));
        }
        due
    }

    /// Due keys of every shard, each shard paged until it is exhausted, the per-run
    /// bound is reached or the budget is used up. Shards are queried concurrently; a
    /// shard whose query fails is counted as unread.
    async fn find_due(&self, window: &Window, summary: &mut SweepSummary) -> Vec<DueKey> {
        let limits = self.config.limits;
        let now = window.budget.now_ms;
        let shards = all_sweep_shards().map(|shard| async move {
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
        for (keys, scanned, queries, failed) in futures::future::join_all(shards).await {
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
            gates,
        } = self.claim_all(keys, lease_until, summary).await;
        for a in attempts.iter().filter(|a| a.created_at > 0) {
            let age = now.saturating_sub(a.created_at);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(age));
        }
        order_attempts(&mut attempts);
        let holds = held_back(&attempts, &gates);
        let work: Vec<WorkItem> = attempts
            .iter()
            .zip(&holds)
            .filter(|(_, hold)| hold.is_none())
            .enumerate()
            .map(|(i, (a, _))| WorkItem {
                id: i.to_string(),
                work: a.work.clone(),
            })
            .collect();
        let outcomes = self.publisher.process_after(&work, finished).await;
        let mut stopped: HashSet<String> = gates.iter().map(|g| g.aggregate.clone()).collect();
        for (key, outcome) in work
            .iter()
            .zip(&outcomes)
            .filter_map(|(w, o)| Some((w.work.key()?, o)))
        {
            if outcome.finished_here() {
                finished.insert(key.clone());
            } else if matches!(outcome, Outcome::Sent { marked: false }) {
                // Published but not marked: still pending (and charged) as far as this
                // sweep knows, so its aggregate goes no further, as after a failure.
                stopped.insert(key.pk.clone());
            }
        }
        let mut outcomes = outcomes.into_iter();
        let mut settle: Vec<Settle<'_>> = Vec::new();
        for (a, mut hold) in attempts.iter().zip(holds) {
            let verdict = match hold {
                Some(_) => AttemptVerdict::Reschedule {
                    reason: HELD_BACK.to_owned(),
                    attempted: false,
                },
                None => match outcomes.next() {
                    Some(outcome) => {
                        // Fenced: not due before what it waits behind.
                        if let Outcome::Deferred { not_before } = outcome {
                            hold = not_before;
                        }
                        judge_attempt(&outcome)
                    }
                    None => continue,
                },
            };
            if let Some(s) = tally(a, verdict, hold, summary) {
                settle.push(s);
            }
        }
        summary.retried += settle.len();
        stopped.extend(settle.iter().map(|s| s.attempt.key.pk.clone()));
        self.reschedule_all(&settle, now, lease_until, summary)
            .await;
        stopped
    }

    /// Claims each key, concurrently. What someone else finished is skipped; what
    /// someone else holds, or what could not be claimed, is skipped and holds back
    /// the later messages of its aggregate; what refuses every claim is poison.
    async fn claim_all(
        &self,
        keys: &[DueKey],
        lease_until: i64,
        summary: &mut SweepSummary,
    ) -> Claims {
        let max_attempts = self.config.max_attempts;
        let results: Vec<(&DueKey, Result<Claim, Failure>)> =
            futures::stream::iter(keys.iter().map(|d| async move {
                (
                    d,
                    self.store().claim(&d.key, &d.seen_due, lease_until).await,
                )
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        let mut claims = Claims::default();
        for (d, result) in results {
            let (pk, sk) = (&d.key.pk, &d.key.sk);
            match result {
                Ok(Claim::Claimed(item)) => {
                    summary.claimed += 1;
                    claims.attempts.push(attempt_of(*item, max_attempts));
                }
                Ok(Claim::Finished) => summary.skipped += 1,
                Ok(Claim::Held(held)) => {
                    summary.skipped += 1;
                    claims.gates.push(Gate {
                        aggregate: pk.clone(),
                        position: Some(order_key(&d.key, held.created_at_ms, &held.message_id)),
                        key: d.key.clone(),
                        due_floor: held.due_at_ms.unwrap_or(lease_until),
                    });
                }
                Err(f) if f.kind == FailureKind::ContentRefused => {
                    tracing::error!(aggregate = %pk, %sk, error = %f, "the item refuses every claim: it is poison");
                    match self.unclaimable(d, &f, lease_until, summary).await {
                        Ok(Some(attempt)) => claims.attempts.push(attempt),
                        Ok(None) => summary.skipped += 1,
                        Err(gate) => claims.gates.push(gate),
                    }
                }
                Err(e) => {
                    tracing::warn!(aggregate = %pk, %sk, error = %e, "claim failed; the later messages of its aggregate wait, the next sweep retries");
                    summary.skipped += 1;
                    summary.errors += 1;
                    claims.gates.push(unknown_gate(d, lease_until));
                }
            }
        }
        claims
    }

    /// The poison attempt of an item that refused its claim for good, read as it is
    /// now; `None` when it is no longer pending, a gate when it cannot be read.
    async fn unclaimable(
        &self,
        d: &DueKey,
        refusal: &Failure,
        lease_until: i64,
        summary: &mut SweepSummary,
    ) -> Result<Option<Attempt>, Gate> {
        match self.store().load(&d.key).await {
            Ok(Some(item)) if string_attr(&item, STATUS) == Some(Status::Pending.as_str()) => {
                Ok(Some(unclaimable(d.key.clone(), &item, refusal)))
            }
            Ok(_) => Ok(None),
            Err(e) => {
                tracing::warn!(aggregate = %d.key.pk, sk = %d.key.sk, error = %e, "could not read an unclaimable item; the next sweep retries");
                summary.skipped += 1;
                summary.errors += 1;
                Err(unknown_gate(d, lease_until))
            }
        }
    }

    /// Records each reason and next due time, under our claim: in publish order, so
    /// that no message is due before an earlier one of its aggregate.
    async fn reschedule_all(
        &self,
        settle: &[Settle<'_>],
        now: i64,
        lease_until: i64,
        summary: &mut SweepSummary,
    ) {
        let retrying: Vec<Retrying<'_>> = settle
            .iter()
            .map(|s| Retrying {
                key: &s.attempt.key,
                attempt: s.attempt.retry_count,
                attempted: s.attempted,
                not_before: s.not_before,
            })
            .collect();
        let dues = next_due_times(
            &retrying,
            now,
            self.config.base_backoff,
            self.config.max_backoff,
        );
        let results: Vec<Result<MarkOutcome, Failure>> =
            futures::stream::iter(settle.iter().zip(dues).map(|(s, due)| {
                // Never the claim's own due time: the write is conditional on it, so
                // a retry of a write that took effect must find it changed.
                let next = if due == lease_until { due + 1 } else { due };
                let a = s.attempt;
                tracing::warn!(aggregate = %a.key.pk, sk = %a.key.sk, attempt = a.retry_count,
                    next_due_ms = next, reason = %s.reason, attempted = s.attempted, "not published; retrying later");
                self.reschedule_once_more(s, lease_until, next)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        for r in results {
            if let Err(e) = r {
                // The lease runs out instead; the item is retried then.
                summary.errors += 1;
                tracing::warn!(error = %e, "could not record the failed attempt; the claim's lease brings the item back");
            }
        }
    }

    /// Records one reschedule, trying once more when the write fails for a passing
    /// reason. Left unwritten, a message that waited gets its attempt back only when
    /// it is claimed again — never, if every sweep dies the same way — and a backlog
    /// behind a failing head would use up its attempts waiting. A retry of a write
    /// that took effect finds the claim gone and changes nothing.
    async fn reschedule_once_more(
        &self,
        s: &Settle<'_>,
        lease_until: i64,
        next: i64,
    ) -> Result<MarkOutcome, Failure> {
        let key = &s.attempt.key;
        let first = self
            .store()
            .reschedule(key, lease_until, next, &s.reason, s.attempted)
            .await;
        match first {
            Err(e) if e.is_retryable() => {
                tracing::info!(aggregate = %key.pk, sk = %key.sk, error = %e, "could not record the failed attempt; trying once more");
                self.store()
                    .reschedule(key, lease_until, next, &s.reason, s.attempted)
                    .await
            }
            other => other,
        }
    }
}

/// The gate of a key whose claim failed: its place is unknown but for what its key
/// tells (a library key's UUIDv7), and the claim may have taken effect (a lost
/// answer), so it may be due again only after our lease.
fn unknown_gate(d: &DueKey, lease_until: i64) -> Gate {
    Gate {
        aggregate: d.key.pk.clone(),
        position: None,
        key: d.key.clone(),
        due_floor: d.due_at_ms.max(lease_until),
    }
}

/// Counts one attempt's verdict, and returns what to reschedule.
fn tally<'a>(
    a: &'a Attempt,
    verdict: AttemptVerdict,
    hold: Option<i64>,
    summary: &mut SweepSummary,
) -> Option<Settle<'a>> {
    let (pk, sk, attempt) = (&a.key.pk, &a.key.sk, a.retry_count);
    match verdict {
        AttemptVerdict::Recovered { marked } => {
            summary.published += 1;
            summary.marked += usize::from(marked);
            tracing::info!(aggregate = %pk, %sk, attempt, marked, "recovered by the sweeper");
            None
        }
        AttemptVerdict::DeadLettered { reason } => {
            summary.failed += 1;
            tracing::warn!(aggregate = %pk, %sk, attempt, %reason, "dead-lettered");
            None
        }
        AttemptVerdict::Finished => {
            summary.skipped += 1;
            None
        }
        AttemptVerdict::Reschedule { reason, attempted } => Some(Settle {
            attempt: a,
            reason,
            attempted,
            not_before: hold.unwrap_or(i64::MIN),
        }),
    }
}
