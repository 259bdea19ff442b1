//! The order of each aggregate's messages in a sweep: a later message is never
//! published before an earlier one that is still `PENDING`.
//!
//! - Due keys are chunked so that an aggregate's keys share one chunk
//!   ([`chunk_due`]): the publish path's own hold-back (a failed message holds back
//!   the later ones of its aggregate in the batch) then covers all of them.
//! - An earlier message this sweep does not send — its claim failed, or someone else
//!   holds it — is a [`Gate`]: every later message of its aggregate is held back
//!   ([`held_back`]).
//! - A message rescheduled is never due before an earlier sibling: not before the
//!   gate that held it back, nor before an earlier message rescheduled with it
//!   ([`next_due_times`]). So the due order the next sweep reads is the publish order.

use super::fence::key_position;
use super::retry::{Attempt, jitter_of, millis, retry_delay};
use crate::answers::DueKey;
use crate::work::Work;
use crate::schema::{ItemKey, SequencePlace, sequence_place};
use std::collections::HashMap;
use std::time::Duration;

/// A message's place among the messages of its aggregate: the sequence of a
/// sequenced sort key (`schema::sequence_place`: the aggregate's version it was
/// committed with — after every message without one); then write time, then the
/// library's time-ordered `MessageId` (UUIDv7); without a write time, the sort key
/// (other producers' sort keys may lead with an event name, so they come first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey {
    /// A sequenced key's place: before write time, which a producer's clock sets.
    sequence: Option<SequencePlace>,
    created_at: i64,
    tie: String,
}

/// The [`OrderKey`] of the message `key` written at `created_at` (0 when unknown).
pub fn order_key(key: &ItemKey, created_at: i64, message_id: &str) -> OrderKey {
    let tie = if created_at > 0 && !message_id.is_empty() {
        message_id
    } else {
        &key.sk
    };
    OrderKey {
        sequence: sequence_place(&key.sk),
        created_at: created_at.max(0),
        tie: tie.to_owned(),
    }
}

/// Puts claimed items in publish order: by aggregate, earlier messages first.
pub fn order_attempts(attempts: &mut [Attempt]) {
    attempts.sort_by(|a, b| (&a.key.pk, &a.order).cmp(&(&b.key.pk, &b.order)));
}

/// Groups due keys into the chunks a sweep claims and publishes one after another,
/// earliest due first, with every aggregate's keys in one chunk (a chunk holds `chunk`
/// keys, or one aggregate's when it has more), each aggregate's in write order when
/// their keys tell it. A sweep takes at most `max_items` keys, whole aggregates only
/// — except an aggregate that alone has more, of which it takes the earliest. Returns the chunks and how many keys are left for the
/// next sweep.
pub fn chunk_due(
    mut due: Vec<DueKey>,
    max_items: usize,
    chunk: usize,
) -> (Vec<Vec<DueKey>>, usize) {
    let total = due.len();
    due.sort_by(|a, b| (a.due_at_ms, &a.key).cmp(&(b.due_at_ms, &b.key)));
    let mut groups: Vec<Vec<DueKey>> = Vec::new();
    let mut group_of: HashMap<String, usize> = HashMap::new();
    for d in due {
        let g = *group_of.entry(d.key.pk.clone()).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(d);
    }
    for group in &mut groups {
        by_place(group);
    }
    let (max_items, chunk) = (max_items.max(1), chunk.max(1));
    let mut chunks: Vec<Vec<DueKey>> = Vec::new();
    let mut current: Vec<DueKey> = Vec::new();
    let mut taken = 0usize;
    for mut group in groups {
        if taken + group.len() > max_items {
            if taken > 0 {
                break;
            }
            group.truncate(max_items);
        }
        taken += group.len();
        if !current.is_empty() && current.len() + group.len() > chunk {
            chunks.push(std::mem::take(&mut current));
        }
        current.extend(group);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    (chunks, total - taken)
}

/// Puts one aggregate's due keys in write order when every key tells it (the UUIDv7
/// that ends the library's sort keys), else leaves them in due order. Due order is
/// not write order after a failure: the head of a backlog, rescheduled, comes due
/// after the messages behind it, and a sweep that took them in due order would claim
/// ten that must wait behind it, and leave the head for a later sweep.
fn by_place(group: &mut [DueKey]) {
    if group.iter().all(|d| key_position(&d.key).is_some()) {
        group.sort_by_key(|d| key_position(&d.key));
    }
}

/// An earlier message of an aggregate that this sweep does not send, though it is
/// (or may be) still `PENDING`: the later messages of its aggregate must wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// Its aggregate.
    pub aggregate: String,
    /// Its place, when known; unknown (a claim that failed) holds back every message
    /// of the aggregate — unless both sort keys end in the library's UUIDv7, which
    /// orders them as the order fence does ([`super::key_position`]).
    pub position: Option<OrderKey>,
    /// Its key, for that comparison.
    pub key: ItemKey,
    /// The earliest it may be due again: a message held back behind it is rescheduled
    /// after this.
    pub due_floor: i64,
}

/// For each attempt, in order, the due time it must wait for when a gate holds it
/// back, else `None`. Poison is never held back: it is isolated, not published.
pub fn held_back(attempts: &[Attempt], gates: &[Gate]) -> Vec<Option<i64>> {
    attempts
        .iter()
        .map(|a| {
            if matches!(a.work, Work::Poison(_)) {
                return None;
            }
            gates
                .iter()
                .filter(|g| g.aggregate == a.key.pk)
                .filter(|g| gate_is_earlier(g, a))
                .map(|g| g.due_floor)
                .max()
        })
        .collect()
}

/// Whether `gate` comes before `a` in its aggregate: by place when the gate's is
/// known, else by the UUIDv7s of both keys, else (conservatively) yes.
fn gate_is_earlier(gate: &Gate, a: &Attempt) -> bool {
    match (
        &gate.position,
        key_position(&gate.key),
        key_position(&a.key),
    ) {
        (Some(place), _, _) => *place < a.order,
        (None, Some(gate_id), Some(id)) => gate_id < id,
        _ => true,
    }
}

/// A message to reschedule: its key, the attempts made (for the backoff), whether
/// this sweep tried to send it, and the time it must not be due before (`i64::MIN`
/// for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retrying<'a> {
    /// Its key.
    pub key: &'a ItemKey,
    /// Attempts made, for the backoff.
    pub attempt: u32,
    /// Whether it was sent (and failed). One that only waited behind an earlier
    /// message did not fail: it backs off as after a first attempt, not by its count.
    pub attempted: bool,
    /// It must be due after this (the gate it waits behind).
    pub not_before: i64,
}

/// When each message is due again, given in publish order: `now` plus its backoff,
/// after what it waits behind, and after every earlier message of its aggregate in
/// the list (each at least 1 ms after its predecessor). A message that only waited
/// (held back, fenced) backs off as after one attempt: its own count says how often
/// it failed before, and a long delay from that would keep it waiting long after
/// what it waited behind has gone (the chaos run drained a backlog of 400 FIFO
/// messages at a few per sweep that way).
pub fn next_due_times(
    retrying: &[Retrying<'_>],
    now_ms: i64,
    base: Duration,
    max: Duration,
) -> Vec<i64> {
    next_due_times_capped(retrying, &[], now_ms, base, max)
}

/// [`next_due_times`], the delay of each message that was sent no longer than its
/// entry in `caps` (one per message, none when missing; for a FIFO destination
/// [`super::fifo_retry_cap`]: its republish lands inside the deduplication
/// window of the attempt).
pub fn next_due_times_capped(
    retrying: &[Retrying<'_>],
    caps: &[Option<Duration>],
    now_ms: i64,
    base: Duration,
    max: Duration,
) -> Vec<i64> {
    let mut last_due: HashMap<&str, i64> = HashMap::new();
    retrying
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let attempt = if r.attempted { r.attempt } else { 1 };
            let cap = caps.get(i).copied().flatten().filter(|_| r.attempted);
            let delay = retry_delay(attempt, base, max, jitter_of(r.key, r.attempt), cap);
            let mut next = now_ms
                .saturating_add(millis(delay))
                .max(r.not_before.saturating_add(1));
            if let Some(prev) = last_due.get(r.key.pk.as_str()) {
                next = next.max(prev.saturating_add(1));
            }
            last_due.insert(r.key.pk.as_str(), next);
            next
        })
        .collect()
}

#[cfg(test)]
mod tests;
