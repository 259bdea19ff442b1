//! The message a FIFO member follows in its own transaction, read by key.
//!
//! AWS delivers one transaction's stream records in any order and in any batches
//! (*Transactions: how it works*), and a global secondary index lags the writes: A2's
//! batch can run before A1's while the index does not list A1 yet, and A2 went out
//! first (issue 36, finding 1). The library's producer names, on each message, the one
//! written before it of the same aggregate in the same transaction (`Follows`). The
//! fence asks those keys in its consistent status read ([`predecessors`]) and adds each
//! still pending to its aggregate's siblings ([`Pending::add_predecessors`]): the member
//! waits behind it like behind any earlier pending message. Only the nearest is named:
//! it waits in turn behind its own, so the chain holds the whole transaction.

use super::{Member, Pending, Sibling};
use crate::schema::{ItemKey, is_sequenced};
use std::collections::{BTreeSet, HashMap};

/// The keys FIFO-routed `members` follow that are not in the batch themselves: what
/// the status read asks, before the index siblings. A sequenced member's key says
/// what it follows, and its fence reads that ([`super::Scope::Sequence`]).
pub fn predecessors(members: &[Member]) -> Vec<ItemKey> {
    let in_batch: BTreeSet<&ItemKey> = members.iter().map(|m| &m.key).collect();
    let mut asked = BTreeSet::new();
    members
        .iter()
        .filter(|m| m.fifo && !is_sequenced(&m.key))
        .filter_map(|m| m.follows.as_ref())
        .filter(|key| !in_batch.contains(key))
        .filter(|key| asked.insert(*key))
        .cloned()
        .collect()
}

impl Pending {
    /// Adds the predecessors of `asked` that the consistent read `statuses` did not
    /// find finished ([`super::to_confirm`]'s rule) as pending siblings of their
    /// aggregates — or all of them when the read failed (`statuses` is `None`): a
    /// predecessor that cannot be read is not known to be done. Returns how many.
    pub fn add_predecessors(
        &mut self,
        asked: &[ItemKey],
        statuses: Option<&HashMap<ItemKey, Option<String>>>,
    ) -> usize {
        let mut added = 0;
        for key in asked {
            let pending = match statuses {
                None => true,
                Some(read) => read
                    .get(key)
                    .is_some_and(|status| !super::confirm::is_finished(status.as_deref())),
            };
            let Some(found) = self.by_aggregate.get_mut(&key.pk) else {
                continue;
            };
            if pending && !found.siblings.iter().any(|s| &s.key == key) {
                found.siblings.push(Sibling {
                    key: key.clone(),
                    due_at_ms: None,
                    order: None,
                });
                added += 1;
            }
        }
        added
    }
}

#[cfg(test)]
mod tests;
