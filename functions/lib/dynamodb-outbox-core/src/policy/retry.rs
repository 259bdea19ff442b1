//! The sweeper's retry policy: what a claimed item becomes, what an attempt's
//! outcome means, and when the next attempt is due. Plain functions of plain data.

use super::order::{OrderKey, order_key};
use crate::failure::Failure;
use crate::answers::ClaimedItem;
use crate::outcome::Outcome;
use crate::work::{Poison, Work, poison_of};
use crate::schema::{ItemKey, decode, stable_hash};
use std::time::Duration;

/// Exponential backoff with "equal jitter": the delay before attempt `attempt + 1`
/// is between half and all of `base * 2^(attempt - 1)`, capped at `max`. Half fixed
/// keeps delays growing from one attempt to the next; half random spreads retries of
/// messages that failed together. Once capped, delays vary between half and all of
/// `max`. `jitter` is in `[0, 1)`.
pub fn backoff(attempt: u32, base: Duration, max: Duration, jitter: f64) -> Duration {
    let exp = attempt.saturating_sub(1).min(31);
    let full = base.saturating_mul(1u32 << exp).min(max);
    let half = full / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

/// How long SQS FIFO queues and SNS FIFO topics remember a deduplication id: a
/// republish with the same id inside it is accepted and not delivered again.
pub const FIFO_DEDUPLICATION_WINDOW: Duration = Duration::from_secs(300);

/// What a due message may wait beyond the sweep schedule's period before a sweep
/// republishes it: the sweep's own work before it reaches the message, and the time
/// between the attempt and the sweep's notion of now.
pub const REPUBLISH_SLACK: Duration = Duration::from_secs(30);

/// The longest delay before the next attempt of a message to a FIFO destination
/// whose attempt may have been accepted (a timeout, a lost answer): due then, it is
/// republished by the first sweep after — at most `sweep_period` later, plus
/// [`REPUBLISH_SLACK`] — inside the deduplication window of the attempt, so that if
/// the attempt was accepted, FIFO absorbs the republish. Zero when the schedule is
/// too slow for any delay to land inside (then nothing does, see `docs/protocol.md`).
pub fn fifo_retry_cap(sweep_period: Duration) -> Duration {
    FIFO_DEDUPLICATION_WINDOW
        .saturating_sub(sweep_period)
        .saturating_sub(REPUBLISH_SLACK)
}

/// The delay before attempt `attempt + 1`: the [`backoff`], no longer than `cap`
/// when one applies ([`fifo_retry_cap`] for a FIFO destination).
pub fn retry_delay(
    attempt: u32,
    base: Duration,
    max: Duration,
    jitter: f64,
    cap: Option<Duration>,
) -> Duration {
    let delay = backoff(attempt, base, max, jitter);
    cap.map_or(delay, |cap| delay.min(cap))
}

/// A jitter fraction in `[0, 1)` from the item and the attempt: deterministic, so
/// the logic stays pure, yet different between items that failed together.
pub fn jitter_of(key: &ItemKey, attempt: u32) -> f64 {
    let mut bytes = Vec::with_capacity(key.pk.len() + key.sk.len() + 5);
    bytes.extend_from_slice(key.pk.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(key.sk.as_bytes());
    bytes.extend_from_slice(&attempt.to_be_bytes());
    (stable_hash(&bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether an item claimed with `retry_count` attempts (this one included) has used
/// up its budget of `max_attempts`: then it is dead-lettered instead of sent.
pub fn exhausted(retry_count: u32, max_attempts: u32) -> bool {
    retry_count > max_attempts
}

/// The `LastError` of an item given up on.
pub fn give_up_reason(max_attempts: u32, last_error: Option<&str>) -> String {
    format!(
        "gave up after {max_attempts} attempts: {}",
        last_error.unwrap_or("no error was recorded (the attempts were interrupted)")
    )
}

/// A claimed item, ready for the publish path.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// Its key.
    pub key: ItemKey,
    /// Attempts made, this one included (0 when the item did not decode).
    pub retry_count: u32,
    /// Its `CreatedAt` (0 when unknown).
    pub created_at: i64,
    /// Its place among the messages of its aggregate.
    pub order: OrderKey,
    /// What the publish path does with it.
    pub work: Work,
}

/// What a claimed item becomes: its message to publish, or poison when it does not
/// decode or has used up its attempts.
pub fn attempt_of(claimed: ClaimedItem, max_attempts: u32) -> Attempt {
    match claimed.message {
        Ok(msg) => {
            let (retry_count, created_at) = (msg.retry_count, msg.created_at);
            let order = order_key(&msg.key, created_at, &msg.message_id);
            let work = if exhausted(retry_count, max_attempts) {
                let reason = give_up_reason(max_attempts, claimed.last_error.as_deref());
                Work::Poison(poison_of(&msg, reason))
            } else {
                Work::Publish(msg)
            };
            Attempt {
                key: claimed.key,
                retry_count,
                created_at,
                order,
                work,
            }
        }
        Err(undecodable) => poison_attempt(claimed.key, Poison::from(undecodable)),
    }
}

/// What an item whose claim it refused for good becomes: poison, with the reason.
/// Retrying cannot help, and left as it is the item would head the due order of every
/// sweep, and enough of them would starve the sweeper. `item` is the item as stored,
/// read after the refusal: its payload (or, when it is not a message, its raw content)
/// goes to the dead-letter queue.
pub fn unclaimable(key: ItemKey, item: &serde_dynamo::Item, refusal: &Failure) -> Attempt {
    let reason = format!(
        "the sweeper cannot claim the item, so it can never retry it (fix the item and redrive it): {}",
        refusal.reason
    );
    let (poison, created_at, order) = match decode(item, Some(&key)) {
        Ok(msg) => (
            poison_of(&msg, reason),
            msg.created_at,
            order_key(&key, msg.created_at, &msg.message_id),
        ),
        Err(undecodable) => {
            let mut p = Poison::from(undecodable);
            p.reason = reason;
            (p, 0, order_key(&key, 0, ""))
        }
    };
    Attempt {
        created_at,
        order,
        ..poison_attempt(key, poison)
    }
}

fn poison_attempt(key: ItemKey, mut poison: Poison) -> Attempt {
    poison.key.get_or_insert_with(|| key.clone());
    Attempt {
        order: order_key(&key, 0, ""),
        key,
        retry_count: 0,
        created_at: 0,
        work: Work::Poison(poison),
    }
}

/// What an attempt's outcome means for the item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// Published (and marked `SENT` by this sweep, or not).
    Recovered {
        /// Whether this sweep marked it `SENT`.
        marked: bool,
    },
    /// Dead-lettered (and marked `FAILED`, or the mark failed and the lease brings the
    /// item back).
    DeadLettered {
        /// Why.
        reason: String,
    },
    /// Someone else finished the item before this sweep's dead-letter copy: nothing
    /// was sent.
    Finished,
    /// Poison whose claim this sweep lost before it could mark it `FAILED`
    /// ([`Outcome::ClaimLost`]): left to whoever holds it now, not rescheduled.
    ClaimLost {
        /// Whether it was found at the mark, after the dead-letter copy.
        at_mark: bool,
    },
    /// Not published: record the reason and try again after a backoff.
    Reschedule {
        /// The reason recorded in `LastError`.
        reason: String,
        /// Whether the message was sent at all; one held back behind an earlier
        /// message of its aggregate was not, and gets its attempt back.
        attempted: bool,
    },
}

/// The reason recorded on a message held back behind an earlier one.
pub const HELD_BACK: &str =
    "not attempted: an earlier message of the same aggregate is still pending";

/// Judges the outcome of one attempt.
pub fn judge_attempt(outcome: &Outcome) -> AttemptVerdict {
    match outcome {
        Outcome::Sent { marked } => AttemptVerdict::Recovered { marked: *marked },
        Outcome::DeadLettered { reason, .. } => AttemptVerdict::DeadLettered {
            reason: reason.clone(),
        },
        Outcome::AlreadyFinished => AttemptVerdict::Finished,
        Outcome::ClaimLost { at_mark } => AttemptVerdict::ClaimLost { at_mark: *at_mark },
        Outcome::Retry { reason } => AttemptVerdict::Reschedule {
            reason: reason.clone(),
            attempted: true,
        },
        Outcome::Blocked => AttemptVerdict::Reschedule {
            reason: format!("{HELD_BACK} (it failed in the same sweep)"),
            attempted: false,
        },
        Outcome::Deferred { .. } => AttemptVerdict::Reschedule {
            reason: format!("{HELD_BACK} (outside this sweep's claims)"),
            attempted: false,
        },
        // It may be its aggregate's earliest: giving the attempt back would park it
        // forever when the fence never can tell.
        Outcome::OrderUnknown { reason } => AttemptVerdict::Reschedule {
            reason: reason.clone(),
            attempted: true,
        },
    }
}

/// A duration in whole milliseconds, saturating.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pk: &str) -> ItemKey {
        ItemKey {
            pk: pk.into(),
            sk: "MESSAGE#X#1".into(),
        }
    }

    #[test]
    fn backoff_doubles_from_the_base_and_stops_at_the_cap() {
        let base = Duration::from_secs(30);
        let max = Duration::from_secs(900);
        // Jitter 0 gives the lower half, jitter ~1 the full delay.
        assert_eq!(backoff(1, base, max, 0.0), Duration::from_secs(15));
        assert_eq!(backoff(1, base, max, 1.0), Duration::from_secs(30));
        assert_eq!(backoff(2, base, max, 1.0), Duration::from_secs(60));
        assert_eq!(backoff(3, base, max, 1.0), Duration::from_secs(120));
        assert_eq!(backoff(10, base, max, 1.0), max);
        assert_eq!(backoff(u32::MAX, base, max, 0.0), max / 2);
        // Attempt 0 (never happens after a claim) is treated as the first.
        assert_eq!(backoff(0, base, max, 1.0), base);
    }

    #[test]
    fn a_fifo_republish_after_an_attempt_that_may_have_been_accepted_lands_in_the_window() {
        // Before, the delay was the backoff alone: after the fifth attempt 240-480 s,
        // so the republish (one sweep period later at most) came after FIFO had
        // forgotten the deduplication id, and its consumers got the message twice.
        let (base, max) = (Duration::from_secs(30), Duration::from_secs(900));
        let period = Duration::from_secs(60);
        let cap = Some(fifo_retry_cap(period));
        for attempt in 1..=20 {
            for pk in ["A", "B", "ORDER#9", "USER#123"] {
                let jitter = jitter_of(&key(pk), attempt);
                let delay = retry_delay(attempt, base, max, jitter, cap);
                let republished_by = delay + period + REPUBLISH_SLACK;
                assert!(
                    republished_by <= FIFO_DEDUPLICATION_WINDOW,
                    "attempt {attempt}: due after {delay:?}, republished by {republished_by:?}"
                );
            }
        }
        // Short delays keep their backoff; a standard destination keeps it all.
        assert_eq!(retry_delay(1, base, max, 1.0, cap), base);
        assert_eq!(retry_delay(10, base, max, 1.0, None), max);
        assert_eq!(fifo_retry_cap(period), Duration::from_secs(210));
        assert_eq!(fifo_retry_cap(Duration::from_secs(600)), Duration::ZERO);
    }

    #[test]
    fn delays_never_shrink_from_one_attempt_to_the_next_below_the_cap() {
        let base = Duration::from_secs(1);
        let max = Duration::from_secs(3600);
        for pk in ["A", "B", "USER#123", "ORDER#9"] {
            let k = key(pk);
            // 1 s .. 2048 s: below the cap, whatever the jitter (at the cap, delays
            // vary between half and all of it).
            let delays: Vec<Duration> = (1..=12)
                .map(|n| backoff(n, base, max, jitter_of(&k, n)))
                .collect();
            assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
            assert!(delays[0] < delays[8], "{delays:?}");
        }
    }

    #[test]
    fn jitter_is_deterministic_in_range_and_differs_between_items() {
        let a = jitter_of(&key("A"), 1);
        assert_eq!(a, jitter_of(&key("A"), 1));
        assert_ne!(a, jitter_of(&key("B"), 1));
        assert_ne!(a, jitter_of(&key("A"), 2));
        for n in 0..1000 {
            let j = jitter_of(&key(&format!("K{n}")), 3);
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }

    #[test]
    fn an_item_is_given_up_on_only_after_its_last_allowed_attempt() {
        assert!(!exhausted(1, 8));
        assert!(!exhausted(8, 8), "the eighth attempt is still made");
        assert!(exhausted(9, 8));
        assert_eq!(
            give_up_reason(8, Some("sending to sqs:x failed: QueueDoesNotExist")),
            "gave up after 8 attempts: sending to sqs:x failed: QueueDoesNotExist"
        );
        assert!(give_up_reason(3, None).starts_with("gave up after 3 attempts: no error"));
    }

    #[test]
    fn a_blocked_attempt_is_rescheduled_with_the_reason() {
        match judge_attempt(&Outcome::Blocked) {
            AttemptVerdict::Reschedule { reason, attempted } => {
                assert!(reason.contains("earlier message") && !attempted);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            judge_attempt(&Outcome::Sent { marked: false }),
            AttemptVerdict::Recovered { marked: false }
        );
        assert_eq!(
            judge_attempt(&Outcome::AlreadyFinished),
            AttemptVerdict::Finished
        );
    }

    #[test]
    fn an_item_whose_claim_is_refused_for_good_is_poison_with_its_payload_and_the_reason() {
        use serde_dynamo::AttributeValue as Av;
        let k = key("A");
        let item: serde_dynamo::Item = std::collections::HashMap::from([
            ("PK".to_owned(), Av::S("A".into())),
            ("SK".to_owned(), Av::S("MESSAGE#X#1".into())),
            ("Topic".to_owned(), Av::S("t".into())),
            ("Payload".to_owned(), Av::S("{\"n\":1}".into())),
            ("CreatedAt".to_owned(), Av::N("5".into())),
        ])
        .into();
        let refusal = Failure::content_refused("ValidationException: incorrect data type");
        let a = unclaimable(k.clone(), &item, &refusal);
        match &a.work {
            Work::Poison(p) => {
                assert_eq!(p.body, "{\"n\":1}");
                assert!(
                    p.reason.contains("cannot claim") && p.reason.contains("incorrect data type")
                );
                assert_eq!(p.key.as_ref(), Some(&k));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.created_at, 5);
        // An item that is not even a message goes as its raw content.
        let bare: serde_dynamo::Item =
            std::collections::HashMap::from([("RetryCount".to_owned(), Av::S("0".into()))]).into();
        match unclaimable(k, &bare, &refusal).work {
            Work::Poison(p) => {
                assert!(p.body.contains("RetryCount") && p.reason.contains("cannot claim"));
            }
            other => panic!("{other:?}"),
        }
    }
}
