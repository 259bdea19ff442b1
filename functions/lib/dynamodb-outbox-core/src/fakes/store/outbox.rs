//! The publish path's port on the in-memory table: marks (one by one and batched,
//! with the faults asked for), reads of single items and of statuses, and the order
//! fence's reads.

use super::{MemoryStore, absent_item};
use crate::failure::{Failure, FailureKind};
use crate::fakes::lock;
use crate::policy::holds_in_sequence;
use crate::policy::{FailedMark, FenceRead, PAYLOAD_ON_DEAD_LETTER_QUEUE, Scope, Sibling};
use crate::ports::{
    MarkChange, MarkCondition, MarkOutcome, OutboxStore, PendingPage, StatementAnswer,
    StatementError, StatusRead, SweepStore,
};
use crate::schema::{
    ItemKey, OutboxItem, PENDING_MESSAGE, SEQUENCED_PREFIX, SeenIndex, Status, SweepShards,
    failed_sweep_shard,
};

fn leave_index(item: &mut OutboxItem) {
    item.sweep_shard = None;
    item.sweep_due_at = None;
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
            MarkChange::Failed {
                mark,
                failed_at_ms,
                condition,
            } => self.mark_failed(key, mark, *failed_at_ms, condition).await,
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
        condition: &MarkCondition,
    ) -> Result<MarkOutcome, Failure> {
        self.redrive_if_asked(key, |f| &mut f.redriven_before_failed_mark);
        let grows = mark.last_error.is_some() || mark.failed_at;
        if grows && !mark.payload_moved && self.faults().full.contains(key) {
            return Err(Failure::content_refused(
                "ValidationException: Item size to update has exceeded the maximum allowed size",
            ));
        }
        let outcome = self.change(key, |i| {
            if !condition.holds_due(i.sweep_due_at) {
                return false;
            }
            i.status = Some(Status::Failed.as_str().to_owned());
            if let Some(reason) = &mark.last_error {
                i.last_error = Some(reason.clone());
            }
            if mark.failed_at {
                i.failed_at = Some(failed_at_ms);
            }
            if let Some(payload) = &mark.payload {
                i.payload = Some(payload.clone());
            }
            if mark.payload_moved {
                i.payload = None;
                i.payload_on = Some(PAYLOAD_ON_DEAD_LETTER_QUEUE.to_owned());
            }
            if mark.failed_at {
                i.sweep_shard = Some(failed_sweep_shard(&key.pk));
                i.sweep_due_at = Some(failed_at_ms);
            } else {
                leave_index(i);
            }
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
        self.redrive_if_asked(key, |f| &mut f.redriven_before_read);
        let item = lock(&self.items)
            .get(key)
            .cloned()
            .unwrap_or_else(absent_item);
        serde_dynamo::to_item(&item)
            .map(Some)
            .map_err(|e| Failure::permanent(e.to_string()))
    }

    /// An absent key reads as a pending item, as everywhere in this store.
    async fn statuses(&self, keys: &[ItemKey]) -> Result<StatusRead, Failure> {
        if self.faults().status_reads {
            return Err(Failure::transient("ProvisionedThroughputExceededException"));
        }
        let items = lock(&self.items);
        let statuses = keys
            .iter()
            .map(|key| {
                let status = items.get(key).map_or_else(
                    || Some(Status::Pending.as_str().to_owned()),
                    |item| item.status.clone(),
                );
                (key.clone(), status)
            })
            .collect();
        Ok(StatusRead {
            statuses,
            requests: 1,
        })
    }

    /// Only stored items count here.
    async fn pending(&self, read: &FenceRead, _: u32) -> Result<PendingPage, Failure> {
        if self.faults().fence_reads {
            return Err(Failure::transient("ProvisionedThroughputExceededException"));
        }
        let stale = self.faults().stale_index;
        let bounded = match read.scope {
            Scope::Shards(_) => self.faults().bounded_shard_reads,
            Scope::Partition(_) => self.faults().bounded_partition_reads,
            Scope::Sequence { .. } => false,
        };
        if bounded {
            return Ok(PendingPage {
                requests: 1,
                ..PendingPage::default()
            });
        }
        let items = lock(&self.items);
        let (siblings, no_earlier_sequence) = match &read.scope {
            Scope::Sequence {
                aggregate,
                lowest,
                highest,
                ..
            } => sequence_range(items.iter(), aggregate, lowest, highest),
            _ => (
                items
                    .iter()
                    .filter_map(|(k, i)| siblings(read, k, i, stale, &self.layout))
                    .collect(),
                false,
            ),
        };
        Ok(PendingPage {
            scanned: siblings.len() as u64,
            siblings,
            complete: true,
            requests: 1,
            no_earlier_sequence,
        })
    }
}

/// The pending outbox items of `aggregate` that its [`Scope::Sequence`] read finds, as
/// the adapter reads them: keys from `highest` down, in the sequenced range, until
/// the first key below `lowest` (consistent: the table as it is); and whether there
/// was none below.
fn sequence_range<'a>(
    items: impl IntoIterator<Item = (&'a ItemKey, &'a OutboxItem)>,
    aggregate: &str,
    lowest: &str,
    highest: &str,
) -> (Vec<Sibling>, bool) {
    let mut range: Vec<(&ItemKey, &OutboxItem)> = items
        .into_iter()
        .filter(|(k, _)| k.pk == aggregate && k.sk.starts_with(SEQUENCED_PREFIX))
        .filter(|(k, _)| k.sk.as_str() <= highest)
        .collect();
    range.sort_by(|a, b| b.0.sk.cmp(&a.0.sk));
    let below = range.iter().position(|(k, _)| k.sk.as_str() < lowest);
    let end = below.map_or(range.len(), |below| below + 1);
    let siblings = range[..end]
        .iter()
        .filter(|(_, i)| holds_in_sequence(i.item_type.as_deref(), i.status.as_deref()))
        .map(|(k, i)| Sibling {
            key: (*k).clone(),
            due_at_ms: i.sweep_due_at,
            order: None,
        })
        .collect();
    (siblings, below.is_none())
}

/// The pending items `read` finds, as the adapter would return them; from a `stale`
/// index, the finished ones too.
fn siblings(
    read: &FenceRead,
    key: &ItemKey,
    item: &OutboxItem,
    stale: bool,
    layout: &SweepShards,
) -> Option<Sibling> {
    if !read.aggregates.contains(&key.pk) {
        return None;
    }
    let pending = item.status() == Some(Status::Pending);
    match &read.scope {
        Scope::Shards(shards) if stale && !pending => shards
            .contains(&layout.shard_of(&key.pk))
            .then(|| Sibling::indexed(key.clone(), item.sweep_due_at.unwrap_or(0))),
        _ if !pending => None,
        Scope::Shards(shards) => {
            let due = item.sweep_due_at?;
            item.sweep_shard
                .as_ref()
                .is_some_and(|shard| shards.contains(shard))
                .then(|| Sibling::indexed(key.clone(), due))
        }
        Scope::Sequence { .. } => None,
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
