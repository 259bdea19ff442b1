//! In-memory fakes of the ports, for unit tests of the logic (here and in the crates
//! built on this one, through the `test-fakes` feature). Behaviour against AWS is
//! tested against the emulator, not here.
//!
//! [`MemoryStore`] keeps [`OutboxItem`]s — the schema's own type — and answers claims
//! through the same decoding as the DynamoDB adapter. [`RecordingSink`] records every
//! call and fails what it is told to.

use crate::failure::Failure;
use crate::message::OutboundMessage;
use crate::ports::{
    Claim, ClaimedItem, DueKey, DuePage, EntryResult, MarkOutcome, MessageSink, OutboxStore,
    PageToken, ScanPage, SweepStore, UnindexedItem,
};
use crate::route::Destination;
use crate::schema::{ItemKey, OutboxItem, PENDING_MESSAGE, Status, sweep_shard};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A pending item as the library's producer writes it, due for the sweeper at
/// `due_ms`, with payload `payload-<created_ms>`.
pub fn pending_item(
    key: &ItemKey,
    topic: &str,
    retry: u32,
    due_ms: i64,
    created_ms: i64,
) -> OutboxItem {
    OutboxItem {
        pk: Some(key.pk.clone()),
        sk: Some(key.sk.clone()),
        item_type: Some(PENDING_MESSAGE.to_owned()),
        topic: Some(topic.to_owned()),
        payload: Some(format!("payload-{created_ms}")),
        status: Some(Status::Pending.as_str().to_owned()),
        retry_count: Some(retry),
        created_at: Some(created_ms),
        sweep_shard: Some(sweep_shard(&key.pk)),
        sweep_due_at: Some(due_ms),
        ..OutboxItem::default()
    }
}

/// The key `pk` / `sk`.
pub fn key(pk: &str, sk: &str) -> ItemKey {
    ItemKey {
        pk: pk.to_owned(),
        sk: sk.to_owned(),
    }
}

/// An outbox table in memory. Conditional changes behave as the DynamoDB adapter's:
/// only a `PENDING` item changes. A key the store does not hold counts as a pending
/// item with nothing else known, so publish tests need not fill the table first.
#[derive(Debug, Default)]
pub struct MemoryStore {
    items: Mutex<BTreeMap<ItemKey, OutboxItem>>,
    sent: Mutex<Vec<ItemKey>>,
    failed: Mutex<Vec<(ItemKey, String)>>,
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

impl OutboxStore for MemoryStore {
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
    ) -> Result<MarkOutcome, Failure> {
        SweepStore::adopt(self, key, shard, due_ms).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        reason: &str,
        failed_at_ms: i64,
    ) -> Result<MarkOutcome, Failure> {
        let outcome = self.change(key, |i| {
            i.status = Some(Status::Failed.as_str().to_owned());
            i.last_error = Some(reason.to_owned());
            i.failed_at = Some(failed_at_ms);
            leave_index(i);
            true
        });
        if outcome == MarkOutcome::Marked {
            lock(&self.failed).push((key.clone(), reason.to_owned()));
        }
        Ok(outcome)
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
        let keys: Vec<DueKey> = lock(&self.items)
            .iter()
            .filter(|(_, i)| i.sweep_shard.as_deref() == Some(shard))
            .filter_map(|(k, i)| {
                let due = i.sweep_due_at.filter(|d| *d <= due_by_ms)?;
                Some(DueKey {
                    key: k.clone(),
                    due_at_ms: due,
                })
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
        seen_due_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Claim, Failure> {
        let mut items = lock(&self.items);
        let Some(item) = items.get_mut(key) else {
            return Ok(Claim::Lost);
        };
        if item.status() != Some(Status::Pending) || item.sweep_due_at != Some(seen_due_ms) {
            return Ok(Claim::Lost);
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
    ) -> Result<MarkOutcome, Failure> {
        Ok(self.change(key, |i| {
            if i.sweep_due_at != Some(claimed_due_ms) {
                return false;
            }
            i.sweep_due_at = Some(next_due_ms);
            i.last_error = Some(reason.to_owned());
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
                    && i.sweep_shard.is_none()
            })
            .map(|(_, (k, i))| UnindexedItem {
                key: k.clone(),
                created_at_ms: i.created_at,
            })
            .collect();
        Ok(ScanPage {
            scanned: items.len() as u64,
            items,
            next: None,
        })
    }

    async fn adopt(&self, key: &ItemKey, shard: &str, due_ms: i64) -> Result<MarkOutcome, Failure> {
        Ok(self.change(key, |i| {
            if i.sweep_shard.is_some() {
                return false;
            }
            i.sweep_shard = Some(shard.to_owned());
            i.sweep_due_at = Some(due_ms);
            i.retry_count.get_or_insert(0);
            true
        }))
    }
}

/// What a [`RecordingSink`] refuses. By default nothing.
#[derive(Debug, Clone, Default)]
pub struct Refusals {
    /// Destinations (by a part of their name) whose every call fails transiently
    /// (`Throttled`), like a queue that is down.
    pub down: Vec<String>,
    /// Bodies whose entry fails transiently (`Throttled`) outside the dead-letter queue.
    pub transient: Vec<String>,
    /// Bodies the destinations refuse for good (`InvalidMessageContents`); the
    /// dead-letter queue accepts them.
    pub refused: Vec<String>,
    /// Bodies every destination refuses for good, the dead-letter queue included.
    pub refused_everywhere: Vec<String>,
    /// Bodies for which the service refuses the whole call for its content
    /// (`BatchRequestTooLong`).
    pub refuse_call: Vec<String>,
}

/// One recorded call: destination, messages, and which of them were accepted.
type Recorded = (String, Vec<OutboundMessage>, Vec<bool>);

/// A sink that records every call. A destination whose name contains `dlq` is the
/// dead-letter queue.
#[derive(Debug, Default)]
pub struct RecordingSink {
    refusals: Refusals,
    calls: Mutex<Vec<Recorded>>,
}

impl RecordingSink {
    /// A sink that refuses what `refusals` says.
    pub fn new(refusals: Refusals) -> Self {
        RecordingSink {
            refusals,
            calls: Mutex::default(),
        }
    }

    /// Every call: the destination and its messages' bodies, in order.
    pub fn calls(&self) -> Vec<(String, Vec<String>)> {
        lock(&self.calls)
            .iter()
            .map(|(d, m, _)| (d.clone(), m.iter().map(|m| m.body.clone()).collect()))
            .collect()
    }

    /// The messages accepted by destinations whose name contains `dest`.
    pub fn delivered(&self, dest: &str) -> Vec<OutboundMessage> {
        lock(&self.calls)
            .iter()
            .filter(|(d, _, _)| d.contains(dest))
            .flat_map(|(_, m, ok)| {
                m.iter()
                    .zip(ok)
                    .filter(|(_, ok)| **ok)
                    .map(|(m, _)| m.clone())
            })
            .collect()
    }

    fn entry(&self, dlq: bool, body: &str) -> EntryResult {
        let has = |list: &[String]| list.iter().any(|b| b == body);
        let r = &self.refusals;
        if !dlq && has(&r.transient) {
            Err(Failure::transient("Throttled"))
        } else if has(&r.refused_everywhere) || (!dlq && has(&r.refused)) {
            Err(Failure::permanent("InvalidMessageContents"))
        } else {
            Ok(())
        }
    }
}

impl MessageSink for RecordingSink {
    async fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> Result<Vec<EntryResult>, Failure> {
        let dest = destination.to_string();
        let owned: Vec<OutboundMessage> = messages.iter().map(|m| (*m).clone()).collect();
        let r = &self.refusals;
        let answer = if r.down.iter().any(|d| dest.contains(d.as_str())) {
            Err(Failure::transient("Throttled"))
        } else if messages.iter().any(|m| r.refuse_call.contains(&m.body)) {
            Err(Failure::content_refused("BatchRequestTooLong"))
        } else {
            let dlq = dest.contains("dlq");
            Ok(messages
                .iter()
                .map(|m| self.entry(dlq, &m.body))
                .collect::<Vec<_>>())
        };
        let accepted = match &answer {
            Ok(results) => results.iter().map(Result::is_ok).collect(),
            Err(_) => vec![false; owned.len()],
        };
        lock(&self.calls).push((dest, owned, accepted));
        answer
    }
}
