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
use super::retry::{Attempt, backoff, jitter_of, millis};
use crate::ports::DueKey;
use crate::publish::Work;
use crate::schema::ItemKey;
use std::collections::HashMap;
use std::time::Duration;

/// A message's place among the messages of its aggregate: write time, then the
/// library's time-ordered `MessageId` (UUIDv7); without a write time, the sort key
/// (other producers' sort keys may lead with an event name, so they come first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey {
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
    /// orders them as the order fence does ([`super::fence::key_position`]).
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
    let mut last_due: HashMap<&str, i64> = HashMap::new();
    retrying
        .iter()
        .map(|r| {
            let attempt = if r.attempted { r.attempt } else { 1 };
            let delay = backoff(attempt, base, max, jitter_of(r.key, r.attempt));
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
mod tests {
    use super::*;
    use crate::publish::Poison;

    fn key(pk: &str, sk: &str) -> ItemKey {
        ItemKey {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    fn due(pk: &str, sk: &str, at: i64) -> DueKey {
        DueKey::new(key(pk, sk), at)
    }

    fn attempt(pk: &str, created: i64, id: &str) -> Attempt {
        let k = key(pk, &format!("MESSAGE#X#{id}"));
        Attempt {
            order: order_key(&k, created, id),
            key: k,
            retry_count: 1,
            created_at: created,
            work: Work::Poison(Poison {
                key: None,
                message_id: None,
                topic: None,
                body: String::new(),
                reason: String::new(),
            }),
        }
    }

    fn publishable(pk: &str, created: i64, id: &str) -> Attempt {
        let mut a = attempt(pk, created, id);
        a.work = Work::Publish(crate::schema::OutboxMessage {
            key: a.key.clone(),
            message_id: id.into(),
            topic: "t".into(),
            payload: String::new(),
            created_at: created,
            retry_count: 1,
            sequence: None,
            payload_size: None,
            index: crate::schema::SeenIndex::default(),
        });
        a
    }

    fn pks(chunk: &[DueKey]) -> Vec<&str> {
        chunk.iter().map(|d| d.key.pk.as_str()).collect()
    }

    #[test]
    fn an_aggregate_never_spans_two_chunks() {
        // A's second key is due last, after B's and C's.
        let keys = vec![
            due("A", "1", 1),
            due("B", "1", 2),
            due("C", "1", 3),
            due("A", "2", 9),
        ];
        let (chunks, left) = chunk_due(keys, 100, 2);
        assert_eq!(left, 0);
        let shapes: Vec<Vec<&str>> = chunks.iter().map(|c| pks(c)).collect();
        assert_eq!(shapes, vec![vec!["A", "A"], vec!["B", "C"]]);
        // One aggregate over the chunk size is one chunk of its own.
        let many: Vec<DueKey> = (0..5).map(|i| due("A", &i.to_string(), i)).collect();
        let (chunks, _) = chunk_due(many, 100, 2);
        assert_eq!(chunks.len(), 1);
    }

    #[test]
    fn the_per_sweep_bound_takes_whole_aggregates_in_due_order() {
        let keys = vec![
            due("A", "1", 1),
            due("B", "1", 2),
            due("B", "2", 3),
            due("C", "1", 4),
        ];
        let (chunks, left) = chunk_due(keys, 2, 10);
        assert_eq!(pks(&chunks[0]), vec!["A"], "B does not fit whole");
        assert_eq!(left, 3);
        // An aggregate alone over the bound gives its earliest due keys.
        let many: Vec<DueKey> = (0..5).map(|i| due("A", &i.to_string(), 10 - i)).collect();
        let (chunks, left) = chunk_due(many, 3, 10);
        let dues: Vec<i64> = chunks[0].iter().map(|d| d.due_at_ms).collect();
        assert_eq!((dues, left), (vec![6, 7, 8], 2));
    }

    #[test]
    fn a_gate_holds_back_only_later_messages_of_its_aggregate_and_never_poison() {
        let attempts = vec![
            publishable("A", 10, "a1"),
            publishable("A", 30, "a3"),
            attempt("A", 40, "a4"),
            publishable("B", 30, "b3"),
        ];
        let held = key("A", "MESSAGE#X#a2");
        let gates = vec![Gate {
            aggregate: "A".into(),
            position: Some(order_key(&held, 20, "a2")),
            key: held.clone(),
            due_floor: 500,
        }];
        assert_eq!(
            held_back(&attempts, &gates),
            vec![None, Some(500), None, None]
        );
        // A gate whose place is unknown (its claim failed) holds back all of A.
        let unknown = vec![Gate {
            aggregate: "A".into(),
            position: None,
            key: held.clone(),
            due_floor: 700,
        }];
        assert_eq!(
            held_back(&attempts, &unknown),
            vec![Some(700), Some(700), None, None]
        );
    }

    #[test]
    fn a_gate_of_unknown_place_with_a_library_key_holds_back_only_later_messages() {
        // Three library messages of A, written in this order (UUIDv7 sort keys); the
        // claim of the middle one failed, so its place is unknown but for its key.
        let ids: Vec<String> = (0..3).map(|_| uuid::Uuid::now_v7().to_string()).collect();
        let attempts = vec![publishable("A", 10, &ids[0]), publishable("A", 30, &ids[2])];
        let failed = key("A", &format!("MESSAGE#X#{}", ids[1]));
        let gate = vec![Gate {
            aggregate: "A".into(),
            position: None,
            key: failed,
            due_floor: 700,
        }];
        // The earlier message goes; only the later one waits.
        assert_eq!(held_back(&attempts, &gate), vec![None, Some(700)]);
    }

    #[test]
    fn a_message_that_only_waited_backs_off_as_after_one_attempt() {
        let (a1, a2) = (key("A", "1"), key("A", "2"));
        let (base, max) = (Duration::from_secs(30), Duration::from_secs(900));
        let r = |key, attempted| Retrying {
            key,
            attempt: 6,
            attempted,
            not_before: 5_000,
        };
        // Six failures before: a sent-and-failed message waits 8 to 15 minutes,
        // one that was held back waits 15 to 30 seconds (after its gate).
        let failed = next_due_times(&[r(&a1, true)], 1_000, base, max)[0];
        let waited = next_due_times(&[r(&a2, false)], 1_000, base, max)[0];
        assert!(failed >= 1_000 + 450_000, "{failed}");
        assert!(
            (1_000 + 15_000..=1_000 + 30_000).contains(&waited),
            "{waited}"
        );
    }

    #[test]
    fn a_later_message_of_an_aggregate_is_never_due_before_an_earlier_one() {
        let (a1, a2, b1) = (key("A", "1"), key("A", "2"), key("B", "1"));
        let base = Duration::from_secs(30);
        let max = Duration::from_secs(900);
        let r = |key, attempt, not_before| Retrying {
            key,
            attempt,
            attempted: true,
            not_before,
        };
        // A1 on its 5th attempt (long delay), A2 on its 1st (short delay).
        let dues = next_due_times(
            &[
                r(&a1, 5, i64::MIN),
                r(&a2, 1, i64::MIN),
                r(&b1, 1, i64::MIN),
            ],
            1_000,
            base,
            max,
        );
        assert!(dues[1] > dues[0], "{dues:?}");
        assert_eq!(
            dues[2],
            1_000 + millis(backoff(1, base, max, jitter_of(&b1, 1)))
        );
        // Held back behind a gate due in an hour: after the gate.
        let gated = next_due_times(&[r(&a2, 1, 3_600_000)], 1_000, base, max);
        assert_eq!(gated, vec![3_600_001]);
    }

    #[test]
    fn attempts_are_ordered_by_write_time_then_message_id_per_aggregate() {
        let mut attempts = vec![
            publishable("B", 1, "b1"),
            publishable("A", 2, "a2"),
            publishable("A", 2, "a1"),
            publishable("A", 1, "a0"),
        ];
        order_attempts(&mut attempts);
        let ids: Vec<&str> = attempts.iter().map(|a| a.key.sk.as_str()).collect();
        assert_eq!(
            ids,
            [
                "MESSAGE#X#a0",
                "MESSAGE#X#a1",
                "MESSAGE#X#a2",
                "MESSAGE#X#b1"
            ]
        );
    }
}
