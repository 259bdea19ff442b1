//! The narrow capabilities the publish and sweep logic need, in decoded types: one
//! trait per capability. The AWS adapters implement them (`dynamodb-outbox`); unit
//! tests of the logic use the in-memory fakes of `fakes` (feature `test-fakes`).

use crate::failure::Failure;
use crate::large_payload::PayloadPointer;
use crate::message::OutboundMessage;
use crate::policy::{FailedMark, FenceRead, Sibling};
use crate::route::Destination;
use crate::schema::{ItemKey, SeenIndex};
use std::collections::HashMap;
use std::future::Future;

mod condition;

pub use crate::answers::{ClaimedItem, DueKey, EntryResult, StatementAnswer, StatementError};
pub use condition::MarkCondition;

/// Publishes batches of messages to destinations.
pub trait MessageSink: Send + Sync {
    /// Sends up to the destination's batch limit of messages in one call and returns
    /// one result per entry, in order; `Err` when the whole call failed.
    fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> impl Future<Output = Result<Vec<EntryResult>, Failure>> + Send;

    /// Writes a payload too large for its destination where `pointer` says (the
    /// large-payload offload, [`crate::large_payload`]), overwriting what a previous attempt wrote
    /// there: the key is the message's, so a republish leaves one object. The
    /// pointer is sent only after this succeeded. (The default has no object store:
    /// it refuses for good, and the message becomes poison with the reason.)
    fn put_payload(
        &self,
        pointer: &PayloadPointer,
        payload: &str,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = payload;
        std::future::ready(Err(Failure::permanent(format!(
            "this sink cannot write {pointer}: it has no object store"
        ))))
    }

    /// Copies the object `from` names to `to`, overwriting what a previous attempt
    /// wrote there: a `FAILED` message's payload kept where no lifecycle rule expires
    /// it ([`crate::large_payload::retained`]). The dead-letter copy and the `FAILED`
    /// mark point to `to` only after this succeeded. (The default has no object store:
    /// it refuses for good, and the message keeps its pointer to `from`.)
    fn copy_payload(
        &self,
        from: &PayloadPointer,
        to: &PayloadPointer,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        std::future::ready(Err(Failure::permanent(format!(
            "this sink cannot copy {from} to {to}: it has no object store"
        ))))
    }
}

/// The outcome of a conditional state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOutcome {
    /// The item was `PENDING` and is now in the new state.
    Marked,
    /// The condition was refused: the item was no longer `PENDING` (someone else
    /// finished it), or, for a sweep's mark under its claim ([`MarkCondition`]), no
    /// longer under that claim (redriven, claimed again or rescheduled since). Not an
    /// error.
    AlreadyFinished,
}

/// A conditional state change of one item, as a batched mark carries it. Each is
/// conditional as [`OutboxStore::mark_sent`] and [`OutboxStore::mark_failed`] are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkChange {
    /// `PENDING` → `SENT`, as [`OutboxStore::mark_sent`].
    Sent {
        /// `SentAt`, epoch milliseconds.
        sent_at_ms: i64,
        /// `ExpiresAt` (the TTL), epoch seconds.
        expires_at_s: i64,
    },
    /// `PENDING` → `FAILED`, as [`OutboxStore::mark_failed`].
    Failed {
        /// What the mark writes.
        mark: FailedMark,
        /// `FailedAt`, epoch milliseconds.
        failed_at_ms: i64,
        /// What the item must hold besides `PENDING`: a sweep's claim.
        condition: MarkCondition,
    },
}

/// Conditional state changes on outbox items. An error leaves the item `PENDING`,
/// which the sweeper recovers.
pub trait OutboxStore: Send + Sync {
    /// Applies up to [`crate::policy::MARK_BATCH_LIMIT`] changes, each on its own
    /// condition, in one call, and answers for each, in order; `Err` when the whole
    /// call failed. (The default has no batches: every change goes the per-item way.)
    fn mark_batch(
        &self,
        changes: &[(ItemKey, MarkChange)],
    ) -> impl Future<Output = Result<Vec<StatementAnswer>, Failure>> + Send {
        let _ = changes;
        std::future::ready(Err(Failure::permanent("this store marks items one by one")))
    }

    /// Waits `pause` before a batch retries throttled statements. (The default does
    /// not wait: a store without batches has nothing to pace.)
    fn pause(&self, pause: std::time::Duration) -> impl Future<Output = ()> + Send {
        let _ = pause;
        std::future::ready(())
    }

    /// `PENDING` → `SENT`: sets `SentAt` and the TTL, removes the sweeper index keys.
    /// Conditional on `PENDING` alone, a sweep's too: a message that went out is
    /// sent, whoever holds it now.
    fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> impl Future<Output = Result<MarkOutcome, Failure>> + Send;

    /// Puts a `PENDING` item a sweep would not find (a minimal producer's, without the
    /// sweeper index keys, or a foreign producer's with values no sweep claims) into
    /// the index, due at `due_ms`, so the sweeper finishes it when the stream path
    /// cannot. Conditional on the index attributes still being `seen`: an item
    /// indexed or finished since is left as it is.
    fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &SeenIndex,
    ) -> impl Future<Output = Result<MarkOutcome, Failure>> + Send {
        let _ = (key, shard, due_ms, seen);
        std::future::ready(Ok(MarkOutcome::AlreadyFinished))
    }

    /// `PENDING` → `FAILED` as `mark` says (see [`crate::policy::failed_marks`]), removing
    /// the sweeper index keys, only if the item meets `condition` too: a sweep marks
    /// under its claim ([`MarkCondition::Claimed`]), so that a redrive made during its
    /// attempt is not undone. An item the mark would make too large is refused with a
    /// [`FailureKind::ContentRefused`](crate::failure::FailureKind) failure.
    fn mark_failed(
        &self,
        key: &ItemKey,
        mark: &FailedMark,
        failed_at_ms: i64,
        condition: &MarkCondition,
    ) -> impl Future<Output = Result<MarkOutcome, Failure>> + Send;

    /// The item as stored now (a strongly consistent read), `None` when there is none.
    fn load(
        &self,
        key: &ItemKey,
    ) -> impl Future<Output = Result<Option<serde_dynamo::Item>, Failure>> + Send;

    /// The pending outbox messages of `read`'s aggregates, for the order fence
    /// ([`crate::policy::fence_reads`]): from sweeper index shards, every pending key
    /// whatever its due time (the index holds only pending items, keys only); from an
    /// aggregate's partition, its pending outbox items with `CreatedAt` and
    /// `MessageId` (a consistent read). At most `max_pages` pages per shard or
    /// partition.
    fn pending(
        &self,
        read: &FenceRead,
        max_pages: u32,
    ) -> impl Future<Output = Result<PendingPage, Failure>> + Send;

    /// The current `Status` of each of `keys` (distinct), read strongly consistently:
    /// the stream path asks before publishing, because Lambda delivers a batch again
    /// after a partial batch response, an error or a timeout, and the records alone
    /// cannot tell what an earlier delivery already finished. `Err` when any of them
    /// could not be read: the caller must not guess.
    fn statuses(
        &self,
        keys: &[ItemKey],
    ) -> impl Future<Output = Result<StatusRead, Failure>> + Send;
}

/// What a status read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusRead {
    /// The `Status` of every item found (`None` when it has none that is a string).
    /// A key asked for and missing here is no longer in the table.
    pub statuses: HashMap<ItemKey, Option<String>>,
    /// Requests made, retries of unprocessed keys included.
    pub requests: usize,
}

/// What a fence read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingPage {
    /// The pending messages of the aggregates asked for.
    pub siblings: Vec<Sibling>,
    /// False when the read stopped at its page bound with more to read.
    pub complete: bool,
    /// Requests made.
    pub requests: usize,
    /// Items read (their `ScannedCount`): what the reads are billed for.
    pub scanned: u64,
    /// A [`crate::policy::Scope::Sequence`] read reached the start of the sequenced
    /// range without an item below its lowest member: the aggregate has no earlier
    /// sequenced message, and its messages without a sequence must be read too
    /// ([`crate::policy::switch_over_reads`]).
    pub no_earlier_sequence: bool,
}

/// Where a paginated read stopped, opaque to the logic: hand it back to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageToken(String);

impl PageToken {
    /// A token from the adapter's own encoding of its position.
    pub fn new(text: impl Into<String>) -> Self {
        PageToken(text.into())
    }

    /// The adapter's encoding.
    pub fn as_str(&self) -> &str {
        &self.0
    }
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

/// A pending outbox item a sweep would not find: written without the sweeper index
/// attributes (a minimal producer), or with values no sweep claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnindexedItem {
    /// Its primary key.
    pub key: ItemKey,
    /// Its `CreatedAt`, when the producer wrote one.
    pub created_at_ms: Option<i64>,
    /// Its index attributes as read: adoption is conditional on them.
    pub index: SeenIndex,
}

/// One page of a scan for pending items outside the sweeper index.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanPage {
    /// Pending items a sweep would not find (see [`SeenIndex::is_valid`]).
    pub items: Vec<UnindexedItem>,
    /// Where to continue, when there is more.
    pub next: Option<PageToken>,
    /// Table items the scan read (its `ScannedCount`), matching or not.
    pub scanned: u64,
}

/// The result of a sweeper claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The item was still `PENDING` and unchanged: it is ours until the new due time.
    Claimed(Box<ClaimedItem>),
    /// The item is no longer `PENDING` (or no longer there): finished by someone else
    /// since the index was read. Not an error.
    Finished,
    /// The item is still `PENDING` but its due time changed since the index was read:
    /// another sweep holds it, or rescheduled it. Not an error, but it is still ahead
    /// of the later messages of its aggregate.
    Held(Held),
}

/// A pending item someone else holds, as the refused claim found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Its `CreatedAt` (0 when unknown).
    pub created_at_ms: i64,
    /// Its `MessageId` (derived from the key when the producer wrote none).
    pub message_id: String,
    /// Its current `SweepDueAt`, fractions truncated, when it has one.
    pub due_at_ms: Option<i64>,
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
    ) -> impl Future<Output = Result<DuePage, Failure>> + Send;

    /// Claims an item for one attempt: only if it is still `PENDING` with `SweepDueAt`
    /// equal to `seen_due` (as read, see [`DueKey::seen_due`]), increments
    /// `RetryCount` and sets `SweepDueAt` to `lease_until_ms`, returning the whole new
    /// item. A claim the item refuses for what it holds (a `RetryCount` that is not a
    /// number, no room left under the size limit) fails with
    /// [`FailureKind::ContentRefused`](crate::failure::FailureKind): it will never
    /// succeed. An item that already holds this claim (pending, due at
    /// `lease_until_ms`, in `shard`) is claimed: the request sent again after its
    /// answer was lost, the first having taken effect.
    ///
    /// The claim also sets `SweepShard` to `shard`, the item's shard under the current
    /// count: while the shard count changes, a claim moves an item written under the
    /// previous count into its new shard (at no extra cost: changing `SweepDueAt`
    /// rewrites the item's index entry anyway), so the old shards empty.
    fn claim(
        &self,
        key: &ItemKey,
        seen_due: &str,
        lease_until_ms: i64,
        shard: &str,
    ) -> impl Future<Output = Result<Claim, Failure>> + Send;

    /// After an attempt that did not publish: records `LastError` and the next due
    /// time, only if the item is still `PENDING` under our claim (`SweepDueAt` =
    /// `claimed_due_ms`). `attempted` is false when the message was held back and
    /// never sent: the claim's increment of `RetryCount` is then given back.
    fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
        attempted: bool,
    ) -> impl Future<Output = Result<MarkOutcome, Failure>> + Send;

    /// One page of segment `segment` of `segments` of a parallel scan for `PENDING`
    /// outbox items a sweep would not find (see [`UnindexedItem`]); `limit` bounds
    /// the items read.
    fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        limit: i32,
        start: Option<PageToken>,
    ) -> impl Future<Output = Result<ScanPage, Failure>> + Send;

    /// Puts an item a sweep would not find into the sweeper index, only if it is
    /// still `PENDING` and its index attributes are still `seen`.
    fn adopt(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &SeenIndex,
    ) -> impl Future<Output = Result<MarkOutcome, Failure>> + Send;

    /// Where segment `segment` of a `segments`-way adoption scan stopped, as the last
    /// sweep saved it; `None` to start at the beginning.
    fn scan_cursor(
        &self,
        segment: u32,
        segments: u32,
    ) -> impl Future<Output = Result<Option<PageToken>, Failure>> + Send;

    /// Saves where segment `segment` stopped (`None`: it reached the end), so that the
    /// next sweep — in this process or a cold-started one — continues there.
    fn save_scan_cursor(
        &self,
        segment: u32,
        segments: u32,
        cursor: Option<&PageToken>,
    ) -> impl Future<Output = Result<(), Failure>> + Send;
}
