//! The README's idempotent consumer: each order stored once, copies acknowledged,
//! conflicts and malformed bodies reported (and, after the redrive limit, on the DLQ).
use dynamodb_outbox_idempotency::{BatchProcessor, BusinessKeyGuard, SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Order {
    id: String,
    quantity: u8,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let table = std::env::var("ORDERS_TABLE_NAME").map_err(|_| "set ORDERS_TABLE_NAME")?;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
    let (guard, batch) = (
        &BusinessKeyGuard::new(dynamodb, table),
        &BatchProcessor::new(),
    );
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let report = batch
            .run(&event.payload, |msg| async move {
                let order: Order = msg.parse()?; // the payload, out of any SNS/EventBridge envelope
                guard.put(&order).await // same details → Duplicate (acked); other → Conflict
            })
            .await;
        Ok::<SqsBatchResponse, Error>(report.response()) // exactly the failed message ids
    }))
    .await
}
