//! `outbox-publisher`: the DynamoDB stream of the outbox table in, messages out.
//!
//! Configuration is read, clients are built and the SQS destinations' size limits
//! are read from their queues once, at start-up ([`handler::Deps`]); a missing or
//! malformed variable stops the function with a message naming it.
//! Logs follow Lambda's log level and format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

mod handler;

use lambda_runtime::{Error, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let deps = handler::Deps::from_env().await?;
    lambda_runtime::run(service_fn(|event| handler::handle(event, &deps))).await
}
