//! The order fence's reads, before anything is sent: the pending messages of the
//! batch's FIFO-routed aggregates (at most [`FENCE_BATCH_PAGES`] pages for the whole
//! batch), the current status of the index siblings that would fence (one consistent
//! read, [`crate::policy::to_confirm`]), and the decision of
//! [`crate::policy::fenced`] on them. A batch with no FIFO route reads nothing.

use super::plan::Plan;
use super::{Outcome, Work, WorkItem};
use crate::failure::Failure;
use crate::policy::{
    CONFIRM_LIMIT, FENCE_BATCH_PAGES, FenceRead, Member, Pending, cannot_tell_reason, fence_reads,
    fallback_reads, fenced, page_budgets, predecessors, switch_over_reads, to_confirm,
};
use crate::ports::OutboxStore;
use crate::schema::{ItemKey, SweepShards};
use std::collections::{BTreeSet, HashSet};

/// The planned messages that must wait behind an earlier pending message of their
/// aggregate, by position in the batch: [`Outcome::Deferred`], or
/// [`Outcome::OrderUnknown`] when the fence could not tell (a read that failed or
/// stopped at its bound). A sibling in `finished` (finished by the caller since the
/// index was written) does not fence, nor one the consistent status read finds
/// finished. Also the requests its reads of pending messages made (`FenceReads`).
pub(super) async fn deferred<S: OutboxStore>(
    store: &S,
    plan: &Plan,
    items: &[WorkItem],
    finished: &HashSet<ItemKey>,
    layout: &SweepShards,
) -> (Vec<(usize, Outcome)>, usize) {
    let (positions, members) = planned_members(plan, items, layout);
    let reads = fence_reads(&members);
    if reads.is_empty() {
        return (Vec::new(), 0);
    }
    let (mut pending, requests) = read_pending(store, &members, &reads, finished).await;
    confirm(store, &members, &mut pending).await;
    let fences = fenced(&members, &pending);
    let decided = positions
        .into_iter()
        .zip(members.iter().zip(fences))
        .filter_map(|(index, (m, fence))| {
            let fence = fence?;
            let (pk, sk) = (&m.key.pk, &m.key.sk);
            if fence.cannot_tell {
                let why = pending.why_unread(pk).unwrap_or("unknown");
                tracing::warn!(aggregate = %pk, %sk, why,
                    "the order fence cannot tell whether an earlier message of the aggregate is pending: not sent, and its attempt counts");
                let reason = cannot_tell_reason(why);
                return Some((index, Outcome::OrderUnknown { reason }));
            }
            let not_before = fence.not_before;
            tracing::info!(aggregate = %pk, %sk, ?not_before,
                "an earlier message of the aggregate is still pending: left for the sweeper, which publishes in order");
            Some((index, Outcome::Deferred { not_before }))
        })
        .collect();
    (decided, requests)
}

/// Every planned message as the fence sees it, with its position in the batch.
fn planned_members(
    plan: &Plan,
    items: &[WorkItem],
    layout: &SweepShards,
) -> (Vec<usize>, Vec<Member>) {
    let mut positions = Vec::new();
    let mut members = Vec::new();
    for round in &plan.rounds {
        for (&d, call) in round {
            let fifo = plan.destinations[d].is_fifo();
            for e in &call.entries {
                if let Work::Publish(msg) = &items[e.index].work {
                    positions.push(e.index);
                    members.push(Member::of(msg, fifo, layout));
                }
            }
        }
    }
    (positions, members)
}

/// Runs the fence's reads concurrently, within the batch's page budget, leaving out
/// the siblings in `finished`; then, in what is left of the budget, the reads their
/// answers call for: the partition of an aggregate whose sequence read found no
/// earlier sequenced message ([`switch_over_reads`]), and the other side of a read
/// that stopped at its bound ([`fallback_reads`]). With the requests the reads that
/// answered made (the adapter counts its pages: a failed read reports none).
async fn read_pending<S: OutboxStore>(
    store: &S,
    members: &[Member],
    reads: &[FenceRead],
    finished: &HashSet<ItemKey>,
) -> (Pending, usize) {
    let mut pending = Pending::default();
    let mut requests = 0;
    let mut left = FENCE_BATCH_PAGES;
    let mut round: Vec<Planned> = reads.iter().cloned().map(Planned::first).collect();
    // At most three rounds: a switch-over read comes from a sequence read (the first
    // round only), a fallback from a read that is not one itself.
    while !round.is_empty() {
        let answered = read_round(store, members, &round, left, finished, &mut pending).await;
        requests += answered.requests;
        left = left.saturating_sub(u32::try_from(answered.requests).unwrap_or(u32::MAX));
        round = switch_over_reads(&answered.switching)
            .into_iter()
            .map(Planned::first)
            .chain(answered.fallbacks.into_iter().map(Planned::fallback))
            .collect();
    }
    (pending, requests)
}

/// A read to make, and whether it is another's fallback (which has none of its own).
struct Planned {
    read: FenceRead,
    fallback: bool,
}

impl Planned {
    fn first(read: FenceRead) -> Self {
        Planned {
            read,
            fallback: false,
        }
    }

    fn fallback(read: FenceRead) -> Self {
        Planned {
            read,
            fallback: true,
        }
    }
}

/// What one round of reads calls for next.
struct Answered {
    requests: usize,
    /// Aggregates whose sequence read found no earlier sequenced message.
    switching: BTreeSet<String>,
    /// The other side of reads that stopped at their bound.
    fallbacks: Vec<FenceRead>,
}

/// Runs `round` concurrently, sharing `pages` among its reads, recording what they
/// found in `pending`. A read that stopped at its bound and has another side
/// records what it found as all it knows (it still fences) and asks for that side:
/// the fallback's answer decides whether the aggregate's read is complete.
async fn read_round<S: OutboxStore>(
    store: &S,
    members: &[Member],
    round: &[Planned],
    pages: u32,
    finished: &HashSet<ItemKey>,
    pending: &mut Pending,
) -> Answered {
    let reads: Vec<FenceRead> = round.iter().map(|p| p.read.clone()).collect();
    let budgets = page_budgets(&reads, pages);
    let answers = futures::future::join_all(
        reads
            .iter()
            .zip(&budgets)
            .map(|(read, &pages)| store.pending(read, pages)),
    )
    .await;
    let mut next = Answered {
        requests: 0,
        switching: BTreeSet::new(),
        fallbacks: Vec::new(),
    };
    for ((planned, answer), &pages) in round.iter().zip(answers).zip(&budgets) {
        let read = &planned.read;
        let page = match answer {
            Ok(page) => page,
            Err(e) => {
                log_failed_read(read, &e);
                pending.failed_because(read, e.reason);
                continue;
            }
        };
        next.requests += page.requests;
        if page.no_earlier_sequence {
            next.switching.extend(read.aggregates.iter().cloned());
        }
        let siblings = page
            .siblings
            .into_iter()
            .filter(|s| !finished.contains(&s.key))
            .collect();
        if page.complete {
            pending.found(read, siblings, true);
            continue;
        }
        let other = if planned.fallback {
            Vec::new()
        } else {
            fallback_reads(members, read)
        };
        if other.is_empty() {
            tracing::warn!(scope = ?read.scope, pages,
                "too many pending messages to read them all: the FIFO messages of these aggregates that nothing read fences cannot go");
            let why = format!(
                "more items than its {pages} pages of 1 MB could read, in this batch's share of {FENCE_BATCH_PAGES}, on either side"
            );
            pending.stopped(read, siblings, why);
        } else {
            tracing::info!(scope = ?read.scope, pages,
                "more items than the fence's read may take: reading the other side (the aggregates' partitions, or their index shard)");
            pending.found(read, siblings, true);
            next.fallbacks.extend(other);
        }
    }
    next
}

/// A read that failed for good (a missing permission, a missing index) is an error an
/// operator must fix; a passing one, a warning.
fn log_failed_read(read: &FenceRead, e: &Failure) {
    if e.is_retryable() {
        tracing::warn!(scope = ?read.scope, error = %e,
            "could not read the pending messages: the FIFO messages of these aggregates cannot go");
    } else {
        tracing::error!(scope = ?read.scope, error = %e,
            "the order fence's read is refused: the FIFO messages of these aggregates cannot go, and use up their attempts");
    }
}

/// Asks, in one consistent read, the current status of the messages FIFO members
/// follow in their own transactions ([`predecessors`]: the index may not list them
/// yet) and of the index siblings that would fence (the index may still list what was
/// just finished); adds the predecessors still pending as siblings and drops the index
/// siblings no longer pending. When the read fails, the index's answer stands (a
/// sibling it lists is most likely still pending) and every predecessor fences:
/// fencing behind them is never out of order.
async fn confirm<S: OutboxStore>(store: &S, members: &[Member], pending: &mut Pending) {
    let followed = predecessors(members);
    let listed = to_confirm(members, pending, CONFIRM_LIMIT.saturating_sub(followed.len()));
    let mut asked = followed.clone();
    asked.extend(listed.iter().filter(|k| !followed.contains(k)).cloned());
    if asked.is_empty() {
        return;
    }
    match store.statuses(&asked).await {
        Ok(read) => {
            let dropped = pending.confirm(&listed, &read.statuses);
            let waiting = pending.add_predecessors(&followed, Some(&read.statuses));
            if dropped > 0 || waiting > 0 {
                tracing::info!(asked = asked.len(), dropped, waiting,
                    "the consistent status read corrected the sweeper index: finished messages it listed do not fence, pending ones of the same transaction it did not list do");
            }
        }
        Err(e) if e.is_retryable() => {
            pending.add_predecessors(&followed, None);
            tracing::warn!(asked = asked.len(), error = %e,
                "could not confirm the status of the pending messages the index lists: they fence as listed");
        }
        Err(e) => {
            pending.add_predecessors(&followed, None);
            tracing::error!(asked = asked.len(), error = %e,
                "the consistent status read of the fence is refused (grant dynamodb:BatchGetItem on the table): the pending messages the index lists fence as listed");
        }
    }
}
