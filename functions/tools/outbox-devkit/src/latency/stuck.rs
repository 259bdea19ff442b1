//! The sweeper's recovery of an item the stream path never publishes.

use crate::aws::Clients;
use crate::deployment::Deployment;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::clock::now_ms;
use std::time::{Duration, Instant};

/// A stuck item: inserted already `SENT` (so the stream path ignores it), then turned
/// `PENDING` and due now (a `MODIFY`, which the publisher's filter drops). Returns the
/// milliseconds from its due time to its `SentAt`.
pub(super) async fn sweeper_recovery(
    clients: &Clients,
    deployment: &Deployment,
) -> Result<i64, String> {
    let id = uuid::Uuid::now_v7().simple().to_string();
    let (pk, sk) = (format!("STUCK#{id}"), format!("MESSAGE#STUCK#{id}"));
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let topic = deployment.routes.keys().next().cloned().unwrap_or_default();
    clients
        .dynamodb
        .put_item()
        .table_name(&deployment.table)
        .item("PK", s(&pk))
        .item("SK", s(&sk))
        .item("ItemType", s("PENDING_MESSAGE"))
        .item("Topic", s(&topic))
        .item("Payload", s(r#"{"order":"stuck","quantity":1}"#))
        .item("Status", s("SENT"))
        .item("RetryCount", AttributeValue::N("0".into()))
        .send()
        .await
        .map_err(|e| format!("put the stuck item: {e}"))?;
    let due = now_ms();
    clients
        .dynamodb
        .update_item()
        .table_name(&deployment.table)
        .key("PK", s(&pk))
        .key("SK", s(&sk))
        .update_expression("SET #s = :p, SweepShard = :shard, SweepDueAt = :due")
        .expression_attribute_names("#s", "Status")
        .expression_attribute_values(":p", s("PENDING"))
        .expression_attribute_values(
            ":shard",
            s(&dynamodb_outbox_core::SweepShards::default().shard_of(&pk)),
        )
        .expression_attribute_values(":due", AttributeValue::N(due.to_string()))
        .send()
        .await
        .map_err(|e| format!("make it stuck: {e}"))?;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(240) {
        let item = clients
            .dynamodb
            .get_item()
            .table_name(&deployment.table)
            .key("PK", s(&pk))
            .key("SK", s(&sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("read the stuck item: {e}"))?
            .item
            .unwrap_or_default();
        if let Some(AttributeValue::N(sent)) = item.get("SentAt") {
            return sent
                .parse::<i64>()
                .map(|s| s - due)
                .map_err(|e| e.to_string());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err("the sweeper did not publish the stuck item within 240 s".to_owned())
}
