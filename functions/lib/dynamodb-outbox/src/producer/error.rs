//! Why a transaction was not written, in words that say what to change.

use crate::sdk_error::store_failure;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use dynamodb_outbox_core::FailureKind;
use dynamodb_outbox_core::producer::{
    CancelledAction, MAX_ITEM_BYTES, MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES,
};

/// Why a transaction was not written, in words that say what to change;
/// [`is_retryable`](ProducerError::is_retryable) tells a passing failure (throttling,
/// a timeout) from one a retry cannot fix.
///
/// ```
/// use dynamodb_outbox::{NewMessage, OutboxWriter, ProducerError};
///
/// # let aws = aws_types::SdkConfig::builder()
/// #     .behavior_version(dynamodb_outbox::aws_sdk_dynamodb::config::BehaviorVersion::latest())
/// #     .build();
/// let writer = OutboxWriter::new(dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws), "orders");
/// // Refused before any request: a message needs an aggregate.
/// let err = writer.prepare(vec![], &[NewMessage::new("", "orders", "{}")]).unwrap_err();
/// assert!(matches!(err, ProducerError::InvalidMessage { index: 0, .. }));
/// assert!(!err.is_retryable());
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// Nothing to write.
    #[error(
        "the transaction has no messages: pass at least one NewMessage (use a plain write for changes that announce nothing)"
    )]
    NoMessages,
    /// A message lacks a required field.
    #[error("message {index} is invalid: {reason}")]
    InvalidMessage {
        /// Position among the messages.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The writer's key names cannot be a table's (see
    /// [`OutboxWriter::key_names`](crate::OutboxWriter::key_names)).
    #[error("the writer's key names are not a table's: {0}")]
    InvalidKeyNames(#[source] dynamodb_outbox_core::ConfigError),
    /// The writer's home region ([`OutboxWriter::home_region`](crate::OutboxWriter::home_region))
    /// is not a region name: empty, or with spaces around it.
    #[error(
        "the writer's home region {0:?} is not a region name: the stream filter delivers only messages whose HomeRegion is exactly a deployment's region (or absent), so these would wait for the sweeper's backstop scan; pass a name such as \"eu-west-1\", or None to write no home"
    )]
    InvalidHomeRegion(String),
    /// Over the action limit.
    #[error(
        "the transaction has {count} actions but DynamoDB allows at most {MAX_TRANSACTION_ACTIONS}: split the work into several transactions"
    )]
    TooManyActions {
        /// Actions requested (application's plus messages).
        count: usize,
    },
    /// Over the aggregate size limit.
    #[error(
        "the transaction's items total {bytes} bytes but DynamoDB allows at most {MAX_TRANSACTION_BYTES}: split it or shrink the payloads"
    )]
    TransactionTooLarge {
        /// Estimated size.
        bytes: usize,
    },
    /// One item over 400 KB.
    #[error(
        "action {index} ({action}) writes an item of {bytes} bytes but DynamoDB allows at most {MAX_ITEM_BYTES}: shrink it, or — for a message's payload — enable the large-payload offload with OutboxWriter::large_payloads(s3_client, bucket), which writes the payload to S3 first and commits a pointer"
    )]
    ItemTooLarge {
        /// Position in the transaction.
        index: usize,
        /// What the action is.
        action: String,
        /// Estimated size.
        bytes: usize,
    },
    /// Two actions on one item.
    #[error(
        "actions {first} and {second} both touch the item {key} in table {table}: DynamoDB refuses two actions on one item in a transaction; merge them"
    )]
    DuplicateItem {
        /// First action.
        first: usize,
        /// Second action.
        second: usize,
        /// Table.
        table: String,
        /// Key, rendered.
        key: String,
    },
    /// An action that is not a Put, Update, Delete or ConditionCheck.
    #[error("action {index} is empty: set exactly one of Put, Update, Delete or ConditionCheck")]
    EmptyAction {
        /// Position in the transaction.
        index: usize,
    },
    /// AWS cancelled the transaction; nothing was written.
    #[error("the transaction was cancelled and nothing was written: {}", .failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Cancelled {
        /// The actions that caused the cancellation.
        failures: Vec<CancelledAction>,
    },
    /// A repeat of a prepared transaction was cancelled because its messages exist,
    /// and reading them to tell whether they are this transaction's failed. It may
    /// have committed: call `commit_prepared` again.
    #[error(
        "the transaction may have committed before (its messages exist) but reading them failed: {message}; call commit_prepared again with the same PreparedCommit"
    )]
    Unverified {
        /// Why the read failed.
        message: String,
    },
    /// A large payload could not be written to S3 before the transaction (the claim
    /// check); the transaction was not sent, so nothing was written to the table.
    #[error(
        "the payload for {pointer} could not be written, so the transaction was not sent: {message}"
    )]
    PayloadNotStored {
        /// Where it was to go.
        pointer: String,
        /// What S3 said.
        message: String,
        /// Transient when retrying may succeed (throttling, a missing bucket or
        /// permission being fixed).
        kind: FailureKind,
    },
    /// Any other AWS error.
    #[error("TransactWriteItems failed: {message}")]
    Aws {
        /// The error, with its context.
        message: String,
        /// Transient when retrying the same call may succeed (throttling, 5xx,
        /// network), else permanent: the request needs a change first.
        kind: FailureKind,
        /// The SDK error.
        #[source]
        source: Box<SdkError<TransactWriteItemsError>>,
    },
}

impl ProducerError {
    /// Whether retrying the same transaction as it is may succeed (throttling, 5xx,
    /// network).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProducerError::Aws {
                kind: FailureKind::Transient,
                ..
            } | ProducerError::PayloadNotStored {
                kind: FailureKind::Transient,
                ..
            } | ProducerError::Unverified { .. }
        )
    }
}

/// The error of a refused `TransactWriteItems`: each cancelled action named, or the
/// AWS error classified.
pub(super) fn cancellation(
    e: SdkError<TransactWriteItemsError>,
    described: &[String],
) -> ProducerError {
    if let Some(TransactWriteItemsError::TransactionCanceledException(tc)) = e.as_service_error() {
        let failures: Vec<CancelledAction> = tc
            .cancellation_reasons()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.code().is_some_and(|c| c != "None"))
            .map(|(index, r)| CancelledAction {
                index,
                action: described
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| "unknown action".to_owned()),
                code: r.code().unwrap_or_default().to_owned(),
                message: r.message().map(str::to_owned),
            })
            .collect();
        if !failures.is_empty() {
            return ProducerError::Cancelled { failures };
        }
    }
    let failure = store_failure(&e);
    // Another attempt with the same token is still running: its outcome decides.
    let in_progress = e
        .as_service_error()
        .is_some_and(TransactWriteItemsError::is_transaction_in_progress_exception);
    ProducerError::Aws {
        message: failure.reason,
        kind: if in_progress {
            FailureKind::Transient
        } else {
            failure.kind
        },
        source: Box::new(e),
    }
}
