//! An outbox table in memory, with the failures a test asks for.
//!
//! The publish path's port ([`OutboxStore`](crate::ports::OutboxStore)) is answered
//! in `outbox`, the sweeper's ([`SweepStore`](crate::ports::SweepStore)) in `sweep`;
//! both change items through `MemoryStore::change`, the one conditional write.

mod outbox;
mod sweep;

use super::lock;
use crate::ports::{MarkOutcome, PageToken};
use crate::schema::{ItemKey, OutboxItem, Status, SweepShards};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// What a [`MemoryStore`] fails. By default nothing.
#[derive(Debug, Clone, Default)]
pub struct StoreFaults {
    /// Index shards whose queries fail (transiently).
    pub queries: Vec<String>,
    /// Items whose claims fail transiently (throttled).
    pub claims: Vec<ItemKey>,
    /// Items that refuse every claim for what they hold (a `RetryCount` stored as a
    /// string): [`FailureKind::ContentRefused`](crate::failure::FailureKind).
    pub unclaimable: Vec<ItemKey>,
    /// Items at their size limit: a `FAILED` mark that adds a reason or a time without
    /// removing the payload is refused, as DynamoDB refuses it.
    pub full: Vec<ItemKey>,
    /// The order fence's reads fail (transiently).
    pub fence_reads: bool,
    /// The order fence's reads of index shards stop at their page bound (a backlog
    /// larger than they may read), returning nothing.
    pub bounded_shard_reads: bool,
    /// The order fence's reads of partitions stop at their page bound (a partition
    /// larger than they may read), returning nothing.
    pub bounded_partition_reads: bool,
    /// How many of the next reschedules fail (transiently) before the write.
    pub flaky_reschedules: u32,
    /// The sweeper index lags, as a global secondary index may: its reads still list
    /// the items finished since they were pending, and the sweeper's index queries
    /// the items claimed since, at the due time they had before.
    pub stale_index: bool,
    /// Statements of batched marks that answer with an error code: the item, the
    /// code (`ThrottlingError`, `InternalServerError`, …) and for how many batches.
    pub statements: Vec<(ItemKey, String, u32)>,
    /// Whether every batched mark fails as a whole (transiently).
    pub batches: bool,
    /// Whether the stream path's status reads fail (transiently).
    pub status_reads: bool,
    /// Items redriven during a sweep's attempt, each with the due time the redrive
    /// gives it: just before the store's first `FAILED` mark of the item, someone
    /// else failed it and an operator redrove it (as `outbox-ops redrive` leaves it).
    pub redriven_before_failed_mark: Vec<(ItemKey, i64)>,
    /// The same, just before the store's first read of the item (`load`: the check
    /// before a dead-letter copy).
    pub redriven_before_read: Vec<(ItemKey, i64)>,
}

/// `item` as `outbox-ops redrive` leaves a `FAILED` item: `PENDING` with a fresh
/// budget (`RetryCount` 0), in its sweep partition due at `due_ms`, without
/// `LastError` and `FailedAt`.
fn redriven(key: &ItemKey, item: &mut OutboxItem, due_ms: i64, layout: &SweepShards) {
    item.status = Some(Status::Pending.as_str().to_owned());
    item.retry_count = Some(0);
    item.sweep_shard = Some(layout.shard_of(&key.pk));
    item.sweep_due_at = Some(due_ms);
    item.last_error = None;
    item.failed_at = None;
}

/// An outbox table in memory. Conditional changes behave as the DynamoDB adapter's:
/// only a `PENDING` item changes. A key the store does not hold counts as a pending
/// item with nothing else known, so publish tests need not fill the table first.
#[derive(Debug, Default)]
pub struct MemoryStore {
    items: Mutex<BTreeMap<ItemKey, OutboxItem>>,
    /// Index entries a lagging index still lists (`StoreFaults::stale_index`): the
    /// shard and due time of each item before its claim.
    stale_entries: Mutex<BTreeMap<ItemKey, (String, i64)>>,
    sent: Mutex<Vec<ItemKey>>,
    failed: Mutex<Vec<(ItemKey, String)>>,
    cursors: Mutex<HashMap<(u32, u32), PageToken>>,
    faults: Mutex<StoreFaults>,
    batch_calls: Mutex<Vec<usize>>,
    statement_errors: Mutex<HashMap<ItemKey, u32>>,
    layout: SweepShards,
}

impl MemoryStore {
    /// A store whose sweeper index has the shards of `layout` (the default: 16): what
    /// counts as indexed, and where a redrive puts an item.
    pub fn with_sweep_shards(mut self, layout: SweepShards) -> Self {
        self.layout = layout;
        self
    }

    /// Stores `item` under `key`.
    pub fn put(&self, key: ItemKey, item: OutboxItem) {
        lock(&self.items).insert(key, item);
    }

    /// The item under `key`, if any.
    pub fn get(&self, key: &ItemKey) -> Option<OutboxItem> {
        lock(&self.items).get(key).cloned()
    }

    /// Keys marked `SENT`, in order.
    pub fn sent(&self) -> Vec<ItemKey> {
        lock(&self.sent).clone()
    }

    /// Keys marked `FAILED` with their reasons, in order.
    pub fn failed(&self) -> Vec<(ItemKey, String)> {
        lock(&self.failed).clone()
    }

    /// The size of each batched mark call, in order.
    pub fn batch_calls(&self) -> Vec<usize> {
        lock(&self.batch_calls).clone()
    }

    /// Fails what `faults` says from now on.
    pub fn fail(&self, faults: StoreFaults) {
        *lock(&self.faults) = faults;
    }

    fn faults(&self) -> StoreFaults {
        lock(&self.faults).clone()
    }

    /// Redrives `key` if `pick` lists it among the faults, once: the entry is
    /// removed.
    fn redrive_if_asked(
        &self,
        key: &ItemKey,
        pick: impl FnOnce(&mut StoreFaults) -> &mut Vec<(ItemKey, i64)>,
    ) {
        let due = {
            let mut faults = lock(&self.faults);
            let list = pick(&mut faults);
            let Some(at) = list.iter().position(|(k, _)| k == key) else {
                return;
            };
            list.remove(at).1
        };
        let mut items = lock(&self.items);
        let item = items.entry(key.clone()).or_insert_with(absent_item);
        redriven(key, item, due, &self.layout);
    }

    /// Applies `change` to a pending item (created when absent); `false` from it, or
    /// an item no longer pending, means the condition failed.
    fn change(&self, key: &ItemKey, change: impl FnOnce(&mut OutboxItem) -> bool) -> MarkOutcome {
        let mut items = lock(&self.items);
        let item = items.entry(key.clone()).or_insert_with(absent_item);
        if item.status() == Some(Status::Pending) && change(item) {
            MarkOutcome::Marked
        } else {
            MarkOutcome::AlreadyFinished
        }
    }
}

/// What a key the store does not hold reads as: a pending item with nothing else
/// known.
fn absent_item() -> OutboxItem {
    OutboxItem {
        status: Some(Status::Pending.as_str().to_owned()),
        ..OutboxItem::default()
    }
}
