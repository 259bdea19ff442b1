//! The README's idempotent consumer: each order stored once, copies acknowledged,
//! conflicts and malformed bodies reported (and, after the redrive limit, on the DLQ).
use dynamodb_outbox_idempotency::{
    BatchProcessor, BusinessKeyGuard, Deadline, SqsBatchResponse, SqsDeleter, SqsEvent,
};
use lambda_runtime::{Error, LambdaEvent, service_fn, tracing};

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Order {
    id: String,
    quantity: u8,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let table = std::env::var("ORDERS_TABLE_NAME").map_err(|_| "set ORDERS_TABLE_NAME")?;
    let aws = aws_config::load_from_env().await;
    let guard = &BusinessKeyGuard::new(aws_sdk_dynamodb::Client::new(&aws), table);
    let batch = &BatchProcessor::new().delete_finished(SqsDeleter::from_conf(&aws));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let deadline = Deadline::from_epoch_millis(event.context.deadline);
        let report = batch // answers before the deadline, naming what it has not finished
            .run_until(&event.payload, deadline, |msg| async move {
                let order: Order = msg.parse()?; // the payload, out of any SNS/EventBridge envelope
                guard.put(&order).await // same details → Duplicate (acked); other → Conflict
            })
            .await;
        for o in &report.outcomes {
            if let Err(e) = &o.result {
                // ids and why, never the payload
                tracing::error!(
                    message_id = %o.message_id,
                    outbox_message_id = o.outbox_message_id.as_deref().unwrap_or("-"),
                    error = %e,
                    "failed"
                );
            }
        }
        Ok::<SqsBatchResponse, Error>(report.response()) // exactly the failed message ids
    }))
    .await
}
