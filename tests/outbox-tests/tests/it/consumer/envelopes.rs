//! The outbox message id inside EventBridge and SNS envelopes: the consumer keys by
//! it, so a message published twice through either is applied once.

use super::marker::{count_once, counter};
use super::{Orders, order_of};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use dynamodb_outbox_idempotency::{Delivery, Envelope, IdempotencyError, MessageMarker};
use orders_consumer::handle;
use outbox_tests::subscribers::{SnsDelivery, bus_into, topic_into};
use std::time::Duration;

/// The outbox message id of `msg`, as the consumer's dedup key.
fn outbox_id(msg: &SqsMessage) -> Result<String, IdempotencyError> {
    Delivery::open(msg).message_id().map(str::to_owned)
}

fn fixture_event(name: &str) -> SqsEvent {
    let path = format!("{}/fixtures/events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let event: SqsEvent = serde_json::from_str(&text).expect("parse fixture");
    let round_trip: SqsEvent =
        serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
    assert_eq!(round_trip, event);
    event
}

/// Both copies in a fixture: one outbox id and one payload under two SQS ids.
fn assert_copies_share_the_outbox_id(event: &SqsEvent, outbox_id: &str, envelope: Envelope) {
    assert_eq!(event.records.len(), 2);
    assert_ne!(event.records[0].message_id, event.records[1].message_id);
    for m in &event.records {
        let delivery = Delivery::open(m);
        assert_eq!(delivery.envelope(), envelope);
        assert_eq!(delivery.message_id().unwrap(), outbox_id);
        let job: serde_json::Value = delivery.parse().expect("the payload, not the envelope");
        assert!(job["id"].is_string() && job["quantity"].is_u64(), "{job}");
    }
}

#[test]
fn the_outbox_id_of_an_eventbridge_event_on_sqs_is_read_from_its_detail() {
    let event = fixture_event("sqs-eventbridge.json");
    assert_eq!(
        outbox_id(&event.records[0]).unwrap(),
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e09"
    );
    assert_copies_share_the_outbox_id(
        &event,
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e09",
        Envelope::EventBridge,
    );
}

#[test]
fn the_outbox_id_of_an_sns_notification_on_sqs_is_read_from_its_message_attributes() {
    let event = fixture_event("sqs-sns.json");
    assert_eq!(
        outbox_id(&event.records[0]).unwrap(),
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e05"
    );
    assert_copies_share_the_outbox_id(
        &event,
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e05",
        Envelope::Sns,
    );
}

#[test]
fn a_message_without_an_outbox_id_is_refused_rather_than_keyed_by_its_sqs_id() {
    let mut msg = SqsMessage::default();
    msg.message_id = Some("sqs-1".into());
    msg.body = Some(r#"{"id":"o-1","quantity":1}"#.into());
    let err = outbox_id(&msg).expect_err("no outbox id");
    assert!(matches!(err, IdempotencyError::NoMessageId { .. }), "{err}");
    assert!(!err.is_retryable(), "{err}");
    // Keying by the SQS id is an explicit choice
    let opted_in = dynamodb_outbox_idempotency::BatchProcessor::new().sqs_message_id_fallback();
    assert_eq!(opted_in.open(&msg).message_id().unwrap(), "sqs-1");
}

/// Commits one order message routed to `destination` and lets two publishers handle
/// its stream record at once (each read it `PENDING` before the other marked it): two
/// copies on the job queue.
async fn publish_twice(destination: &str, body: &str) -> String {
    let mut ob = outbox_tests::Outbox::new().await;
    let mut config = ob.config();
    config.routes =
        dynamodb_outbox::Routes::parse(&format!(r#"{{"orders":"{destination}"}}"#), None)
            .expect("routes");
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[dynamodb_outbox::NewMessage::new("ORDER#9", "orders", body)],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let publisher = crate::publisher::redelivery::read_before_the_mark(ob.publisher_with(config));
    for _ in 0..2 {
        let (response, summary) =
            dynamodb_outbox::stream::handle_stream_event(&publisher, &event).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(summary.sent, 1);
    }
    committed.message_ids[0].clone()
}

/// Receives until `count` messages came (deliveries through SNS and EventBridge are
/// asynchronous), without deleting them.
async fn receive_copies(orders: &Orders, count: usize) -> SqsEvent {
    let mut all = SqsEvent::default();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while all.records.len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {count} copies arrived",
            all.records.len()
        );
        all.records.extend(orders.receive().await.records);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    all
}

/// Publishes one order message twice to `destination` and applies each copy that
/// reaches the job queue through a processed-message marker, checking that both carry
/// the message's outbox id; the copies.
async fn count_both_copies(orders: &Orders, destination: &str) -> SqsEvent {
    let message_id = publish_twice(destination, r#"{"id":"o-9","quantity":2}"#).await;
    let event = receive_copies(orders, 2).await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    for m in &event.records {
        assert_eq!(outbox_id(m).unwrap(), message_id);
        count_once(m, &marker, &orders.table).await.unwrap();
    }
    event
}

#[tokio::test]
async fn an_outbox_message_published_twice_through_eventbridge_is_applied_once() {
    // Given an outbox message published twice to a bus whose rule feeds the job queue
    let orders = Orders::new().await;
    let bus_arn = bus_into(
        &orders.clients,
        "shop",
        "dynamodb-outbox",
        &orders.queue_arn,
    )
    .await;
    // When both copies are handled with a processed-message marker
    let copies = count_both_copies(&orders, &bus_arn).await;
    assert_ne!(copies.records[0].message_id, copies.records[1].message_id);
    // Then the counter moved once
    assert_eq!(counter(&orders).await, Some(1));
}

#[tokio::test]
async fn an_outbox_message_published_twice_through_sns_without_raw_delivery_is_applied_once() {
    // Given an outbox message published twice to a topic the job queue subscribes to
    // without raw message delivery (each copy wrapped in an SNS notification)
    let orders = Orders::new().await;
    let topic_arn = topic_into(
        &orders.clients,
        "orders-topic",
        &orders.queue_arn,
        SnsDelivery::Notification,
    )
    .await;
    // When both copies are handled with a processed-message marker
    count_both_copies(&orders, &topic_arn).await;
    // Then the counter moved once
    assert_eq!(counter(&orders).await, Some(1));
}

#[tokio::test]
async fn the_reference_consumer_stores_orders_that_arrive_in_eventbridge_and_sns_envelopes() {
    // Given an order published through an event bus and another through an SNS topic
    let orders = Orders::new().await;
    let bus_arn = bus_into(
        &orders.clients,
        "shop",
        "dynamodb-outbox",
        &orders.queue_arn,
    )
    .await;
    let topic_arn = topic_into(
        &orders.clients,
        "orders-topic",
        &orders.queue_arn,
        SnsDelivery::Notification,
    )
    .await;
    publish_twice(&bus_arn, r#"{"id":"via-bus","quantity":2}"#).await;
    publish_twice(&topic_arn, r#"{"id":"via-sns","quantity":3}"#).await;
    let event = receive_copies(&orders, 4).await;
    // When the reference consumer handles them
    let report = handle(&event, &orders.deps).await;
    // Then it read the order inside each envelope, stored each once, and acknowledged
    // every copy
    assert!(report.failed_ids().is_empty(), "{report:?}");
    assert_eq!(
        order_of(&orders.order("via-bus").await.expect("stored")),
        ("via-bus".to_owned(), 2, 600)
    );
    assert_eq!(
        order_of(&orders.order("via-sns").await.expect("stored")),
        ("via-sns".to_owned(), 3, 850)
    );
}
