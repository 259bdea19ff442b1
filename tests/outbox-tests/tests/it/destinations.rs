//! SNS and EventBridge destinations against the emulator: each delivers to an SQS
//! queue (an SNS subscription with raw delivery, an EventBridge rule target), which
//! the test reads.

use dynamodb_outbox::message::{ATTR_AGGREGATE, ATTR_MESSAGE_ID, ATTR_TOPIC};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{NewMessage, Routes};
use outbox_tests::subscribers::{SnsDelivery, bus_into, subscriber, topic_into};
use outbox_tests::{Outbox, attr, drain, s};

#[tokio::test]
async fn messages_routed_to_an_sns_topic_reach_its_subscribers_with_their_attributes() {
    // Given a topic with a queue subscribed (raw delivery keeps body and attributes)
    let mut ob = Outbox::new().await;
    let queue = subscriber(&ob.clients, "notify-sub").await;
    let topic_arn = topic_into(&ob.clients, "notify", &queue.arn, SnsDelivery::Raw).await;
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"notify":"{topic_arn}"}}"#), None).expect("routes");
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("USER#5", "notify", r#"{"hello":"world"}"#)],
        )
        .await
        .expect("commit");
    // When the publisher handles the insert
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then the subscriber gets the payload and the outbox attributes, and the item is SENT
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 1);
    let msgs = drain(&ob.clients.sqs, &queue.url).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].body(), Some(r#"{"hello":"world"}"#));
    assert_eq!(
        attr(&msgs[0], ATTR_MESSAGE_ID).as_deref(),
        Some(committed.message_ids[0].as_str())
    );
    assert_eq!(attr(&msgs[0], ATTR_TOPIC).as_deref(), Some("notify"));
    assert_eq!(attr(&msgs[0], ATTR_AGGREGATE).as_deref(), Some("USER#5"));
    let item = ob
        .item("USER#5", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn messages_routed_to_an_event_bus_arrive_as_events_with_metadata_and_payload() {
    // Given a bus with a rule sending the outbox's events to a queue
    let mut ob = Outbox::new().await;
    let queue = subscriber(&ob.clients, "events-sub").await;
    let bus_arn = bus_into(&ob.clients, "shop", "shop.orders", &queue.arn).await;
    let mut config = ob.config();
    config.routes = Routes::parse(
        &format!(r#"{{"order-placed":{{"destination":"{bus_arn}","source":"shop.orders"}}}}"#),
        None,
    )
    .expect("routes");
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[
                NewMessage::new("ORDER#9", "order-placed", r#"{"id":"9","quantity":2}"#)
                    .sequence(4),
            ],
        )
        .await
        .expect("commit");
    // When the publisher handles the insert
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 1);
    // Then the event carries the topic as detail-type, the metadata and the payload
    let msgs = drain(&ob.clients.sqs, &queue.url).await;
    assert_eq!(msgs.len(), 1);
    let ev: serde_json::Value =
        serde_json::from_str(msgs[0].body().expect("body")).expect("event json");
    assert_eq!(ev["source"], "shop.orders");
    assert_eq!(ev["detail-type"], "order-placed");
    assert_eq!(
        ev["detail"]["outbox"]["messageId"],
        committed.message_ids[0].as_str()
    );
    assert_eq!(ev["detail"]["outbox"]["aggregate"], "ORDER#9");
    assert_eq!(ev["detail"]["outbox"]["sequence"], 4);
    assert_eq!(
        ev["detail"]["payload"],
        serde_json::json!({"id": "9", "quantity": 2})
    );
    let item = ob
        .item("ORDER#9", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}
