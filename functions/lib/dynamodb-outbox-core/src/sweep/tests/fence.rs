//! The order fence in a sweep, against the in-memory fakes: a message due now whose
//! earlier sibling the sweep did not claim (not due yet, backing off, leased).

use crate::clock::ManualClock;
use crate::config::PublisherConfig;
use crate::fakes::{MemoryStore, RecordingSink, Refusals, library_item, library_key};
use crate::route::{Destination, Routes};
use crate::schema::Status;
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
    let order: Vec<String> = sw
        .publisher
        .sink
        .delivered("ledger")
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(order, ["payload-1000", "payload-2000"]);
}
