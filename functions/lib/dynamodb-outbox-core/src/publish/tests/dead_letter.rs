//! The publish path's dead-letter copies of poison the dead-letter queue cannot take
//! as they are (see [`crate::policy::copy_forms`]): through the claim-check bucket
//! when the route has one, else as a record without the payload — so that every
//! `FAILED` message has a record on the queue operators watch, even an item too full
//! to take its `LastError`.

use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults};
use crate::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer};
use crate::message::{ATTR_ERROR, ATTR_PAYLOAD_ON, AttrValue, OutboundMessage};
use crate::policy::QueueLimits;
use crate::publish::*;
use crate::route::{Destination, Routes};

const KIB_256: usize = 262_144;

/// `small` → a queue at 256 KiB, the dead-letter queue at 256 KiB too (both
/// learned), as the Terraform stack's; large payloads to `bucket` when given.
fn config(bucket: Option<&str>) -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [("small".to_owned(), Destination::sqs("https://q/small"))],
            None,
        )
        .with_large_payloads(bucket.map(str::to_owned), None),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
    .with_queue_limits(&QueueLimits::from([
        ("https://q/small".to_owned(), Ok(KIB_256)),
        ("https://q/dlq".to_owned(), Ok(KIB_256)),
    ]))
}

fn key() -> ItemKey {
    ItemKey {
        pk: "A".into(),
        sk: "MESSAGE#A".into(),
    }
}

/// An unpublishable message near DynamoDB's item limit: 400 KB on a topic with no route.
fn at_the_item_limit() -> WorkItem {
    super::publish_work("A", key(), "id-A".into(), "nowhere", "p".repeat(400_000))
}

/// A publisher whose item `A` is at its size limit: it takes no `LastError` unless
/// its payload goes.
fn publisher(config: PublisherConfig, refusals: Refusals) -> Publisher<RecordingSink, MemoryStore> {
    let store = MemoryStore::default();
    store.put(
        key(),
        crate::schema::OutboxItem {
            status: Some("PENDING".into()),
            payload: Some("p".repeat(400_000)),
            ..crate::schema::OutboxItem::default()
        },
    );
    store.fail(StoreFaults {
        full: vec![key()],
        ..StoreFaults::default()
    });
    Publisher::new(RecordingSink::new(refusals), store, config)
        .with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

fn attr<'m>(m: &'m OutboundMessage, name: &str) -> Option<&'m AttrValue> {
    m.attributes.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

#[tokio::test]
async fn a_copy_too_large_for_the_queue_goes_through_the_claim_check_and_the_reason_is_on_the_item()
{
    let p = publisher(config(Some("large")), Refusals::default());
    let outcomes = p.process(&[at_the_item_limit()]).await;
    // The dead-letter queue holds a pointer to the payload, written to the bucket
    let pointer = PayloadPointer::for_failed("large", "id-A");
    assert_eq!(p.sink.object(&pointer), Some("p".repeat(400_000)));
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(PayloadPointer::decode(&dead[0].body), Some(pointer));
    assert_eq!(
        attr(&dead[0], ATTR_EXTENDED_PAYLOAD_SIZE),
        Some(&AttrValue::Number("400000".into()))
    );
    // And the item, its payload given up for the copy that holds it, has its reason
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    let reason = stored.last_error.expect("LastError");
    assert!(reason.contains("no route for topic `nowhere`"), "{reason}");
    assert!(reason.contains("s3://large/failed/id-A"), "{reason}");
    assert_eq!(stored.payload, None);
    assert!(stored.failed_at.is_some());
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { marked: true, reason } if reason.contains("s3://large")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn without_a_bucket_the_queue_gets_a_record_without_the_payload() {
    let p = publisher(config(None), Refusals::default());
    let outcomes = p.process(&[at_the_item_limit()]).await;
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].size() < 1024, "fits any queue: {}", dead[0].size());
    assert!(dead[0].body.contains("400000 bytes"), "{}", dead[0].body);
    assert_eq!(
        attr(&dead[0], ATTR_PAYLOAD_ON),
        Some(&AttrValue::String("outbox item".into()))
    );
    match attr(&dead[0], ATTR_ERROR) {
        Some(AttrValue::String(e)) => assert!(e.contains("no route"), "{e}"),
        other => panic!("{other:?}"),
    }
    // The item keeps its payload and is FAILED (no room for the reason: the record has it)
    let stored = p.store.get(&key()).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    assert!(stored.payload.is_some());
    assert_eq!(stored.payload_on, None);
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { marked: true, reason } if reason.contains("record carries no payload")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_bucket_refusing_the_write_for_good_falls_back_to_the_record() {
    let refusals = Refusals {
        buckets_refused: vec!["large".into()],
        ..Refusals::default()
    };
    let p = publisher(config(Some("large")), refusals);
    let outcomes = p.process(&[at_the_item_limit()]).await;
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(attr(&dead[0], ATTR_PAYLOAD_ON).is_some(), "a record");
    match &outcomes[0] {
        Outcome::DeadLettered {
            marked: true,
            reason,
        } => {
            assert!(reason.contains("could not go through s3://large"), "{reason}");
            assert!(reason.contains("InvalidBucketState"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_bucket_failing_transiently_leaves_the_item_pending_for_a_retry() {
    let refusals = Refusals {
        buckets_down: vec!["large".into()],
        ..Refusals::default()
    };
    let p = publisher(config(Some("large")), refusals);
    let outcomes = p.process(&[at_the_item_limit()]).await;
    assert!(matches!(&outcomes[0], Outcome::Retry { .. }), "{outcomes:?}");
    assert!(p.sink.delivered("dlq").is_empty());
    assert!(p.store.failed().is_empty());
}

#[tokio::test]
async fn a_copy_the_queue_refuses_for_its_content_goes_through_the_claim_check() {
    // The queue's limit was not known (so the copy was sent) and it refused it.
    let mut config = config(Some("large"));
    config.dead_letter = Destination::sqs("https://q/dlq");
    let body = "refused by every queue".to_owned();
    let refusals = Refusals {
        refused_everywhere: vec![body.clone()],
        ..Refusals::default()
    };
    let p = publisher(config, refusals);
    let item = super::publish_work("A", key(), "id-A".into(), "nowhere", body.clone());
    let outcomes = p.process(&[item]).await;
    let pointer = PayloadPointer::for_failed("large", "id-A");
    assert_eq!(p.sink.object(&pointer), Some(body));
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { marked: true, reason }
            if reason.contains("refused the copy") && reason.contains("s3://large/failed/id-A")),
        "{outcomes:?}"
    );
    assert_eq!(p.store.get(&key()).and_then(|i| i.payload), None);
}

#[test]
fn a_dead_letter_copy_continues_the_messages_trace() {
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let Work::Publish(mut msg) = at_the_item_limit().work else {
        panic!("a message")
    };
    msg.trace = Some(crate::trace::TraceContext::from_w3c(tp, None).expect("context"));
    let poison = poison_of(&msg, "no route".into());
    let dlq = Destination::sqs("https://q/dlq");
    let traceparent = |copy: &OutboundMessage| {
        copy.attributes
            .iter()
            .find(|(n, _)| *n == crate::trace::ATTR_TRACEPARENT)
            .map(|(_, v)| v.text().to_owned())
    };
    let whole = dead_letter_copy(&poison, &dlq, &crate::policy::CopyForm::Whole);
    assert_eq!(traceparent(&whole).as_deref(), Some(tp));
    // The record, sized for a 1 KiB queue, keeps only the header that is not counted.
    let record = dead_letter_copy(&poison, &dlq, &crate::policy::CopyForm::Record);
    assert_eq!(traceparent(&record), None);
    for copy in [whole, record] {
        assert!(copy.trace_header.as_deref().is_some_and(|h| h.starts_with("Root=1-0af76519-")));
    }
}

#[tokio::test]
async fn a_claim_check_written_for_a_dead_letter_copy_counts_as_offloaded() {
    let p = publisher(config(Some("large")), Refusals::default());
    let (_, summary) = p.process_delivery(&[at_the_item_limit()]).await;
    assert_eq!((summary.dead_lettered, summary.offloaded), (1, 1), "{summary:?}");
    // A copy sent whole, or as a record without its payload, writes nothing
    let p = publisher(config(None), Refusals::default());
    let (_, summary) = p.process_delivery(&[at_the_item_limit()]).await;
    assert_eq!((summary.dead_lettered, summary.offloaded), (1, 0), "{summary:?}");
}
