//! The publish path with the queues' own size limits (read on the first invocation, see
//! [`crate::policy::sqs_limit`]): what is over a queue's limit is poison before any send,
//! and a dead-letter copy over the dead-letter queue's limit is never sent (a record
//! without the payload is).

use crate::fakes::{MemoryStore, RecordingSink};
use crate::policy::QueueLimits;
use crate::publish::*;
use crate::route::{Destination, Routes};

const KIB_256: usize = 262_144;

/// `small` → a queue at 256 KiB, `large` → a queue at 1 MiB, both learned; the
/// dead-letter queue at `dlq_bytes`.
fn config(dlq_bytes: usize) -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                ("small".to_owned(), Destination::sqs("https://q/small")),
                ("large".to_owned(), Destination::sqs("https://q/large")),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
    .with_queue_limits(&QueueLimits::from([
        ("https://q/small".to_owned(), Ok(KIB_256)),
        ("https://q/large".to_owned(), Ok(1_048_576)),
        ("https://q/dlq".to_owned(), Ok(dlq_bytes)),
    ]))
}

fn work(pk: &str, topic: &str, payload: String) -> WorkItem {
    let key = ItemKey {
        pk: pk.into(),
        sk: format!("MESSAGE#{pk}"),
    };
    super::publish_work(pk, key, format!("id-{pk}"), topic, payload)
}

fn publisher(config: PublisherConfig) -> Publisher<RecordingSink, MemoryStore> {
    Publisher::new(RecordingSink::default(), MemoryStore::default(), config)
        .with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

#[tokio::test]
async fn a_message_over_its_queues_own_limit_is_poison_before_any_send() {
    let p = publisher(config(1_048_576));
    let big = "p".repeat(300 * 1024);
    let outcomes = p
        .process(&[work("A", "small", big.clone()), work("B", "large", big)])
        .await;
    match &outcomes[0] {
        Outcome::DeadLettered {
            reason,
            marked: true,
        } => assert!(
            reason.contains(
                "sqs:https://q/small accepts at most 262144 bytes (the queue's MaximumMessageSize)"
            ),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(outcomes[1], Outcome::Sent { marked: true });
    // Nothing went to the small queue: the only calls are the large queue's and the copy
    let calls: Vec<String> = p.sink.calls().into_iter().map(|(d, _)| d).collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(!calls.iter().any(|d| d.contains("small")), "{calls:?}");
    assert_eq!(p.sink.delivered("dlq").len(), 1);
}

#[tokio::test]
async fn a_copy_over_the_dead_letter_queues_own_limit_is_never_sent_a_record_is_and_the_payload_stays() {
    let p = publisher(config(KIB_256));
    let outcomes = p
        .process(&[work("A", "small", "p".repeat(300 * 1024))])
        .await;
    match &outcomes[0] {
        Outcome::DeadLettered {
            reason,
            marked: true,
        } => {
            assert!(
                reason.contains(
                    "the dead-letter queue sqs:https://q/dlq accepts at most 262144 bytes"
                ),
                "{reason}"
            );
            assert!(
                reason.contains("the payload is only on this item"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Only a record without the payload went to the dead-letter queue
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].size() < 1024, "{}", dead[0].size());
    let key = ItemKey {
        pk: "A".into(),
        sk: "MESSAGE#A".into(),
    };
    let stored = p.store.get(&key).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    assert_eq!(stored.payload_on, None, "the payload was not moved");
}

#[tokio::test]
async fn only_copies_over_the_limit_are_held_back_the_others_are_sent() {
    // Poison for another reason (no route): a small copy fits the dead-letter queue
    // and is sent; a larger one does not and is not (its record is).
    let p = publisher(config(KIB_256));
    let outcomes = p
        .process(&[
            work("A", "nowhere", "p".repeat(1000)),
            work("B", "nowhere", "p".repeat(300 * 1024)),
        ])
        .await;
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { reason, .. } if !reason.contains("only on this item")),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[1], Outcome::DeadLettered { reason, .. } if reason.contains("only on this item")),
        "{outcomes:?}"
    );
    // The small copy whole, the large one as a record without its payload
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 2, "{dead:?}");
    assert_eq!(dead[0].body, "p".repeat(1000));
    assert!(dead[1].size() < 1024, "{}", dead[1].size());
}

#[test]
fn calls_to_a_small_queue_still_fill_up_to_one_mebibyte() {
    // Four 200 KiB messages, each under the queue's 256 KiB: one call (800 KiB), as
    // SendMessageBatch's 1 MiB applies whatever the queue's message limit.
    let items: Vec<WorkItem> = (0..4)
        .map(|i| work(&format!("A{i}"), "small", "p".repeat(200 * 1024)))
        .collect();
    let plan = plan(&config(KIB_256), &items);
    assert_eq!(plan.poison_count(), 0);
    assert_eq!(plan.call_count(), 1);
}

#[test]
fn a_message_its_trace_attributes_would_push_over_the_limit_goes_without_them() {
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let traced = |payload: String| {
        let mut w = work("A", "small", payload);
        if let Work::Publish(m) = &mut w.work {
            m.trace = Some(crate::trace::TraceContext::from_w3c(tp, Some("k=v")).expect("context"));
        }
        w
    };
    // Sized so that the message fits the 256 KiB queue only without its trace attributes.
    let untraced = plan(&config(KIB_256), &[work("A", "small", String::new())]);
    let overhead = untraced.messages().next().map(crate::message::OutboundMessage::size).unwrap_or_default();
    let payload = "p".repeat(KIB_256 - overhead - 10);
    let p = plan(&config(KIB_256), &[traced(payload.clone())]);
    assert_eq!(p.poison_count(), 0, "a trace never makes a message poison");
    let sent = p.messages().next().expect("published");
    assert!(sent.attributes.iter().all(|(n, _)| *n != crate::trace::ATTR_TRACEPARENT));
    assert!(sent.trace_header.is_some(), "the X-Ray header, not counted, stays");
    // A smaller one keeps them.
    let p = plan(&config(KIB_256), &[traced("p".repeat(100))]);
    let sent = p.messages().next().expect("published");
    assert!(sent.attributes.iter().any(|(n, _)| *n == crate::trace::ATTR_TRACEPARENT));
}
