//! Watching the deployed pipeline from outside, as an operator would: the outbox
//! table's states, the orders the consumer stored, the consumer's queue. The live
//! counters and the wait for the pipeline to settle read these.

use crate::aws::Clients;
use crate::deployment::Deployment;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::QueueAttributeName;
use dynamodb_outbox_core::schema::{OutboxItem, PENDING_MESSAGE, Status};
use std::collections::HashMap;

/// An item as the SDK returns it.
pub type Item = HashMap<String, AttributeValue>;

/// The pipeline at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Outbox items still `PENDING`.
    pub pending: usize,
    /// Outbox items `SENT`.
    pub sent: usize,
    /// Outbox items `FAILED`.
    pub failed: usize,
    /// Orders the consumer stored.
    pub stored: usize,
    /// Messages on the consumer's queue, visible or being processed.
    pub in_queue: usize,
}

/// Reads the snapshot: of the outbox items and stored orders, only those of the run
/// tagged `tag` (every one when it is empty); the queue as a whole.
pub async fn snapshot(
    clients: &Clients,
    deployment: &Deployment,
    tag: &str,
) -> Result<Snapshot, String> {
    let mut snap = Snapshot::default();
    for item in outbox_items(scan_all(clients, &deployment.table).await?) {
        if !own_message(&item, tag) {
            continue;
        }
        match item.status() {
            Some(Status::Pending) => snap.pending += 1,
            Some(Status::Sent) => snap.sent += 1,
            Some(Status::Failed) => snap.failed += 1,
            None => {}
        }
    }
    snap.stored = scan_all(clients, &deployment.orders_table)
        .await?
        .iter()
        .filter(|order| own_order(order, tag))
        .count();
    snap.in_queue = queue_depth(clients, &deployment.consumer_queue_url).await?;
    Ok(snap)
}

/// The order id an aggregate (`ORDER#<id>`) names; anything else as it is.
pub fn order_id(aggregate: &str) -> &str {
    aggregate.strip_prefix("ORDER#").unwrap_or(aggregate)
}

/// Whether an outbox item belongs to the run tagged `tag`: its aggregate names an
/// order whose id starts with the tag. With an empty tag, every item does.
pub fn own_message(item: &OutboxItem, tag: &str) -> bool {
    tag.is_empty() || order_id(item.pk.as_deref().unwrap_or_default()).starts_with(tag)
}

/// Whether an item of the orders table is an order of the run tagged `tag` (the
/// consumer's processed-message markers never are). With an empty tag, every item
/// counts, as before tags.
pub fn own_order(item: &Item, tag: &str) -> bool {
    tag.is_empty() || text(item, "id").is_some_and(|id| id.starts_with(tag))
}

/// The outbox items among a table's items, read through the schema's one serde type
/// (the table also holds the business items). An item that does not decode is kept
/// with what could be read: a status-less item counts as unfinished.
pub fn outbox_items(items: Vec<Item>) -> Vec<OutboxItem> {
    items
        .into_iter()
        .map(|item| {
            OutboxItem::from_item(serde_dynamo::Item::from(item)).unwrap_or_else(|_| OutboxItem {
                item_type: Some(PENDING_MESSAGE.to_owned()),
                ..OutboxItem::default()
            })
        })
        .filter(|item| item.item_type.as_deref() == Some(PENDING_MESSAGE))
        .collect()
}

/// Every item of a table (consistent reads).
pub async fn scan_all(clients: &Clients, table: &str) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = clients
            .dynamodb
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "scanning {table}: {}",
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                )
            })?;
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(items);
        }
    }
}

/// Visible plus in-flight messages on a queue.
pub async fn queue_depth(clients: &Clients, url: &str) -> Result<usize, String> {
    let out = clients
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .map_err(|e| {
            format!(
                "queue {url}: {}",
                aws_smithy_types::error::display::DisplayErrorContext(&e)
            )
        })?;
    let count = |name: QueueAttributeName| {
        out.attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0)
    };
    Ok(count(QueueAttributeName::ApproximateNumberOfMessages)
        + count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

/// A string attribute.
pub fn text(item: &Item, name: &str) -> Option<String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v.clone()),
        _ => None,
    }
}

/// A number attribute, as an integer.
pub fn number(item: &Item, name: &str) -> Option<i64> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v
            .parse::<i64>()
            .ok()
            .or_else(|| v.parse::<f64>().ok().map(|f| f as i64)),
        _ => None,
    }
}
