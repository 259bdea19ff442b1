//! Large payloads reach the consumer whole through SNS, EventBridge, the publisher
//! and the sweeper.

use super::{consume, keys, notified, payload, publish, received, routes};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::{AwsSweeper, ScanMode, SweeperConfig};
use dynamodb_outbox::{FromSdkConfig, NewMessage};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer, object_key};
use dynamodb_outbox_core::policy::Budget;
use outbox_tests::subscribers::{Subscriber, bus_into, subscriber};
use outbox_tests::{Outbox, s};
use std::time::Duration;

#[tokio::test]
async fn a_300_kib_payload_through_an_sns_topic_reaches_the_consumer_whole() {
    // Given a topic (256 KiB at most) with a queue subscribed, and a bucket
    let mut ob = Outbox::new().await;
    let bucket = ob.bucket().await;
    let (sub, topic_arn) = notified(&ob, "large-sns-sub").await;
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
    let bucket = ob.bucket().await;
    let sub = subscriber(&ob.clients, "large-events-sub").await;
    let bus_arn = bus_into(&ob.clients, "large-shop", "dynamodb-outbox", &sub.arn).await;
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
    let bucket = ob.bucket().await;
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
    let sub = Subscriber::of(&ob.clients, &ob.queue.url).await;
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
    let bucket = ob.bucket().await;
    let (sub, topic_arn) = notified(&ob, "large-sweep-sub").await;
    let big = payload(300 * 1024);
    let committed = ob
        .writer()
        .index_at_commit(true)
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
