#![doc = include_str!("../README.md")]
//!
//! # The API at a glance
//!
//! - [`BatchProcessor`] runs a per-message function over an [`SqsEvent`] and returns
//!   the [`SqsBatchResponse`] naming exactly the failed messages
//!   ([`BatchReport`], [`MessageOutcome`], [`MessageFailure`]). Each message is
//!   handed over as a [`Delivery`]: the payload and the outbox message id, read
//!   through SNS and EventBridge envelopes ([`Envelope`]), and a payload offloaded to
//!   S3 read back first ([`PayloadSource`]: [`S3Payloads`], or [`MemoryPayloads`] in
//!   tests).
//! - [`BusinessKeyGuard`]: the effect is one item keyed by a business id. One
//!   conditional `PutItem`; an existing item with the same details is a
//!   [`Outcome::Duplicate`], with other details an [`IdempotencyError::Conflict`].
//! - [`MessageMarker`]: the effect is several writes, or writes that are not
//!   naturally idempotent. They and a marker keyed by the message id commit in one
//!   `TransactWriteItems`.
//! - [`IdempotentEffects`]: the effect is outside DynamoDB. A guard record
//!   `IN_PROGRESS` → `COMPLETED` per idempotency key ([`PayloadHash`] tells a
//!   duplicate from a reused key, [`Deadline`] bounds the lock), the stored result
//!   answering duplicates ([`Effect`]).
//! - [`IdempotencyTable`]: the table the three write to — its name, key attribute
//!   names, TTL attribute, [`Retention`] and [`Clock`] — stated once and cloned into
//!   each.
//! - [`IdempotencyError`]: every failure, with
//!   [`is_retryable`](IdempotencyError::is_retryable) saying whether the dead-letter
//!   queue is the expected end.
//!
//! The consumer side depends on the outbox's core only (message attribute names, the
//! clock port, the retry decision), never on the producer and publisher side.
#![warn(missing_docs)]

mod batch;
mod delete;
mod delivery;
mod effect;
mod error;
mod guard;
mod hash;
mod item;
#[cfg(feature = "unstable-internals")]
pub mod marker;
#[cfg(not(feature = "unstable-internals"))]
mod marker;
mod parse;
mod payload;
mod retention;
mod table;

pub use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
pub use batch::{BatchProcessor, BatchReport, MessageFailure, MessageOutcome};
pub use delete::{Deleted, MemoryDeleter, MessageDeleter, SqsDeleter};
pub use delivery::{Delivery, Envelope};
pub use dynamodb_outbox_core::large_payload::PayloadPointer;
pub use dynamodb_outbox_core::{Clock, ManualClock, SharedClock, SystemClock};
pub use effect::{Deadline, Effect, IdempotentEffects};
pub use error::{CancelledAction, IdempotencyError};
pub use guard::BusinessKeyGuard;
pub use hash::PayloadHash;
pub use marker::MessageMarker;
pub use payload::{Fetched, MemoryPayloads, PayloadSource, S3Payloads};
pub use retention::{Retention, RetentionError};
pub use table::IdempotencyTable;
/// The foreign crates in this crate's signatures.
pub use {aws_lambda_events, aws_sdk_dynamodb, aws_sdk_s3, aws_sdk_sqs};

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// A DynamoDB item, as the AWS SDK holds it: what
/// [`BusinessKeyGuard::put_item`] writes and an [`IdempotencyError::Conflict`] carries.
pub type Item = HashMap<String, AttributeValue>;

/// What a guarded write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Written now: this delivery applied the effect.
    Applied,
    /// Already applied by an earlier delivery; nothing written. Acknowledge it.
    Duplicate,
}

impl Outcome {
    /// Whether this delivery was a duplicate.
    pub fn is_duplicate(self) -> bool {
        self == Outcome::Duplicate
    }
}

/// `name=value` for keys in messages (strings and numbers as they are).
pub(crate) fn render_key(name: &str, value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(s) | AttributeValue::N(s) => format!("{name}={s}"),
        _ => format!("{name}=<non-scalar>"),
    }
}

/// Epoch seconds of an epoch-millisecond instant (0 before the epoch).
pub(crate) fn epoch_seconds(ms: i64) -> u64 {
    u64::try_from(ms / 1000).unwrap_or(0)
}
