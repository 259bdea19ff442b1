//! A producer in a plain Tokio service: each order and the message that announces it
//! are written in one transaction.
//!
//! `cargo run -p dynamodb-outbox --example producer_service -- <table>` (with AWS
//! credentials, or `AWS_ENDPOINT_URL` pointing at a local AWS).

use dynamodb_outbox::aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox::{NewMessage, OutboxWriter};
use std::error::Error;

/// The business write: the order item itself.
fn order_item(table: &str, order_id: u32) -> Result<TransactWriteItem, Box<dyn Error>> {
    let put = Put::builder()
        .table_name(table)
        .item("PK", AttributeValue::S(format!("ORDER#{order_id}")))
        .item("SK", AttributeValue::S("ORDER".into()))
        .item("Status", AttributeValue::S("PLACED".into()))
        .condition_expression("attribute_not_exists(PK)")
        .build()?;
    Ok(TransactWriteItem::builder().put(put).build())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let table = std::env::args()
        .nth(1)
        .ok_or("usage: producer_service <outbox table>")?;
    let aws = aws_config::load_from_env().await;
    let writer = OutboxWriter::new(
        dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws),
        table.clone(),
    );
    for order_id in 1..=3 {
        let message = NewMessage::new(
            format!("ORDER#{order_id}"),
            "orders",
            format!(r#"{{"orderId":{order_id}}}"#),
        )
        .event_type("OrderPlaced");
        // Prepared once, so that a retry after a timeout cannot write it twice.
        let prepared = writer.prepare(vec![order_item(&table, order_id)?], &[message])?;
        let committed = writer.commit_prepared(&prepared).await?;
        println!("order {order_id}: message {}", committed.message_ids[0]);
    }
    Ok(())
}
