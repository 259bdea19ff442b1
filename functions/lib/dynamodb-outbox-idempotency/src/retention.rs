//! How long idempotency records are kept: one setting for processed-message markers
//! and idempotent-effect records.
//!
//! A record answers duplicates only while it exists, so it must outlive every copy
//! of its message that can still arrive. SQS keeps a message at most 14 days — on its
//! queue, and on the dead-letter queue it is redriven from, where the count still
//! starts at the first send — so the default, 14 days, outlives every redelivery and
//! every redrive. Shorten it only to the `MessageRetentionPeriod` of your queue *and*
//! its dead-letter queue, never below.
//!
//! The records carry it as a DynamoDB TTL (`ExpiresAt`, epoch seconds). The TTL is
//! only ever the time after which DynamoDB *may* delete the record — it deletes
//! within days, not at once — and a record that is still there still answers: this
//! crate never treats a present record as free because its TTL passed. Only the
//! deletion frees a key.

use std::fmt;
use std::time::Duration;

/// SQS's longest message retention, and the default [`Retention`].
const SQS_MAX_RETENTION: Duration = Duration::from_secs(14 * 86_400);
/// SQS's shortest message retention: a shorter retention cannot outlive any queue.
const MIN_RETENTION: Duration = Duration::from_secs(60);
/// The longest accepted retention (ten years): longer is a unit mistake.
const MAX_RETENTION: Duration = Duration::from_secs(3650 * 86_400);

/// How long markers and effect records are kept (default 14 days).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(Duration);

/// A retention out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a retention of {seconds} s is invalid: {reason}. Keep idempotency records at least as long as the MessageRetentionPeriod of the queue and of its dead-letter queue (14 days, the default, covers every SQS queue)"
)]
pub struct RetentionError {
    seconds: u64,
    reason: &'static str,
}

impl Retention {
    /// `duration`, between one minute (SQS's shortest retention) and ten years.
    pub fn new(duration: Duration) -> Result<Self, RetentionError> {
        let bad = |reason| RetentionError {
            seconds: duration.as_secs(),
            reason,
        };
        if duration < MIN_RETENTION {
            return Err(bad(
                "it is shorter than any SQS queue can keep a message (60 s)",
            ));
        }
        if duration > MAX_RETENTION {
            return Err(bad("it is longer than ten years, which is a unit mistake"));
        }
        Ok(Retention(duration))
    }

    /// `days` days.
    pub fn days(days: u32) -> Result<Self, RetentionError> {
        Self::new(Duration::from_secs(u64::from(days) * 86_400))
    }

    /// The duration.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// The TTL value (epoch seconds) of a record written at `now_ms` (epoch ms).
    pub(crate) fn expires_at(self, now_ms: i64) -> u64 {
        crate::epoch_seconds(now_ms).saturating_add(self.0.as_secs())
    }
}

impl Default for Retention {
    /// 14 days: SQS's longest retention.
    fn default() -> Self {
        Retention(SQS_MAX_RETENTION)
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.as_secs();
        if s.is_multiple_of(86_400) {
            write!(f, "{} days", s / 86_400)
        } else {
            write!(f, "{s} s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_sqs_longest_retention_fourteen_days() {
        assert_eq!(Retention::default().duration(), SQS_MAX_RETENTION);
        assert_eq!(Retention::default(), Retention::days(14).expect("valid"));
        assert_eq!(Retention::default().to_string(), "14 days");
    }

    #[test]
    fn a_retention_no_queue_can_match_is_refused_with_what_to_set() {
        for bad in [Duration::ZERO, Duration::from_secs(59)] {
            let err = Retention::new(bad).expect_err("too short");
            let text = err.to_string();
            assert!(text.contains("shorter than any SQS queue"), "{text}");
            assert!(text.contains("MessageRetentionPeriod"), "{text}");
        }
        assert!(Retention::days(0).is_err());
        assert!(Retention::days(3651).is_err(), "ten years at most");
        assert!(Retention::new(MIN_RETENTION).is_ok());
        assert!(Retention::days(3650).is_ok());
    }

    #[test]
    fn a_record_expires_the_retention_after_it_was_written() {
        let r = Retention::days(14).expect("valid");
        assert_eq!(r.expires_at(1_800_000_000_999), 1_800_000_000 + 14 * 86_400);
    }
}
