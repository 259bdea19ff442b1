//! The batch's pure decisions: in which order its messages run, how long they may
//! run, and what is reported when the time is up. No I/O here; the runner in
//! `batch.rs` carries the plan out.
//!
//! Why this order (the crate's README tells the long story): when a message aborts
//! or hangs the process, Lambda gives the whole batch back and every message in it
//! that was not deleted is charged a receive. A message received before
//! (`ApproximateReceiveCount` > 1) is a *suspect*: it or a neighbour killed an
//! earlier invocation. Suspects run first, one at a time, the one nearest to its
//! receive limit first, each deleted as soon as it is done; the never-received rest
//! runs after them, concurrently. A crash then charges only the messages behind the
//! one that crashed, and those have at least as many receives left as it has: the
//! poison message runs out of receives before its neighbours do. Suspects with equal
//! counts (neighbours that were charged together) are taken in message-id order,
//! reversed from one receive count to the next, so a neighbour left behind the poison
//! message once runs before it the next time.

use super::{MessageFailure, MessageOutcome, group_id};
use crate::delivery::Delivery;
use aws_lambda_events::event::sqs::SqsMessage;
use std::cmp::{Ordering, Reverse};
use std::time::Duration;

/// The message attribute SQS counts receives in.
const RECEIVE_COUNT: &str = "ApproximateReceiveCount";

/// A lane: indices of the batch that run one after another (a FIFO group in batch
/// order, or a single message of a standard queue).
pub(super) type Lane = Vec<usize>;

/// A lane with its receive count.
type CountedLane = (u32, Lane);

/// In which order the batch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Lanes holding a message received before: run first, one lane at a time, in
    /// this order.
    pub one_at_a_time: Vec<Lane>,
    /// Lanes of messages received for the first time: run afterwards, concurrently.
    pub together: Vec<Lane>,
    /// Whether each finished message is deleted at once, ahead of Lambda: only when
    /// something else in the batch could still crash after it.
    pub delete_early: bool,
}

/// How many times SQS has handed `msg` out, this receive included (1 when the
/// attribute is missing or unreadable: nothing says it was received before).
pub(super) fn receive_count(msg: &SqsMessage) -> u32 {
    msg.attributes
        .get(RECEIVE_COUNT)
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// The plan for `messages`; `can_delete` says whether the processor has a deleter.
pub(super) fn plan(messages: &[SqsMessage], can_delete: bool) -> Plan {
    let (mut suspects, fresh): (Vec<CountedLane>, Vec<CountedLane>) = lanes(messages)
        .into_iter()
        .map(|lane| (lane_receive_count(messages, &lane), lane))
        .partition(|(count, _)| *count > 1);
    suspects.sort_by(|(a_count, a), (b_count, b)| {
        Reverse(*a_count)
            .cmp(&Reverse(*b_count))
            .then_with(|| tie_order(*a_count, lane_id(messages, a), lane_id(messages, b)))
    });
    Plan {
        one_at_a_time: suspects.into_iter().map(|(_, lane)| lane).collect(),
        together: fresh.into_iter().map(|(_, lane)| lane).collect(),
        delete_early: can_delete && messages.len() > 1,
    }
}

/// Indices of `messages` grouped into lanes: one lane per FIFO group (in batch
/// order), one lane per message without a group.
pub(super) fn lanes(messages: &[SqsMessage]) -> Vec<Lane> {
    let mut lanes: Vec<Lane> = Vec::new();
    let mut by_group: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        match group_id(m) {
            Some(g) => match by_group.get(g) {
                Some(&lane) => {
                    if let Some(l) = lanes.get_mut(lane) {
                        l.push(i);
                    }
                }
                None => {
                    by_group.insert(g, lanes.len());
                    lanes.push(vec![i]);
                }
            },
            None => lanes.push(vec![i]),
        }
    }
    lanes
}

/// A lane's receive count: its most-received message's.
fn lane_receive_count(messages: &[SqsMessage], lane: &Lane) -> u32 {
    lane.iter()
        .filter_map(|&i| messages.get(i))
        .map(receive_count)
        .max()
        .unwrap_or(1)
}

/// The id that orders a lane among lanes of equal receive count: its first message's.
fn lane_id<'m>(messages: &'m [SqsMessage], lane: &Lane) -> &'m str {
    lane.first()
        .and_then(|&i| messages.get(i))
        .and_then(|m| m.message_id.as_deref())
        .unwrap_or_default()
}

/// Message-id order at an even receive count, the reverse at an odd one: what ran
/// behind a message at one count runs ahead of it at the next.
fn tie_order(count: u32, a: &str, b: &str) -> Ordering {
    if count.is_multiple_of(2) {
        a.cmp(b)
    } else {
        b.cmp(a)
    }
}

/// How long the batch may run before it answers: the time until Lambda's
/// `deadline_ms`, keeping `margin` to answer Lambda. The margin is at most half the
/// time left, so that a margin larger than a short function's timeout still lets
/// the batch run rather than report everything unfinished. `None` when the deadline
/// cannot be real — already past, or further away than Lambda's longest timeout
/// (15 minutes): some local runtimes send seconds, or nothing, and running against
/// such a deadline would hand every message back until all reach the DLQ.
pub(super) fn time_left(now_ms: i64, deadline_ms: i64, margin: Duration) -> Option<Duration> {
    const LONGEST_INVOCATION_MS: i64 = 15 * 60 * 1_000;
    let left = deadline_ms.saturating_sub(now_ms);
    if !(1..=LONGEST_INVOCATION_MS).contains(&left) {
        return None;
    }
    let left = u64::try_from(left).unwrap_or(0);
    let margin = u64::try_from(margin.as_millis())
        .unwrap_or(u64::MAX)
        .min(left / 2);
    Some(Duration::from_millis(left - margin))
}

/// Every message's outcome in batch order: the finished ones as they ended, the
/// others (still running or not started when the time was up) as
/// [`MessageFailure::Unfinished`], so the partial batch response names them.
pub(super) fn settle<T, E>(
    messages: &[SqsMessage],
    finished: Vec<(usize, MessageOutcome<T, E>)>,
) -> Vec<MessageOutcome<T, E>> {
    let mut slots: Vec<Option<MessageOutcome<T, E>>> = messages.iter().map(|_| None).collect();
    for (i, outcome) in finished {
        if let Some(slot) = slots.get_mut(i) {
            *slot = Some(outcome);
        }
    }
    slots
        .into_iter()
        .zip(messages)
        .map(|(slot, msg)| {
            slot.unwrap_or_else(|| {
                let delivery = Delivery::open(msg);
                MessageOutcome {
                    message_id: msg.message_id.clone().unwrap_or_default(),
                    outbox_message_id: delivery.outbox_message_id().map(str::to_owned),
                    group_id: group_id(msg).map(str::to_owned),
                    trace_id: delivery.trace().map(|t| t.trace_id().to_owned()),
                    result: Err(MessageFailure::Unfinished),
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
