//! Adoption into the sweeper index of unindexed items the stream path could not
//! finish.
//!
//! The library's producer writes no sweeper index keys by default, nor do minimal
//! producers (and foreign ones may carry values no sweep claims), so if the stream
//! path cannot finish such an item (a retry that may run out, a SENT or FAILED mark
//! that failed) no sweep would ever look at it again.

use super::{MARK_CONCURRENCY, Outcome, Work, WorkItem};
use crate::ports::OutboxStore;
use crate::schema::{OutboxMessage, SweepShards};
use futures::StreamExt;

/// When an unindexed item the stream path could not finish becomes the sweeper's.
const ADOPT_GRACE_MS: i64 = 60_000;

/// Puts the unindexed items `outcomes` leave unfinished in the sweeper index, due
/// after the grace. Returns a retry for each finished-looking item (published,
/// dead-lettered or deferred) the index could not take: the caller reports it, or
/// nobody would come back to it (found by the model checker, docs/protocol.md).
pub(super) async fn unfinished<S: OutboxStore>(
    store: &S,
    items: &[WorkItem],
    outcomes: &[Outcome],
    now_ms: i64,
    layout: &SweepShards,
) -> Vec<(usize, Outcome)> {
    let due = now_ms + ADOPT_GRACE_MS;
    futures::stream::iter(unindexed_unfinished(items, outcomes, layout))
        .map(|(index, msg, outcome)| async move {
            let shard = layout.shard_of(&msg.key.pk);
            match store
                .adopt_unindexed(&msg.key, &shard, due, &msg.index)
                .await
            {
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(message_id = %msg.message_id, trace_id = msg.trace_id(), error = %e, "could not put the item in the sweeper index; reporting it for retry");
                    // Retry and Blocked are reported already; a published,
                    // dead-lettered or deferred item must be reported now.
                    matches!(
                        outcome,
                        Outcome::Sent { .. }
                            | Outcome::DeadLettered { .. }
                            | Outcome::Deferred { .. }
                            | Outcome::OrderUnknown { .. }
                    )
                    .then(|| (index, Outcome::Retry {
                        reason: "not finished (published and not marked SENT, or left for the sweeper) and not put in the sweeper index"
                            .to_owned(),
                    }))
                }
            }
        })
        .buffer_unordered(MARK_CONCURRENCY)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// The messages without sweeper index keys that this call leaves pending, with
/// their positions and outcomes.
fn unindexed_unfinished<'a>(
    items: &'a [WorkItem],
    outcomes: &'a [Outcome],
    layout: &'a SweepShards,
) -> impl Iterator<Item = (usize, &'a OutboxMessage, &'a Outcome)> {
    items
        .iter()
        .zip(outcomes)
        .enumerate()
        .filter_map(|(index, (item, outcome))| match (&item.work, outcome) {
            (
                Work::Publish(msg),
                Outcome::Retry { .. }
                | Outcome::Blocked
                | Outcome::Deferred { .. }
                | Outcome::OrderUnknown { .. }
                | Outcome::Sent { marked: false }
                | Outcome::DeadLettered { marked: false, .. },
            ) if !msg.indexed(layout) => Some((index, msg, outcome)),
            _ => None,
        })
}
