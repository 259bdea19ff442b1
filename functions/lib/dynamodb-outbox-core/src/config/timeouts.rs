//! How long the functions' AWS calls may take: a per-attempt and an operation
//! timeout for every SDK client, so that a call that hangs fails as a timeout (a
//! transient failure: reported, retried, swept) instead of holding the invocation
//! until Lambda kills it — which costs the stream path a bisect and a re-send of the
//! whole batch.
//!
//! ## Why these values
//!
//! - **Attempt, 5 s.** Every call the functions make is small: a batch of at most ten
//!   messages of at most 1 MiB in all, a DynamoDB read or write of one item or one
//!   page, one stream page, one S3 object of at most an outbox item's 400 KB. AWS
//!   answers them in milliseconds to a few hundred; an attempt still unanswered after
//!   5 s is stuck (a dead connection, a black-holed packet), and a fresh attempt on a
//!   new connection does better than waiting on it.
//! - **Operation, 20 s.** The SDK's standard retry makes three attempts with a short
//!   backoff between them: 3 × 5 s plus the backoff fits in 20 s, so the timeout
//!   bounds the retries rather than cutting them short. It is a third of the 60 s the
//!   publisher and recovery functions get (the sweeper gets at least that), so one
//!   hung call leaves the invocation time to report what it did and did not finish.
//!
//! A timeout the caller's own SDK configuration sets wins over these (see
//! `dynamodb_outbox::sdk_config_with_timeouts`).

use super::{ConfigError, parse_or};
use std::time::Duration;

/// The per-attempt timeout when `OUTBOX_SDK_ATTEMPT_TIMEOUT_MS` is not set.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// The operation timeout (all attempts and the backoff between them) when
/// `OUTBOX_SDK_OPERATION_TIMEOUT_MS` is not set.
pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(20);
/// Lambda's longest timeout: a longer SDK timeout could never fire.
const LONGEST_INVOCATION_MS: u64 = 900_000;

/// Names of the variables.
pub mod vars {
    /// One attempt of an AWS call, milliseconds.
    pub const ATTEMPT_TIMEOUT_MS: &str = "OUTBOX_SDK_ATTEMPT_TIMEOUT_MS";
    /// A whole AWS call, its retries included, milliseconds.
    pub const OPERATION_TIMEOUT_MS: &str = "OUTBOX_SDK_OPERATION_TIMEOUT_MS";
}

/// The timeouts every SDK client of the functions gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdkTimeouts {
    /// One attempt: from sending the request to reading the whole answer.
    pub attempt: Duration,
    /// The whole call: every attempt and the backoff between them.
    pub operation: Duration,
}

impl Default for SdkTimeouts {
    fn default() -> Self {
        SdkTimeouts {
            attempt: DEFAULT_ATTEMPT_TIMEOUT,
            operation: DEFAULT_OPERATION_TIMEOUT,
        }
    }
}

impl SdkTimeouts {
    /// Reads the timeouts from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the timeouts through `lookup` (a map in tests): each optional, in
    /// milliseconds, at most Lambda's 15 minutes, and the operation's no shorter
    /// than one attempt.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let within_an_invocation = |ms: &u64| {
            (1..=LONGEST_INVOCATION_MS)
                .contains(ms)
                .then_some(())
                .ok_or("must be between 1 and 900000 milliseconds (Lambda's longest timeout)")
        };
        let attempt = parse_or(
            &lookup,
            vars::ATTEMPT_TIMEOUT_MS,
            millis(DEFAULT_ATTEMPT_TIMEOUT),
            within_an_invocation,
        )?;
        let operation = parse_or(
            &lookup,
            vars::OPERATION_TIMEOUT_MS,
            millis(DEFAULT_OPERATION_TIMEOUT),
            within_an_invocation,
        )?;
        if operation < attempt {
            return Err(ConfigError::Invalid {
                name: vars::OPERATION_TIMEOUT_MS,
                reason: format!(
                    "`{operation}` is shorter than {} (`{attempt}`): a call cannot take less time than one of its attempts",
                    vars::ATTEMPT_TIMEOUT_MS
                ),
            });
        }
        Ok(SdkTimeouts {
            attempt: Duration::from_millis(attempt),
            operation: Duration::from_millis(operation),
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::lookup;

    #[test]
    fn unset_the_timeouts_are_a_few_seconds_an_attempt_and_below_the_functions_timeout() {
        let t = SdkTimeouts::from_lookup(lookup(&[])).expect("valid");
        assert_eq!(t, SdkTimeouts::default());
        assert_eq!(t.attempt, Duration::from_secs(5));
        assert_eq!(t.operation, Duration::from_secs(20));
        assert!(
            t.operation < Duration::from_secs(60),
            "the publisher's timeout"
        );
        assert!(t.attempt * 3 < t.operation, "three attempts fit");
    }

    #[test]
    fn the_timeouts_are_read_in_milliseconds() {
        let t = SdkTimeouts::from_lookup(lookup(&[
            ("OUTBOX_SDK_ATTEMPT_TIMEOUT_MS", "1500"),
            ("OUTBOX_SDK_OPERATION_TIMEOUT_MS", " 4000 "),
        ]))
        .expect("valid");
        assert_eq!(t.attempt, Duration::from_millis(1500));
        assert_eq!(t.operation, Duration::from_secs(4));
    }

    #[test]
    fn a_bad_timeout_is_an_error_naming_the_variable() {
        for (pairs, name) in [
            (
                &[("OUTBOX_SDK_ATTEMPT_TIMEOUT_MS", "5s")][..],
                vars::ATTEMPT_TIMEOUT_MS,
            ),
            (
                &[("OUTBOX_SDK_ATTEMPT_TIMEOUT_MS", "0")],
                vars::ATTEMPT_TIMEOUT_MS,
            ),
            (
                &[("OUTBOX_SDK_OPERATION_TIMEOUT_MS", "900001")],
                vars::OPERATION_TIMEOUT_MS,
            ),
            (
                &[
                    ("OUTBOX_SDK_ATTEMPT_TIMEOUT_MS", "8000"),
                    ("OUTBOX_SDK_OPERATION_TIMEOUT_MS", "3000"),
                ],
                vars::OPERATION_TIMEOUT_MS,
            ),
        ] {
            let err = SdkTimeouts::from_lookup(lookup(pairs)).expect_err(name);
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}
