//! The order fence in a sweep, against the in-memory fakes: a message due now whose
//! earlier sibling the sweep did not claim (not due yet, backing off, leased).

use crate::clock::ManualClock;
use crate::config::PublisherConfig;
use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults, library_item, library_key};
use crate::route::{Destination, Routes};
use crate::schema::{ItemKey, Status};
use crate::sweep::*;
use std::time::Duration;

pub(super) const NOW: i64 = 1_700_000_000_000;

fn sweeper() -> Sweeper<RecordingSink, MemoryStore> {
    fifo_sweeper(Refusals::default())
}

/// A sweeper at `NOW` whose topic `ledger` goes to a FIFO queue, with a sink that
/// refuses what `refusals` says (shared with `tests::wave`).
pub(super) fn fifo_sweeper(refusals: Refusals) -> Sweeper<RecordingSink, MemoryStore> {
    let publisher_config = PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [(
                "ledger".to_owned(),
                Destination::sqs("https://q/ledger.fifo"),
            )],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    };
    let publisher = Publisher::new(
        RecordingSink::new(refusals),
        MemoryStore::default(),
        publisher_config.clone(),
    )
    .with_clock(ManualClock::at(NOW));
    Sweeper::new(publisher, SweeperConfig::new(publisher_config))
}

/// The bodies the FIFO queue received, in order.
fn ledger_bodies(sw: &Sweeper<RecordingSink, MemoryStore>) -> Vec<String> {
    sw.publisher
        .sink
        .delivered("ledger")
        .into_iter()
        .map(|m| m.body)
        .collect()
}

#[tokio::test]
async fn a_due_message_waits_behind_an_earlier_one_the_sweep_did_not_claim() {
    // Given A1 backing off until ten minutes from now, and A2, written after it, due
    let sw = sweeper();
    let store = &sw.publisher.store;
    let (a1, a2) = (library_key("A", 1_000, 0), library_key("A", 2_000, 0));
    let a1_due = NOW + 600_000;
    store.put(a1.clone(), library_item(&a1, "ledger", a1_due, 1_000));
    store.put(a2.clone(), library_item(&a2, "ledger", NOW - 1, 2_000));

    // When the sweeper runs now
    let summary = sw
        .sweep(Budget::for_window(NOW, Duration::from_secs(30)))
        .await;

    // Then A2 was claimed but not published, and is due only after A1, its attempt
    // given back
    assert_eq!(
        (summary.claimed, summary.published, summary.retried),
        (1, 0, 1),
        "{summary:?}"
    );
    assert!(sw.publisher.sink.delivered("ledger").is_empty());
    let held = store.get(&a2).expect("stored");
    assert_eq!(held.status(), Some(Status::Pending));
    assert_eq!(held.sweep_due_at, Some(a1_due + 1));
    assert_eq!(held.retry_count, Some(0));
    assert!(
        held.last_error
            .is_some_and(|e| e.contains("earlier message"))
    );

    // And once both are due, one sweep claims both and publishes them in order
    let later = Budget::for_window(a1_due + 1, Duration::from_secs(30));
    let summary = sw.sweep(later).await;
    assert_eq!(summary.published, 2, "{summary:?}");
    let order = ledger_bodies(&sw);
    assert_eq!(order, ["payload-1000", "payload-2000"]);
}

#[tokio::test]
async fn a_message_whose_fence_read_keeps_failing_ends_failed_and_dead_lettered() {
    // Given A1, alone and due, to the FIFO queue, and an order fence whose read always
    // fails
    let sw = sweeper();
    let store = &sw.publisher.store;
    let a1 = library_key("A", 1_000, 0);
    store.put(a1.clone(), library_item(&a1, "ledger", NOW - 1, 1_000));
    store.fail(StoreFaults {
        fence_reads: true,
        ..StoreFaults::default()
    });

    // When the sweeper runs each time it comes due, up to the attempt limit
    let max = sw.config.max_attempts;
    let mut now = NOW;
    for attempt in 1..=max {
        let summary = sw
            .sweep(Budget::for_window(now, Duration::from_secs(30)))
            .await;
        assert_eq!((summary.claimed, summary.published), (1, 0), "{summary:?}");
        // Then each attempt counts (before: given back, so it never ended), and the
        // reason says what happened, not that an earlier message is pending
        let item = store.get(&a1).expect("stored");
        assert_eq!(item.status(), Some(Status::Pending));
        assert_eq!(item.retry_count, Some(attempt), "attempt {attempt} counts");
        let reason = item.last_error.unwrap_or_default();
        assert!(
            reason.contains("order fence could not read")
                && reason.contains("ProvisionedThroughputExceeded")
                && !reason.contains("earlier message of the same aggregate is still pending"),
            "{reason}"
        );
        now = item.sweep_due_at.expect("due again");
    }

    // And past the limit it is FAILED with the reason and copied to the dead-letter
    // queue, never sent to its FIFO queue
    let summary = sw
        .sweep(Budget::for_window(now, Duration::from_secs(30)))
        .await;
    assert_eq!(summary.failed, 1, "{summary:?}");
    let item = store.get(&a1).expect("stored");
    assert_eq!(item.status(), Some(Status::Failed));
    let reason = item.last_error.unwrap_or_default();
    assert!(
        reason.starts_with(&format!("gave up after {max} attempts: not sent: the order fence")),
        "{reason}"
    );
    assert_eq!(sw.publisher.sink.delivered("dlq").len(), 1);
    assert!(sw.publisher.sink.delivered("ledger").is_empty());
}

#[tokio::test]
async fn when_the_fence_cannot_tell_only_the_earliest_is_charged() {
    // Given A1 and A2 due, and a fence read that fails
    let sw = sweeper();
    let store = &sw.publisher.store;
    let (a1, a2) = (library_key("A", 1_000, 0), library_key("A", 2_000, 0));
    store.put(a1.clone(), library_item(&a1, "ledger", NOW - 2, 1_000));
    store.put(a2.clone(), library_item(&a2, "ledger", NOW - 1, 2_000));
    store.fail(StoreFaults {
        fence_reads: true,
        ..StoreFaults::default()
    });
    // When a sweep runs
    let summary = sw
        .sweep(Budget::for_window(NOW, Duration::from_secs(30)))
        .await;
    // Then neither is sent; A1, which may be the earliest, is charged; A2, behind A1
    // (pending: that is known), gets its attempt back
    assert_eq!((summary.published, summary.retried), (0, 2), "{summary:?}");
    let count = |k| store.get(k).and_then(|i| i.retry_count);
    assert_eq!((count(&a1), count(&a2)), (Some(1), Some(0)));
    let (d1, d2) = (
        store.get(&a1).and_then(|i| i.sweep_due_at),
        store.get(&a2).and_then(|i| i.sweep_due_at),
    );
    assert!(d1 < d2, "A2 is not due before A1: {d1:?} {d2:?}");
}

#[tokio::test]
async fn a_sweep_counts_the_requests_of_its_fence_reads() {
    // Given one due FIFO message
    let sw = sweeper();
    let a1 = library_key("A", 1_000, 0);
    let store = &sw.publisher.store;
    store.put(a1.clone(), library_item(&a1, "ledger", NOW - 1, 1_000));
    // When the sweeper publishes it
    let summary = sw
        .sweep(Budget::for_window(NOW, Duration::from_secs(30)))
        .await;
    // Then its one fence read (one select of the index shards, one request in the
    // fake store) is counted
    assert_eq!((summary.published, summary.fence_reads), (1, 1), "{summary:?}");
}

#[tokio::test]
async fn a_sweep_orders_sequenced_messages_by_their_sequence_not_their_writers_clocks() {
    // Given two commits of A by two hosts: A2's host clock is behind, so A2 carries the
    // earlier CreatedAt and id; A1 is backing off for ten minutes
    let sw = sweeper();
    let store = &sw.publisher.store;
    let key = |seq: u64, ms: u64| ItemKey {
        pk: "A".into(),
        sk: crate::schema::sequenced_sort_key(
            seq,
            0,
            "E",
            &uuid::Builder::from_unix_timestamp_millis(ms, &[0; 10])
                .into_uuid()
                .to_string(),
        ),
    };
    let (a1, a2) = (key(1, 2_000), key(2, 1_000));
    let a1_due = NOW + 600_000;
    store.put(a1.clone(), library_item(&a1, "ledger", a1_due, 2_000));
    store.put(a2.clone(), library_item(&a2, "ledger", NOW - 1, 1_000));

    // When a sweep claims A2 alone, it holds it behind A1
    let summary = sw
        .sweep(Budget::for_window(NOW, Duration::from_secs(30)))
        .await;
    assert_eq!((summary.claimed, summary.published), (1, 0), "{summary:?}");

    // And once both are due, one sweep publishes both, A1 first
    let summary = sw
        .sweep(Budget::for_window(a1_due + 1, Duration::from_secs(30)))
        .await;
    assert_eq!(summary.published, 2, "{summary:?}");
    let order = ledger_bodies(&sw);
    assert_eq!(order, ["payload-2000", "payload-1000"]);
}
