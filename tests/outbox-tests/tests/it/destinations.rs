//! SNS and EventBridge destinations against the emulator: each delivers to an SQS
//! queue (an SNS subscription with raw delivery, an EventBridge rule target), which
//! the test reads.

use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{NewMessage, Routes};
use dynamodb_outbox_core::message::{ATTR_AGGREGATE, ATTR_MESSAGE_ID, ATTR_TOPIC};
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

#[tokio::test]
async fn destinations_in_another_region_are_sent_to_through_a_client_of_their_region() {
    // Given a topic, a bus and a queue in us-west-2 — the publisher's clients are in
    // us-east-1 — the topic and the bus delivering to queues there
    let mut ob = Outbox::new().await;
    let west_config = outbox_tests::sdk_config()
        .await
        .to_builder()
        .region(aws_sdk_sqs::config::Region::new("us-west-2"))
        .build();
    let west = outbox_devkit::aws::Clients::new(&west_config);
    let notified = subscriber(&west, "west-notified").await;
    let topic_arn = topic_into(&west, "west-notify", &notified.arn, SnsDelivery::Raw).await;
    let evented = subscriber(&west, "west-evented").await;
    let bus_arn = bus_into(&west, "west-bus", "dynamodb-outbox", &evented.arn).await;
    let queue = subscriber(&west, "west-queue").await;
    // Addressed as on AWS, the host naming the region (the emulator serves every
    // region at one endpoint and reads the queue from the path).
    let name = queue.url.rsplit('/').next().expect("name");
    let account = queue.arn.split(':').nth(4).expect("account");
    let queue_url = format!("https://sqs.us-west-2.amazonaws.com/{account}/{name}");
    let mut config = ob.config();
    config.routes = Routes::parse(
        &format!(r#"{{"notify":"{topic_arn}","event":"{bus_arn}","queue":"{queue_url}"}}"#),
        None,
    )
    .expect("routes");
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[
                NewMessage::new("USER#1", "notify", r#"{"n":1}"#),
                NewMessage::new("USER#2", "event", r#"{"n":2}"#),
                NewMessage::new("USER#3", "queue", r#"{"n":3}"#),
            ],
        )
        .await
        .expect("commit");

    // When the publisher handles the inserts
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;

    // Then each reached its destination in us-west-2 and is SENT
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.sent, 3, "{summary:?}");
    for (i, sk) in committed.sort_keys.iter().enumerate() {
        let item = ob.item(&format!("USER#{}", i + 1), sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{item:?}");
    }
    let notified = drain(&west.sqs, &notified.url).await;
    assert_eq!(notified.len(), 1);
    assert_eq!(notified[0].body(), Some(r#"{"n":1}"#));
    let evented = drain(&west.sqs, &evented.url).await;
    assert_eq!(evented.len(), 1);
    let ev: serde_json::Value =
        serde_json::from_str(evented[0].body().expect("body")).expect("event json");
    assert_eq!(ev["detail"]["payload"], serde_json::json!({"n": 2}));
    let queued = drain(&west.sqs, &queue.url).await;
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].body(), Some(r#"{"n":3}"#));
}
