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

/// Turns a batch API's answer (ids of the entries that succeeded, and of those that
/// failed with their sender-fault flag and reason) into one result per entry, for
/// entries whose ids are `m0`, `m1`, ... An entry the service said nothing about is
/// not known to be sent: it is a transient failure.
pub fn entry_results<'a>(
    len: usize,
    service: &str,
    successful: impl IntoIterator<Item = &'a str>,
    failed: impl IntoIterator<Item = (&'a str, bool, String)>,
) -> Vec<EntryResult> {
    let index = |id: &str| {
        id.strip_prefix('m')?
            .parse::<usize>()
            .ok()
            .filter(|i| *i < len)
    };
    let mut results: Vec<Option<EntryResult>> = vec![None; len];
    for id in successful {
        if let Some(i) = index(id) {
            results[i] = Some(EntryResult::Sent);
        }
    }
    for (id, sender_fault, reason) in failed {
        if let Some(i) = index(id) {
            results[i] = Some(EntryResult::Failed {
                permanent: sender_fault,
                reason,
            });
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| EntryResult::Failed {
                permanent: false,
                reason: format!("{service} returned no result for this entry"),
            })
        })
        .collect()
}

/// A whole batch call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SendError {
    /// What the service or the network said.
    pub message: String,
    /// The service refused the request for its *content* (a message too long, invalid
    /// characters, a batch over the size limit): one entry may be to blame, so the
    /// entries are worth sending one by one. Otherwise (network, throttling, missing
    /// queue, no permission) every entry is to be retried as it is.
    pub content_refused: bool,
}

impl SendError {
    /// A failure that retrying the same call may fix.
    pub fn transient(message: impl Into<String>) -> Self {
        SendError {
            message: message.into(),
            content_refused: false,
        }
    }

    /// The request's content was refused.
    pub fn content(message: impl Into<String>) -> Self {
        SendError {
            message: message.into(),
            content_refused: true,
        }
    }

    /// Classifies an SDK error of a batch call.
    pub fn from_sdk<E, R>(err: &aws_sdk_dynamodb::error::SdkError<E, R>) -> Self
    where
        E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let message = aws_smithy_types::error::display::DisplayErrorContext(err).to_string();
        SendError {
            content_refused: crate::error::refuses_content(err),
            message,
        }
    }
}

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

    /// Puts a `PENDING` item that lacks the sweeper index keys (a minimal producer's)
    /// into the index, due at `due_ms`, so the sweeper finishes it when the stream
    /// path cannot. Conditional: an indexed or finished item is left as it is.
    fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send {
        let _ = (key, shard, due_ms);
        std::future::ready(Ok(MarkOutcome::AlreadyFinished))
    }

    /// `PENDING` → `FAILED`: sets `LastError`, removes the sweeper index keys.
    fn mark_failed(
        &self,
        key: &ItemKey,
        reason: &str,
        failed_at_ms: i64,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send;
}

/// Where a paginated read stopped (DynamoDB's `LastEvaluatedKey`), opaque to the
/// logic: hand it back to continue.
#[derive(Debug, Clone, PartialEq)]
pub struct PageToken(pub serde_dynamo::Item);

/// An item in the sweeper index whose due time has passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueKey {
    /// Its primary key.
    pub key: ItemKey,
    /// Its `SweepDueAt` as read: the claim is conditional on it being unchanged.
    pub due_at_ms: i64,
}

/// One page of a sweeper index query.
#[derive(Debug, Clone, PartialEq)]
pub struct DuePage {
    /// Due items, earliest first.
    pub keys: Vec<DueKey>,
    /// Where to continue, when there is more.
    pub next: Option<PageToken>,
    /// Index items the query read (its `ScannedCount`): what the query is billed for.
    pub scanned: u64,
}

/// An outbox item written without the sweeper index attributes (a minimal producer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnindexedItem {
    /// Its primary key.
    pub key: ItemKey,
    /// Its `CreatedAt`, when the producer wrote one.
    pub created_at_ms: Option<i64>,
}

/// One page of a scan for pending items outside the sweeper index.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanPage {
    /// Pending items without index attributes.
    pub items: Vec<UnindexedItem>,
    /// Where to continue, when there is more.
    pub next: Option<PageToken>,
    /// Table items the scan read (its `ScannedCount`), matching or not.
    pub scanned: u64,
}

/// The result of a sweeper claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The item was still `PENDING` and unchanged: it is ours until the new due time.
    /// The full item as it is after the claim (`RetryCount` already incremented).
    Claimed(serde_dynamo::Item),
    /// Someone else finished or claimed it since the index was read. Not an error.
    Lost,
}

/// What the sweeper needs from the table, beyond the publish path's state changes.
pub trait SweepStore: Send + Sync {
    /// Keys in index shard `shard` due at or before `due_by_ms`, earliest first, at
    /// most `limit` of them.
    fn due_page(
        &self,
        shard: &str,
        due_by_ms: i64,
        limit: i32,
        start: Option<PageToken>,
    ) -> impl Future<Output = Result<DuePage, StoreError>> + Send;

    /// Claims an item for one attempt: only if it is still `PENDING` with `SweepDueAt`
    /// = `seen_due_ms`, increments `RetryCount` and sets `SweepDueAt` to
    /// `lease_until_ms`, returning the whole new item.
    fn claim(
        &self,
        key: &ItemKey,
        seen_due_ms: i64,
        lease_until_ms: i64,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send;

    /// After a failed attempt: records `LastError` and the next due time, only if the
    /// item is still `PENDING` under our claim (`SweepDueAt` = `claimed_due_ms`).
    fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send;

    /// One page of segment `segment` of `segments` of a parallel scan for `PENDING`
    /// outbox items without index attributes; `limit` bounds the items read.
    fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        limit: i32,
        start: Option<PageToken>,
    ) -> impl Future<Output = Result<ScanPage, StoreError>> + Send;

    /// Puts an unindexed item into the sweeper index, only if it is still `PENDING`
    /// and still without index attributes.
    fn adopt(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
    ) -> impl Future<Output = Result<MarkOutcome, StoreError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_answers_become_one_result_per_entry_and_silence_is_a_transient_failure() {
        let results = entry_results(
            4,
            "SQS",
            ["m0", "m3", "m9", "bogus"],
            [("m1", true, "InvalidMessageContents: bad".to_owned())],
        );
        assert_eq!(results[0], EntryResult::Sent);
        assert_eq!(
            results[1],
            EntryResult::Failed {
                permanent: true,
                reason: "InvalidMessageContents: bad".into()
            }
        );
        assert!(
            matches!(&results[2], EntryResult::Failed { permanent: false, reason } if reason.contains("no result"))
        );
        assert_eq!(results[3], EntryResult::Sent);
    }
}
