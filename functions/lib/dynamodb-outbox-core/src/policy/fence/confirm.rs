//! Confirming what the index says before it fences.
//!
//! The sweeper index is a global secondary index: eventually consistent, it may still
//! list a message that the previous batch (or another sweep) has just marked `SENT`.
//! Fenced behind it, the next message of a bursty FIFO aggregate would be deferred to
//! the sweeper, and every later one behind that, until the aggregate goes quiet. So
//! the index siblings that would fence a member are asked their current `Status` in
//! one strongly consistent read ([`to_confirm`] picks them, at most [`CONFIRM_LIMIT`]),
//! and only those still `PENDING` fence ([`Pending::confirm`]). Siblings from a
//! partition read are consistent already; siblings not asked (over the limit) fence
//! as the index says, conservatively.

use super::{Member, Pending, fencing, key_position};
use crate::schema::{ItemKey, Status, is_sequenced};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The most index siblings one batch confirms: one `BatchGetItem` (100 keys).
pub const CONFIRM_LIMIT: usize = 100;

/// The index siblings that would fence a FIFO-routed or sequenced member of `members`, to ask for
/// their current status: for each aggregate the nearest earlier ones first (the ones
/// a lagging index still lists are those just finished, right before the batch's
/// own), aggregates taking turns, at most `limit` in all. Empty when nothing the
/// index lists fences.
pub fn to_confirm(members: &[Member], pending: &Pending, limit: usize) -> Vec<ItemKey> {
    let in_batch: BTreeSet<&ItemKey> = members.iter().map(|m| &m.key).collect();
    let mut by_aggregate: BTreeMap<&str, BTreeSet<&ItemKey>> = BTreeMap::new();
    // The members the fence applies to (`fenced`): FIFO-routed, or sequenced.
    for m in members.iter().filter(|m| m.fifo || is_sequenced(&m.key)) {
        let Some(found) = pending.by_aggregate.get(&m.key.pk) else {
            continue;
        };
        if !found.from_index {
            continue;
        }
        by_aggregate
            .entry(m.key.pk.as_str())
            .or_default()
            .extend(fencing(m, &found.siblings, &in_batch).map(|s| &s.key));
    }
    let mut ranked: Vec<(usize, &str, &ItemKey)> = Vec::new();
    for (aggregate, siblings) in by_aggregate {
        let mut nearest: Vec<&ItemKey> = siblings.into_iter().collect();
        // Latest place first; a sibling whose key gives no place, last.
        nearest.sort_by_key(|key| std::cmp::Reverse(key_position(key)));
        ranked.extend(
            nearest
                .into_iter()
                .enumerate()
                .map(|(rank, key)| (rank, aggregate, key)),
        );
    }
    ranked.sort();
    ranked
        .into_iter()
        .take(limit)
        .map(|(_, _, key)| key.clone())
        .collect()
}

impl Pending {
    /// Drops the index siblings of `asked` that the consistent read `statuses` found
    /// finished (`SENT`, `FAILED`, gone: missing from `statuses`, or an item with no
    /// status at all, which nothing will ever send), and returns how many. Any other
    /// status still fences: `PENDING`, and `PENDING` homed in another region after a
    /// failover (the adapter's `PENDING_ELSEWHERE`), which that region's sweeper
    /// will still send. Siblings not asked, and those of partition reads, stay.
    pub fn confirm(
        &mut self,
        asked: &[ItemKey],
        statuses: &HashMap<ItemKey, Option<String>>,
    ) -> usize {
        let finished: BTreeSet<&ItemKey> = asked
            .iter()
            .filter(|key| statuses.get(*key).is_none_or(|status| is_finished(status.as_deref())))
            .collect();
        let mut dropped = 0;
        for found in self.by_aggregate.values_mut().filter(|f| f.from_index) {
            let before = found.siblings.len();
            found.siblings.retain(|s| !finished.contains(&s.key));
            dropped += before - found.siblings.len();
        }
        dropped
    }
}

/// Whether a message whose consistent read found `status` is done with: a terminal
/// state, or no status at all.
pub(super) fn is_finished(status: Option<&str>) -> bool {
    match status {
        None => true,
        Some(s) => matches!(Status::parse(s), Some(Status::Sent | Status::Failed)),
    }
}

#[cfg(test)]
mod tests;
