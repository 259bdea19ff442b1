//! Sending what the plan says, round by round: the large-payload offload writes first,
//! then the calls of the round concurrently, every answer judged by
//! [`crate::policy`]. An aggregate that fails transiently holds back its later
//! entries, in this round and the next, so that none overtakes it.

use super::plan::{Entry, Plan, Round};
use super::{Outcome, Poison, Work, WorkItem, poison_of};
use crate::message::OutboundMessage;
use crate::policy::{CallVerdict, EntryVerdict, judge_call, judge_entry, judge_single};
use crate::ports::{EntryResult, MessageSink};
use crate::route::Destination;
use std::collections::HashSet;

/// What sending came to.
#[derive(Debug, Default)]
pub(super) struct Dispatched {
    /// Entries settled without going out: held back behind a failed sibling
    /// (`Blocked`) or failed transiently (`Retry`), by position.
    pub decided: Vec<(usize, Outcome)>,
    /// Entries the destination accepted, to mark `SENT`, by position.
    pub sent: Vec<usize>,
    /// Entries refused for good (by the destination or the payload store): poison
    /// for the dead-letter queue, by position.
    pub poison: Vec<(usize, Poison)>,
    /// Aggregates with a transient failure: their later entries are held back.
    failed_aggregates: HashSet<String>,
    /// Payloads written to S3 (the large-payload offload), whatever their send did.
    pub offloaded: usize,
}

impl Dispatched {
    /// Adds what a later step came to.
    fn absorb(&mut self, later: Dispatched) {
        self.decided.extend(later.decided);
        self.sent.extend(later.sent);
        self.poison.extend(later.poison);
        self.failed_aggregates.extend(later.failed_aggregates);
        self.offloaded += later.offloaded;
    }

    /// The positions this already settled one way or another.
    fn settled(&self) -> HashSet<usize> {
        let decided = self.decided.iter().map(|&(index, _)| index);
        let poison = self.poison.iter().map(|&(index, _)| index);
        decided
            .chain(poison)
            .chain(self.sent.iter().copied())
            .collect()
    }
}

/// Sends the plan's rounds one after another, leaving out the entries `held` (the
/// order fence's).
pub(super) async fn send_rounds<K: MessageSink>(
    sink: &K,
    plan: &Plan,
    items: &[WorkItem],
    held: &HashSet<usize>,
) -> Dispatched {
    let mut total = Dispatched::default();
    for round in &plan.rounds {
        let failed = &total.failed_aggregates;
        let this = send_round(sink, &plan.destinations, round, items, held, failed).await;
        total.absorb(this);
    }
    total
}

/// Sends the calls of one round concurrently, after the round's offload writes,
/// holding back entries of aggregates that already failed in this batch (`failed`,
/// or in this round's offload writes).
async fn send_round<K: MessageSink>(
    sink: &K,
    destinations: &[Destination],
    round: &Round,
    items: &[WorkItem],
    held: &HashSet<usize>,
    failed: &HashSet<String>,
) -> Dispatched {
    let mut out = offload(sink, round, items, held).await;
    let settled = out.settled();
    let mut calls = Vec::with_capacity(round.len());
    for (&d, call) in round {
        let (blocked, live): (Vec<&Entry>, Vec<&Entry>) = call
            .entries
            .iter()
            .filter(|e| !held.contains(&e.index) && !settled.contains(&e.index))
            .partition(|e| {
                failed.contains(&e.aggregate) || out.failed_aggregates.contains(&e.aggregate)
            });
        out.decided
            .extend(blocked.into_iter().map(|e| (e.index, Outcome::Blocked)));
        if !live.is_empty() {
            calls.push(send_call(sink, &destinations[d], live));
        }
    }
    for (entry, result) in futures::future::join_all(calls).await.into_iter().flatten() {
        match judge_entry(result) {
            EntryVerdict::Sent => out.sent.push(entry.index),
            EntryVerdict::Poison { reason } => match &items[entry.index].work {
                Work::Publish(msg) => out.poison.push((entry.index, poison_of(msg, reason))),
                Work::Poison(_) => out.decided.push((entry.index, Outcome::Retry { reason })),
            },
            EntryVerdict::Retry { reason } => {
                out.failed_aggregates.insert(entry.aggregate.clone());
                out.decided.push((entry.index, Outcome::Retry { reason }));
            }
        }
    }
    out
}

/// Writes the payloads of the round's large-payload offload entries to S3,
/// concurrently, before any pointer is sent. An entry whose write failed transiently
/// is reported for retry and holds back its aggregate (as a failed send does); one
/// refused for good is poison, with the reason. Either way its pointer is not sent.
async fn offload<K: MessageSink>(
    sink: &K,
    round: &Round,
    items: &[WorkItem],
    held: &HashSet<usize>,
) -> Dispatched {
    let uploads =
        round
            .values()
            .flat_map(|call| &call.entries)
            .filter(|e| !held.contains(&e.index))
            .filter_map(|e| match (&e.offload, &items[e.index].work) {
                (Some(pointer), Work::Publish(msg)) => Some((e, msg, pointer)),
                _ => None,
            })
            .map(|(e, msg, pointer)| async move {
                (e, msg, sink.put_payload(pointer, &msg.payload).await)
            });
    let mut out = Dispatched::default();
    for (entry, msg, result) in futures::future::join_all(uploads).await {
        let Err(failure) = result else {
            out.offloaded += 1;
            continue;
        };
        let reason = format!("could not write the payload to S3: {failure}");
        tracing::warn!(message_id = %msg.message_id, trace_id = msg.trace_id(), error = %failure, "large-payload offload: payload not written");
        if failure.is_retryable() {
            out.failed_aggregates.insert(entry.aggregate.clone());
            out.decided.push((entry.index, Outcome::Retry { reason }));
        } else {
            out.poison.push((entry.index, poison_of(msg, reason)));
        }
    }
    out
}

/// Sends one call and pairs each entry with its result.
async fn send_call<'e, K: MessageSink>(
    sink: &K,
    dest: &Destination,
    entries: Vec<&'e Entry>,
) -> Vec<(&'e Entry, EntryResult)> {
    let messages: Vec<&OutboundMessage> = entries.iter().map(|e| &e.message).collect();
    let results = send_resilient(sink, dest, &messages).await;
    entries.into_iter().zip(results).collect()
}

/// Sends one call and returns one result per message. When the service refuses
/// the whole call for its content, the messages are sent one by one, so the one
/// to blame is found (and refused for good) and the others go out.
pub(super) async fn send_resilient<K: MessageSink>(
    sink: &K,
    dest: &Destination,
    messages: &[&OutboundMessage],
) -> Vec<EntryResult> {
    let answer = sink.send_batch(dest, messages).await;
    match judge_call(answer, dest, messages.len()) {
        CallVerdict::Answered(results) => results,
        CallVerdict::OneByOne => {
            tracing::warn!(destination = %dest, "call refused for its content; sending its messages one by one");
            let mut out = Vec::with_capacity(messages.len());
            for m in messages {
                let answer = sink.send_batch(dest, &[*m]).await;
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
