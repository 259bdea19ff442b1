//! The order fence's reads, before anything is sent: the pending messages of the
//! batch's FIFO-routed aggregates, and the decision of [`crate::policy::fence`] on
//! them. A batch with no FIFO route reads nothing.

use super::plan::Plan;
use super::{FENCE_MAX_PAGES, Outcome, Work, WorkItem};
use crate::policy::{FenceRead, Member, Pending, fence_reads, fenced};
use crate::ports::OutboxStore;
use crate::schema::ItemKey;
use std::collections::HashSet;

/// The planned messages that must wait behind an earlier pending message of their
/// aggregate, by position in the batch, each [`Outcome::Deferred`]. A read that fails
/// or stops at its bound fences its aggregates; a sibling in `finished` (finished by
/// the caller since the index was written) does not fence.
pub(super) async fn deferred<S: OutboxStore>(
    store: &S,
    plan: &Plan,
    items: &[WorkItem],
    finished: &HashSet<ItemKey>,
) -> Vec<(usize, Outcome)> {
    let (positions, members) = planned_members(plan, items);
    let reads = fence_reads(&members);
    if reads.is_empty() {
        return Vec::new();
    }
    let pending = read_pending(store, &reads, finished).await;
    let fences = fenced(&members, &pending);
    positions
        .into_iter()
        .zip(members.iter().zip(fences))
        .filter_map(|(index, (m, fence))| {
            let fence = fence?;
            tracing::info!(aggregate = %m.key.pk, sk = %m.key.sk, not_before = ?fence.not_before,
                "an earlier message of the aggregate is still pending: left for the sweeper, which publishes in order");
            let not_before = fence.not_before;
            Some((index, Outcome::Deferred { not_before }))
        })
        .collect()
}

/// Every planned message as the fence sees it, with its position in the batch.
fn planned_members(plan: &Plan, items: &[WorkItem]) -> (Vec<usize>, Vec<Member>) {
    let mut positions = Vec::new();
    let mut members = Vec::new();
    for round in &plan.rounds {
        for (&d, call) in round {
            let fifo = plan.destinations[d].is_fifo();
            for e in &call.entries {
                if let Work::Publish(msg) = &items[e.index].work {
                    positions.push(e.index);
                    members.push(Member::of(msg, fifo));
                }
            }
        }
    }
    (positions, members)
}

/// Runs the fence's reads concurrently, leaving out the siblings in `finished`.
async fn read_pending<S: OutboxStore>(
    store: &S,
    reads: &[FenceRead],
    finished: &HashSet<ItemKey>,
) -> Pending {
    let answers = futures::future::join_all(
        reads
            .iter()
            .map(|read| store.pending(read, FENCE_MAX_PAGES)),
    )
    .await;
    let mut pending = Pending::default();
    for (read, answer) in reads.iter().zip(answers) {
        match answer {
            Ok(page) => {
                if !page.complete {
                    tracing::warn!(scope = ?read.scope, pages = FENCE_MAX_PAGES,
                        "too many pending messages to read them all: the FIFO messages of these aggregates wait for the sweeper");
                }
                let siblings = page
                    .siblings
                    .into_iter()
                    .filter(|s| !finished.contains(&s.key))
                    .collect();
                pending.found(read, siblings, page.complete);
            }
            Err(e) => {
                tracing::warn!(scope = ?read.scope, error = %e,
                    "could not read the pending messages: the FIFO messages of these aggregates wait for the sweeper");
                pending.failed(read);
            }
        }
    }
    pending
}
