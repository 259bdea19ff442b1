//! The processed-message marker: a non-idempotent effect applied once per outbox
//! message, however often SQS delivers it.

use super::Orders;
use aws_lambda_events::event::sqs::SqsMessage;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};
use dynamodb_outbox_idempotency::{Delivery, IdempotencyError, MessageMarker, Outcome};
use outbox_tests::{n, sv, unique};
use std::time::Duration;

/// A non-idempotent effect (a counter) applied once per message through a marker.
pub(super) async fn count_once(
    msg: &SqsMessage,
    marker: &MessageMarker,
    table: &str,
) -> Result<Outcome, IdempotencyError> {
    let add = Update::builder()
        .table_name(table)
        .key("id", sv("counter"))
        .update_expression("ADD #n :one")
        .expression_attribute_names("#n", "count")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .build()
        .unwrap();
    let delivery = Delivery::open(msg);
    marker
        .commit(
            delivery.message_id()?,
            vec![TransactWriteItem::builder().update(add).build()],
        )
        .await
}

pub(super) async fn counter(orders: &Orders) -> Option<i64> {
    orders.order("counter").await.and_then(|i| n(&i, "count"))
}

#[tokio::test]
async fn a_redelivered_message_is_applied_once_through_its_marker() {
    // Given an outbox message processed once whose acknowledgement was lost
    let orders = Orders::with_queue(&unique("jobs"), 1, 5).await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let sent = orders
        .send_with(r#"{"any":"payload"}"#, None, Some("outbox-msg-2"))
        .await;
    let first = orders.receive().await;
    let outcome = count_once(&first.records[0], &marker, &orders.table).await;
    assert_eq!(outcome.unwrap(), Outcome::Applied);
    // When SQS delivers it again after the visibility timeout
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let again = orders.receive().await;
    assert_eq!(again.records[0].message_id.as_deref(), Some(sent.as_str()));
    let outcome = count_once(&again.records[0], &marker, &orders.table).await;
    // Then it is a duplicate and the counter moved once
    assert_eq!(outcome.unwrap(), Outcome::Duplicate);
    assert_eq!(counter(&orders).await, Some(1));
    // And the marker is stored under MSG#<outbox MessageId> with a TTL
    let mark = orders.order("MSG#outbox-msg-2").await.expect("marker item");
    assert!(n(&mark, "ExpiresAt").unwrap() > 1_700_000_000);
}

#[tokio::test]
async fn a_message_republished_under_a_new_sqs_id_is_recognised_by_its_outbox_id() {
    // Given the same outbox message sent twice (the sweeper republished it)
    let orders = Orders::new().await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let a = orders
        .send_with(r#"{"order":1}"#, None, Some("outbox-msg-1"))
        .await;
    let b = orders
        .send_with(r#"{"order":1}"#, None, Some("outbox-msg-1"))
        .await;
    assert_ne!(a, b, "two SQS messages");
    // When both are handled
    let event = orders.receive().await;
    assert_eq!(event.records.len(), 2);
    let mut outcomes = Vec::new();
    for m in &event.records {
        outcomes.push(count_once(m, &marker, &orders.table).await.unwrap());
    }
    // Then one applied and one duplicate, and the counter moved once
    outcomes.sort_by_key(|o| o.is_duplicate());
    assert_eq!(outcomes, [Outcome::Applied, Outcome::Duplicate]);
    assert_eq!(counter(&orders).await, Some(1));
    assert!(orders.order("MSG#outbox-msg-1").await.is_some());
}

#[tokio::test]
async fn a_cancellation_not_caused_by_the_marker_is_an_error_naming_the_action() {
    // Given a consumer transaction whose own condition fails
    let orders = Orders::new().await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let check = ConditionCheck::builder()
        .table_name(&orders.table)
        .key("id", sv("customer-7"))
        .condition_expression("attribute_exists(id)")
        .build()
        .unwrap();
    // When it commits with its marker
    let err = marker
        .commit(
            "msg-1",
            vec![TransactWriteItem::builder().condition_check(check).build()],
        )
        .await
        .expect_err("the condition check fails");
    // Then the error names that action, not the marker, and nothing was written
    match &err {
        IdempotencyError::Cancelled { failures } => {
            assert_eq!(failures.len(), 1, "{err}");
            assert_eq!(failures[0].index, 1);
            assert_eq!(failures[0].code, "ConditionalCheckFailed");
            assert!(
                failures[0].action.contains("ConditionCheck")
                    && failures[0].action.contains("id=customer-7"),
                "{err}"
            );
        }
        other => panic!("expected a cancellation, got {other}"),
    }
    assert!(!err.is_retryable());
    assert!(orders.order("MSG#msg-1").await.is_none(), "no marker");
}

#[tokio::test]
async fn in_a_single_table_design_keyed_pk_and_sk_a_message_is_applied_once_through_its_marker() {
    // Given a table keyed PK/SK (the outbox's own, holding the application's items too)
    let ob = outbox_tests::Outbox::new().await;
    let table =
        dynamodb_outbox_idempotency::IdempotencyTable::new(ob.clients.dynamodb.clone(), &ob.table)
            .partition_key("PK")
            .sort_key("SK");
    let marker = MessageMarker::in_table(table);
    let add = || {
        let add = Update::builder()
            .table_name(&ob.table)
            .key("PK", sv("STATS"))
            .key("SK", sv("COUNTER"))
            .update_expression("ADD #n :one")
            .expression_attribute_names("#n", "count")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .build()
            .unwrap();
        vec![TransactWriteItem::builder().update(add).build()]
    };
    // When one message is committed twice
    let first = marker.commit("outbox-msg-1", add()).await.expect("first");
    let again = marker.commit("outbox-msg-1", add()).await.expect("again");
    // Then the second is a duplicate and the counter moved once
    assert_eq!((first, again), (Outcome::Applied, Outcome::Duplicate));
    let counter = ob.item("STATS", "COUNTER").await.expect("counter");
    assert_eq!(n(&counter, "count"), Some(1));
    // And the marker is its own item, MSG#<id> in both keys, with a TTL
    let mark = ob
        .item("MSG#outbox-msg-1", "MSG#outbox-msg-1")
        .await
        .expect("marker");
    assert!(n(&mark, "ExpiresAt").unwrap() > 1_700_000_000);
}
