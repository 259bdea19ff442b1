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
//! - a sibling whose place cannot be known fences (conservative);
//! - a read that failed or stopped at its bound cannot tell: a message it found no
//!   earlier pending sibling for is held too (never sent out of order), but marked
//!   [`Fence::cannot_tell`] — it may be its aggregate's earliest, so the sweeper
//!   charges it an attempt instead of giving it back, and a read that never succeeds
//!   ends it `FAILED` with the reason ([`Pending::why_unread`]) instead of parking it;
//! - siblings the index lists (eventually consistent: it may still list a message
//!   just marked `SENT`) are confirmed by a consistent status read before they fence
//!   ([`confirm`]);
//! - a message that waits holds back the later messages of its aggregate in the
//!   batch, whatever their destination.
//!
//! No deadlock: between two library messages the UUIDv7 order is total, a partition
//! read gives exact places, and messages claimed together are published in the
//! sweep's own order, so the earliest pending message of an aggregate is never
//! fenced (docs/protocol.md, "What the model found").

use super::order::{OrderKey, order_key};
use crate::schema::{
    ItemKey, OutboxMessage, PENDING_MESSAGE, SequencePlace, Status, SweepShards,
    derive_message_id, is_sequenced,
    sequence_place,
};
use std::collections::{BTreeMap, BTreeSet};

/// Where a message stands among its aggregate's, as far as its sort key tells: by
/// its sequence when the key is sequenced ([`sequence_place`]), else by the UUIDv7
/// that ends the library's keys. A key without a sequence comes before every
/// sequenced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyPlace {
    sequence: Option<SequencePlace>,
    id: Option<uuid::Uuid>,
}

/// The [`KeyPlace`] of `key`: its sequence, or the UUIDv7 that ends a sort key
/// written by the library (`MESSAGE#<EVENT>#<id>`); `None` when it has neither.
pub fn key_position(key: &ItemKey) -> Option<KeyPlace> {
    let id = key
        .sk
        .rsplit('#')
        .next()
        .and_then(|last| uuid::Uuid::try_parse(last).ok())
        .filter(|id| id.get_version_num() == 7);
    let sequence = sequence_place(&key.sk);
    (sequence.is_some() || id.is_some()).then_some(KeyPlace { sequence, id })
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
    /// The sweeper index shards its aggregate's pending messages may be in (two while
    /// the shard count changes, [`SweepShards::shards_of`]); what a library
    /// aggregate's fence reads.
    pub shards: Vec<String>,
    /// The message written before it in the same transaction, of its aggregate
    /// (`Follows`): asked by key, consistently ([`predecessors`]), since the index may not
    /// list it yet and AWS delivers one transaction's records in any order.
    pub follows: Option<ItemKey>,
}

impl Member {
    /// The member a decoded message makes, in a table of `layout`.
    pub fn of(msg: &OutboxMessage, fifo: bool, layout: &SweepShards) -> Self {
        Member {
            order: order_key(&msg.key, msg.created_at, &msg.message_id),
            library: msg.created_at > 0
                && key_position(&msg.key).is_some()
                && msg.indexed(layout),
            shards: layout.shards_of(&msg.key.pk),
            key: msg.key.clone(),
            follows: msg.follows.clone(),
            fifo,
        }
    }
}

/// Whether an item a [`Scope::Sequence`] read returns holds back the messages after
/// it: an outbox item whose `Status` is exactly `PENDING` (in whatever region). An
/// item of a status that does not read is never sent by anyone (every mark requires
/// `PENDING`): holding behind it would hold its aggregate forever, so it does not.
pub fn holds_in_sequence(item_type: Option<&str>, status: Option<&str>) -> bool {
    item_type == Some(PENDING_MESSAGE) && status.and_then(Status::parse) == Some(Status::Pending)
}

/// The `LastError` of a message held because the fence could not tell (`why`: the
/// store's error, or the bound it stopped at). Its attempt counts.
pub fn cannot_tell_reason(why: &str) -> String {
    format!(
        "not sent: the order fence could not read the pending messages of the aggregate ({why}), so it cannot tell whether an earlier one is still pending; the attempt counts"
    )
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
    by_aggregate: BTreeMap<String, Found>,
}

/// What the reads found for one aggregate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Found {
    /// The pending messages read (all of them when `unread` is `None`).
    siblings: Vec<Sibling>,
    /// Why the read is incomplete (it failed, or stopped at its bound), if it is.
    unread: Option<String>,
    /// Whether the siblings come from the index (eventually consistent: they may be
    /// finished by now, see [`to_confirm`]) rather than a consistent partition read.
    from_index: bool,
}

/// Why a read that stopped at its bound could not tell.
pub const READ_BOUNDED: &str = "more pending messages than the fence reads in one batch";

/// Why a read that failed could not tell, when the caller gives no reason.
pub const READ_FAILED: &str = "the read failed";

impl Pending {
    /// Records what `read` found; `complete` is false when it stopped at its bound.
    pub fn found(&mut self, read: &FenceRead, siblings: Vec<Sibling>, complete: bool) {
        let unread = (!complete).then(|| READ_BOUNDED.to_owned());
        self.record(read, siblings, unread);
    }

    /// Records what `read` found before it stopped, and why it stopped (its bound,
    /// with the numbers): what it found still fences; what it did not read cannot tell.
    pub fn stopped(&mut self, read: &FenceRead, siblings: Vec<Sibling>, why: String) {
        self.record(read, siblings, Some(why));
    }

    /// Records that `read` failed: its aggregates' pending messages are unknown.
    pub fn failed(&mut self, read: &FenceRead) {
        self.failed_because(read, READ_FAILED.to_owned());
    }

    /// Records that `read` failed, and why (the store's error).
    pub fn failed_because(&mut self, read: &FenceRead, why: String) {
        self.record(read, Vec::new(), Some(why));
    }

    /// Adds what `read` found to what its aggregates' other reads found (an aggregate
    /// with sequenced and other members has two): a read that could not tell makes the
    /// aggregate's answer incomplete.
    fn record(&mut self, read: &FenceRead, siblings: Vec<Sibling>, unread: Option<String>) {
        let from_index = matches!(read.scope, Scope::Shards(_));
        for aggregate in &read.aggregates {
            let found = self.by_aggregate.entry(aggregate.clone()).or_default();
            found.siblings.extend(
                siblings
                    .iter()
                    .filter(|s| &s.key.pk == aggregate)
                    .cloned(),
            );
            if found.unread.is_none() {
                found.unread.clone_from(&unread);
            }
            found.from_index |= from_index;
        }
    }

    /// The pending messages of `aggregate`, when all are known.
    pub fn of(&self, aggregate: &str) -> Option<&[Sibling]> {
        let found = self.by_aggregate.get(aggregate)?;
        found.unread.is_none().then_some(found.siblings.as_slice())
    }

    /// Why the fence cannot tell for `aggregate`: its read failed or stopped at its
    /// bound (or nobody read it); `None` when everything pending was read.
    pub fn why_unread(&self, aggregate: &str) -> Option<&str> {
        match self.by_aggregate.get(aggregate) {
            None => Some("its pending messages were not read"),
            Some(found) => found.unread.as_deref(),
        }
    }
}

/// Why a message waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The latest due time of the pending messages it waits behind, when known: the
    /// sweeper does not make it due before.
    pub not_before: Option<i64>,
    /// The fence could not tell: no earlier pending message is known, but its
    /// aggregate's read failed or stopped at its bound ([`Pending::why_unread`]). It
    /// is held all the same (never sent out of order), yet it may be its aggregate's
    /// earliest, so its attempt counts: a read that keeps failing ends it `FAILED`.
    pub cannot_tell: bool,
}

impl Fence {
    /// Behind a known earlier pending message, due at `not_before` when known.
    pub fn behind(not_before: Option<i64>) -> Self {
        Fence {
            not_before,
            cannot_tell: false,
        }
    }

    /// Held because the fence could not tell.
    pub const CANNOT_TELL: Fence = Fence {
        not_before: None,
        cannot_tell: true,
    };
}

/// For each member, whether it waits (and behind what): a FIFO-routed member that a
/// pending sibling outside the batch precedes (or may precede), and every later
/// member of an aggregate with one that waits (behind it: a known pending message).
/// Members of an aggregate with no FIFO-routed or sequenced member never wait:
/// standard destinations keep no order (a sequenced message is kept in order on every
/// route, so that the one after it may trust its state). A FIFO-routed member that no known sibling precedes,
/// of an aggregate whose read is incomplete, waits with [`Fence::cannot_tell`].
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
        // A sequenced message is fenced on any route: the next one's read stops at it.
        let own = if m.fifo || is_sequenced(&m.key) {
            fence_of(m, pending, &in_batch)
        } else {
            None
        };
        let fence = match (behind.map(|(_, f)| f), own) {
            // Behind a member of the batch that waits: a pending message, known.
            (Some(a), Some(b)) if !b.cannot_tell => {
                Some(Fence::behind(a.not_before.max(b.not_before)))
            }
            (Some(a), _) => Some(Fence::behind(a.not_before)),
            (None, b) => b,
        };
        if let Some(f) = fence {
            waiting = Some((m.key.pk.as_str(), f));
        }
        out[i] = fence;
    }
    out
}

/// The fence of one FIFO-routed member: behind the earlier pending siblings read,
/// or, when none is known and the read is incomplete, [`Fence::CANNOT_TELL`].
fn fence_of(m: &Member, pending: &Pending, in_batch: &BTreeSet<&ItemKey>) -> Option<Fence> {
    let Some(found) = pending.by_aggregate.get(&m.key.pk) else {
        return Some(Fence::CANNOT_TELL);
    };
    let mut fence: Option<Fence> = None;
    for s in fencing(m, &found.siblings, in_batch) {
        let not_before = fence.and_then(|f| f.not_before).max(s.due_at_ms);
        fence = Some(Fence::behind(not_before));
    }
    match (fence, &found.unread) {
        (None, Some(_)) => Some(Fence::CANNOT_TELL),
        (fence, _) => fence,
    }
}

/// The siblings that hold `m` back: earlier (or of unknown place), outside the batch.
fn fencing<'a>(
    m: &'a Member,
    siblings: &'a [Sibling],
    in_batch: &'a BTreeSet<&ItemKey>,
) -> impl Iterator<Item = &'a Sibling> + 'a {
    siblings
        .iter()
        .filter(move |s| !in_batch.contains(&s.key) && s.before(m))
}

mod confirm;
mod follows;
mod reads;
pub use confirm::{CONFIRM_LIMIT, to_confirm};
pub use follows::predecessors;
pub use reads::{
    FENCE_BATCH_PAGES, FenceRead, Scope, fallback_reads, fence_reads, page_budgets,
    switch_over_reads,
};

#[cfg(test)]
mod tests;
