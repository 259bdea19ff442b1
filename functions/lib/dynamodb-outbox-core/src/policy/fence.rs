//! The order fence: before a message routed to a FIFO destination goes out — by the
//! stream publisher or the sweeper — an earlier message of its aggregate that is
//! still `PENDING` outside the batch holds it back.
//!
//! Without it, per-aggregate order breaks across claims, sweeps and discards: a sweep
//! publishes a message whose earlier sibling it did not claim (a claim that failed, a
//! sibling leased by another sweep, backing off longer, not yet due), and the stream
//! publisher publishes a message after the mapping discarded an earlier one's
//! records (found by the model checker, docs/protocol.md).
//!
//! The I/O reads the pending messages of the batch's FIFO-routed aggregates
//! ([`fence_reads`]: the sweeper index shards they are in, keys only, in one read, or
//! for an aggregate written by another producer, its partition); [`fenced`] decides, without I/O,
//! which messages wait:
//!
//! - a sibling is earlier when its place says so: exactly ([`OrderKey`]) when the
//!   read returned it, else by the UUIDv7 that ends the library's sort keys;
//! - a sibling whose place cannot be known, or a read that failed or stopped at its
//!   bound, fences (conservative);
//! - a message that waits holds back the later messages of its aggregate in the
//!   batch, whatever their destination.
//!
//! No deadlock: between two library messages the UUIDv7 order is total, a partition
//! read gives exact places, and messages claimed together are published in the
//! sweep's own order, so the earliest pending message of an aggregate is never
//! fenced (docs/protocol.md, "What the model found").

use super::order::{OrderKey, order_key};
use crate::schema::{ItemKey, OutboxMessage, derive_message_id, sweep_shard};
use std::collections::{BTreeMap, BTreeSet};

/// The UUIDv7 that ends a sort key written by the library (`MESSAGE#<EVENT>#<id>`):
/// where the message stands among its aggregate's, as far as its key tells.
pub fn key_position(key: &ItemKey) -> Option<uuid::Uuid> {
    let last = key.sk.rsplit('#').next()?;
    uuid::Uuid::try_parse(last)
        .ok()
        .filter(|id| id.get_version_num() == 7)
}

/// A message a publish is about to send, as the fence sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its key.
    pub key: ItemKey,
    /// Its place ([`order_key`]).
    pub order: OrderKey,
    /// Routed to a FIFO destination: only these are fenced by what the reads find.
    pub fifo: bool,
    /// Written by this library (a `CreatedAt`, a sort key ending in a UUIDv7, the
    /// index attributes): its aggregate's pending messages are in the sweeper index.
    /// Another producer's aggregate may hold pending messages outside the index (a
    /// discarded record not yet recovered), so its partition is read instead.
    pub library: bool,
}

impl Member {
    /// The member a decoded message makes.
    pub fn of(msg: &OutboxMessage, fifo: bool) -> Self {
        Member {
            order: order_key(&msg.key, msg.created_at, &msg.message_id),
            library: msg.created_at > 0 && key_position(&msg.key).is_some() && msg.indexed(),
            key: msg.key.clone(),
            fifo,
        }
    }
}

/// Where the fence reads pending messages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Sweeper index shards: every pending item in them, whatever its due time (keys
    /// and due times only), read together.
    Shards(BTreeSet<String>),
    /// An aggregate's partition of the table: its pending outbox items, with their
    /// `CreatedAt` and `MessageId` (a consistent read).
    Partition(String),
}

/// One read the fence makes, and the aggregates it answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceRead {
    /// Where.
    pub scope: Scope,
    /// For which aggregates (a shard holds others too).
    pub aggregates: BTreeSet<String>,
}

/// The reads `members` need: one of the index shards holding FIFO-routed aggregates
/// of the library (the adapter reads them in one request), one per partition of a
/// FIFO-routed aggregate of another producer; none at all when no member is routed
/// to a FIFO destination.
pub fn fence_reads(members: &[Member]) -> Vec<FenceRead> {
    let mut library: BTreeMap<&str, bool> = BTreeMap::new();
    for m in members {
        *library.entry(m.key.pk.as_str()).or_insert(true) &= m.library;
    }
    let fifo: BTreeSet<&str> = members
        .iter()
        .filter(|m| m.fifo)
        .map(|m| m.key.pk.as_str())
        .collect();
    let (mut shards, mut indexed) = (BTreeSet::new(), BTreeSet::new());
    let mut reads = Vec::new();
    for aggregate in fifo {
        if library.get(aggregate).copied().unwrap_or(false) {
            shards.insert(sweep_shard(aggregate));
            indexed.insert(aggregate.to_owned());
        } else {
            reads.push(FenceRead {
                scope: Scope::Partition(aggregate.to_owned()),
                aggregates: BTreeSet::from([aggregate.to_owned()]),
            });
        }
    }
    if !shards.is_empty() {
        reads.insert(
            0,
            FenceRead {
                scope: Scope::Shards(shards),
                aggregates: indexed,
            },
        );
    }
    reads
}

/// A pending message a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sibling {
    /// Its key.
    pub key: ItemKey,
    /// Its `SweepDueAt` (fractions truncated), when it is in the index.
    pub due_at_ms: Option<i64>,
    /// Its exact place, when the read returned its `CreatedAt` and `MessageId` (a
    /// partition read); `None` from the index, which holds keys only.
    pub order: Option<OrderKey>,
}

impl Sibling {
    /// A sibling read from the index: keys and due time.
    pub fn indexed(key: ItemKey, due_at_ms: i64) -> Self {
        Sibling {
            key,
            due_at_ms: Some(due_at_ms),
            order: None,
        }
    }

    /// A sibling read from the table: its place from `CreatedAt` and `MessageId` as
    /// the sweep orders it (a missing id is derived from the key, as decoding does).
    pub fn read(
        key: ItemKey,
        due_at_ms: Option<i64>,
        created_at: Option<i64>,
        message_id: Option<&str>,
    ) -> Self {
        let id = match message_id {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => derive_message_id(&key),
        };
        Sibling {
            order: Some(order_key(&key, created_at.unwrap_or(0), &id)),
            key,
            due_at_ms,
        }
    }

    /// Whether this sibling is (or may be) earlier than `m`.
    fn before(&self, m: &Member) -> bool {
        match (&self.order, key_position(&self.key), key_position(&m.key)) {
            (Some(order), _, _) => *order < m.order,
            (None, Some(sibling), Some(member)) => sibling < member,
            // Its place cannot be known: it fences.
            _ => true,
        }
    }
}

/// What the reads found, per aggregate: its pending messages, or nothing known when
/// a read failed or stopped at its bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    by_aggregate: BTreeMap<String, Option<Vec<Sibling>>>,
}

impl Pending {
    /// Records what `read` found; `complete` is false when it stopped at its bound.
    pub fn found(&mut self, read: &FenceRead, siblings: Vec<Sibling>, complete: bool) {
        for aggregate in &read.aggregates {
            let mine = complete.then(|| {
                siblings
                    .iter()
                    .filter(|s| &s.key.pk == aggregate)
                    .cloned()
                    .collect()
            });
            self.by_aggregate.insert(aggregate.clone(), mine);
        }
    }

    /// Records that `read` failed: its aggregates' pending messages are unknown.
    pub fn failed(&mut self, read: &FenceRead) {
        for aggregate in &read.aggregates {
            self.by_aggregate.insert(aggregate.clone(), None);
        }
    }

    /// The pending messages of `aggregate`, when known.
    pub fn of(&self, aggregate: &str) -> Option<&[Sibling]> {
        self.by_aggregate.get(aggregate)?.as_deref()
    }
}

/// Why a message waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The latest due time of the pending messages it waits behind, when known: the
    /// sweeper does not make it due before.
    pub not_before: Option<i64>,
}

/// For each member, whether it waits (and behind what): a FIFO-routed member that a
/// pending sibling outside the batch precedes (or may precede), and every later
/// member of an aggregate with one that waits. Members of an aggregate with no
/// FIFO-routed member never wait: standard destinations keep no order.
pub fn fenced(members: &[Member], pending: &Pending) -> Vec<Option<Fence>> {
    let in_batch: BTreeSet<&ItemKey> = members.iter().map(|m| &m.key).collect();
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&members[a], &members[b]);
        (&a.key.pk, &a.order).cmp(&(&b.key.pk, &b.order))
    });
    let mut out = vec![None; members.len()];
    let mut waiting: Option<(&str, Fence)> = None;
    for i in order {
        let m = &members[i];
        let behind = waiting.filter(|(aggregate, _)| *aggregate == m.key.pk);
        let own = if m.fifo {
            fence_of(m, pending.of(&m.key.pk), &in_batch)
        } else {
            None
        };
        let fence = match (behind.map(|(_, f)| f), own) {
            (Some(a), Some(b)) => Some(Fence {
                not_before: a.not_before.max(b.not_before),
            }),
            (a, b) => a.or(b),
        };
        if let Some(f) = fence {
            waiting = Some((m.key.pk.as_str(), f));
        }
        out[i] = fence;
    }
    out
}

/// The fence of one FIFO-routed member given its aggregate's pending messages
/// (`None`: unknown).
fn fence_of(
    m: &Member,
    siblings: Option<&[Sibling]>,
    in_batch: &BTreeSet<&ItemKey>,
) -> Option<Fence> {
    let Some(siblings) = siblings else {
        return Some(Fence { not_before: None });
    };
    let mut fence: Option<Fence> = None;
    for s in siblings {
        if in_batch.contains(&s.key) || !s.before(m) {
            continue;
        }
        let not_before = fence.and_then(|f| f.not_before).max(s.due_at_ms);
        fence = Some(Fence { not_before });
    }
    fence
}

#[cfg(test)]
mod tests;
