//! What to do with each statement's answer when state changes are batched.
//!
//! The publish path marks items `SENT` (and `FAILED`) with up to
//! [`MARK_BATCH_LIMIT`] conditional statements per call (DynamoDB's PartiQL
//! `BatchExecuteStatement`): one request instead of one per item, each statement still
//! conditional on `Status = PENDING` and billed as its own write. Every statement
//! answers on its own, so every statement is judged on its own:
//!
//! - applied: the item is marked;
//! - its condition refused (`ConditionalCheckFailed`): someone else finished the item,
//!   not an error;
//! - throttled or an internal error: retried in the next batch, after a pause, up to
//!   [`MARK_BATCH_ATTEMPTS`] batches; then the per-item path (with the SDK's own
//!   retries) takes it;
//! - anything else (the item refused the write for its size, a duplicate key in one
//!   batch, a missing permission…): the per-item path, whose answers the existing
//!   decisions judge — the `FAILED` mark's ladder of smaller marks among them.
//!
//! A call that fails as a whole (after the SDK's retries) sends every statement to the
//! per-item path.

use crate::answers::StatementAnswer;
use std::time::Duration;

/// The most statements one `BatchExecuteStatement` takes.
pub const MARK_BATCH_LIMIT: usize = 25;

/// Batches a throttled statement is tried in before the per-item path takes it.
pub const MARK_BATCH_ATTEMPTS: u32 = 3;

/// Statement error codes after which the same statement may succeed: DynamoDB's
/// `BatchStatementErrorCodeEnum` values for throttling, capacity, a concurrent
/// transaction on the item, and its own failures.
pub const RETRYABLE_STATEMENT_CODES: &[&str] = &[
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
    "TransactionConflict",
    "InternalServerError",
];

/// The code of a statement whose condition (`Status = PENDING`) was refused.
pub const CONDITION_REFUSED: &str = "ConditionalCheckFailed";

/// What to do with one statement's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementVerdict {
    /// The item changed: it is marked.
    Marked,
    /// The item was no longer `PENDING`: someone else finished it.
    AlreadyFinished,
    /// Try the statement again in the next batch.
    Retry,
    /// Give the item to the per-item path.
    PerItem,
}

/// The verdict on one statement's answer in batch attempt `attempt` (0 for the
/// first).
pub fn judge_statement(answer: &StatementAnswer, attempt: u32) -> StatementVerdict {
    match answer {
        Ok(()) => StatementVerdict::Marked,
        Err(e) if e.code == CONDITION_REFUSED => StatementVerdict::AlreadyFinished,
        Err(e) if RETRYABLE_STATEMENT_CODES.contains(&e.code.as_str()) => {
            if attempt + 1 < MARK_BATCH_ATTEMPTS {
                StatementVerdict::Retry
            } else {
                StatementVerdict::PerItem
            }
        }
        Err(_) => StatementVerdict::PerItem,
    }
}

/// The pause before batch attempt `attempt` (1 for the first retry): 50 ms, doubling.
pub fn batch_retry_delay(attempt: u32) -> Duration {
    Duration::from_millis(50u64 << attempt.saturating_sub(1).min(6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::StatementError;

    fn refused(code: &str) -> StatementAnswer {
        Err(StatementError {
            code: code.to_owned(),
            message: "said so".to_owned(),
        })
    }

    #[test]
    fn an_applied_statement_is_a_mark_and_a_refused_condition_someone_elses_finish() {
        assert_eq!(judge_statement(&Ok(()), 0), StatementVerdict::Marked);
        assert_eq!(
            judge_statement(&refused("ConditionalCheckFailed"), 0),
            StatementVerdict::AlreadyFinished
        );
    }

    #[test]
    fn throttled_and_internal_errors_are_retried_in_a_batch_then_given_to_the_per_item_path() {
        for code in [
            "ThrottlingError",
            "InternalServerError",
            "RequestLimitExceeded",
        ] {
            assert_eq!(judge_statement(&refused(code), 0), StatementVerdict::Retry);
            assert_eq!(
                judge_statement(&refused(code), MARK_BATCH_ATTEMPTS - 2),
                StatementVerdict::Retry
            );
            assert_eq!(
                judge_statement(&refused(code), MARK_BATCH_ATTEMPTS - 1),
                StatementVerdict::PerItem
            );
        }
    }

    #[test]
    fn anything_else_goes_to_the_per_item_path_at_once() {
        for code in [
            "ValidationError",
            "DuplicateItem",
            "AccessDenied",
            "ItemCollectionSizeLimitExceeded",
            "SomethingNew",
        ] {
            assert_eq!(
                judge_statement(&refused(code), 0),
                StatementVerdict::PerItem
            );
        }
    }

    #[test]
    fn the_pause_doubles_and_stays_bounded() {
        assert_eq!(batch_retry_delay(1), Duration::from_millis(50));
        assert_eq!(batch_retry_delay(2), Duration::from_millis(100));
        assert_eq!(batch_retry_delay(99), Duration::from_millis(3200));
    }
}
