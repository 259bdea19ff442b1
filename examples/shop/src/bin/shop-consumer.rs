//! `shop-consumer`: the Lambda function behind the shop's queue. Each `order-placed`
//! message ships its order once; the partial batch response names the messages to
//! retry.

use dynamodb_outbox_idempotency::{BatchProcessor, SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let table = std::env::var("SHOP_TABLE_NAME")
        .map_err(|_| "SHOP_TABLE_NAME is not set: name the shop's table")?;
    let aws = aws_config::load_from_env().await;
    let guard = shop::shipments(dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws), &table);
    let batch = BatchProcessor::new();
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let (guard, batch) = (&guard, &batch);
        async move {
            let report = batch
                .run(&event.payload, |m| async move { shop::ship(&m, guard).await })
                .await;
            for failed in report.outcomes.iter().filter(|o| o.result.is_err()) {
                if let Err(e) = &failed.result {
                    tracing::error!(message_id = %failed.message_id, error = %e, "not shipped; retried");
                }
            }
            Ok::<SqsBatchResponse, Error>(report.response())
        }
    }))
    .await
}
