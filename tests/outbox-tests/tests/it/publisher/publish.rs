//! Committed messages published with their attributes and marked sent; rolled-back
//! transactions publish nothing; redeliveries keep one message id; a failed send
//! holds back only its aggregate.

use super::business_put;
use super::redelivery::read_before_the_mark;
use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{Destination, NewMessage, ProducerError, Routes};
use dynamodb_outbox_core::message::{ATTR_AGGREGATE, ATTR_CREATED_AT, ATTR_MESSAGE_ID, ATTR_TOPIC};
use outbox_tests::{Outbox, attr, drain, n, nv, s, sv};
use std::collections::HashMap;

#[tokio::test]
async fn a_committed_message_is_published_with_its_attributes_and_marked_sent() {
    // Given a business write and its message committed together
    let mut ob = Outbox::new().await;
    let committed = ob
        .writer()
        .commit(
            vec![business_put(&ob.table, "USER#1", "Zhang San")],
            &[NewMessage::new("USER#1", "orders", r#"{"order":1}"#).event_type("ORDER_PLACED")],
        )
        .await
        .expect("commit");
    // When the publisher handles the stream records, filtered as deployed
    let event = ob.filtered_event().await;
    assert_eq!(
        event.records.len(),
        1,
        "the filter keeps only the outbox insert"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    // Then the message is on the queue with its attributes
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 1);
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!(m.body(), Some(r#"{"order":1}"#));
    assert_eq!(
        attr(m, ATTR_MESSAGE_ID).as_deref(),
        Some(committed.message_ids[0].as_str())
    );
    assert_eq!(attr(m, ATTR_TOPIC).as_deref(), Some("orders"));
    assert_eq!(attr(m, ATTR_AGGREGATE).as_deref(), Some("USER#1"));
    assert!(attr(m, ATTR_CREATED_AT).is_some_and(|v| v.parse::<i64>().is_ok()));
    // And the item is SENT, with SentAt and a TTL, out of the sweeper index
    let item = ob
        .item("USER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    let sent_at = n(&item, "SentAt").expect("SentAt");
    let expires = n(&item, "ExpiresAt").expect("ExpiresAt");
    assert_eq!(expires, sent_at / 1000 + 7 * 86_400);
    assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
    // And the business item landed too
    assert!(ob.item("USER#1", "PROFILE").await.is_some());
}

#[tokio::test]
async fn an_item_written_like_the_boto3_producer_is_published_with_a_derived_id() {
    // Given the minimal item of the hand-written boto3 producer (no MessageId, no index keys)
    let mut ob = Outbox::new().await;
    let sk = "MESSAGE#PROFILE_UPDATED#1698765432";
    ob.put_raw(HashMap::from([
        ("PK".to_owned(), sv("USER#123")),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv("orders")),
        ("Payload".to_owned(), sv(r#"{"user_id":"123"}"#)),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ]))
    .await;
    // When it is published
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher(), &event).await;
    // Then it arrives with the id derived from PK+SK, and is SENT
    assert!(response.batch_item_failures.is_empty());
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    let expected =
        dynamodb_outbox_core::schema::derive_message_id(&dynamodb_outbox_core::schema::ItemKey {
            pk: "USER#123".into(),
            sk: sk.into(),
        });
    assert_eq!(attr(&msgs[0], ATTR_MESSAGE_ID), Some(expected));
    let item = ob.item("USER#123", sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_rolled_back_transaction_publishes_nothing_and_names_the_failed_action() {
    // Given a transaction whose business condition fails
    let mut ob = Outbox::new().await;
    let check = ConditionCheck::builder()
        .table_name(&ob.table)
        .key("PK", sv("USER#9"))
        .key("SK", sv("PROFILE"))
        .condition_expression("attribute_exists(PK)")
        .build()
        .expect("check");
    let err = ob
        .writer()
        .commit(
            vec![TransactWriteItem::builder().condition_check(check).build()],
            &[NewMessage::new("USER#9", "orders", "{}")],
        )
        .await
        .expect_err("condition fails");
    // Then the error names the action and the reason
    match &err {
        ProducerError::Cancelled { failures } => {
            assert_eq!(failures.len(), 1, "{err}");
            assert_eq!(failures[0].index, 0);
            assert_eq!(failures[0].code, "ConditionalCheckFailed");
            assert!(failures[0].action.contains("ConditionCheck"), "{err}");
        }
        other => panic!("expected a cancellation, got {other}"),
    }
    // And nothing reaches the stream, the table or the queue
    let event = ob.stream_event().await;
    assert!(
        event.records.is_empty(),
        "no stream record for a rolled-back transaction"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 0);
    assert!(ob.all_items().await.is_empty());
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
}

#[tokio::test]
async fn the_same_event_delivered_twice_is_not_an_error_and_keeps_one_message_id() {
    // Given one committed message for each queue kind
    let mut ob = Outbox::new().await;
    ob.writer()
        .commit(
            vec![],
            &[
                NewMessage::new("A#1", "orders", "{}"),
                NewMessage::new("A#1", "ledger", "{}"),
            ],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let publisher = ob.publisher();
    // When the same event is handled twice at once (a second instance, or a retry
    // racing a slow first attempt): the second read the items PENDING before the first
    // marked them (a delivery after the mark skips them: `redelivery`)
    let (first, s1) = handle_stream_event(&publisher, &event).await;
    let racing = read_before_the_mark(ob.publisher());
    let (second, s2) = handle_stream_event(&racing, &event).await;
    // Then neither reports a failure; only the first marks the items
    assert!(first.batch_item_failures.is_empty() && second.batch_item_failures.is_empty());
    assert_eq!((s1.sent, s1.unmarked), (2, 0));
    assert_eq!(
        (s2.sent, s2.unmarked),
        (2, 2),
        "the second run finds the items already SENT"
    );
    // And the standard queue holds two copies with the same MessageId (consumers dedup on it)
    let std = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(std.len(), 2);
    assert_eq!(
        attr(&std[0], ATTR_MESSAGE_ID),
        attr(&std[1], ATTR_MESSAGE_ID)
    );
    // And the FIFO queue deduplicated the copy by MessageId
    let fifo = drain(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(fifo.len(), 1);
}

#[tokio::test]
async fn a_failed_send_is_reported_with_later_messages_of_its_aggregate_only() {
    // Given messages of two aggregates, where A's first message goes to a queue that
    // does not exist (the send fails)
    let mut ob = Outbox::new().await;
    let missing = ob.missing_queue_url();
    let mut config = ob.config();
    config.routes = Routes::new(
        [
            ("orders".to_owned(), Destination::sqs(&ob.queue.url)),
            ("broken".to_owned(), Destination::sqs(&missing)),
        ],
        None,
    );
    let w = ob.writer();
    w.commit(vec![], &[NewMessage::new("A", "broken", "a1")])
        .await
        .expect("a1");
    w.commit(vec![], &[NewMessage::new("B", "orders", "b1")])
        .await
        .expect("b1");
    w.commit(vec![], &[NewMessage::new("A", "orders", "a2")])
        .await
        .expect("a2");
    w.commit(vec![], &[NewMessage::new("B", "orders", "b2")])
        .await
        .expect("b2");
    let event = ob.filtered_event().await;
    let seq: Vec<String> = event
        .records
        .iter()
        .map(|r| r.change.sequence_number.clone().expect("sequence"))
        .collect();
    // When the batch is handled
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then exactly A1 (failed) and A2 (held back behind it) are reported
    let mut failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    let mut expected = vec![seq[0].clone(), seq[2].clone()];
    expected.sort();
    assert_eq!(failed, expected);
    assert_eq!(summary.sent, 2);
    // And B's messages went out, A2 did not overtake A1
    let bodies: Vec<String> = drain(&ob.clients.sqs, &ob.queue.url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    let mut sorted = bodies.clone();
    sorted.sort();
    assert_eq!(sorted, ["b1", "b2"]);
    // And the failed messages are still PENDING, for the retry or the sweeper
    let pending = ob
        .all_items()
        .await
        .into_iter()
        .filter(|i| s(i, "Status").as_deref() == Some("PENDING"))
        .count();
    assert_eq!(pending, 2);
}
