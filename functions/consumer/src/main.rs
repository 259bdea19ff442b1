//! `orders-consumer`: SQS order jobs in, each order stored once.
//!
//! Configuration is read and the client built once, at start-up; a missing variable
//! stops the function with a message naming it. Logs follow Lambda's log level and
//! format settings.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use orders_consumer::{Config, Deps, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let config = Config::from_env()
        .inspect_err(|e| lambda_runtime::tracing::error!(error = %e, "bad configuration"))?;
    let aws = aws_config::load_from_env().await;
    let deps = Deps::new(aws_sdk_dynamodb::Client::new(&aws), &config);
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        handle_event(event, &deps)
    }))
    .await
}

async fn handle_event(
    event: LambdaEvent<SqsEvent>,
    deps: &Deps,
) -> Result<SqsBatchResponse, Error> {
    Ok(handle(&event.payload, deps).await.response())
}
