//! `shop-consumer`: the Lambda function behind the shop's queue. Each `order-placed`
//! message ships its order once; the partial batch response names the messages to
//! retry.

use dynamodb_outbox_idempotency::{
    BatchProcessor, Deadline, SqsBatchResponse, SqsDeleter, SqsEvent,
};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let table = std::env::var("SHOP_TABLE_NAME")
        .map_err(|_| "SHOP_TABLE_NAME is not set: name the shop's table")?;
    let aws = aws_config::load_from_env().await;
    let guard = shop::shipments(dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws), &table);
    // Each shipped message is deleted at once: a message crashing the process later in
    // the batch cannot charge it another receive and send it to the dead-letter queue.
    let batch = BatchProcessor::new().delete_finished(SqsDeleter::from_conf(&aws));
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let (guard, batch) = (&guard, &batch);
        async move {
            // Answers before the deadline, naming what it has not finished.
            let deadline = Deadline::from_epoch_millis(event.context.deadline);
            let report = batch
                .run_until(&event.payload, deadline, |m| async move {
                    shop::ship(&m, guard).await
                })
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
