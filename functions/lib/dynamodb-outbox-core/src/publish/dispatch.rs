//! Sending what the plan says, round by round, and the dead-letter copies of poison;
//! every answer is judged by [`crate::policy`].

use super::plan::{Entry, Round, chunk_by_limits, dead_letter_fitting, dead_letter_message};
use super::{Outcome, Poison, Progress, Publisher, Work, WorkItem, poison_of};
use crate::message::OutboundMessage;
use crate::policy::{
    CallVerdict, DeadLetterVerdict, EntryVerdict, judge_call, judge_dead_letter, judge_entry,
    judge_single,
};
use crate::ports::{EntryResult, MessageSink, OutboxStore};
use crate::route::Destination;
use crate::schema::{STATUS, Status, string_attr};

impl<K: MessageSink, S: OutboxStore> Publisher<K, S> {
    /// Sends the calls of one round concurrently, holding back entries of aggregates
    /// that already failed in this batch, and records each entry's verdict. Entries
    /// decided before sending (the order fence's) are left out.
    pub(super) async fn dispatch_round(
        &self,
        destinations: &[Destination],
        round: &Round,
        items: &[WorkItem],
        progress: &mut Progress,
    ) {
        self.offload_round(round, items, progress).await;
        let mut calls = Vec::with_capacity(round.len());
        for (&d, call) in round {
            let (blocked, live): (Vec<&Entry>, Vec<&Entry>) = call
                .entries
                .iter()
                .filter(|e| progress.outcomes[e.index].is_none())
                .partition(|e| progress.failed_aggregates.contains(&e.aggregate));
            for e in blocked {
                progress.outcomes[e.index] = Some(Outcome::Blocked);
            }
            if !live.is_empty() {
                calls.push(self.send_call(&destinations[d], live));
            }
        }
        for results in futures::future::join_all(calls).await {
            for (entry, result) in results {
                match judge_entry(result) {
                    EntryVerdict::Sent => progress.sent.push(entry.index),
                    EntryVerdict::Poison { reason } => match &items[entry.index].work {
                        Work::Publish(msg) => {
                            progress.poison.push((entry.index, poison_of(msg, reason)));
                        }
                        Work::Poison(_) => {
                            progress.outcomes[entry.index] = Some(Outcome::Retry { reason });
                        }
                    },
                    EntryVerdict::Retry { reason } => {
                        progress.failed_aggregates.insert(entry.aggregate.clone());
                        progress.outcomes[entry.index] = Some(Outcome::Retry { reason });
                    }
                }
            }
        }
    }

    /// Writes the payloads of the round's large-payload offload entries to S3, concurrently,
    /// before any pointer is sent. An entry whose write failed transiently is
    /// reported for retry and holds back its aggregate (as a failed send does); one
    /// refused for good is poison, with the reason.
    async fn offload_round(&self, round: &Round, items: &[WorkItem], progress: &mut Progress) {
        let uploads = round
            .values()
            .flat_map(|call| &call.entries)
            .filter(|e| progress.outcomes[e.index].is_none())
            .filter_map(|e| match (&e.offload, &items[e.index].work) {
                (Some(pointer), Work::Publish(msg)) => Some((e, msg, pointer)),
                _ => None,
            })
            .map(|(e, msg, pointer)| async move {
                (e, msg, self.sink.put_payload(pointer, &msg.payload).await)
            });
        for (entry, msg, result) in futures::future::join_all(uploads).await {
            let Err(failure) = result else { continue };
            let reason = format!("could not write the payload to S3: {failure}");
            tracing::warn!(message_id = %msg.message_id, error = %failure, "large-payload offload: payload not written");
            if failure.is_retryable() {
                progress.failed_aggregates.insert(entry.aggregate.clone());
                progress.outcomes[entry.index] = Some(Outcome::Retry { reason });
            } else {
                progress.poison.push((entry.index, poison_of(msg, reason)));
                // Keeps its pointer out of this round's call; the dead-letter step
                // that follows the rounds replaces it with the poison's outcome.
                progress.outcomes[entry.index] = Some(Outcome::Blocked);
            }
        }
    }

    /// Sends one call and pairs each entry with its result.
    async fn send_call<'e>(
        &self,
        dest: &Destination,
        entries: Vec<&'e Entry>,
    ) -> Vec<(&'e Entry, EntryResult)> {
        let messages: Vec<&OutboundMessage> = entries.iter().map(|e| &e.message).collect();
        let results = self.send_resilient(dest, &messages).await;
        entries.into_iter().zip(results).collect()
    }

    /// Sends one call and returns one result per message. When the service refuses
    /// the whole call for its content, the messages are sent one by one, so the one
    /// to blame is found (and refused for good) and the others go out.
    async fn send_resilient(
        &self,
        dest: &Destination,
        messages: &[&OutboundMessage],
    ) -> Vec<EntryResult> {
        let answer = self.sink.send_batch(dest, messages).await;
        match judge_call(answer, dest, messages.len()) {
            CallVerdict::Answered(results) => results,
            CallVerdict::OneByOne => {
                tracing::warn!(destination = %dest, "call refused for its content; sending its messages one by one");
                let mut out = Vec::with_capacity(messages.len());
                for m in messages {
                    let answer = self.sink.send_batch(dest, &[*m]).await;
                    out.push(judge_single(answer, dest));
                }
                out
            }
            CallVerdict::Every(failure) => {
                tracing::warn!(destination = %dest, error = %failure, entries = messages.len(), "send failed");
                vec![Err(failure); messages.len()]
            }
        }
    }

    /// Copies poison to the dead-letter queue, then marks it `FAILED`. The copy comes
    /// first: a crash between the two leaves the item `PENDING` (found again), never
    /// `FAILED` without its copy. Poison already finished is not copied again (a
    /// stream record delivered again after a checkpoint, a sweep after the publisher):
    /// the item is read first.
    pub(super) async fn dead_letter(
        &self,
        poison: Vec<(usize, Poison)>,
        now_ms: i64,
    ) -> Vec<(usize, Outcome)> {
        if poison.is_empty() {
            return Vec::new();
        }
        let (poison, mut out) = self.still_pending(poison).await;
        let dlq = &self.config.dead_letter;
        let (poison, mut to_fail) = dead_letter_fitting(poison, dlq);
        for chunk in chunk_by_limits(dlq, &poison, |(_, p)| dead_letter_message(p, dlq)) {
            let (members, messages): (Vec<&(usize, Poison)>, Vec<OutboundMessage>) =
                chunk.into_iter().unzip();
            let refs: Vec<&OutboundMessage> = messages.iter().collect();
            let results = self.send_resilient(dlq, &refs).await;
            for ((index, p), result) in members.into_iter().zip(results) {
                match judge_dead_letter(result, &p.reason) {
                    DeadLetterVerdict::MarkFailed { reason, copied } => {
                        let mut p = p.clone();
                        p.reason = reason;
                        to_fail.push((*index, p, copied));
                    }
                    DeadLetterVerdict::Retry(outcome) => {
                        tracing::error!(?outcome, "could not dead-letter poison; will retry");
                        out.push((*index, outcome));
                    }
                }
            }
        }
        out.extend(self.mark_all_failed(to_fail, now_ms).await);
        out
    }

    /// Splits poison into what is still `PENDING` (or cannot be read: copied anyway,
    /// as a duplicate copy is better than none) and what someone else has finished.
    async fn still_pending(
        &self,
        poison: Vec<(usize, Poison)>,
    ) -> (Vec<(usize, Poison)>, Vec<(usize, Outcome)>) {
        let checked = futures::future::join_all(poison.into_iter().map(|(index, p)| async move {
            let finished = match &p.key {
                None => false,
                Some(key) => match self.store.load(key).await {
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
}

/// Whether a stored item is `PENDING` (an absent item is not).
fn is_pending(item: Option<&serde_dynamo::Item>) -> bool {
    item.and_then(|i| string_attr(i, STATUS)) == Some(Status::Pending.as_str())
}
