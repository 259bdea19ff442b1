//! `outbox-sweeper`: on an EventBridge schedule, recovers the outbox messages the
//! stream publisher did not finish (see `dynamodb_outbox::sweep`).
//!
//! Configuration is read and clients are built once, at start-up, with no AWS call
//! (the SQS destinations' size limits are read on the first invocation:
//! `dynamodb_outbox::lambda`); a missing or malformed variable stops the function with a
//! message naming it.
//! Logs follow Lambda's log level and format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use dynamodb_outbox::lambda::SweeperFunction;
use lambda_runtime::{Error, service_fn};

// mimalloc, not the system allocator: the handler bench's instruction count per
// record is 12% lower with it (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    let function = SweeperFunction::from_env(&aws).await?;
    lambda_runtime::run(service_fn(|event| function.handle(event))).await
}
