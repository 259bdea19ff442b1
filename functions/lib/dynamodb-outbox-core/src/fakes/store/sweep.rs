//! The sweeper's port on the in-memory table: due pages, claims (leases),
//! reschedules, the scan for unindexed items and its cursors, and adoption.

use super::MemoryStore;
use crate::failure::Failure;
use crate::fakes::lock;
use crate::ports::{
    Claim, ClaimedItem, DueKey, DuePage, Held, MarkOutcome, PageToken, ScanPage, SweepStore,
    UnindexedItem,
};
use crate::schema::{
    ItemKey, OutboxItem, PENDING_MESSAGE, SeenIndex, Status, derive_message_id, number,
};

/// The index attributes of a stored item, as the adapter would read them.
fn seen(item: &OutboxItem) -> SeenIndex {
    SeenIndex {
        shard: item.sweep_shard.clone(),
        due: item.sweep_due_at.map(|d| d.to_string()),
    }
}

/// An index entry's place in its shard, as text that sorts as the index does: by due
/// time (non-negative in the fakes' tables), then by key.
fn page_position(due_ms: i64, key: &ItemKey) -> String {
    format!("{due_ms:020}\u{0}{}\u{0}{}", key.pk, key.sk)
}

impl SweepStore for MemoryStore {
    async fn due_page(
        &self,
        shard: &str,
        due_by_ms: i64,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<DuePage, Failure> {
        if self.faults().queries.iter().any(|s| s == shard) {
            return Err(Failure::transient("InternalServerError"));
        }
        // As the index answers: in (due, key) order, at most `limit` keys a page,
        // continuing after the position `start` names.
        let after = start.as_ref().map(|t| t.as_str().to_owned());
        let entries: Vec<(ItemKey, i64)> = lock(&self.items)
            .iter()
            .filter(|(_, i)| i.sweep_shard.as_deref() == Some(shard))
            .filter_map(|(k, i)| Some((k.clone(), i.sweep_due_at?)))
            .chain(
                lock(&self.stale_entries)
                    .iter()
                    .filter(|(_, (s, _))| s == shard)
                    .map(|(k, (_, due))| (k.clone(), *due)),
            )
            .collect();
        let mut due: Vec<(String, DueKey)> = entries
            .into_iter()
            .filter(|(_, due)| *due <= due_by_ms)
            .map(|(k, due)| (page_position(due, &k), DueKey::new(k, due)))
            .filter(|(position, _)| after.as_ref().is_none_or(|a| position > a))
            .collect();
        due.sort_by(|a, b| a.0.cmp(&b.0));
        let limit = usize::try_from(limit).unwrap_or(0).max(1);
        let next = (due.len() > limit).then(|| PageToken::new(due[limit - 1].0.clone()));
        let keys: Vec<DueKey> = due.into_iter().take(limit).map(|(_, d)| d).collect();
        Ok(DuePage {
            scanned: keys.len() as u64,
            keys,
            next,
        })
    }

    async fn claim(
        &self,
        key: &ItemKey,
        seen_due: &str,
        lease_until_ms: i64,
        shard: &str,
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
        if let (true, Some(shard), Some(due)) = (
            faults.stale_index,
            item.sweep_shard.clone(),
            item.sweep_due_at,
        ) {
            lock(&self.stale_entries).insert(key.clone(), (shard, due));
        }
        item.retry_count = Some(item.retry_count.unwrap_or(0) + 1);
        item.sweep_due_at = Some(lease_until_ms);
        item.sweep_shard = Some(shard.to_owned());
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
                    && !seen(i).is_valid(&self.layout)
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
