//! Commits retried by the producer: a lost answer or a repeat after the idempotency
//! window writes each message once.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use dynamodb_outbox::NewMessage;
use outbox_tests::{Outbox, s, sv};

/// A business write that creates the order, once: a second write of it is cancelled.
fn create_order(table: &str, id: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .item("PK", sv(&format!("ORDER#{id}")))
        .item("SK", sv("ORDER"))
        .item("ItemType", sv("ORDER"))
        .condition_expression("attribute_not_exists(PK)")
        .build()
        .expect("put");
    TransactWriteItem::builder().put(put).build()
}

/// The outbox items in the table.
async fn outbox_items(ob: &Outbox) -> Vec<outbox_tests::Item> {
    ob.all_items()
        .await
        .into_iter()
        .filter(|i| s(i, "ItemType").as_deref() == Some("PENDING_MESSAGE"))
        .collect()
}

#[tokio::test]
async fn a_commit_whose_answer_was_lost_is_retried_safely_and_writes_its_message_once() {
    // Given a transaction prepared once, and a client whose every TransactWriteItems
    // takes effect while its caller sees a timeout
    let mut ob = Outbox::new().await;
    let prepared = ob
        .writer()
        .prepare(
            vec![create_order(&ob.table, "1")],
            &[NewMessage::new("ORDER#1", "orders", r#"{"order":1}"#)],
        )
        .expect("prepare");
    let plan = "TransactWriteItems:lost_response:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(3));
    let lossy =
        dynamodb_outbox::OutboxWriter::new(aws_sdk_dynamodb::Client::new(&faulty), &ob.table);

    // When the commit fails with a retryable error, and the caller retries it
    let err = lossy
        .commit_prepared(&prepared)
        .await
        .expect_err("answer lost");
    assert!(err.is_retryable(), "{err}");
    let committed = ob
        .writer()
        .commit_prepared(&prepared)
        .await
        .expect("the retry succeeds");

    // Then the outbox holds the message once, under the prepared id
    assert_eq!(&committed, prepared.committed());
    let items = outbox_items(&ob).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        s(&items[0], "MessageId"),
        Some(committed.message_ids[0].clone())
    );
    assert!(ob.item("ORDER#1", "ORDER").await.is_some());
    // And the publisher sees one new message
    assert_eq!(ob.filtered_event().await.records.len(), 1);
}

#[tokio::test]
async fn a_repeat_after_the_idempotency_window_is_recognised_by_its_messages() {
    // Given a prepared transaction that committed long ago: its token forgotten (sent
    // here without one, as DynamoDB forgets tokens after 10 minutes)
    let ob = Outbox::new().await;
    let prepared = ob
        .writer()
        .prepare(
            vec![create_order(&ob.table, "2")],
            &[
                NewMessage::new("ORDER#2", "orders", "{}"),
                NewMessage::new("ORDER#2", "ledger", "{}"),
            ],
        )
        .expect("prepare");
    ob.clients
        .dynamodb
        .transact_write_items()
        .set_transact_items(Some(prepared.actions().to_vec()))
        .send()
        .await
        .expect("the first attempt commits");

    // When it is sent again
    let committed = ob
        .writer()
        .commit_prepared(&prepared)
        .await
        .expect("recognised as committed");

    // Then nothing new is written and the caller learns it committed
    assert_eq!(&committed, prepared.committed());
    assert_eq!(outbox_items(&ob).await.len(), 2);
}
