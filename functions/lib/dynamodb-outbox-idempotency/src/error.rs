//! Why a message was not processed, split into what a retry may fix and what it
//! cannot.
//!
//! Display texts never contain attribute values or message bodies (they carry
//! personal data); the values are in the fields for the caller to inspect.

use crate::Item;
use aws_sdk_dynamodb::error::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::retry::ProvideErrorKind;
use dynamodb_outbox_core::failure::{retryable, signals};
pub use dynamodb_outbox_core::producer::CancelledAction;

/// Any error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum IdempotencyError {
    /// The body is not what the consumer accepts. A retry cannot fix it: the message
    /// is reported as failed and reaches the queue's dead-letter queue through its
    /// redrive policy.
    #[error("malformed message body: {reason}")]
    MalformedBody {
        /// What is wrong, with the field's path; quoted string values are redacted.
        reason: String,
    },
    /// The business key is already stored with different details. Never acknowledged
    /// silently: someone must decide which version is right.
    #[error(
        "item {key} already exists with different details (differs in: {}): not acknowledged; compare the stored and requested versions and fix the producer",
        differing.join(", ")
    )]
    Conflict {
        /// The business key, rendered `name=value`.
        key: String,
        /// Names of the attributes that differ.
        differing: Vec<String>,
        /// What the table holds.
        stored: Box<Item>,
        /// What this message asked to write.
        requested: Box<Item>,
    },
    /// A transaction was cancelled for a reason other than the processed-message
    /// marker's condition.
    #[error("the transaction was cancelled and nothing was written: {}", .failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Cancelled {
        /// The actions that caused the cancellation (the marker is action 0).
        failures: Vec<CancelledAction>,
    },
    /// Another invocation holds the idempotency key and its lock has not expired.
    #[error(
        "idempotency key {key} is being processed by another invocation until {locked_until_ms} (epoch ms): retry after that"
    )]
    InProgress {
        /// The idempotency key.
        key: String,
        /// When the other invocation's lock expires (its Lambda deadline).
        locked_until_ms: i64,
    },
    /// The idempotency key was already used for a payload whose chosen fields differ.
    #[error(
        "idempotency key {key} was already used with a different payload (stored hash {stored_hash}, this one {requested_hash}): use a new key for new content"
    )]
    KeyReused {
        /// The idempotency key.
        key: String,
        /// Hash stored with the key.
        stored_hash: String,
        /// Hash of this request.
        requested_hash: String,
    },
    /// The side effect itself failed (returned an error); its guard record was released
    /// so a retry runs it again.
    #[error("the side effect for idempotency key {key} failed: {source}")]
    Effect {
        /// The idempotency key.
        key: String,
        /// The effect's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An earlier attempt took the idempotency key and never recorded an outcome: it
    /// crashed or timed out while the effect ran, or the effect ran and its outcome
    /// could not be written. The effect may have been applied, so it is not run again:
    /// a person decides.
    #[error(
        "idempotency key {key}: an earlier attempt (locked until {locked_until_ms}, epoch ms) never recorded an outcome, and may have applied the effect. It is not run again: check the downstream system; if the effect happened, delete this message; if not, call IdempotentEffects::forget(\"{key}\") and redrive the message"
    )]
    OutcomeUnknown {
        /// The idempotency key.
        key: String,
        /// When the earlier attempt's lock expired.
        locked_until_ms: i64,
    },
    /// The message carries no outbox message id, so duplicates of it cannot be
    /// recognised; keying by the SQS `MessageId` would apply each republished copy
    /// again.
    #[error(
        "message {sqs_message_id} is {envelope}: no key to recognise its duplicates by. Publish it through the outbox (SQS, SNS with or without raw message delivery, and EventBridge rules targeting the queue are all read), or, only if nothing ever republishes to this queue, opt in to the SQS MessageId with BatchProcessor::sqs_message_id_fallback()"
    )]
    NoMessageId {
        /// The SQS `MessageId`.
        sqs_message_id: String,
        /// How the message arrived.
        envelope: crate::Envelope,
    },
    /// The message carries a large-payload offload pointer whose object could not be read
    /// (missing, expired, no permission, a network error). Retryable: the object may
    /// become readable (a permission granted); if not, the message reaches the
    /// queue's dead-letter queue after `maxReceiveCount` receives.
    #[error("the payload at {pointer} could not be read: {reason}")]
    PayloadUnavailable {
        /// `s3://<bucket>/<key>`.
        pointer: String,
        /// Why.
        reason: String,
    },
    /// A stored record is not in the shape this crate writes.
    #[error("record {key} is unreadable: {reason}")]
    Corrupt {
        /// The record's key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A request AWS would refuse, caught before sending it.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Any other AWS error, with its context.
    #[error("{operation} failed: {message}")]
    Aws {
        /// The DynamoDB operation.
        operation: &'static str,
        /// The error with its context.
        message: String,
        /// Whether retrying the same call may succeed (throttling, 5xx, network).
        retryable: bool,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Cancellation reason codes a retry may clear.
const RETRYABLE_CANCELLATIONS: &[&str] = &[
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
];

impl IdempotencyError {
    /// Whether the same message may succeed later without anyone changing anything.
    /// Either way the batch handler reports the message as failed; this tells an
    /// operator (and metrics) whether the dead-letter queue is the expected end.
    pub fn is_retryable(&self) -> bool {
        match self {
            IdempotencyError::InProgress { .. }
            | IdempotencyError::Effect { .. }
            | IdempotencyError::PayloadUnavailable { .. } => true,
            IdempotencyError::Cancelled { failures } => failures
                .iter()
                .all(|f| RETRYABLE_CANCELLATIONS.contains(&f.code.as_str())),
            IdempotencyError::Aws { retryable, .. } => *retryable,
            IdempotencyError::MalformedBody { .. }
            | IdempotencyError::Conflict { .. }
            | IdempotencyError::KeyReused { .. }
            | IdempotencyError::OutcomeUnknown { .. }
            | IdempotencyError::NoMessageId { .. }
            | IdempotencyError::Corrupt { .. }
            | IdempotencyError::Invalid(_) => false,
        }
    }

    /// Whether this is a conflict (same key, different details).
    pub fn is_conflict(&self) -> bool {
        matches!(self, IdempotencyError::Conflict { .. })
    }

    /// Wraps an SDK error of `operation`.
    pub(crate) fn aws<E>(operation: &'static str, err: SdkError<E>) -> Self
    where
        E: ProvideErrorKind + std::error::Error + Send + Sync + 'static,
    {
        IdempotencyError::Aws {
            operation,
            message: DisplayErrorContext(&err).to_string(),
            retryable: retryable(signals(&err)),
            source: Box::new(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn cancelled(code: &str) -> IdempotencyError {
        IdempotencyError::Cancelled {
            failures: vec![CancelledAction {
                index: 1,
                action: "Put on orders".into(),
                code: code.into(),
                message: None,
            }],
        }
    }

    #[test]
    fn conflicts_and_bad_input_are_permanent_contention_is_not() {
        assert!(!IdempotencyError::MalformedBody { reason: "x".into() }.is_retryable());
        assert!(!cancelled("ConditionalCheckFailed").is_retryable());
        assert!(cancelled("TransactionConflict").is_retryable());
        assert!(
            IdempotencyError::InProgress {
                key: "k".into(),
                locked_until_ms: 1
            }
            .is_retryable()
        );
    }

    #[test]
    fn a_conflict_names_the_key_and_attributes_but_never_the_values() {
        let stored = Item::from([("quantity".to_owned(), AttributeValue::N("4".into()))]);
        let requested = Item::from([("quantity".to_owned(), AttributeValue::N("7".into()))]);
        let e = IdempotencyError::Conflict {
            key: "id=ord-1".into(),
            differing: vec!["quantity".into()],
            stored: Box::new(stored),
            requested: Box::new(requested),
        };
        let text = e.to_string();
        assert!(
            text.contains("id=ord-1") && text.contains("quantity"),
            "{text}"
        );
        assert!(!text.contains('4') && !text.contains('7'), "{text}");
        assert!(e.is_conflict() && !e.is_retryable());
    }
}
