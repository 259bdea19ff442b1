//! FIFO groups through the reference consumer: a group stops at its first failure,
//! other groups go on.

use super::Orders;
use dynamodb_outbox_idempotency::MessageFailure;
use outbox_tests::unique;

#[tokio::test]
async fn a_fifo_group_stops_at_its_first_failure_and_other_groups_go_on() {
    // Given a FIFO queue with group A (good, malformed, good) and group B (good, good)
    let orders = Orders::with_queue(&format!("{}.fifo", unique("jobs")), 30, 3).await;
    let a1 = orders
        .send_with(r#"{"id":"a1","quantity":1}"#, Some("A"), None)
        .await;
    let a2 = orders
        .send_with(r#"{"id":"a2","quantity":0}"#, Some("A"), None)
        .await;
    let a3 = orders
        .send_with(r#"{"id":"a3","quantity":3}"#, Some("A"), None)
        .await;
    orders
        .send_with(r#"{"id":"b1","quantity":1}"#, Some("B"), None)
        .await;
    orders
        .send_with(r#"{"id":"b2","quantity":2}"#, Some("B"), None)
        .await;
    // When the batch is handled
    let (event, report) = orders.deliver().await;
    assert_eq!(event.records.len(), 5, "one batch");
    // Then the failed message and the rest of its group are reported, nothing else
    assert_eq!(report.failed_ids(), [a2.as_str(), a3.as_str()]);
    let skipped = report.outcomes.iter().find(|o| o.message_id == a3).unwrap();
    assert!(matches!(&skipped.result, Err(MessageFailure::Skipped { after }) if *after == a2));
    // And a3 was not written (order holds), while group B was
    assert!(orders.order("a1").await.is_some());
    assert!(orders.order("a3").await.is_none());
    assert!(orders.order("b1").await.is_some() && orders.order("b2").await.is_some());
    assert!(!report.failed_ids().contains(&a1.as_str()));
}
