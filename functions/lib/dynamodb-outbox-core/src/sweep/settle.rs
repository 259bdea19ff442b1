//! Settling a wave's attempts after the publish: counting each verdict, and
//! rescheduling what did not go, under our claim, in publish order.

use super::{SweepSummary, Sweeper};
use crate::failure::Failure;
use crate::policy::next_due_times_capped;
use crate::policy::fifo_retry_cap;
use crate::policy::{Attempt, AttemptVerdict, HELD_BACK, Retrying, judge_attempt};
use crate::publish::Work;
use crate::ports::{MarkOutcome, MessageSink, OutboxStore, SweepStore};
use crate::publish::Outcome;
use futures::StreamExt;

/// A message to reschedule, with why, whether it was sent at all, and what it must
/// not be due before.
pub(super) struct Settle<'a> {
    pub(super) attempt: &'a Attempt,
    reason: String,
    attempted: bool,
    not_before: i64,
}

/// Judges each attempt, in order: held back, or by its publish outcome (`outcomes`,
/// one per attempt not held back); counts the verdicts and returns what to
/// reschedule.
pub(super) fn settle_all<'a>(
    attempts: &'a [Attempt],
    holds: Vec<Option<i64>>,
    outcomes: Vec<Outcome>,
    summary: &mut SweepSummary,
) -> Vec<Settle<'a>> {
    let mut outcomes = outcomes.into_iter();
    let mut settle = Vec::new();
    for (a, mut hold) in attempts.iter().zip(holds) {
        let verdict = match hold {
            Some(_) => AttemptVerdict::Reschedule {
                reason: HELD_BACK.to_owned(),
                attempted: false,
            },
            None => match outcomes.next() {
                Some(outcome) => {
                    // Fenced: not due before what it waits behind.
                    match outcome {
                        Outcome::Deferred { not_before } => hold = not_before,
                        Outcome::OrderUnknown { .. } => summary.fence_unread += 1,
                        _ => {}
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
    settle
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Records each reason and next due time, under our claim: in publish order, so
    /// that no message is due before an earlier one of its aggregate.
    pub(super) async fn reschedule_all(
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
        // A FIFO message that was sent may have been accepted: its republish must
        // land inside the deduplication window, or FIFO delivers it twice.
        let fifo_cap = fifo_retry_cap(self.config.period);
        let caps: Vec<_> = settle
            .iter()
            .map(|s| self.goes_to_fifo(s.attempt).then_some(fifo_cap))
            .collect();
        let dues = next_due_times_capped(
            &retrying,
            &caps,
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
                    message_id = a.work.message_id(), trace_id = a.work.trace_id(), next_due_ms = next, reason = %s.reason, attempted = s.attempted, "not published; retrying later");
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

    /// Whether the attempt's message goes to a FIFO destination.
    fn goes_to_fifo(&self, attempt: &Attempt) -> bool {
        match &attempt.work {
            Work::Publish(msg) => self
                .publisher
                .config
                .routes
                .resolve(&msg.topic)
                .is_some_and(|d| d.is_fifo()),
            Work::Poison(_) => false,
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

/// Counts one attempt's verdict, and returns what to reschedule.
fn tally<'a>(
    a: &'a Attempt,
    verdict: AttemptVerdict,
    hold: Option<i64>,
    summary: &mut SweepSummary,
) -> Option<Settle<'a>> {
    let (pk, sk, attempt) = (&a.key.pk, &a.key.sk, a.retry_count);
    let (message_id, trace_id) = (a.work.message_id(), a.work.trace_id());
    match verdict {
        AttemptVerdict::Recovered { marked } => {
            summary.published += 1;
            summary.marked += usize::from(marked);
            tracing::info!(aggregate = %pk, %sk, message_id, trace_id, attempt, marked, "recovered by the sweeper");
            None
        }
        AttemptVerdict::DeadLettered { reason } => {
            summary.failed += 1;
            tracing::warn!(aggregate = %pk, %sk, message_id, trace_id, attempt, %reason, "dead-lettered");
            None
        }
        AttemptVerdict::Finished => {
            summary.skipped += 1;
            None
        }
        AttemptVerdict::ClaimLost { at_mark } => {
            // Redriven or finished by someone else during the attempt: neither
            // FAILED nor rescheduled here, whoever holds it now decides.
            summary.claims_lost += 1;
            tracing::warn!(aggregate = %pk, %sk, message_id, trace_id, attempt, at_mark,
                "claim lost during the attempt (redriven, claimed again or finished by someone else): left alone");
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
