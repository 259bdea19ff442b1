use super::*;
use crate::policy::{AttemptVerdict, judge_attempt};
use crate::outcome::Outcome;

/// A library sort key: its UUIDv7 made at `ms`, `n` telling apart two of one
/// millisecond.
pub(super) fn library_key(pk: &str, ms: u64, n: u8) -> ItemKey {
    let id = uuid::Builder::from_unix_timestamp_millis(ms, &[n; 10]).into_uuid();
    ItemKey {
        pk: pk.into(),
        sk: format!("MESSAGE#EVENT#{id}"),
    }
}

pub(super) fn library(pk: &str, ms: u64, n: u8, fifo: bool) -> Member {
    let key = library_key(pk, ms, n);
    let id = key.sk.rsplit('#').next().unwrap_or_default().to_owned();
    Member {
        follows: None,
        order: order_key(&key, i64::try_from(ms).unwrap_or(0), &id),
        key,
        fifo,
        library: true,
        shards: crate::schema::SweepShards::default().shards_of(pk),
    }
}

fn minimal(pk: &str, sk: &str) -> Member {
    let key = ItemKey {
        pk: pk.into(),
        sk: sk.into(),
    };
    Member {
        follows: None,
        order: order_key(&key, 0, &derive_message_id(&key)),
        key,
        fifo: true,
        library: false,
        shards: Vec::new(),
    }
}

fn pending(reads: &[FenceRead], siblings: &[Sibling]) -> Pending {
    let mut p = Pending::default();
    for r in reads {
        p.found(r, siblings.to_vec(), true);
    }
    p
}

fn waits(fences: &[Option<Fence>]) -> Vec<bool> {
    fences.iter().map(Option::is_some).collect()
}

#[test]
fn only_the_librarys_uuid7_sort_keys_give_a_position() {
    assert!(key_position(&library_key("A", 1_700_000_000_000, 1)).is_some());
    let other = |sk: &str| ItemKey {
        pk: "A".into(),
        sk: sk.into(),
    };
    assert_eq!(key_position(&other("MESSAGE#X#1")), None);
    assert_eq!(
        key_position(&other(&format!("MESSAGE#X#{}", uuid::Uuid::from_u128(7)))),
        None,
        "not a version 7"
    );
    let (early, late) = (library_key("A", 5, 9), library_key("A", 6, 0));
    assert!(key_position(&early) < key_position(&late));
}

#[test]
fn only_fifo_routed_aggregates_are_read_in_one_read_of_their_shards_or_by_partition() {
    let standard = [library("A", 1, 0, false), library("B", 1, 0, false)];
    assert!(
        fence_reads(&standard).is_empty(),
        "standard routes cost nothing"
    );
    let mixed = [
        library("A", 1, 0, true),
        library("A", 2, 0, false),
        library("B", 1, 0, false),
        minimal("C", "MESSAGE#X#1"),
    ];
    let reads = fence_reads(&mixed);
    assert_eq!(
        reads,
        vec![
            FenceRead {
                scope: Scope::Shards(BTreeSet::from([crate::schema::SweepShards::default().shard_of("A")])),
                aggregates: BTreeSet::from(["A".to_owned()]),
            },
            FenceRead {
                scope: Scope::Partition("C".into()),
                aggregates: BTreeSet::from(["C".to_owned()]),
            },
        ]
    );
    // Two aggregates of one shard share its query.
    let pks: Vec<String> = (0..64).map(|i| format!("ACC#{i}")).collect();
    let same = pks
        .iter()
        .filter(|p| crate::schema::SweepShards::default().shard_of(p) == crate::schema::SweepShards::default().shard_of(&pks[0]))
        .take(2)
        .map(|p| library(p, 1, 0, true))
        .collect::<Vec<_>>();
    assert_eq!(same.len(), 2);
    assert_eq!(fence_reads(&same).len(), 1);
    // And every library aggregate of the batch, whatever its shard, shares one read
    // of all their shards: one request per batch, not one per shard.
    let spread: Vec<Member> = pks.iter().map(|p| library(p, 1, 0, true)).collect();
    let shards: BTreeSet<String> = pks.iter().map(|p| crate::schema::SweepShards::default().shard_of(p)).collect();
    assert!(shards.len() > 8, "the keys spread over the shards");
    assert_eq!(
        fence_reads(&spread),
        vec![FenceRead {
            scope: Scope::Shards(shards),
            aggregates: pks.iter().cloned().collect(),
        }]
    );
}

#[test]
fn an_earlier_pending_sibling_outside_the_batch_holds_back_a_fifo_message() {
    let batch = [library("A", 20, 0, true), library("B", 20, 0, true)];
    let reads = fence_reads(&batch);
    let earlier = Sibling::indexed(library_key("A", 10, 0), 500);
    let later = Sibling::indexed(library_key("B", 30, 0), 600);
    let own = Sibling::indexed(batch[1].key.clone(), 700);
    let fences = fenced(&batch, &pending(&reads, &[earlier, later, own]));
    assert_eq!(
        fences,
        vec![
            Some(Fence::behind(Some(500))),
            None
        ]
    );
}

#[test]
fn standard_routes_are_never_held_back_by_what_is_pending() {
    let batch = [library("A", 20, 0, false)];
    let earlier = Sibling::indexed(library_key("A", 10, 0), 500);
    let fences = fenced(&batch, &pending(&fence_reads(&batch), &[earlier]));
    assert_eq!(waits(&fences), [false]);
}

#[test]
fn a_waiting_message_holds_back_the_later_ones_of_its_aggregate_in_the_batch() {
    // A1 < (A2 pending elsewhere, due 900) < A3 < A4 (standard queue); A0 goes first.
    let batch = [
        library("A", 40, 0, false),
        library("A", 30, 0, true),
        library("A", 10, 0, true),
    ];
    let gap = Sibling::indexed(library_key("A", 20, 0), 900);
    let fences = fenced(&batch, &pending(&fence_reads(&batch), &[gap]));
    let f = Some(Fence::behind(Some(900)));
    assert_eq!(fences, vec![f, f, None]);
}

#[test]
fn what_cannot_be_known_fences() {
    let batch = [library("A", 20, 0, true)];
    let reads = fence_reads(&batch);
    // A sibling whose sort key gives no position.
    let foreign = Sibling::indexed(
        ItemKey {
            pk: "A".into(),
            sk: "MESSAGE#X#1".into(),
        },
        5,
    );
    assert_eq!(waits(&fenced(&batch, &pending(&reads, &[foreign]))), [true]);
    // A read that failed, or stopped at its bound.
    let mut failed = Pending::default();
    failed.failed(&reads[0]);
    assert_eq!(fenced(&batch, &failed), vec![Some(Fence::CANNOT_TELL)]);
    let mut bounded = Pending::default();
    bounded.found(&reads[0], Vec::new(), false);
    assert_eq!(waits(&fenced(&batch, &bounded)), [true]);
    // An aggregate nobody read.
    assert_eq!(waits(&fenced(&batch, &Pending::default())), [true]);
}

#[test]
fn a_partition_read_orders_other_producers_messages_exactly() {
    // A minimal producer's messages: no CreatedAt, ordered by sort key.
    let batch = [minimal("M", "MESSAGE#X#2")];
    let reads = fence_reads(&batch);
    assert_eq!(reads[0].scope, Scope::Partition("M".into()));
    let key = |sk: &str| ItemKey {
        pk: "M".into(),
        sk: sk.into(),
    };
    let earlier = Sibling::read(key("MESSAGE#X#1"), None, None, None);
    let later = Sibling::read(key("MESSAGE#X#3"), Some(7), None, None);
    assert_eq!(
        fenced(&batch, &pending(&reads, std::slice::from_ref(&later))),
        vec![None]
    );
    assert_eq!(
        fenced(&batch, &pending(&reads, &[earlier, later])),
        vec![Some(Fence::behind(None))]
    );
    // A library message read from the partition comes after every one without
    // CreatedAt, as the sweep orders them.
    let lib = library_key("M", 3, 0);
    let id = lib.sk.rsplit('#').next().map(str::to_owned);
    let after = Sibling::read(lib, Some(1), Some(3), id.as_deref());
    assert_eq!(fenced(&batch, &pending(&reads, &[after])), vec![None]);
}

/// Every pending message of an aggregate, each published alone with all the others
/// pending and read as its scope reads them: the fence relation has no cycle and the
/// earliest message (in the sweep's order) is never held back, so an aggregate always
/// makes progress.
#[test]
fn the_fence_never_holds_back_the_earliest_pending_message_and_has_no_cycle() {
    let all = [
        minimal("A", "MESSAGE#X#a"),
        minimal("A", "MESSAGE#X#b"),
        library("A", 10, 1, true),
        library("A", 10, 2, true),
        library("A", 11, 0, true),
    ];
    // As the reads would return each: exactly from the partition, keys from the index.
    let as_read = |m: &Member, exact: bool| {
        if !exact {
            return Sibling::indexed(m.key.clone(), 1);
        }
        let id = m.key.sk.rsplit('#').next().unwrap_or_default();
        let created = uuid::Uuid::try_parse(id)
            .ok()
            .and_then(|u| u.get_timestamp())
            .map(|t| {
                let (secs, nanos) = t.to_unix();
                i64::try_from(secs * 1000 + u64::from(nanos) / 1_000_000).unwrap_or(0)
            });
        match created {
            Some(ms) => Sibling::read(m.key.clone(), Some(1), Some(ms), Some(id)),
            None => Sibling::read(m.key.clone(), Some(1), None, None),
        }
    };
    let mut holds = vec![vec![false; all.len()]; all.len()];
    for (i, m) in all.iter().enumerate() {
        let batch = [m.clone()];
        let reads = fence_reads(&batch);
        let exact = matches!(reads[0].scope, Scope::Partition(_));
        let others: Vec<Sibling> = all
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, o)| as_read(o, exact))
            .collect();
        let fence = fenced(&batch, &pending(&reads, &others))[0];
        for (j, o) in all.iter().enumerate() {
            if j != i && fence.is_some() {
                let alone = fenced(&batch, &pending(&reads, &[as_read(o, exact)]))[0];
                holds[i][j] = alone.is_some();
            }
        }
    }
    let earliest = (0..all.len())
        .min_by(|&a, &b| all[a].order.cmp(&all[b].order))
        .unwrap_or(0);
    assert!(!holds[earliest].iter().any(|h| *h), "{holds:?}");
    for (i, row) in holds.iter().enumerate() {
        for (j, held) in row.iter().enumerate() {
            assert!(!(*held && holds[j][i]), "{i} and {j} wait for each other");
        }
    }
}

#[test]
fn a_read_that_cannot_tell_holds_the_earliest_charged_and_the_later_ones_behind_it() {
    // Before, a failed read fenced every member alike and the sweeper gave each its
    // attempt back: the earliest message of the aggregate was parked forever.
    let batch = [
        library("A", 20, 0, true),
        library("A", 30, 0, true),
        library("B", 20, 0, true),
    ];
    let reads = fence_reads(&batch);
    let denied = "AccessDeniedException: not authorized to perform dynamodb:PartiQLSelect";
    let mut p = Pending::default();
    p.failed_because(&reads[0], denied.to_owned());
    assert_eq!(
        fenced(&batch, &p),
        vec![
            Some(Fence::CANNOT_TELL),
            Some(Fence::behind(None)),
            Some(Fence::CANNOT_TELL)
        ],
        "A2 waits behind A1, which is pending: that is known"
    );
    assert_eq!(p.why_unread("A"), Some(denied));
    // The sweeper charges the one that cannot tell, with the truth in LastError, and
    // gives the attempt back to one behind a known pending message.
    let charged = judge_attempt(&Outcome::OrderUnknown {
        reason: cannot_tell_reason(denied),
    });
    let AttemptVerdict::Reschedule { reason, attempted } = charged else {
        panic!("{charged:?}");
    };
    assert!(attempted, "its attempt counts");
    assert!(
        reason.contains("order fence could not read the pending messages")
            && reason.contains("dynamodb:PartiQLSelect")
            && !reason.contains("an earlier message of the same aggregate is still pending"),
        "{reason}"
    );
    let behind = judge_attempt(&Outcome::Deferred { not_before: None });
    assert!(matches!(
        behind,
        AttemptVerdict::Reschedule {
            attempted: false,
            ..
        }
    ));
}

#[test]
fn a_read_stopped_at_its_bound_still_fences_on_what_it_found() {
    let batch = [library("A", 20, 0, true), library("B", 20, 0, true)];
    let reads = fence_reads(&batch);
    let earlier = Sibling::indexed(library_key("A", 10, 0), 500);
    let later = Sibling::indexed(library_key("B", 30, 0), 600);
    let mut p = Pending::default();
    p.found(&reads[0], vec![earlier, later], false);
    // A is behind a pending message the read found: known, its attempt given back.
    // B found only a later one: what was not read may hold an earlier one.
    assert_eq!(
        fenced(&batch, &p),
        vec![Some(Fence::behind(Some(500))), Some(Fence::CANNOT_TELL)]
    );
    assert_eq!(p.why_unread("B"), Some(READ_BOUNDED));
    let mut read_all = Pending::default();
    read_all.found(&reads[0], Vec::new(), true);
    assert_eq!(read_all.why_unread("B"), None);
    assert!(Pending::default().why_unread("B").is_some(), "nobody read it");
}

#[test]
fn a_batch_shares_one_page_budget_among_its_reads() {
    let read = |pk: &str| FenceRead {
        scope: Scope::Partition(pk.into()),
        aggregates: BTreeSet::from([pk.to_owned()]),
    };
    assert_eq!(page_budgets(&[read("A")], 16), [16]);
    let three = [read("A"), read("B"), read("C")];
    assert_eq!(page_budgets(&three, 16), [6, 5, 5]);
    let many: Vec<FenceRead> = (0..20).map(|i| read(&format!("M{i}"))).collect();
    assert!(page_budgets(&many, 16).iter().all(|&p| p == 1));
    assert!(page_budgets(&[], 16).is_empty());
}
