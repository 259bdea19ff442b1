//! Idempotent SQS consumers on DynamoDB.
//!
//! Delivery is at-least-once: the outbox may publish a message twice, SQS may deliver
//! it twice, a producer may send the same request twice. This crate makes the
//! *effect* happen once, with one of three strategies, and runs a consumer over SQS
//! batches with partial batch responses:
//!
//! - [`BusinessKeyGuard`]: the effect is one item keyed by a business id (an order).
//!   One conditional `PutItem`; an existing item with the same details is a
//!   duplicate, with other details a conflict that is never acknowledged.
//! - [`MessageMarker`]: the effect is several writes, or writes that are not naturally
//!   idempotent (counters). They and a marker keyed by the message id commit in one
//!   `TransactWriteItems`.
//! - [`IdempotentEffects`]: the effect is outside DynamoDB (an API call, an email). A
//!   guard record `IN_PROGRESS` → `COMPLETED` per idempotency key, with the stored
//!   result answering duplicates.
//! - [`BatchProcessor`]: runs the per-message function over an `SqsEvent` and returns
//!   the `SqsBatchResponse` naming exactly the failed messages. Each message is handed
//!   over as a [`Delivery`]: the payload and the outbox message id, read through SNS
//!   and EventBridge envelopes, and a payload offloaded to S3 (the large-payload offload) read
//!   back first ([`payload`]). The SQS `MessageId` is never the key unless the
//!   consumer opts in.
//!
//! Markers and effect records are kept for one [`Retention`] (14 days, SQS's longest,
//! by default), and a record is never treated as free because its TTL passed: only
//! DynamoDB's deletion frees a key.
//!
//! See the crate's README for a consumer in a dozen lines.
//!
//! The consumer side depends on the outbox's core only (message attribute names,
//! the clock port, the retry decision), never on the producer and publisher side.
//! Time is read from a [`Clock`] each guard is given (the
//! system clock unless set), so tests set it instead of sleeping.
#![warn(missing_docs)]

pub mod batch;
pub mod delivery;
pub mod effect;
pub mod error;
pub mod guard;
pub mod hash;
pub mod item;
pub mod marker;
pub mod payload;
pub mod retention;

pub use batch::{BatchProcessor, BatchReport, MessageFailure, MessageOutcome};
pub use delivery::{Delivery, Envelope};
pub use dynamodb_outbox_core::clock::{Clock, ManualClock, SharedClock, SystemClock};
pub use effect::{Deadline, Effect, IdempotentEffects};
pub use error::IdempotencyError;
pub use guard::BusinessKeyGuard;
pub use hash::PayloadHash;
pub use marker::MessageMarker;
pub use payload::{MemoryPayloads, PayloadSource, S3Payloads};
pub use retention::{Retention, RetentionError};

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// A DynamoDB item.
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
