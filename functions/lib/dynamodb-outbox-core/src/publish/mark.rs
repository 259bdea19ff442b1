//! The state changes after a publish: `SENT` for what went out, `FAILED` for poison
//! whose copy is safe. All conditional, all concurrent; `SENT` and the first `FAILED`
//! mark batched ([`crate::policy::judge_statement`]), with the per-item path for what a batch
//! cannot finish.

use super::plan::ToFail;
use super::{MARK_CONCURRENCY, Outcome, Work, WorkItem};
use crate::failure::FailureKind;
use crate::policy::{
    MARK_BATCH_ATTEMPTS, MARK_BATCH_LIMIT, StatementVerdict, batch_retry_delay, bounded_error,
    failed_marks, judge_statement, retained_payload,
};
use crate::ports::{MarkChange, MarkCondition, MarkOutcome, OutboxStore};
use crate::schema::{ItemKey, OutboxMessage};
use futures::StreamExt;
use std::collections::HashMap;

/// What the batches made of one change: done, or left to the per-item path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batched {
    Done(MarkOutcome),
    PerItem,
}

/// Marks poison `FAILED` once its copy is on the dead-letter queue (`copied`) or
/// the queue refused it for good: the full mark batched, and the ladder of
/// smaller marks one by one for what the batch could not mark (an item at its
/// size limit among them). The marks of a sweep's items are conditional on its
/// claims (`claims`); a refused one is [`Outcome::ClaimLost`].
pub(super) async fn all_failed<S: OutboxStore>(
    store: &S,
    poison: Vec<ToFail>,
    now_ms: i64,
    claims: &HashMap<ItemKey, MarkCondition>,
) -> Vec<(usize, Outcome)> {
    let condition_of = |key: &ItemKey| claims.get(key).cloned().unwrap_or_default();
    let changes: Vec<(ItemKey, MarkChange)> = poison
        .iter()
        .filter_map(|(_, p, copied)| {
            let payload = retained_payload(&p.body);
            let mark = failed_marks(&p.reason, *copied, payload).into_iter().next()?;
            let key = p.key.clone()?;
            let change = MarkChange::Failed {
                mark,
                failed_at_ms: now_ms,
                condition: condition_of(&key),
            };
            Some((key, change))
        })
        .collect();
    let mut batched = mark_batched(store, changes).await.into_iter();
    futures::stream::iter(poison.into_iter().map(|(index, p, copied)| {
        let answer = p.key.as_ref().and_then(|_| batched.next());
        let condition = p.key.as_ref().map(condition_of).unwrap_or_default();
        async move {
            tracing::warn!(
                message_id = p.message_id.as_deref().unwrap_or("-"),
                topic = p.topic.as_deref().unwrap_or("-"),
                aggregate = p.key.as_ref().map(|k| k.pk.as_str()).unwrap_or("-"),
                reason = %p.reason,
                copied,
                "message is poison: copied to the dead-letter queue, marking FAILED"
            );
            let marked = match (&p.key, answer) {
                (Some(_), Some(Batched::Done(outcome))) => FailedMarked::of(outcome, &condition),
                (Some(key), _) => {
                    let payload = retained_payload(&p.body);
                    let fail = (p.reason.as_str(), copied, payload);
                    mark_failed_fitting(store, key, fail, now_ms, &condition).await
                }
                (None, _) => FailedMarked::NotMarked,
            };
            let outcome = marked.outcome(p.reason);
            (index, outcome)
        }
    }))
    .buffer_unordered(MARK_CONCURRENCY)
    .collect()
    .await
}

/// What a `FAILED` mark came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailedMarked {
    /// The item is `FAILED` now (by this mark or, for a mark without a claim,
    /// someone else's).
    Failed,
    /// A sweep's mark was refused: the item is no longer under its claim.
    ClaimLost,
    /// The mark could not be made: the item stays `PENDING` for the sweeper.
    NotMarked,
}

impl FailedMarked {
    /// The poison's outcome: dead-lettered (`FAILED` or not), or its claim lost.
    fn outcome(self, reason: String) -> Outcome {
        match self {
            FailedMarked::ClaimLost => Outcome::ClaimLost { at_mark: true },
            marked => Outcome::DeadLettered {
                reason,
                marked: marked == FailedMarked::Failed,
            },
        }
    }

    /// What a mark that answered `outcome` under `condition` came to. A refused mark
    /// without a claim met an item someone else finished; with one, the item may be
    /// pending under a newer claim, so it cannot be counted as failed.
    fn of(outcome: MarkOutcome, condition: &MarkCondition) -> Self {
        match (outcome, condition) {
            (MarkOutcome::AlreadyFinished, MarkCondition::Claimed { .. }) => {
                FailedMarked::ClaimLost
            }
            _ => FailedMarked::Failed,
        }
    }
}

/// Tries the marks of [`failed_marks`] for `(reason, copied, payload)` in order while
/// the item refuses them for what they would make it hold (its size), each under
/// `condition`.
async fn mark_failed_fitting<S: OutboxStore>(
    store: &S,
    key: &ItemKey,
    (reason, copied, payload): (&str, bool, Option<&str>),
    now_ms: i64,
    condition: &MarkCondition,
) -> FailedMarked {
    for mark in failed_marks(reason, copied, payload) {
        match store.mark_failed(key, &mark, now_ms, condition).await {
            Ok(outcome) => {
                let smaller = mark.payload_moved
                    || mark.last_error.as_deref() != Some(&bounded_error(reason));
                if smaller && outcome == MarkOutcome::Marked {
                    tracing::warn!(sk = %key.sk, payload_moved = mark.payload_moved, %reason,
                        "the item is at its size limit: marked FAILED with a smaller mark");
                }
                return FailedMarked::of(outcome, condition);
            }
            Err(f) if f.kind == FailureKind::ContentRefused => {
                tracing::info!(sk = %key.sk, error = %f, "the item refused the FAILED mark; trying a smaller one");
            }
            Err(e) => {
                // The copy is on the dead-letter queue; the item stays PENDING and
                // the sweeper will fail it again.
                tracing::error!(error = %e, sk = %key.sk, "could not mark FAILED; the sweeper will");
                return FailedMarked::NotMarked;
            }
        }
    }
    tracing::error!(sk = %key.sk, "the item refused every FAILED mark; the sweeper will retry");
    FailedMarked::NotMarked
}

/// Marks every published item `SENT`, in batches, with the per-item path for what
/// a batch could not mark. A refused condition means someone else finished the
/// item; an error leaves it for the sweeper. The items expire `ttl_days` after.
pub(super) async fn all_sent<S: OutboxStore>(
    store: &S,
    ttl_days: u32,
    items: &[WorkItem],
    sent: &[usize],
    now_ms: i64,
) -> Vec<(usize, Outcome)> {
    let expires = now_ms / 1000 + i64::from(ttl_days) * 86_400;
    let published: Vec<(usize, &OutboxMessage)> = sent
        .iter()
        .filter_map(|&index| match &items[index].work {
            Work::Publish(msg) => Some((index, msg)),
            Work::Poison(_) => None,
        })
        .collect();
    let change = MarkChange::Sent {
        sent_at_ms: now_ms,
        expires_at_s: expires,
    };
    let changes = published
        .iter()
        .map(|(_, msg)| (msg.key.clone(), change.clone()))
        .collect();
    let batched = mark_batched(store, changes).await;
    futures::stream::iter(published.into_iter().zip(batched))
        .map(|((index, msg), batched)| async move {
            let answer = match batched {
                Batched::Done(outcome) => Ok(outcome),
                Batched::PerItem => store.mark_sent(&msg.key, now_ms, expires).await,
            };
            let marked = match answer {
                Ok(MarkOutcome::Marked) => {
                    // One line per message published: what `outbox-ops show` and a
                    // search by message or trace id find (about 250 bytes of logs).
                    tracing::info!(message_id = %msg.message_id, trace_id = msg.trace_id(),
                        aggregate = %msg.key.pk, sk = %msg.key.sk, topic = %msg.topic, "published; marked SENT");
                    true
                }
                Ok(MarkOutcome::AlreadyFinished) => {
                    tracing::debug!(message_id = %msg.message_id, trace_id = msg.trace_id(), "already finished by another worker");
                    false
                }
                Err(e) => {
                    tracing::warn!(message_id = %msg.message_id, trace_id = msg.trace_id(), topic = %msg.topic, error = %e,
                        "published but could not mark SENT; the sweeper will republish it (a duplicate for consumers)");
                    false
                }
            };
            (index, Outcome::Sent { marked })
        })
        .buffer_unordered(MARK_CONCURRENCY)
        .collect()
        .await
}

/// Applies `changes` in batches of [`MARK_BATCH_LIMIT`], concurrently, retrying
/// throttled statements in later batches; one answer per change, in order.
async fn mark_batched<S: OutboxStore>(
    store: &S,
    changes: Vec<(ItemKey, MarkChange)>,
) -> Vec<Batched> {
    let mut answers = vec![Batched::PerItem; changes.len()];
    let mut pending: Vec<usize> = (0..changes.len()).collect();
    for attempt in 0..MARK_BATCH_ATTEMPTS {
        if pending.is_empty() {
            break;
        }
        if attempt > 0 {
            store.pause(batch_retry_delay(attempt)).await;
        }
        let calls = pending.chunks(MARK_BATCH_LIMIT).map(|chunk| {
            let batch: Vec<(ItemKey, MarkChange)> =
                chunk.iter().map(|&i| changes[i].clone()).collect();
            async move { (chunk, store.mark_batch(&batch).await) }
        });
        let results: Vec<_> = futures::stream::iter(calls)
            .buffer_unordered(MARK_CONCURRENCY)
            .collect()
            .await;
        let mut retry = Vec::new();
        for (chunk, result) in results {
            let statements = match result {
                Ok(statements) if statements.len() == chunk.len() => statements,
                Ok(statements) => {
                    tracing::warn!(
                        asked = chunk.len(),
                        answered = statements.len(),
                        "a batched mark answered for the wrong number of statements; marking one by one"
                    );
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, statements = chunk.len(), "a batched mark failed as a whole; marking one by one");
                    continue;
                }
            };
            for (&i, answer) in chunk.iter().zip(&statements) {
                match judge_statement(answer, attempt) {
                    StatementVerdict::Marked => answers[i] = Batched::Done(MarkOutcome::Marked),
                    StatementVerdict::AlreadyFinished => {
                        answers[i] = Batched::Done(MarkOutcome::AlreadyFinished);
                    }
                    StatementVerdict::Retry => retry.push(i),
                    StatementVerdict::PerItem => {
                        if let Err(e) = answer {
                            tracing::info!(sk = %changes[i].0.sk, code = %e.code, message = %e.message,
                                "a batched mark was not applied; marking the item on its own");
                        }
                    }
                }
            }
        }
        pending = retry;
    }
    answers
}
