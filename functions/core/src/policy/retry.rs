//! The sweeper's retry policy: what a claimed item becomes, what an attempt's
//! outcome means, and when the next attempt is due. Plain functions of plain data.

use crate::ports::ClaimedItem;
use crate::publish::{Outcome, Poison, Work, poison_of};
use crate::schema::{ItemKey, stable_hash};
use std::collections::HashMap;
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
    /// What the publish path does with it.
    pub work: Work,
}

/// What a claimed item becomes: its message to publish, or poison when it does not
/// decode or has used up its attempts.
pub fn attempt_of(claimed: ClaimedItem, max_attempts: u32) -> Attempt {
    match claimed.message {
        Ok(msg) => {
            let (retry_count, created_at) = (msg.retry_count, msg.created_at);
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
                work,
            }
        }
        Err(undecodable) => {
            let mut poison = Poison::from(undecodable);
            poison.key.get_or_insert_with(|| claimed.key.clone());
            Attempt {
                key: claimed.key,
                retry_count: 0,
                created_at: 0,
                work: Work::Poison(poison),
            }
        }
    }
}

/// Puts claimed items in publish order: per aggregate, earlier messages first.
/// Within one write time, library ids (UUIDv7) are in creation order; sort keys of
/// other producers may lead with an event name, so they come last.
pub fn order_attempts(attempts: &mut [Attempt]) {
    let tie = |a: &Attempt| match &a.work {
        Work::Publish(m) if a.created_at > 0 => m.message_id.clone(),
        _ => a.key.sk.clone(),
    };
    attempts
        .sort_by(|a, b| (&a.key.pk, a.created_at, tie(a)).cmp(&(&b.key.pk, b.created_at, tie(b))));
}

/// What an attempt's outcome means for the item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// Published (and marked `SENT` by this sweep, or not).
    Recovered {
        /// Whether this sweep marked it `SENT`.
        marked: bool,
    },
    /// Dead-lettered and marked `FAILED`.
    DeadLettered {
        /// Why.
        reason: String,
    },
    /// Failed: record the reason and try again after a backoff.
    Reschedule {
        /// The reason recorded in `LastError`.
        reason: String,
    },
}

/// Judges the outcome of one attempt.
pub fn judge_attempt(outcome: &Outcome) -> AttemptVerdict {
    match outcome {
        Outcome::Sent { marked } => AttemptVerdict::Recovered { marked: *marked },
        Outcome::DeadLettered { reason } => AttemptVerdict::DeadLettered {
            reason: reason.clone(),
        },
        Outcome::Retry { reason } => AttemptVerdict::Reschedule {
            reason: reason.clone(),
        },
        Outcome::Blocked => AttemptVerdict::Reschedule {
            reason:
                "not attempted: an earlier message of the same aggregate failed in the same sweep"
                    .to_owned(),
        },
    }
}

/// When each failed attempt is due again, for `(key, attempts made)` in publish
/// order: `now` plus its backoff, and never before an earlier message of its
/// aggregate that is also being retried (each gets at least its predecessor's due
/// time + 1 ms).
pub fn next_due_times(
    failed: &[(&ItemKey, u32)],
    now_ms: i64,
    base: Duration,
    max: Duration,
) -> Vec<i64> {
    let mut last_due: HashMap<&str, i64> = HashMap::new();
    failed
        .iter()
        .map(|(key, attempt)| {
            let delay = backoff(*attempt, base, max, jitter_of(key, *attempt));
            let own = now_ms.saturating_add(millis(delay));
            let next = last_due
                .get(key.pk.as_str())
                .map_or(own, |prev| own.max(prev + 1));
            last_due.insert(key.pk.as_str(), next);
            next
        })
        .collect()
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
    fn a_later_message_of_an_aggregate_is_never_due_before_an_earlier_one() {
        let (a1, a2, b1) = (
            key("A"),
            ItemKey {
                pk: "A".into(),
                sk: "MESSAGE#X#2".into(),
            },
            key("B"),
        );
        let base = Duration::from_secs(30);
        let max = Duration::from_secs(900);
        // A1 on its 5th attempt (long delay), A2 on its 1st (short delay).
        let dues = next_due_times(&[(&a1, 5), (&a2, 1), (&b1, 1)], 1_000, base, max);
        assert!(dues[1] > dues[0], "{dues:?}");
        assert_eq!(
            dues[2],
            1_000 + millis(backoff(1, base, max, jitter_of(&b1, 1)))
        );
    }

    #[test]
    fn a_blocked_attempt_is_rescheduled_with_the_reason() {
        match judge_attempt(&Outcome::Blocked) {
            AttemptVerdict::Reschedule { reason } => assert!(reason.contains("earlier message")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            judge_attempt(&Outcome::Sent { marked: false }),
            AttemptVerdict::Recovered { marked: false }
        );
    }
}
