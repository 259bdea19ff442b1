//! A shop on one DynamoDB table of its own design — keyed `pk`/`sk`, TTL attribute
//! `expires_at` — that announces each placed order through the transactional outbox
//! and ships it, once, when the announcement arrives.
//!
//! - [`place_order`]: the order item and its `order-placed` message in one
//!   transaction (the producer side, `dynamodb-outbox`).
//! - [`ship`]: the consumer's work for one delivery, a shipment item written once per
//!   order however often the message arrives (`dynamodb-outbox-idempotency`).

use dynamodb_outbox::aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox::{Committed, KeyNames, NewMessage, OutboxWriter, ProducerError};
use dynamodb_outbox_idempotency::{
    BusinessKeyGuard, Delivery, IdempotencyError, IdempotencyTable, Outcome,
};
use serde::{Deserialize, Serialize};

/// The shop table's partition key.
pub const PARTITION_KEY: &str = "pk";
/// The shop table's sort key.
pub const SORT_KEY: &str = "sk";
/// The shop table's TTL attribute (the outbox expires its `SENT` items with it).
pub const TTL_ATTRIBUTE: &str = "expires_at";
/// The topic of the announcement; the deployment routes it to the shop's queue.
pub const ORDER_PLACED: &str = "order-placed";

/// The outbox's view of the shop table: its key names instead of the defaults.
pub fn key_names() -> KeyNames {
    KeyNames::new(PARTITION_KEY, SORT_KEY).ttl_attribute(TTL_ATTRIBUTE)
}

/// A producer writing into the shop table.
pub fn writer(client: dynamodb_outbox::aws_sdk_dynamodb::Client, table: &str) -> OutboxWriter {
    OutboxWriter::new(client, table).key_names(key_names())
}

/// The message body of [`ORDER_PLACED`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderPlaced {
    /// The order.
    pub order_id: String,
    /// Its total, in cents.
    pub total_cents: u64,
}

/// Why an order was not placed.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// The order item or message could not be built (a bug here, not in the input).
    #[error("the order could not be written: {0}")]
    Build(String),
    /// The transaction did not commit; nothing was stored.
    #[error(transparent)]
    Commit(#[from] ProducerError),
}

/// Stores the order and its announcement together: both or neither.
pub async fn place_order(
    writer: &OutboxWriter,
    order: &OrderPlaced,
) -> Result<Committed, PlaceError> {
    let aggregate = format!("ORDER#{}", order.order_id);
    let item = Put::builder()
        .table_name(writer.table())
        .item(PARTITION_KEY, AttributeValue::S(aggregate.clone()))
        .item(SORT_KEY, AttributeValue::S("ORDER".into()))
        .item(
            "total_cents",
            AttributeValue::N(order.total_cents.to_string()),
        )
        .condition_expression("attribute_not_exists(#pk)")
        .expression_attribute_names("#pk", PARTITION_KEY)
        .build()
        .map_err(|e| PlaceError::Build(e.to_string()))?;
    let body = serde_json::to_string(order).map_err(|e| PlaceError::Build(e.to_string()))?;
    let message = NewMessage::new(aggregate, ORDER_PLACED, body);
    let business = TransactWriteItem::builder().put(item).build();
    Ok(writer.commit(vec![business], &[message]).await?)
}

/// The shipment the consumer records, once per order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shipment {
    /// `ORDER#<id>`: the order's partition.
    pub pk: String,
    /// `SHIPMENT`.
    pub sk: String,
    /// The total to charge.
    pub total_cents: u64,
}

/// The consumer's guard: a conditional put on the shop table's own keys.
pub fn shipments(
    client: dynamodb_outbox::aws_sdk_dynamodb::Client,
    table: &str,
) -> BusinessKeyGuard {
    let table = IdempotencyTable::new(client, table)
        .partition_key(PARTITION_KEY)
        .sort_key(SORT_KEY)
        .ttl_attribute(TTL_ATTRIBUTE);
    BusinessKeyGuard::in_table(table)
}

/// Ships the order a delivery announces; a redelivery is a [`Outcome::Duplicate`].
pub async fn ship(
    delivery: &Delivery<'_>,
    guard: &BusinessKeyGuard,
) -> Result<Outcome, IdempotencyError> {
    let order: OrderPlaced = delivery.parse()?;
    let shipment = Shipment {
        pk: format!("ORDER#{}", order.order_id),
        sk: "SHIPMENT".into(),
        total_cents: order.total_cents,
    };
    guard.put(&shipment).await
}
