//! Batched marks against the in-memory store: how each statement's answer is acted on
//! (the statements themselves are tested against the emulator).

use crate::config::PublisherConfig;
use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults};
use crate::policy::{MARK_BATCH_ATTEMPTS, MARK_BATCH_LIMIT};
use crate::publish::{Outcome, Publisher, WorkItem};
use crate::route::{Destination, Routes};
use crate::schema::{ItemKey, OutboxItem};

fn config() -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [("std".to_owned(), Destination::sqs("https://q/std"))],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

fn key(body: &str) -> ItemKey {
    ItemKey {
        pk: format!("A{body}"),
        sk: format!("MESSAGE#{body}"),
    }
}

fn work(body: &str) -> WorkItem {
    super::publish_work(body, key(body), format!("id-{body}"), "std", body.into())
}

fn batch(n: usize) -> Vec<WorkItem> {
    (0..n).map(|i| work(&format!("m{i:03}"))).collect()
}

fn publisher(faults: StoreFaults) -> Publisher<RecordingSink, MemoryStore> {
    let store = MemoryStore::default();
    store.fail(faults);
    Publisher::new(RecordingSink::default(), store, config())
        .with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

fn all_marked(outcomes: &[Outcome]) -> bool {
    outcomes
        .iter()
        .all(|o| *o == Outcome::Sent { marked: true })
}

#[tokio::test]
async fn a_hundred_published_items_are_marked_sent_in_four_calls() {
    // Given a hundred messages that all go out
    let p = publisher(StoreFaults::default());
    // When they are published
    let outcomes = p.process(&batch(100)).await;
    // Then each is marked SENT, with 25 statements per call
    assert!(all_marked(&outcomes), "{outcomes:?}");
    assert_eq!(p.store.batch_calls(), vec![MARK_BATCH_LIMIT; 4]);
    assert_eq!(p.store.sent().len(), 100);
}

#[tokio::test]
async fn a_throttled_statement_is_retried_in_the_next_batch_alone() {
    let p = publisher(StoreFaults {
        statements: vec![(key("m003"), "ThrottlingError".into(), 1)],
        ..StoreFaults::default()
    });
    let outcomes = p.process(&batch(10)).await;
    assert!(all_marked(&outcomes), "{outcomes:?}");
    assert_eq!(p.store.batch_calls(), vec![10, 1]);
}

#[tokio::test]
async fn a_statement_throttled_in_every_batch_is_marked_on_its_own() {
    let p = publisher(StoreFaults {
        statements: vec![(
            key("m001"),
            "InternalServerError".into(),
            MARK_BATCH_ATTEMPTS,
        )],
        ..StoreFaults::default()
    });
    let outcomes = p.process(&batch(3)).await;
    assert!(all_marked(&outcomes), "{outcomes:?}");
    assert_eq!(p.store.batch_calls(), vec![3, 1, 1]);
    assert!(p.store.sent().contains(&key("m001")));
}

#[tokio::test]
async fn a_refused_condition_is_someone_elses_finish_and_not_retried() {
    // Given an item someone else has marked SENT already
    let p = publisher(StoreFaults::default());
    p.store.put(
        key("m001"),
        OutboxItem {
            status: Some("SENT".into()),
            ..OutboxItem::default()
        },
    );
    let outcomes = p.process(&batch(3)).await;
    assert_eq!(outcomes[1], Outcome::Sent { marked: false });
    assert_eq!(outcomes[0], Outcome::Sent { marked: true });
    assert_eq!(p.store.batch_calls(), vec![3], "nothing retried");
    assert_eq!(p.store.sent().len(), 2);
}

#[tokio::test]
async fn any_other_statement_error_goes_to_the_per_item_path() {
    let p = publisher(StoreFaults {
        statements: vec![(key("m000"), "DuplicateItem".into(), 1)],
        ..StoreFaults::default()
    });
    let outcomes = p.process(&batch(2)).await;
    assert!(all_marked(&outcomes), "{outcomes:?}");
    assert_eq!(p.store.batch_calls(), vec![2], "not retried as a batch");
    assert!(p.store.sent().contains(&key("m000")), "marked on its own");
}

#[tokio::test]
async fn a_batch_that_fails_as_a_whole_leaves_every_item_to_the_per_item_path() {
    let p = publisher(StoreFaults {
        batches: true,
        ..StoreFaults::default()
    });
    let outcomes = p.process(&batch(30)).await;
    assert!(all_marked(&outcomes), "{outcomes:?}");
    assert_eq!(p.store.batch_calls(), vec![25, 5]);
    assert_eq!(p.store.sent().len(), 30);
}

#[tokio::test]
async fn poison_is_marked_failed_in_one_batch_and_an_item_at_its_size_limit_by_the_ladder() {
    // Given three messages the destination refuses for good, one at its size limit
    let p = publisher(StoreFaults {
        full: vec![key("m001")],
        ..StoreFaults::default()
    });
    let p = Publisher {
        sink: RecordingSink::new(Refusals {
            refused: vec!["m000".into(), "m001".into(), "m002".into()],
            ..Refusals::default()
        }),
        ..p
    };
    // When they are published
    let outcomes = p.process(&batch(3)).await;
    // Then all three end FAILED: two by the batch, the full one by a smaller mark
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Outcome::DeadLettered { marked: true, .. })),
        "{outcomes:?}"
    );
    assert_eq!(p.store.batch_calls(), vec![3]);
    let full = p.store.get(&key("m001")).expect("stored");
    assert_eq!(full.status.as_deref(), Some("FAILED"));
    assert_eq!(full.payload_on.as_deref(), Some("dead-letter queue"));
    // Every failed item is in its aggregate's FAILED index partition, due at the failure
    for body in ["m000", "m001", "m002"] {
        let item = p.store.get(&key(body)).expect("stored");
        let shard = crate::schema::failed_sweep_shard(&key(body).pk);
        assert_eq!(item.sweep_shard.as_deref(), Some(shard.as_str()), "{body}");
        assert_eq!(item.sweep_due_at, Some(1_700_000_000_000), "{body}");
    }
}
