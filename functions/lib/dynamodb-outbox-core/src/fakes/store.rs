//! An outbox table in memory, with the failures a test asks for.

use super::lock;
use crate::failure::{Failure, FailureKind};
use crate::policy::{FailedMark, FenceRead, PAYLOAD_ON_DEAD_LETTER_QUEUE, Scope, Sibling};
use crate::ports::{
    Claim, ClaimedItem, DueKey, DuePage, Held, MarkChange, MarkOutcome, OutboxStore, PageToken,
    PendingPage, ScanPage, StatementAnswer, StatementError, SweepStore, UnindexedItem,
};
use crate::schema::{
    ItemKey, OutboxItem, PENDING_MESSAGE, SeenIndex, Status, derive_message_id, number, sweep_shard,
};
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
    /// How many of the next reschedules fail (transiently) before the write.
    pub flaky_reschedules: u32,
    /// The sweeper index lags, as a global secondary index may: its reads still list
    /// the items finished since they were pending.
    pub stale_index: bool,
    /// Statements of batched marks that answer with an error code: the item, the
    /// code (`ThrottlingError`, `InternalServerError`, …) and for how many batches.
    pub statements: Vec<(ItemKey, String, u32)>,
    /// Whether every batched mark fails as a whole (transiently).
    pub batches: bool,
}

/// An outbox table in memory. Conditional changes behave as the DynamoDB adapter's:
/// only a `PENDING` item changes. A key the store does not hold counts as a pending
/// item with nothing else known, so publish tests need not fill the table first.
#[derive(Debug, Default)]
pub struct MemoryStore {
    items: Mutex<BTreeMap<ItemKey, OutboxItem>>,
    sent: Mutex<Vec<ItemKey>>,
    failed: Mutex<Vec<(ItemKey, String)>>,
    cursors: Mutex<HashMap<(u32, u32), PageToken>>,
    faults: Mutex<StoreFaults>,
    batch_calls: Mutex<Vec<usize>>,
    statement_errors: Mutex<HashMap<ItemKey, u32>>,
}

impl MemoryStore {
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

    /// Applies `change` to a pending item (created when absent); `false` from it, or
    /// an item no longer pending, means the condition failed.
    fn change(&self, key: &ItemKey, change: impl FnOnce(&mut OutboxItem) -> bool) -> MarkOutcome {
        let mut items = lock(&self.items);
        let item = items.entry(key.clone()).or_insert_with(|| OutboxItem {
            status: Some(Status::Pending.as_str().to_owned()),
            ..OutboxItem::default()
        });
        if item.status() == Some(Status::Pending) && change(item) {
            MarkOutcome::Marked
        } else {
            MarkOutcome::AlreadyFinished
        }
    }
}

fn leave_index(item: &mut OutboxItem) {
    item.sweep_shard = None;
    item.sweep_due_at = None;
}

/// The index attributes of a stored item, as the adapter would read them.
fn seen(item: &OutboxItem) -> SeenIndex {
    SeenIndex {
        shard: item.sweep_shard.clone(),
        due: item.sweep_due_at.map(|d| d.to_string()),
    }
}

impl MemoryStore {
    /// One statement of a batched mark, with the faults asked for.
    async fn statement(&self, key: &ItemKey, change: &MarkChange) -> StatementAnswer {
        let faults = self.faults();
        if let Some((_, code, times)) = faults.statements.iter().find(|(k, _, _)| k == key) {
            let mut seen = lock(&self.statement_errors);
            let count = seen.entry(key.clone()).or_insert(0);
            if *count < *times {
                *count += 1;
                return Err(statement_error(code, "injected"));
            }
        }
        let answer = match change {
            MarkChange::Sent {
                sent_at_ms,
                expires_at_s,
            } => self.mark_sent(key, *sent_at_ms, *expires_at_s).await,
            MarkChange::Failed { mark, failed_at_ms } => {
                self.mark_failed(key, mark, *failed_at_ms).await
            }
        };
        match answer {
            Ok(MarkOutcome::Marked) => Ok(()),
            Ok(MarkOutcome::AlreadyFinished) => Err(statement_error(
                "ConditionalCheckFailed",
                "The conditional request failed",
            )),
            Err(f) if f.kind == FailureKind::ContentRefused => {
                Err(statement_error("ValidationError", &f.reason))
            }
            Err(f) => Err(statement_error("InternalServerError", &f.reason)),
        }
    }
}

fn statement_error(code: &str, message: &str) -> StatementError {
    StatementError {
        code: code.to_owned(),
        message: message.to_owned(),
    }
}

impl OutboxStore for MemoryStore {
    async fn mark_batch(
        &self,
        changes: &[(ItemKey, MarkChange)],
    ) -> Result<Vec<StatementAnswer>, Failure> {
        lock(&self.batch_calls).push(changes.len());
        if self.faults().batches {
            return Err(Failure::transient("InternalServerError"));
        }
        let mut answers = Vec::with_capacity(changes.len());
        for (key, change) in changes {
            answers.push(self.statement(key, change).await);
        }
        Ok(answers)
    }

    async fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> Result<MarkOutcome, Failure> {
        let outcome = self.change(key, |i| {
            i.status = Some(Status::Sent.as_str().to_owned());
            i.sent_at = Some(sent_at_ms);
            i.expires_at = Some(expires_at_s);
            leave_index(i);
            true
        });
        if outcome == MarkOutcome::Marked {
            lock(&self.sent).push(key.clone());
        }
        Ok(outcome)
    }

    async fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &SeenIndex,
    ) -> Result<MarkOutcome, Failure> {
        SweepStore::adopt(self, key, shard, due_ms, seen).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        mark: &FailedMark,
        failed_at_ms: i64,
    ) -> Result<MarkOutcome, Failure> {
        let grows = mark.last_error.is_some() || mark.failed_at;
        if grows && !mark.payload_moved && self.faults().full.contains(key) {
            return Err(Failure::content_refused(
                "ValidationException: Item size to update has exceeded the maximum allowed size",
            ));
        }
        let outcome = self.change(key, |i| {
            i.status = Some(Status::Failed.as_str().to_owned());
            if let Some(reason) = &mark.last_error {
                i.last_error = Some(reason.clone());
            }
            if mark.failed_at {
                i.failed_at = Some(failed_at_ms);
            }
            if mark.payload_moved {
                i.payload = None;
                i.payload_on = Some(PAYLOAD_ON_DEAD_LETTER_QUEUE.to_owned());
            }
            leave_index(i);
            true
        });
        if outcome == MarkOutcome::Marked {
            let reason = mark.last_error.clone().unwrap_or_default();
            lock(&self.failed).push((key.clone(), reason));
        }
        Ok(outcome)
    }

    /// An absent key reads as a pending item with nothing else known, as everywhere
    /// in this store.
    async fn load(&self, key: &ItemKey) -> Result<Option<serde_dynamo::Item>, Failure> {
        let item = lock(&self.items)
            .get(key)
            .cloned()
            .unwrap_or_else(|| OutboxItem {
                status: Some(Status::Pending.as_str().to_owned()),
                ..OutboxItem::default()
            });
        serde_dynamo::to_item(&item)
            .map(Some)
            .map_err(|e| Failure::permanent(e.to_string()))
    }

    /// Only stored items count here.
    async fn pending(&self, read: &FenceRead, _: u32) -> Result<PendingPage, Failure> {
        if self.faults().fence_reads {
            return Err(Failure::transient("ProvisionedThroughputExceededException"));
        }
        let stale = self.faults().stale_index;
        let items = lock(&self.items);
        let siblings: Vec<Sibling> = items
            .iter()
            .filter_map(|(k, i)| siblings(read, k, i, stale))
            .collect();
        Ok(PendingPage {
            scanned: siblings.len() as u64,
            siblings,
            complete: true,
            requests: 1,
        })
    }
}

/// The pending items `read` finds, as the adapter would return them; from a `stale`
/// index, the finished ones too.
fn siblings(read: &FenceRead, key: &ItemKey, item: &OutboxItem, stale: bool) -> Option<Sibling> {
    if !read.aggregates.contains(&key.pk) {
        return None;
    }
    let pending = item.status() == Some(Status::Pending);
    match &read.scope {
        Scope::Shards(shards) if stale && !pending => shards
            .contains(&sweep_shard(&key.pk))
            .then(|| Sibling::indexed(key.clone(), item.sweep_due_at.unwrap_or(0))),
        _ if !pending => None,
        Scope::Shards(shards) => {
            let due = item.sweep_due_at?;
            item.sweep_shard
                .as_ref()
                .is_some_and(|shard| shards.contains(shard))
                .then(|| Sibling::indexed(key.clone(), due))
        }
        Scope::Partition(pk) => {
            (key.pk == *pk && item.item_type.as_deref() == Some(PENDING_MESSAGE)).then(|| {
                Sibling::read(
                    key.clone(),
                    item.sweep_due_at,
                    item.created_at,
                    item.message_id.as_deref(),
                )
            })
        }
    }
}

impl SweepStore for MemoryStore {
    async fn due_page(
        &self,
        shard: &str,
        due_by_ms: i64,
        _: i32,
        _: Option<PageToken>,
    ) -> Result<DuePage, Failure> {
        if self.faults().queries.iter().any(|s| s == shard) {
            return Err(Failure::transient("InternalServerError"));
        }
        let keys: Vec<DueKey> = lock(&self.items)
            .iter()
            .filter(|(_, i)| i.sweep_shard.as_deref() == Some(shard))
            .filter_map(|(k, i)| {
                let due = i.sweep_due_at.filter(|d| *d <= due_by_ms)?;
                Some(DueKey::new(k.clone(), due))
            })
            .collect();
        Ok(DuePage {
            scanned: keys.len() as u64,
            keys,
            next: None,
        })
    }

    async fn claim(
        &self,
        key: &ItemKey,
        seen_due: &str,
        lease_until_ms: i64,
    ) -> Result<Claim, Failure> {
        let faults = self.faults();
        if faults.claims.contains(key) {
            return Err(Failure::transient("ThrottlingException"));
        }
        if faults.unclaimable.contains(key) {
            return Err(Failure::content_refused(
                "ValidationException: An operand in the update expression has an incorrect data type",
            ));
        }
        let mut items = lock(&self.items);
        let Some(item) = items.get_mut(key) else {
            return Ok(Claim::Finished);
        };
        if item.status() != Some(Status::Pending) {
            return Ok(Claim::Finished);
        }
        if item.sweep_due_at.map(i128::from) != number::integer(seen_due) {
            return Ok(Claim::Held(Held {
                created_at_ms: item.created_at.unwrap_or(0),
                message_id: item
                    .message_id
                    .clone()
                    .unwrap_or_else(|| derive_message_id(key)),
                due_at_ms: item.sweep_due_at,
            }));
        }
        item.retry_count = Some(item.retry_count.unwrap_or(0) + 1);
        item.sweep_due_at = Some(lease_until_ms);
        let stored =
            serde_dynamo::to_item(&*item).map_err(|e| Failure::permanent(e.to_string()))?;
        Ok(Claim::Claimed(Box::new(ClaimedItem::decode(
            key.clone(),
            stored,
        ))))
    }

    async fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
        attempted: bool,
    ) -> Result<MarkOutcome, Failure> {
        {
            let mut faults = lock(&self.faults);
            if faults.flaky_reschedules > 0 {
                faults.flaky_reschedules -= 1;
                return Err(Failure::transient("InternalServerError"));
            }
        }
        Ok(self.change(key, |i| {
            if i.sweep_due_at != Some(claimed_due_ms) {
                return false;
            }
            i.sweep_due_at = Some(next_due_ms);
            i.last_error = Some(reason.to_owned());
            if !attempted {
                i.retry_count = i.retry_count.map(|r| r.saturating_sub(1));
            }
            true
        }))
    }

    async fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        _: i32,
        _: Option<PageToken>,
    ) -> Result<ScanPage, Failure> {
        let items: Vec<UnindexedItem> = lock(&self.items)
            .iter()
            .enumerate()
            .filter(|(n, _)| *n as u64 % u64::from(segments.max(1)) == u64::from(segment))
            .filter(|(_, (_, i))| {
                i.item_type.as_deref() == Some(PENDING_MESSAGE)
                    && i.status() == Some(Status::Pending)
                    && !seen(i).is_valid()
            })
            .map(|(_, (k, i))| UnindexedItem {
                key: k.clone(),
                created_at_ms: i.created_at,
                index: seen(i),
            })
            .collect();
        Ok(ScanPage {
            scanned: items.len() as u64,
            items,
            next: None,
        })
    }

    async fn adopt(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen_index: &SeenIndex,
    ) -> Result<MarkOutcome, Failure> {
        Ok(self.change(key, |i| {
            if seen(i) != *seen_index {
                return false;
            }
            i.sweep_shard = Some(shard.to_owned());
            i.sweep_due_at = Some(due_ms);
            i.retry_count.get_or_insert(0);
            true
        }))
    }

    async fn scan_cursor(&self, segment: u32, segments: u32) -> Result<Option<PageToken>, Failure> {
        Ok(lock(&self.cursors).get(&(segment, segments)).cloned())
    }

    async fn save_scan_cursor(
        &self,
        segment: u32,
        segments: u32,
        cursor: Option<&PageToken>,
    ) -> Result<(), Failure> {
        let mut cursors = lock(&self.cursors);
        match cursor {
            Some(c) => cursors.insert((segment, segments), c.clone()),
            None => cursors.remove(&(segment, segments)),
        };
        Ok(())
    }
}
