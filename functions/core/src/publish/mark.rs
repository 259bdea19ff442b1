//! The state changes after a publish: `SENT` for what went out, `FAILED` for poison
//! whose copy is safe, and adoption into the sweeper index of unindexed items the
//! stream path could not finish. All conditional, all concurrent.

use super::{ADOPT_GRACE_MS, MARK_CONCURRENCY, Outcome, Poison, Publisher, Work, WorkItem};
use crate::ports::{MarkOutcome, MessageSink, OutboxStore};
use crate::schema::sweep_shard;
use futures::StreamExt;

impl<K: MessageSink, S: OutboxStore> Publisher<K, S> {
    /// Marks poison `FAILED` once its copy is on the dead-letter queue.
    pub(super) async fn mark_all_failed(
        &self,
        poison: Vec<(usize, Poison)>,
        now_ms: i64,
    ) -> Vec<(usize, Outcome)> {
        futures::stream::iter(poison.into_iter().map(|(index, p)| async move {
            tracing::warn!(
                message_id = p.message_id.as_deref().unwrap_or("-"),
                topic = p.topic.as_deref().unwrap_or("-"),
                aggregate = p.key.as_ref().map(|k| k.pk.as_str()).unwrap_or("-"),
                reason = %p.reason,
                "message is poison: copied to the dead-letter queue, marking FAILED"
            );
            if let Some(key) = &p.key
                && let Err(e) = self.store.mark_failed(key, &p.reason, now_ms).await
            {
                // The copy is safe on the dead-letter queue, but the item is still
                // PENDING: report it for retry. An item outside the sweeper index (a
                // minimal producer's) has nobody else to come back to it; the retry
                // dead-letters it again (a second copy) and marks it then.
                tracing::error!(error = %e, sk = %key.sk, "dead-lettered but could not mark FAILED; reporting it for retry");
                return (
                    index,
                    Outcome::Retry {
                        reason: format!("dead-lettered but could not mark FAILED: {e}"),
                    },
                );
            }
            (index, Outcome::DeadLettered { reason: p.reason })
        }))
        .buffer_unordered(MARK_CONCURRENCY)
        .collect()
        .await
    }

    /// Marks every published item `SENT`, concurrently. A refused condition means
    /// someone else finished the item; an error leaves it for the sweeper.
    pub(super) async fn mark_all_sent(
        &self,
        items: &[WorkItem],
        sent: &[usize],
        now_ms: i64,
    ) -> Vec<(usize, bool)> {
        let expires = now_ms / 1000 + i64::from(self.config.ttl_days) * 86_400;
        futures::stream::iter(sent.iter().filter_map(|&index| match &items[index].work {
            Work::Publish(msg) => Some((index, msg)),
            Work::Poison(_) => None,
        }))
        .map(|(index, msg)| async move {
            let marked = match self.store.mark_sent(&msg.key, now_ms, expires).await {
                Ok(MarkOutcome::Marked) => true,
                Ok(MarkOutcome::AlreadyFinished) => {
                    tracing::debug!(message_id = %msg.message_id, "already finished by another worker");
                    false
                }
                Err(e) => {
                    tracing::warn!(message_id = %msg.message_id, topic = %msg.topic, error = %e,
                        "published but could not mark SENT; the sweeper will republish it (a duplicate for consumers)");
                    false
                }
            };
            (index, marked)
        })
        .buffer_unordered(MARK_CONCURRENCY)
        .collect()
        .await
    }

    /// Items from minimal producers carry no sweeper index keys, so if the stream path
    /// cannot finish them (a retry that may run out, a SENT mark that failed) nothing
    /// would ever look at them again. Put them in the index, due after the grace.
    /// Returns the positions of published items the index could not take: the caller
    /// reports them for retry, or nobody would come back to them.
    pub(super) async fn adopt_unfinished(
        &self,
        items: &[WorkItem],
        outcomes: &[Outcome],
        now_ms: i64,
    ) -> Vec<usize> {
        let due = now_ms + ADOPT_GRACE_MS;
        let unfinished =
            items
                .iter()
                .zip(outcomes)
                .enumerate()
                .filter_map(|(index, (item, outcome))| match (&item.work, outcome) {
                    (
                        Work::Publish(msg),
                        Outcome::Retry { .. } | Outcome::Blocked | Outcome::Sent { marked: false },
                    ) if !msg.indexed => Some((index, msg, outcome)),
                    _ => None,
                });
        futures::stream::iter(unfinished)
            .map(|(index, msg, outcome)| async move {
                let shard = sweep_shard(&msg.key.pk);
                match self.store.adopt_unindexed(&msg.key, &shard, due).await {
                    Ok(_) => None,
                    Err(e) => {
                        tracing::warn!(message_id = %msg.message_id, error = %e, "could not put the item in the sweeper index; reporting it for retry");
                        // Retry and Blocked are reported already; a published item
                        // must be reported now.
                        matches!(outcome, Outcome::Sent { .. }).then_some(index)
                    }
                }
            })
            .buffer_unordered(MARK_CONCURRENCY)
            .filter_map(std::future::ready)
            .collect()
            .await
    }
}
