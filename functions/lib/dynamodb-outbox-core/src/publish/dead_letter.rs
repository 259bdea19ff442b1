//! Copying poison to the dead-letter queue before it is marked `FAILED`. The copy
//! comes first: a crash between the two leaves the item `PENDING` (found again),
//! never `FAILED` without its copy.

use super::dispatch::send_resilient;
use super::plan::{ToFail, chunk_by_limits, dead_letter_fitting, dead_letter_message};
use super::{Outcome, Poison};
use crate::message::OutboundMessage;
use crate::policy::{DeadLetterVerdict, judge_dead_letter};
use crate::ports::{MessageSink, OutboxStore};
use crate::route::Destination;
use crate::schema::{STATUS, Status, string_attr};

/// What copying came to.
#[derive(Debug, Default)]
pub(super) struct Copied {
    /// Poison to mark `FAILED` now: copied, or over the queue's own limit (never
    /// sent, see [`dead_letter_fitting`]).
    pub to_fail: Vec<ToFail>,
    /// Poison settled here: finished by someone else, or not copied (`Retry`).
    pub decided: Vec<(usize, Outcome)>,
}

/// Copies poison to the dead-letter queue `dlq`, in batches within its limits. Poison
/// already finished is not copied again (a stream record delivered again after a
/// checkpoint, a sweep after the publisher): the item is read first.
pub(super) async fn copy_poison<K: MessageSink, S: OutboxStore>(
    sink: &K,
    store: &S,
    dlq: &Destination,
    poison: Vec<(usize, Poison)>,
) -> Copied {
    if poison.is_empty() {
        return Copied::default();
    }
    let (poison, mut decided) = still_pending(store, poison).await;
    let (poison, mut to_fail) = dead_letter_fitting(poison, dlq);
    for chunk in chunk_by_limits(dlq, &poison, |(_, p)| dead_letter_message(p, dlq)) {
        let (members, messages): (Vec<&(usize, Poison)>, Vec<OutboundMessage>) =
            chunk.into_iter().unzip();
        let refs: Vec<&OutboundMessage> = messages.iter().collect();
        let results = send_resilient(sink, dlq, &refs).await;
        for ((index, p), result) in members.into_iter().zip(results) {
            match judge_dead_letter(result, &p.reason) {
                DeadLetterVerdict::MarkFailed { reason, copied } => {
                    let mut p = p.clone();
                    p.reason = reason;
                    to_fail.push((*index, p, copied));
                }
                DeadLetterVerdict::Retry(outcome) => {
                    tracing::error!(?outcome, "could not dead-letter poison; will retry");
                    decided.push((*index, outcome));
                }
            }
        }
    }
    Copied { to_fail, decided }
}

/// Splits poison into what is still `PENDING` (or cannot be read: copied anyway,
/// as a duplicate copy is better than none) and what someone else has finished.
async fn still_pending<S: OutboxStore>(
    store: &S,
    poison: Vec<(usize, Poison)>,
) -> (Vec<(usize, Poison)>, Vec<(usize, Outcome)>) {
    let checked = futures::future::join_all(poison.into_iter().map(|(index, p)| async move {
        let finished = match &p.key {
            None => false,
            Some(key) => match store.load(key).await {
                Ok(item) => !is_pending(item.as_ref()),
                Err(e) => {
                    tracing::warn!(sk = %key.sk, error = %e, "could not read poison before copying it; copying");
                    false
                }
            },
        };
        (index, p, finished)
    }))
    .await;
    let mut pending = Vec::new();
    let mut finished = Vec::new();
    for (index, p, done) in checked {
        if done {
            tracing::info!(
                message_id = p.message_id.as_deref().unwrap_or("-"),
                "poison already finished: not copied again"
            );
            finished.push((index, Outcome::AlreadyFinished));
        } else {
            pending.push((index, p));
        }
    }
    (pending, finished)
}

/// Whether a stored item is `PENDING` (an absent item is not).
fn is_pending(item: Option<&serde_dynamo::Item>) -> bool {
    item.and_then(|i| string_attr(i, STATUS)) == Some(Status::Pending.as_str())
}
