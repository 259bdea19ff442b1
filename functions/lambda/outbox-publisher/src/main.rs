//! `outbox-publisher`: the DynamoDB stream of the outbox table in, messages out.
//!
//! Configuration is read, clients are built and the SQS destinations' size limits
//! are read from their queues once, at start-up (`dynamodb_outbox::lambda`); a missing or
//! malformed variable stops the function with a message naming it.
//! Logs follow Lambda's log level and format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use dynamodb_outbox::lambda::PublisherFunction;
use lambda_runtime::{Error, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    let function = PublisherFunction::from_env(&aws).await?;
    lambda_runtime::run(service_fn(|event| function.handle(event))).await
}
