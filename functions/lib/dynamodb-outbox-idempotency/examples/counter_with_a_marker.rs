//! A consumer Lambda whose writes are not idempotent: each order adds to its
//! customer's running total. The update and a processed-message marker commit in one
//! transaction, so a copy of the message (a redelivery, a republish) adds nothing.
//!
//! Environment: `TABLE_NAME`, a table keyed `PK`/`SK` with TTL attribute `ttl`.
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use dynamodb_outbox_idempotency::{
    BatchProcessor, Delivery, IdempotencyError, IdempotencyTable, MessageMarker, Outcome,
    SqsBatchResponse, SqsEvent,
};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[derive(serde::Deserialize)]
struct OrderPlaced {
    customer: String,
    total_cents: u64,
}

/// Built once at start-up, shared by every invocation.
#[derive(Debug)]
struct Deps {
    table: String,
    marker: MessageMarker,
    batch: BatchProcessor,
}

/// Adds the order to its customer's total, once per outbox message.
async fn add_to_total(msg: Delivery<'_>, deps: &Deps) -> Result<Outcome, IdempotencyError> {
    let order: OrderPlaced = msg.parse()?;
    let customer = AttributeValue::S(format!("CUSTOMER#{}", order.customer));
    let add = Update::builder()
        .table_name(&deps.table)
        .key("PK", customer.clone())
        .key("SK", customer)
        .update_expression("ADD total_cents :amount")
        .expression_attribute_values(":amount", AttributeValue::N(order.total_cents.to_string()))
        .build()
        .map_err(|e| IdempotencyError::Invalid(e.to_string()))?;
    let writes = vec![TransactWriteItem::builder().update(add).build()];
    deps.marker.commit(msg.message_id()?, writes).await // Duplicate: nothing added
}

async fn handler(event: LambdaEvent<SqsEvent>, deps: &Deps) -> Result<SqsBatchResponse, Error> {
    let report = deps
        .batch
        .run(&event.payload, |msg| add_to_total(msg, deps))
        .await;
    Ok(report.response())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let table = std::env::var("TABLE_NAME").map_err(|_| "set TABLE_NAME")?;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
    let settings = IdempotencyTable::new(dynamodb, &table)
        .partition_key("PK")
        .sort_key("SK")
        .ttl_attribute("ttl");
    let deps = Deps {
        table,
        marker: MessageMarker::in_table(settings),
        batch: BatchProcessor::new(),
    };
    lambda_runtime::run(service_fn(|event| handler(event, &deps))).await
}
