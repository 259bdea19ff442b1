//! The order fence on the publish path, against the in-memory fakes.

use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults, library_item, library_key};
use crate::publish::*;
use crate::route::{Destination, Routes};
use crate::schema::{OutboxItem, PENDING_MESSAGE, SeenIndex, Status, decode_message};

const NOW: i64 = 1_700_000_000_000;

pub(super) fn publisher() -> Publisher<RecordingSink, MemoryStore> {
    let config = PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                (
                    "ledger".to_owned(),
                    Destination::sqs("https://q/ledger.fifo"),
                ),
                ("orders".to_owned(), Destination::sqs("https://q/orders")),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    };
    Publisher::new(
        RecordingSink::new(Refusals::default()),
        MemoryStore::default(),
        config,
    )
    .with_clock(crate::clock::ManualClock::at(NOW))
}

/// Stores `item` and returns the work its stream record makes.
pub(super) fn stored(p: &Publisher<RecordingSink, MemoryStore>, key: &ItemKey, item: OutboxItem) -> WorkItem {
    p.store.put(key.clone(), item.clone());
    let image = serde_dynamo::to_item(&item).expect("an item");
    WorkItem {
        id: key.sk.clone(),
        work: Work::Publish(decode_message(image, Some(key)).expect("a message")),
    }
}

/// A pending library message of `pk` written at `ms` (due a minute later), stored,
/// and the work its stream record makes.
pub(super) fn library(
    p: &Publisher<RecordingSink, MemoryStore>,
    pk: &str,
    topic: &str,
    ms: u64,
) -> (ItemKey, WorkItem) {
    let key = library_key(pk, ms, 0);
    let created = i64::try_from(ms).unwrap_or(0);
    let work = stored(
        p,
        &key,
        library_item(&key, topic, created + 60_000, created),
    );
    (key, work)
}

pub(super) fn bodies(p: &Publisher<RecordingSink, MemoryStore>, dest: &str) -> Vec<String> {
    p.sink.delivered(dest).into_iter().map(|m| m.body).collect()
}

#[tokio::test]
async fn a_fifo_message_behind_an_earlier_pending_one_is_left_for_the_sweeper_not_retried() {
    // Given A1 pending (its record discarded, or its claim lost), and a batch of A2,
    // A3 (FIFO), A4 (standard queue) and B1 (FIFO)
    let p = publisher();
    let (a1, _) = library(&p, "A", "ledger", 1_000);
    let (a2, w2) = library(&p, "A", "ledger", 2_000);
    let (_, w3) = library(&p, "A", "ledger", 3_000);
    let (_, w4) = library(&p, "A", "orders", 4_000);
    let (_, b1) = library(&p, "B", "ledger", 2_500);
    // When the stream publisher handles the batch
    let outcomes = p.process(&[w2, w3, w4, b1]).await;
    // Then A's messages wait for the sweeper, not before A1 is due, and none is
    // reported for retry; B1 goes out
    let wait = Outcome::Deferred {
        not_before: Some(61_000),
    };
    assert_eq!(
        outcomes,
        vec![
            wait.clone(),
            wait.clone(),
            wait,
            Outcome::Sent { marked: true }
        ]
    );
    assert!(outcomes.iter().all(|o| !o.needs_retry()));
    assert_eq!(Summary::of(&outcomes).deferred, 3);
    assert_eq!(bodies(&p, "ledger").len(), 1);
    assert!(
        bodies(&p, "orders").is_empty(),
        "held back behind A2 in the batch"
    );
    // And they stay pending in the sweeper index, as they were
    let left = p.store.get(&a2).expect("stored");
    assert_eq!(left.status(), Some(Status::Pending));
    assert_eq!(left.sweep_due_at, Some(62_000));
    assert_eq!(
        p.store.get(&a1).and_then(|i| i.status()),
        Some(Status::Pending)
    );
}

#[tokio::test]
async fn a_later_pending_message_holds_back_nothing() {
    let p = publisher();
    let (_, w1) = library(&p, "A", "ledger", 1_000);
    let _later = library(&p, "A", "ledger", 2_000);
    let outcomes = p.process(&[w1]).await;
    assert_eq!(outcomes, vec![Outcome::Sent { marked: true }]);
}

#[tokio::test]
async fn a_minimal_producers_fifo_message_behind_an_unindexed_one_waits_in_the_index() {
    // Given two items of a minimal producer (no CreatedAt, no index attributes), the
    // first still pending outside the index (its record discarded, not yet recovered)
    let p = publisher();
    let minimal = |sk: &str| {
        let key = ItemKey {
            pk: "M".into(),
            sk: sk.into(),
        };
        let item = OutboxItem {
            pk: Some(key.pk.clone()),
            sk: Some(key.sk.clone()),
            item_type: Some(PENDING_MESSAGE.into()),
            topic: Some("ledger".into()),
            payload: Some("{}".into()),
            status: Some("PENDING".into()),
            retry_count: Some(0),
            ..OutboxItem::default()
        };
        (key, item)
    };
    let (_, first) = minimal("MESSAGE#X#1");
    p.store.put(minimal("MESSAGE#X#1").0, first);
    let (second, item) = minimal("MESSAGE#X#2");
    let work = stored(&p, &second, item);
    // When the stream publisher handles the second alone
    let outcomes = p.process(&[work]).await;
    // Then it waits, and is put in the sweeper index so that the sweeper finds it
    assert_eq!(outcomes, vec![Outcome::Deferred { not_before: None }]);
    assert!(bodies(&p, "ledger").is_empty());
    let left = p.store.get(&second).expect("stored");
    let index = SeenIndex {
        shard: left.sweep_shard.clone(),
        due: left.sweep_due_at.map(|d| d.to_string()),
    };
    assert!(index.is_valid(&crate::schema::SweepShards::default()), "{left:?}");
}

#[tokio::test]
async fn when_the_pending_messages_cannot_be_read_fifo_messages_are_held_and_reported_and_others_go() {
    let p = publisher();
    let (_, fifo) = library(&p, "A", "ledger", 1_000);
    let (_, standard) = library(&p, "B", "orders", 1_000);
    p.store.fail(StoreFaults {
        fence_reads: true,
        ..StoreFaults::default()
    });
    let outcomes = p.process(&[fifo, standard]).await;
    assert!(
        matches!(&outcomes[0], Outcome::OrderUnknown { reason }
            if reason.contains("order fence could not read")
                && reason.contains("ProvisionedThroughputExceeded")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], Outcome::Sent { marked: true });
    assert_eq!(Summary::of(&outcomes).fence_unread, 1);
    // And on the stream path the FIFO message is reported for retry, so that the
    // shard's later records of its aggregate wait behind it
    assert!(outcomes[0].needs_retry());
    assert_eq!(Summary::of(&outcomes).retried, 1);
}

#[tokio::test]
async fn behind_a_lagging_index_the_next_message_of_a_fifo_burst_is_sent_not_deferred() {
    // Given A1 published and marked SENT by one stream batch, and a sweeper index that
    // still lists it as pending (a global secondary index lags)
    let p = publisher();
    let (_, a1) = library(&p, "A", "ledger", 1_000);
    let (a2_key, a2) = library(&p, "A", "ledger", 2_000);
    let (first, _) = p.process_delivery(&[a1]).await;
    assert_eq!(first, vec![Outcome::Sent { marked: true }]);
    p.store.fail(StoreFaults {
        stale_index: true,
        ..StoreFaults::default()
    });
    // When the next batch brings A2
    let (outcomes, summary) = p.process_delivery(&[a2]).await;
    // Then A2 goes out now: the consistent status read finds A1 SENT, so the index's
    // stale listing does not fence it (before: deferred to the sweeper, 60-120 s)
    assert_eq!(outcomes, vec![Outcome::Sent { marked: true }], "{summary:?}");
    assert_eq!(bodies(&p, "ledger").len(), 2);
    assert_eq!(
        p.store.get(&a2_key).and_then(|i| i.status()),
        Some(Status::Sent)
    );
}

#[tokio::test]
async fn concurrent_batches_of_one_stream_shard_do_not_fence_each_other() {
    // Given a parallelization factor above 1: Lambda gives one stream shard's
    // records to concurrent batches. Aggregates A and B share a sweeper index shard.
    let shards = crate::schema::SweepShards::default();
    let b = (0..)
        .map(|i| format!("B{i}"))
        .find(|pk| shards.shard_of(pk) == shards.shard_of("A"))
        .unwrap_or_default();
    let p = publisher();
    let (_, a1) = library(&p, "A", "ledger", 1_000);
    let (_, a2) = library(&p, "A", "ledger", 2_000);
    let (_, b1) = library(&p, &b, "ledger", 1_500);
    let (_, b2) = library(&p, &b, "ledger", 2_500);

    // When the two batches are handled at once, each fence reading the shard that
    // lists the other batch's pending messages
    let (first, second) = futures::future::join(p.process(&[a1, a2]), p.process(&[b1, b2])).await;

    // Then another aggregate's pending messages hold nothing back: all four go, each
    // aggregate's in order (the fence waits only for an earlier message of the same
    // aggregate: the next test)
    let sent = Outcome::Sent { marked: true };
    assert_eq!(first, vec![sent.clone(), sent.clone()]);
    assert_eq!(second, vec![sent.clone(), sent]);
    let delivered = p.sink.delivered("ledger");
    let of = |group: &str| -> Vec<String> {
        delivered
            .iter()
            .filter(|m| m.group_id.as_deref() == Some(group))
            .map(|m| m.body.clone())
            .collect()
    };
    assert_eq!(of("A").len() + of(&b).len(), 4);
    assert!(of("A").is_sorted() && of(&b).is_sorted(), "{delivered:?}");
}

#[tokio::test]
async fn an_aggregate_split_across_concurrent_batches_never_sends_the_later_message_first() {
    // Given A1 and A2 of one FIFO aggregate in two concurrent batches: AWS keeps order
    // per item (partition and sort key) under a parallelization factor, not per
    // partition key, so two messages of an aggregate may be handled at once, and the
    // batch holding the later one may run first
    let p = publisher();
    let (_, a1) = library(&p, "A", "ledger", 1_000);
    let (_, a2) = library(&p, "A", "ledger", 2_000);

    // When the batch of A2 is handled first, A1's concurrently
    let (later, earlier) = futures::future::join(p.process(&[a2]), p.process(&[a1])).await;

    // Then A2 waits for the sweeper behind A1, which goes: order holds, at the cost
    // of a deferral
    assert!(matches!(later[..], [Outcome::Deferred { .. }]), "{later:?}");
    assert_eq!(earlier, vec![Outcome::Sent { marked: true }]);
    assert_eq!(bodies(&p, "ledger"), vec!["payload-1000".to_owned()]);
}

#[tokio::test]
async fn the_summary_counts_the_requests_the_fences_reads_made_and_none_without_a_fifo_route() {
    // Given a library FIFO aggregate, and a minimal producer's one (read by partition)
    let p = publisher();
    let (_, standard) = library(&p, "S", "orders", 1_000);
    let (_, fifo) = library(&p, "A", "ledger", 1_000);
    let (_, minimal) = minimal(&p, "M", 1);
    // When a batch routed to a standard queue only is published: the fence reads nothing
    let (_, summary) = p.process_delivery(&[standard]).await;
    assert_eq!(summary.fence_reads, 0);
    // When a batch of both FIFO aggregates is: one select of the index shards and one
    // query of the minimal producer's partition, one request each in the fake store
    let (_, summary) = p.process_delivery(&[fifo, minimal]).await;
    assert_eq!(summary.fence_reads, 2, "{summary:?}");
}

#[tokio::test]
async fn a_fence_read_that_failed_counts_no_request_and_shows_as_fence_unread() {
    let p = publisher();
    let (_, fifo) = library(&p, "A", "ledger", 1_000);
    p.store.fail(StoreFaults {
        fence_reads: true,
        ..StoreFaults::default()
    });
    let (_, summary) = p.process_delivery(&[fifo]).await;
    assert_eq!((summary.fence_reads, summary.fence_unread), (0, 1));
}

#[tokio::test]
async fn one_transactions_records_out_of_order_in_a_batch_are_sent_in_write_order() {
    // Finding 1 of issue 36: AWS may deliver one transaction's records in any order.
    // A commit of A1 then A2 (one millisecond, told apart by the UUIDv7) arrived as
    // [A2, A1] and went out A2, A1: the plan kept stream order, the sweeper sorts.
    let p = publisher();
    let (k1, k2) = (library_key("A", 1_000, 1), library_key("A", 1_000, 2));
    let w1 = stored(&p, &k1, library_item(&k1, "ledger", 61_000, 1_000));
    let mut a2 = library_item(&k2, "ledger", 61_000, 1_000);
    a2.payload = Some("payload-second".to_owned());
    let w2 = stored(&p, &k2, a2);
    let outcomes = p.process(&[w2, w1]).await;
    assert!(outcomes.iter().all(|o| *o == Outcome::Sent { marked: true }));
    assert_eq!(bodies(&p, "ledger"), ["payload-1000", "payload-second"]);
}

#[tokio::test]
async fn a_transactions_later_message_alone_in_a_batch_waits_for_the_earlier_one_the_index_does_not_list()
 {
    // Finding 1 of issue 36, across batches: A1 and A2 committed together, A2's record
    // in an earlier batch than A1's (or a concurrent one), and the index does not list
    // A1 yet (a GSI lags writes; here A1 carries no index attributes at all). A2 named
    // A1 (`Follows`): the consistent status read finds it PENDING.
    let p = publisher();
    let (k1, k2) = (library_key("A", 1_000, 1), library_key("A", 1_000, 2));
    let mut a1 = library_item(&k1, "ledger", 61_000, 1_000);
    (a1.sweep_shard, a1.sweep_due_at) = (None, None);
    p.store.put(k1.clone(), a1);
    let mut a2 = library_item(&k2, "ledger", 61_000, 1_000);
    a2.follows = Some(k1.sk.clone());
    let w2 = stored(&p, &k2, a2);
    let outcomes = p.process(std::slice::from_ref(&w2)).await;
    assert_eq!(outcomes, vec![Outcome::Deferred { not_before: None }]);
    assert!(bodies(&p, "ledger").is_empty());
    // Once A1 went, A2 goes.
    let mut sent = library_item(&k1, "ledger", 61_000, 1_000);
    sent.status = Some(Status::Sent.as_str().to_owned());
    p.store.put(k1, sent);
    assert_eq!(p.process(&[w2]).await, vec![Outcome::Sent { marked: true }]);
}

/// A minimal producer's pending message `n` of `pk` (no `CreatedAt`, no index
/// attributes: its fence reads the partition), stored, and its work.
fn minimal(p: &Publisher<RecordingSink, MemoryStore>, pk: &str, n: u8) -> (ItemKey, WorkItem) {
    let key = ItemKey {
        pk: pk.into(),
        sk: format!("MESSAGE#X#{n}"),
    };
    let item = OutboxItem {
        pk: Some(key.pk.clone()),
        sk: Some(key.sk.clone()),
        item_type: Some(PENDING_MESSAGE.into()),
        topic: Some("ledger".into()),
        payload: Some("{}".into()),
        status: Some("PENDING".into()),
        retry_count: Some(0),
        ..OutboxItem::default()
    };
    let work = stored(p, &key, item);
    (key, work)
}

fn bounded(p: &Publisher<RecordingSink, MemoryStore>, shards: bool, partitions: bool) {
    p.store.fail(StoreFaults {
        bounded_shard_reads: shards,
        bounded_partition_reads: partitions,
        ..StoreFaults::default()
    });
}

#[tokio::test]
async fn a_partition_too_large_to_read_is_answered_by_the_index_not_dead_lettered() {
    // Finding 4: a minimal producer's aggregate whose partition (its history, its
    // business items) is larger than the fence may read. Before, every FIFO message
    // of it was OrderUnknown, charged, and ended FAILED without a send.
    let p = publisher();
    let (_, m2) = minimal(&p, "M", 2);
    bounded(&p, false, true);
    assert_eq!(p.process(&[m2]).await, vec![Outcome::Sent { marked: true }]);
    // And an earlier message of it that left the stream path (adopted: in the index)
    // still holds the next one back
    let p = publisher();
    let (k1, _) = minimal(&p, "M", 1);
    let mut adopted = p.store.get(&k1).expect("stored");
    adopted.sweep_shard = Some(crate::schema::SweepShards::default().shard_of("M"));
    adopted.sweep_due_at = Some(NOW + 60_000);
    p.store.put(k1, adopted);
    let (_, m2) = minimal(&p, "M", 2);
    bounded(&p, false, true);
    assert_eq!(
        p.process(&[m2]).await,
        vec![Outcome::Deferred {
            not_before: Some(NOW + 60_000)
        }]
    );
}

#[tokio::test]
async fn a_backlog_too_large_for_the_index_read_is_answered_by_the_aggregates_partition() {
    // Finding 4's other half: more pending keys in the shards than the fence may read
    // (a backlog). Each aggregate's own partition answers instead.
    let p = publisher();
    library(&p, "A", "ledger", 1_000);
    let (_, a2) = library(&p, "A", "ledger", 2_000);
    let (_, b1) = library(&p, "B", "ledger", 1_000);
    bounded(&p, true, false);
    let outcomes = p.process(&[a2, b1]).await;
    assert_eq!(
        outcomes,
        vec![
            Outcome::Deferred {
                not_before: Some(61_000)
            },
            Outcome::Sent { marked: true }
        ]
    );
}

#[tokio::test]
async fn only_when_both_sides_are_too_large_the_fence_cannot_tell() {
    let p = publisher();
    let (_, a1) = library(&p, "A", "ledger", 1_000);
    bounded(&p, true, true);
    let outcomes = p.process(&[a1]).await;
    assert!(
        matches!(&outcomes[0], Outcome::OrderUnknown { reason } if reason.contains("on either side")),
        "{outcomes:?}"
    );
}
