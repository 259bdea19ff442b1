//! The narrow capabilities the publish logic needs. The SQS and DynamoDB adapters
//! implement them; unit tests of the logic use in-memory fakes.

use crate::message::OutboundMessage;
use crate::route::Destination;
use crate::schema::ItemKey;
use std::future::Future;

/// The result of one entry of a batch send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryResult {
    /// The destination accepted the message.
    Sent,
    /// The destination refused the message.
    Failed {
        /// `true` when retrying the same message cannot succeed (the destination
        /// blames the sender: invalid, too large).
        permanent: bool,
        /// What the destination said, for `LastError` and logs.
        reason: String,
    },
}

/// A whole batch call failed (network, throttling, missing queue, no permission):
/// every entry in it is to be retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SendError(pub String);

/// Publishes batches of messages to destinations.
pub trait MessageSink: Send + Sync {
    /// Sends up to the destination's batch limit of messages in one call and returns
    /// one result per entry, in order.
    fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> impl Future<Output = Result<Vec<EntryResult>, SendError>> + Send;
}

/// The outcome of a conditional state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOutcome {
    /// The item was `PENDING` and is now in the new state.
    Marked,
    /// The item was no longer `PENDING`: someone else finished it. Not an error.
    AlreadyFinished,
}

/// A state change that could not be made (throttling, network). The item stays
/// `PENDING`, which the sweeper recovers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Conditional state changes on outbox items.
pub trait OutboxStore: Send + Sync {
    /// `PENDING` → `SENT`: sets `SentAt` and the TTL, removes the sweeper index keys.
    fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send;

    /// `PENDING` → `FAILED`: sets `LastError`, removes the sweeper index keys.
    fn mark_failed(
        &self,
        key: &ItemKey,
        reason: &str,
        failed_at_ms: i64,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send;
}
