//! The reads the fence makes for a batch's members, planned without I/O: what each
//! reads ([`Scope`]), for which aggregates, and how many pages each may take.

use super::Member;
use crate::schema::is_sequenced;
use std::collections::{BTreeMap, BTreeSet};

/// Where the fence reads pending messages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Sweeper index shards: every pending item in them, whatever its due time (keys
    /// and due times only), read together.
    Shards(BTreeSet<String>),
    /// An aggregate's partition of the table: its pending outbox items, with their
    /// `CreatedAt` and `MessageId` (a consistent read).
    Partition(String),
    /// A sequenced aggregate's outbox items by sort key, strongly consistently and
    /// newest first: from `highest` (the sort key of its last member in the batch)
    /// down to the first item below `lowest` (its first member's), never further.
    /// Every message between its members, and the one just before them: by
    /// induction, a message is sent only once the one before it is finished, so when
    /// that one is finished every earlier one is too. Its pending items are returned.
    Sequence {
        /// The aggregate.
        aggregate: String,
        /// Its first member's sort key.
        lowest: String,
        /// Its last member's sort key.
        highest: String,
        /// How many members it has in the batch: the read asks for one more item
        /// than that first (usually all it needs; a DynamoDB read is billed for the
        /// whole items it reads).
        members: usize,
    },
}

/// One read the fence makes, and the aggregates it answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceRead {
    /// Where.
    pub scope: Scope,
    /// For which aggregates (a shard holds others too).
    pub aggregates: BTreeSet<String>,
}

/// The reads `members` need: one bounded read of the key range of each aggregate
/// with a sequenced member ([`Scope::Sequence`], over its sequenced members, whatever
/// their routes: the induction it rests on needs every sequenced message fenced);
/// and, for the FIFO-routed members without a sequence, one read of the index shards
/// holding the library's aggregates (the adapter reads them in one request) and one
/// per partition of another producer's aggregate. None at all when no member is
/// routed to a FIFO destination or sequenced.
pub fn fence_reads(members: &[Member]) -> Vec<FenceRead> {
    let mut reads = sequence_reads(members);
    let unsequenced = members.iter().filter(|m| !is_sequenced(&m.key));
    let fifo: BTreeSet<&str> = members
        .iter()
        .filter(|m| m.fifo && !is_sequenced(&m.key))
        .map(|m| m.key.pk.as_str())
        .collect();
    for read in outside_sequence_reads(unsequenced, &fifo) {
        // The index read first: it answers for most aggregates.
        if matches!(read.scope, Scope::Shards(_)) {
            reads.insert(0, read);
        } else {
            reads.push(read);
        }
    }
    reads
}

/// The reads an aggregate's first sequenced message needs besides its own
/// ([`Scope::Sequence`]), for each of `aggregates` whose sequence read found no outbox
/// item below its members (`PendingPage::no_earlier_sequence`): its messages written
/// without a sequence, which sort apart from the sequenced range and may still be
/// pending — read from its partition, strongly consistently (the index may not list
/// them yet: a first sequenced message in a concurrent batch would overtake one
/// written just before it). Without it the first message given a sequence would go
/// before a message of its aggregate still pending from before its producer began
/// to give them (model: `sequence::a_first_sequenced_message_waits_for_a_pending_one_without_a_sequence`).
/// Rare: only an aggregate's first sequenced message, or the first after the earlier
/// ones expired, takes it; its cost grows with the partition, as a minimal
/// producer's fence does.
pub fn switch_over_reads(aggregates: &BTreeSet<String>) -> Vec<FenceRead> {
    aggregates
        .iter()
        .map(|aggregate| FenceRead {
            scope: Scope::Partition(aggregate.clone()),
            aggregates: BTreeSet::from([aggregate.clone()]),
        })
        .collect()
}

/// What to read instead when `read` stopped at its page bound (finding 4): the
/// other side of the same question. Index shards holding more pending keys than the
/// read may take (a backlog) — each aggregate's partition, strongly consistently;
/// a partition larger than its read (a long history, business items) — the index
/// shard of its aggregate, as a library message's fence reads it. The fence then
/// cannot tell only when both are too large. A sequence read has no other side.
pub fn fallback_reads(members: &[Member], read: &FenceRead) -> Vec<FenceRead> {
    match &read.scope {
        Scope::Shards(_) => switch_over_reads(&read.aggregates),
        Scope::Partition(aggregate) => {
            let shards: BTreeSet<String> = members
                .iter()
                .filter(|m| &m.key.pk == aggregate)
                .flat_map(|m| m.shards.iter().cloned())
                .collect();
            if shards.is_empty() {
                return Vec::new();
            }
            vec![FenceRead {
                scope: Scope::Shards(shards),
                aggregates: read.aggregates.clone(),
            }]
        }
        Scope::Sequence { .. } => Vec::new(),
    }
}

/// For the aggregates in `fifo`, the reads of their pending messages outside a
/// sequenced range, planned from `members`: one read of the index shards holding the
/// library's aggregates (the adapter reads them in one request), one per partition of
/// another producer's aggregate (its pending messages may be outside the index).
fn outside_sequence_reads<'a>(
    members: impl Iterator<Item = &'a Member>,
    fifo: &BTreeSet<&str>,
) -> Vec<FenceRead> {
    let mut library: BTreeMap<&str, bool> = BTreeMap::new();
    let mut shards_of: BTreeMap<&str, &[String]> = BTreeMap::new();
    for m in members {
        *library.entry(m.key.pk.as_str()).or_insert(true) &= m.library;
        shards_of.insert(m.key.pk.as_str(), &m.shards);
    }
    let mut reads = Vec::new();
    let (mut shards, mut indexed) = (BTreeSet::new(), BTreeSet::new());
    for &aggregate in fifo {
        if library.get(aggregate).copied().unwrap_or(false) {
            let of = shards_of.get(aggregate).copied().unwrap_or_default();
            shards.extend(of.iter().cloned());
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

/// One [`Scope::Sequence`] read per aggregate with sequenced members: from the last
/// of them down to the first item below the first.
fn sequence_reads(members: &[Member]) -> Vec<FenceRead> {
    let mut ranges: BTreeMap<&str, (&str, &str, usize)> = BTreeMap::new();
    for m in members.iter().filter(|m| is_sequenced(&m.key)) {
        let sk = m.key.sk.as_str();
        let range = ranges.entry(m.key.pk.as_str()).or_insert((sk, sk, 0));
        *range = (range.0.min(sk), range.1.max(sk), range.2 + 1);
    }
    ranges
        .into_iter()
        .map(|(aggregate, (lowest, highest, members))| FenceRead {
            scope: Scope::Sequence {
                aggregate: aggregate.to_owned(),
                lowest: lowest.to_owned(),
                highest: highest.to_owned(),
                members,
            },
            aggregates: BTreeSet::from([aggregate.to_owned()]),
        })
        .collect()
}

/// Pages (1 MB each at most) the fence's reads of one batch may take together.
pub const FENCE_BATCH_PAGES: u32 = 16;

/// How many pages each of `reads` may take: `total` shared out evenly, at least one
/// each — so a batch reads at most `total` pages, or one per read when it has more
/// reads than that.
pub fn page_budgets(reads: &[FenceRead], total: u32) -> Vec<u32> {
    let n = u32::try_from(reads.len()).unwrap_or(u32::MAX).max(1);
    let (share, extra) = (total / n, total % n);
    (0..reads.len())
        .map(|i| {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            (share + u32::from(i < extra)).max(1)
        })
        .collect()
}

