//! The large-payload offload on the emulator: payloads too large for their destination (or for
//! an outbox item) travel in S3, the messages carry the extended clients' pointer,
//! and the consumer library hands the handler the payload itself.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_lambda_events::event::sqs::SqsMessage;
use dynamodb_outbox::clock::now_ms;
use dynamodb_outbox::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer, object_key};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::{AwsSweeper, Budget, ScanMode, SweeperConfig};
use dynamodb_outbox::{FromSdkConfig, NewMessage, PublisherConfig, Routes};
use dynamodb_outbox_idempotency::{BatchProcessor, BatchReport, MessageFailure, S3Payloads};
use outbox_devkit::provision;
use outbox_tests::{Outbox, drain, lambda_message, s, unique};
use std::time::Duration;

/// A queue the test reads: its URL and ARN.
struct Subscriber {
    url: String,
    arn: String,
}

async fn subscriber(ob: &Outbox, prefix: &str) -> Subscriber {
    let url = provision::create_queue(&ob.clients.sqs, &unique(prefix), 30)
        .await
        .expect("queue");
    let arn = provision::queue_arn(&ob.clients.sqs, &url)
        .await
        .expect("arn");
    Subscriber { url, arn }
}

async fn bucket(ob: &Outbox) -> String {
    let name = unique("large");
    ob.clients
        .s3
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("create bucket");
    name
}

/// Every key under `outbox/` in `bucket`.
async fn keys(ob: &Outbox, bucket: &str) -> Vec<String> {
    let out = ob
        .clients
        .s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix("outbox/")
        .send()
        .await
        .expect("list");
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

/// An SNS topic with `sub` subscribed (no raw delivery: the consumer opens the
/// notification).
async fn topic(ob: &Outbox, sub: &Subscriber) -> String {
    let arn = ob
        .clients
        .sns
        .create_topic()
        .name(unique("large-notify"))
        .send()
        .await
        .expect("topic")
        .topic_arn
        .expect("arn");
    ob.clients
        .sns
        .subscribe()
        .topic_arn(&arn)
        .protocol("sqs")
        .endpoint(&sub.arn)
        .send()
        .await
        .expect("subscribe");
    arn
}

/// An event bus with a rule sending the outbox's events to `sub`.
async fn bus(ob: &Outbox, sub: &Subscriber) -> String {
    let name = unique("large-shop");
    let arn = ob
        .clients
        .eventbridge
        .create_event_bus()
        .name(&name)
        .send()
        .await
        .expect("bus")
        .event_bus_arn
        .expect("arn");
    ob.clients
        .eventbridge
        .put_rule()
        .name("outbox-to-queue")
        .event_bus_name(&name)
        .event_pattern(r#"{"source":["dynamodb-outbox"]}"#)
        .send()
        .await
        .expect("rule");
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("q")
        .arn(&sub.arn)
        .build()
        .expect("target");
    ob.clients
        .eventbridge
        .put_targets()
        .rule("outbox-to-queue")
        .event_bus_name(&name)
        .targets(target)
        .send()
        .await
        .expect("targets");
    arn
}

/// A JSON payload of `bytes` bytes.
fn payload(bytes: usize) -> String {
    let filler = "x".repeat(bytes - r#"{"blob":""}"#.len());
    format!(r#"{{"blob":"{filler}"}}"#)
}

/// `topic` → `destination`, large payloads to `bucket` when given.
fn routes(ob: &Outbox, topic: &str, destination: &str, bucket: Option<&str>) -> PublisherConfig {
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"{topic}":"{destination}"}}"#), None)
        .expect("routes")
        .with_large_payloads(bucket.map(str::to_owned), None);
    config
}

/// Commits `payloads` on `topic` (one aggregate each) and publishes them through the
/// stream path with `config`; returns the message ids.
async fn publish(
    ob: &mut Outbox,
    config: PublisherConfig,
    topic: &str,
    payloads: &[String],
) -> Vec<String> {
    let messages: Vec<NewMessage> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| NewMessage::new(format!("ORDER#{i}"), topic, p.clone()))
        .collect();
    let committed = ob.writer().commit(vec![], &messages).await.expect("commit");
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.sent, payloads.len());
    committed.message_ids
}

/// Everything on `sub`, as Lambda's SQS event would carry it.
async fn received(ob: &Outbox, sub: &Subscriber) -> Vec<SqsMessage> {
    drain(&ob.clients.sqs, &sub.url)
        .await
        .iter()
        .map(|m| lambda_message(m, &sub.arn, "us-east-1"))
        .collect()
}

/// Runs the batch processor, reading offloaded payloads from the emulator's S3, with
/// a handler that returns what it was handed: the payload and the outbox id.
async fn consume(ob: &Outbox, messages: &[SqsMessage]) -> BatchReport<(String, String), String> {
    BatchProcessor::new()
        .large_payloads(S3Payloads::new(ob.clients.s3.clone()))
        .run_messages(messages, |d| async move {
            let id = d.message_id().map_err(|e| e.to_string())?.to_owned();
            Ok((d.body().unwrap_or_default().to_owned(), id))
        })
        .await
}

#[tokio::test]
async fn a_300_kib_payload_through_an_sns_topic_reaches_the_consumer_whole() {
    // Given a topic (256 KiB at most) with a queue subscribed, and a bucket
    let mut ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let sub = subscriber(&ob, "large-sns-sub").await;
    let topic_arn = topic(&ob, &sub).await;
    let config = routes(&ob, "notify", &topic_arn, Some(&bucket));
    // When a 300 KiB payload is published
    let big = payload(300 * 1024);
    let ids = publish(&mut ob, config, "notify", std::slice::from_ref(&big)).await;
    // Then the object is at outbox/<MessageId> and the consumer's handler gets the payload
    assert_eq!(keys(&ob, &bucket).await, [object_key(&ids[0])]);
    let messages = received(&ob, &sub).await;
    assert_eq!(messages.len(), 1);
    let report = consume(&ob, &messages).await;
    let (body, id) = report.outcomes[0].result.as_ref().expect("consumed");
    assert_eq!((body.len(), id.as_str()), (big.len(), ids[0].as_str()));
    assert!(*body == big, "the payload arrives intact");
}

#[tokio::test]
async fn a_300_kib_payload_on_an_event_bus_reaches_the_consumer_whole() {
    // Given a bus (256 KiB at most) with a rule targeting a queue, and a bucket
    let mut ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let sub = subscriber(&ob, "large-events-sub").await;
    let bus_arn = bus(&ob, &sub).await;
    let config = routes(&ob, "order-placed", &bus_arn, Some(&bucket));
    // When a 300 KiB payload is published
    let big = payload(300 * 1024);
    let ids = publish(&mut ob, config, "order-placed", std::slice::from_ref(&big)).await;
    // Then the event carries the pointer where the payload goes, and the handler the payload
    let messages = received(&ob, &sub).await;
    assert_eq!(messages.len(), 1);
    let event: serde_json::Value =
        serde_json::from_str(messages[0].body.as_deref().expect("body")).expect("event");
    let pointer = PayloadPointer::decode(&event["detail"]["payload"].to_string());
    assert_eq!(pointer, Some(PayloadPointer::for_message(&bucket, &ids[0])));
    assert_eq!(event["detail"]["outbox"]["extendedPayloadSize"], big.len());
    let report = consume(&ob, &messages).await;
    let (body, id) = report.outcomes[0].result.as_ref().expect("consumed");
    assert_eq!(id, &ids[0]);
    assert!(*body == big, "the payload arrives intact");
}

#[tokio::test]
async fn a_1_mib_producer_payload_round_trips_through_the_publisher_to_the_consumer() {
    // Given a writer with a bucket, and a publisher with none (it forwards pointers)
    let mut ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let writer = ob.writer().large_payloads(ob.clients.s3.clone(), &bucket);
    let big = payload(1024 * 1024);
    // When the application commits a 1 MiB payload, more than an item holds
    let committed = writer
        .commit(vec![], &[NewMessage::new("ORDER#1", "orders", big.clone())])
        .await
        .expect("commit");
    let id = &committed.message_ids[0];
    let pointer = PayloadPointer::for_message(&bucket, id);
    let item = ob
        .item("ORDER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(
        s(&item, "Payload"),
        Some(pointer.encode()),
        "the item holds the pointer"
    );
    assert_eq!(outbox_tests::n(&item, "PayloadSize"), Some(1024 * 1024));
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 1);
    // Then the queue gets the pointer as it is, one object exists, and the handler the payload
    let sub = Subscriber {
        url: ob.queue.url.clone(),
        arn: provision::queue_arn(&ob.clients.sqs, &ob.queue.url)
            .await
            .expect("arn"),
    };
    let messages = received(&ob, &sub).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].body, Some(pointer.encode()));
    let size = messages[0]
        .message_attributes
        .get(ATTR_EXTENDED_PAYLOAD_SIZE)
        .and_then(|a| a.string_value.clone());
    assert_eq!(
        size,
        Some(big.len().to_string()),
        "the size the producer recorded"
    );
    assert_eq!(keys(&ob, &bucket).await, [object_key(id)]);
    let report = consume(&ob, &messages).await;
    let (body, consumed_id) = report.outcomes[0].result.as_ref().expect("consumed");
    assert_eq!(consumed_id, id);
    assert!(
        body.len() == big.len() && *body == big,
        "1 MiB arrives intact"
    );
}

#[tokio::test]
async fn the_sweeper_sends_a_stuck_large_payload_through_the_bucket_too() {
    // Given a 300 KiB message for an SNS topic that the stream path never published
    let ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let sub = subscriber(&ob, "large-sweep-sub").await;
    let topic_arn = topic(&ob, &sub).await;
    let big = payload(300 * 1024);
    let committed = ob
        .writer()
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("ORDER#1", "notify", big.clone())])
        .await
        .expect("commit");
    // When the sweeper, configured with the bucket, finds it
    let mut config = SweeperConfig::new(routes(&ob, "notify", &topic_arn, Some(&bucket)));
    config.scan_mode = ScanMode::Off;
    config.grace = Duration::ZERO;
    let sweeper = AwsSweeper::with_sink(config, ob.clients.dynamodb.clone(), ob.clients.sink());
    sweeper
        .sweep(Budget::for_window(
            now_ms() + 1_000,
            Duration::from_secs(30),
        ))
        .await;
    // Then it is SENT, its payload is in the bucket, and the consumer gets it whole
    let item = ob
        .item("ORDER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    assert_eq!(
        keys(&ob, &bucket).await,
        [object_key(&committed.message_ids[0])]
    );
    let report = consume(&ob, &received(&ob, &sub).await).await;
    assert_eq!(report.outcomes.len(), 1);
    let (body, _) = report.outcomes[0].result.as_ref().expect("consumed");
    assert!(*body == big, "the payload arrives intact");
}

#[tokio::test]
async fn a_republish_overwrites_the_same_object() {
    // Given a queue route whose threshold sends every payload over 1 KiB to the bucket
    let mut ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let mut config = ob.config();
    config.routes = config
        .routes
        .with_large_payloads(Some(bucket.clone()), Some(1024));
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("ORDER#1", "orders", payload(4096))],
        )
        .await
        .expect("commit");
    // When the same stream record is published twice (a retried batch)
    let event = ob.filtered_event().await;
    for _ in 0..2 {
        let (response, _) = handle_stream_event(&ob.publisher_with(config.clone()), &event).await;
        assert!(response.batch_item_failures.is_empty());
    }
    // Then two messages carry the same pointer, and the bucket holds one object
    let messages = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(messages.len(), 2);
    let pointer = PayloadPointer::for_message(&bucket, &committed.message_ids[0]);
    for m in &messages {
        assert_eq!(m.body(), Some(pointer.encode().as_str()));
        let size = m
            .message_attributes()
            .and_then(|a| a.get(ATTR_EXTENDED_PAYLOAD_SIZE))
            .map(|v| (v.data_type(), v.string_value()));
        assert_eq!(size, Some(("Number", Some("4096"))));
    }
    assert_eq!(
        keys(&ob, &bucket).await,
        [object_key(&committed.message_ids[0])]
    );
}

#[tokio::test]
async fn a_deleted_object_fails_its_message_only_with_a_retryable_reason() {
    // Given two offloaded messages on a queue, one of whose objects is deleted
    let mut ob = Outbox::new().await;
    let bucket = bucket(&ob).await;
    let mut config = ob.config();
    config.routes = config
        .routes
        .with_large_payloads(Some(bucket.clone()), Some(1024));
    let ids = publish(&mut ob, config, "orders", &[payload(2048), payload(3072)]).await;
    ob.clients
        .s3
        .delete_object()
        .bucket(&bucket)
        .key(object_key(&ids[1]))
        .send()
        .await
        .expect("delete");
    let sub = Subscriber {
        url: ob.queue.url.clone(),
        arn: provision::queue_arn(&ob.clients.sqs, &ob.queue.url)
            .await
            .expect("arn"),
    };
    // When the consumer processes the batch
    let messages = received(&ob, &sub).await;
    assert_eq!(messages.len(), 2);
    let report = consume(&ob, &messages).await;
    // Then only the message whose object is gone fails, retryably, naming the pointer
    let failed: Vec<&str> = report
        .outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .filter_map(|o| o.outbox_message_id.as_deref())
        .collect();
    assert_eq!(failed, [ids[1].as_str()]);
    let outcome = report
        .outcomes
        .iter()
        .find(|o| o.outbox_message_id.as_deref() == Some(&ids[1]))
        .expect("outcome");
    match &outcome.result {
        Err(MessageFailure::PayloadUnavailable(e)) => {
            assert!(e.is_retryable(), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("s3://{bucket}/outbox/{}", ids[1])),
                "{text}"
            );
            assert!(text.contains("does not exist"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(report.response().batch_item_failures.len(), 1);
}

#[tokio::test]
async fn without_a_bucket_an_oversized_payload_is_failed_saying_how_to_enable_the_claim_check() {
    // Given an SNS route without a bucket
    let mut ob = Outbox::new().await;
    let sub = subscriber(&ob, "large-none-sub").await;
    let topic_arn = topic(&ob, &sub).await;
    let config = routes(&ob, "notify", &topic_arn, None);
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("ORDER#1", "notify", payload(300 * 1024))],
        )
        .await
        .expect("commit");
    // When it is published
    let event = ob.filtered_event().await;
    let (_, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then it is FAILED with the reason, copied to the dead-letter queue, and not sent
    assert_eq!(summary.dead_lettered, 1);
    let item = ob
        .item("ORDER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("accepts at most 262144 bytes"), "{reason}");
    assert!(reason.contains("OUTBOX_LARGE_PAYLOAD_BUCKET"), "{reason}");
    assert_eq!(drain(&ob.clients.sqs, &ob.dlq_url).await.len(), 1);
    assert!(drain(&ob.clients.sqs, &sub.url).await.is_empty());
}
