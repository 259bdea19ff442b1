//! `orders-consumer`: SQS order jobs in, each order stored once.
//!
//! Configuration is read and the client built once, at start-up; a missing variable
//! stops the function with a message naming it.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use orders_consumer::{Config, Deps, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    outbox::telemetry::init_lambda_logs();
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "bad configuration"))?;
    let aws = aws_config::load_from_env().await;
    let deps = Deps::new(aws_sdk_dynamodb::Client::new(&aws), &config);
    let deps = &deps;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        Ok::<SqsBatchResponse, Error>(handle(&event.payload, deps).await.response())
    }))
    .await
}
