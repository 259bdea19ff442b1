//! A `FAILED` message whose only payload copy is in the bucket (a producer offloaded
//! it: the item holds the pointer) keeps it as long as the item: the object is copied
//! from `outbox/` (expired by the lifecycle rule, 30 days by default) to `failed/`
//! (which no rule expires; a `FAILED` item has no TTL) before the dead-letter copy and
//! the mark, and both point there (issue 36, finding 10).

use crate::fakes::{MemoryStore, RecordingSink, Refusals};
use crate::large_payload::PayloadPointer;
use crate::ports::MessageSink;
use crate::publish::*;
use crate::route::{Destination, Routes};
use crate::schema::OutboxItem;

const PAYLOAD: &str = r#"{"order":"large"}"#;

fn config() -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [("orders".to_owned(), Destination::sqs("https://q/orders"))],
            None,
        )
        .with_large_payloads(Some("large".into()), None),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

fn key() -> ItemKey {
    ItemKey {
        pk: "A".into(),
        sk: "MESSAGE#A".into(),
    }
}

/// The producer's pointer to `outbox/id-A`, on a topic without a route: poison.
fn offloaded_poison() -> (WorkItem, String) {
    let pointer = PayloadPointer::for_message("large", "id-A").encode();
    let work = super::publish_work("A", key(), "id-A".into(), "nowhere", pointer.clone());
    (work, pointer)
}

/// A publisher whose store holds the item `PENDING` with `payload`, and whose bucket
/// holds `outbox/id-A` when `object` says so.
async fn publisher(
    refusals: Refusals,
    payload: &str,
    object: bool,
) -> Publisher<RecordingSink, MemoryStore> {
    let store = MemoryStore::default();
    store.put(
        key(),
        OutboxItem {
            status: Some("PENDING".into()),
            payload: Some(payload.to_owned()),
            ..OutboxItem::default()
        },
    );
    let sink = RecordingSink::new(refusals);
    if object {
        let producers = PayloadPointer::for_message("large", "id-A");
        let written = sink.put_payload(&producers, PAYLOAD).await;
        written.expect("the producer's write");
    }
    Publisher::new(sink, store, config()).with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

#[tokio::test]
async fn a_failed_messages_offloaded_payload_is_kept_under_failed_and_the_copy_and_item_point_there()
{
    let (work, pointer) = offloaded_poison();
    let p = publisher(Refusals::default(), &pointer, true).await;
    let outcomes = p.process(&[work]).await;
    let retained = PayloadPointer::for_failed("large", "id-A");
    // The payload is copied where no lifecycle rule expires it
    assert_eq!(p.sink.object(&retained).as_deref(), Some(PAYLOAD));
    // The dead-letter copy points to that copy, not to the expiring object
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(PayloadPointer::decode(&dead[0].body), Some(retained.clone()));
    // And so does the FAILED item, so that a redrive sends what still exists
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    assert_eq!(stored.payload, Some(retained.encode()));
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { marked: true, .. }),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn an_object_already_gone_leaves_the_pointer_and_the_reason_says_so() {
    let (work, pointer) = offloaded_poison();
    let p = publisher(Refusals::default(), &pointer, false).await;
    let outcomes = p.process(&[work]).await;
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].body, pointer, "the copy keeps the pointer it had");
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    assert_eq!(stored.payload.as_deref(), Some(pointer.as_str()));
    let reason = stored.last_error.expect("LastError");
    assert!(
        reason.contains("its payload stays at s3://large/outbox/id-A, which the bucket's lifecycle rule expires"),
        "{reason}"
    );
    assert!(matches!(&outcomes[0], Outcome::DeadLettered { marked: true, .. }));
}

#[tokio::test]
async fn a_copy_that_failed_for_now_sends_nothing_and_leaves_the_item_pending() {
    let (work, pointer) = offloaded_poison();
    let refusals = Refusals {
        buckets_down: vec!["large".into()],
        ..Refusals::default()
    };
    // (The bucket down, the producer's object cannot be written here either; the
    // fake refuses the copy before looking for it.)
    let p = publisher(refusals, &pointer, false).await;
    let outcomes = p.process(&[work]).await;
    assert!(p.sink.delivered("dlq").is_empty());
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("PENDING"));
    assert!(matches!(&outcomes[0], Outcome::Retry { .. }), "{outcomes:?}");
}

#[tokio::test]
async fn a_payload_on_the_item_is_not_copied() {
    let work = super::publish_work("A", key(), "id-A".into(), "nowhere", PAYLOAD.into());
    let p = publisher(Refusals::default(), PAYLOAD, false).await;
    p.process(&[work]).await;
    assert_eq!(p.sink.object_counts(), (0, 0));
    assert_eq!(p.sink.delivered("dlq")[0].body, PAYLOAD);
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.payload.as_deref(), Some(PAYLOAD));
}
