//! The publish path with the large-payload offload ([`crate::large_payload`]): a payload over its
//! destination's limit goes to the route's bucket first and the message carries the
//! pointer; without a bucket it is poison, with a reason that says how to enable it.

use crate::fakes::{MemoryStore, RecordingSink, Refusals};
use crate::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer};
use crate::message::{AttrValue, OutboundMessage};
use crate::publish::*;
use crate::route::{Destination, Routes};

const TOPIC_ARN: &str = "arn:aws:sns:eu-west-1:123456789012:orders";
const BUS_ARN: &str = "arn:aws:events:eu-west-1:123456789012:event-bus/shop";

/// `sns` → an SNS topic, `bus` → an EventBridge bus, `queue` → an SQS queue; large
/// payloads to `bucket` when given.
fn config(bucket: Option<&str>, threshold: Option<usize>) -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                ("sns", TOPIC_ARN),
                ("bus", BUS_ARN),
                ("queue", "https://q/orders"),
            ]
            .map(|(t, d)| (t.to_owned(), Destination::parse(d, None).expect("valid"))),
            None,
        )
        .with_large_payloads(bucket.map(str::to_owned), threshold),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

fn work(pk: &str, topic: &str, payload: String) -> WorkItem {
    let key = ItemKey {
        pk: pk.into(),
        sk: format!("MESSAGE#{pk}#{}", payload.len()),
    };
    let message_id = format!("id-{pk}-{}", payload.len());
    super::publish_work(pk, key, message_id, topic, payload)
}

fn publisher(config: PublisherConfig, refusals: Refusals) -> Publisher<RecordingSink, MemoryStore> {
    Publisher::new(RecordingSink::new(refusals), MemoryStore::default(), config)
        .with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

fn big() -> String {
    "p".repeat(300 * 1024)
}

#[tokio::test]
async fn a_payload_over_snss_limit_goes_to_the_bucket_and_the_message_points_to_it() {
    let p = publisher(config(Some("large"), None), Refusals::default());
    let outcomes = p.process(&[work("A", "sns", big())]).await;
    assert_eq!(outcomes, [Outcome::Sent { marked: true }]);
    let pointer = PayloadPointer::for_message("large", "id-A-307200");
    assert_eq!(p.sink.object(&pointer), Some(big()));
    let sent = p.sink.delivered(TOPIC_ARN);
    assert_eq!(sent.len(), 1);
    assert_eq!(PayloadPointer::decode(&sent[0].body), Some(pointer));
    assert!(sent[0].attributes.contains(&(
        ATTR_EXTENDED_PAYLOAD_SIZE,
        AttrValue::Number("307200".into())
    )));
}

#[tokio::test]
async fn a_republish_overwrites_the_same_object() {
    let p = publisher(config(Some("large"), None), Refusals::default());
    for _ in 0..2 {
        p.process(&[work("A", "bus", big())]).await;
    }
    assert_eq!(p.sink.object_counts(), (1, 2), "one object, written twice");
    let events = p.sink.delivered(BUS_ARN);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].body, events[1].body);
}

#[tokio::test]
async fn without_a_bucket_an_oversized_payload_is_poison_saying_how_to_enable_the_claim_check() {
    let p = publisher(config(None, None), Refusals::default());
    match &p.process(&[work("A", "sns", big())]).await[0] {
        Outcome::DeadLettered {
            reason,
            marked: true,
        } => {
            assert!(reason.contains("accepts at most 262144 bytes"), "{reason}");
            assert!(reason.contains("OUTBOX_LARGE_PAYLOAD_BUCKET"), "{reason}");
            assert!(reason.contains("large_payload_bucket"), "{reason}");
            // The stacks' setting, off by default (issue 39): the user turns it on there.
            assert!(reason.contains("large_payloads = true"), "{reason}");
            assert!(reason.contains("largePayloads: true"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(p.sink.delivered(TOPIC_ARN).is_empty());
    assert_eq!(p.sink.object_counts(), (0, 0));
}

#[tokio::test]
async fn above_the_threshold_a_payload_that_fits_is_offloaded_too() {
    let p = publisher(config(Some("large"), Some(1000)), Refusals::default());
    let outcomes = p
        .process(&[
            work("A", "queue", "x".repeat(1001)),
            work("B", "queue", "x".repeat(1000)),
        ])
        .await;
    assert_eq!(outcomes, vec![Outcome::Sent { marked: true }; 2]);
    let bodies: Vec<String> = p
        .sink
        .delivered("q/orders")
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert!(PayloadPointer::decode(&bodies[0]).is_some());
    assert_eq!(bodies[1], "x".repeat(1000));
}

#[tokio::test]
async fn a_producers_pointer_is_forwarded_as_it_is_without_a_second_write() {
    let p = publisher(config(Some("large"), Some(10)), Refusals::default());
    let pointer = PayloadPointer::for_message("producer-bucket", "id-A").encode();
    let outcomes = p.process(&[work("A", "sns", pointer.clone())]).await;
    assert_eq!(outcomes, [Outcome::Sent { marked: true }]);
    assert_eq!(p.sink.delivered(TOPIC_ARN)[0].body, pointer);
    assert_eq!(p.sink.object_counts(), (0, 0));
}

#[tokio::test]
async fn a_failed_write_sends_no_pointer_and_holds_back_the_aggregate() {
    let refusals = Refusals {
        buckets_down: vec!["large".into()],
        ..Refusals::default()
    };
    let p = publisher(config(Some("large"), None), refusals);
    let outcomes = p
        .process(&[
            work("A", "sns", big()),
            work("A", "sns", "small".into()),
            work("B", "sns", "other".into()),
        ])
        .await;
    assert!(
        matches!(&outcomes[0], Outcome::Retry { reason } if reason.contains("could not write the payload to S3")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], Outcome::Blocked);
    assert_eq!(outcomes[2], Outcome::Sent { marked: true });
    let bodies: Vec<String> = p
        .sink
        .delivered(TOPIC_ARN)
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["other"]);
}

#[tokio::test]
async fn a_write_refused_for_good_is_poison_and_its_payload_goes_to_the_dead_letter_queue() {
    let refusals = Refusals {
        buckets_refused: vec!["large".into()],
        ..Refusals::default()
    };
    let p = publisher(config(Some("large"), None), refusals);
    match &p.process(&[work("A", "sns", big())]).await[0] {
        Outcome::DeadLettered { reason, marked } => {
            assert!(*marked);
            assert!(reason.contains("InvalidBucketState"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(p.sink.delivered(TOPIC_ARN).is_empty());
    assert_eq!(p.sink.delivered("dlq")[0].body, big());
}

/// A payload that fits SNS's 256 KiB as SNS counts it (body plus attributes), but not
/// a subscriber queue's 256 KiB once SNS wraps it in its notification envelope.
fn fits_raw_not_enveloped() -> String {
    "p".repeat(261_000)
}

fn body_sent(config: &PublisherConfig, payload: String) -> Result<String, String> {
    let plan = plan(config, &[work("A", "sns", payload)]);
    match (plan.messages().next(), plan.poison.first()) {
        (Some(m), None) => Ok(m.body.clone()),
        (_, Some((_, p))) => Err(p.reason.clone()),
        (None, None) => Err("nothing planned".into()),
    }
}

#[test]
fn an_sns_payload_is_sized_in_its_notification_envelope_unless_the_route_says_raw_delivery() {
    let payload = fits_raw_not_enveloped();
    let raw_size = OutboundMessage::for_destination(
        &match &work("A", "sns", payload.clone()).work {
            Work::Publish(m) => m.clone(),
            Work::Poison(_) => unreachable!(),
        },
        &Destination::parse(TOPIC_ARN, None).expect("topic"),
    )
    .size();
    assert!(raw_size <= 262_144, "fits as SNS counts it: {raw_size}");
    // Enveloped (the default): over a subscriber's 256 KiB, so it goes to the bucket
    let pointer = PayloadPointer::for_message("large", "id-A-261000");
    let sent = body_sent(&config(Some("large"), None), payload.clone()).expect("sent");
    assert_eq!(PayloadPointer::decode(&sent), Some(pointer));
    // and without a bucket it is poison, the reason saying what to set
    let reason = body_sent(&config(None, None), payload.clone()).expect_err("poison");
    assert!(reason.contains("notification envelope"), "{reason}");
    assert!(reason.contains("raw_delivery"), "{reason}");
    // Raw delivery declared on the route: sized as SNS counts it, sent as it is
    let mut raw = config(Some("large"), None);
    raw.routes = Routes::parse(
        &format!(r#"{{"sns":{{"destination":"{TOPIC_ARN}","raw_delivery":true}}}}"#),
        None,
    )
    .expect("routes")
    .with_large_payloads(Some("large".into()), None);
    assert_eq!(body_sent(&raw, payload.clone()), Ok(payload));
}

#[test]
fn raw_delivery_is_refused_on_a_route_that_is_not_an_sns_topic() {
    let err = Routes::parse(
        r#"{"q":{"destination":"https://sqs.eu-west-1.amazonaws.com/123456789012/q","raw_delivery":true}}"#,
        None,
    )
    .expect_err("refused");
    assert!(err.to_string().contains("raw_delivery applies to SNS topics only"), "{err}");
}

#[tokio::test]
async fn the_summary_counts_the_payloads_written_to_s3_not_those_sent_inline_or_forwarded() {
    // Given one payload over SNS's limit, one small and a producer's pointer
    let p = publisher(config(Some("large"), None), Refusals::default());
    let pointer = PayloadPointer::for_message("producer-bucket", "id-C").encode();
    let batch = [
        work("A", "sns", big()),
        work("B", "sns", "small".into()),
        work("C", "sns", pointer),
    ];
    // When the stream path publishes them
    let (outcomes, summary) = p.process_delivery(&batch).await;
    // Then only the one written to the bucket counts
    assert_eq!(outcomes, vec![Outcome::Sent { marked: true }; 3]);
    assert_eq!(p.sink.object_counts(), (1, 1));
    assert_eq!(summary.offloaded, 1, "{summary:?}");
}

#[tokio::test]
async fn a_write_that_failed_is_not_counted_as_offloaded() {
    let refusals = Refusals {
        buckets_down: vec!["large".into()],
        ..Refusals::default()
    };
    let p = publisher(config(Some("large"), None), refusals);
    let (_, summary) = p.process_delivery(&[work("A", "sns", big())]).await;
    assert_eq!((summary.offloaded, summary.retried), (0, 1), "{summary:?}");
}
