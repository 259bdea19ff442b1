//! `orders-consumer`: SQS order jobs in, each order stored once.
//!
//! Configuration is read and the client built once, at start-up; a missing variable
//! stops the function with a message naming it.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use orders_consumer::{Config, Deps, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    init_tracing();
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

/// JSON logs, one line per event, level from `RUST_LOG` (default `info`).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .without_time()
        .init();
}
