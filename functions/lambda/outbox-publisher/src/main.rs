//! `outbox-publisher`: the DynamoDB stream of the outbox table in, messages out.
//!
//! Configuration is read and clients are built once, at start-up, with no AWS call
//! (the SQS destinations' size limits are read on the first invocation:
//! `dynamodb_outbox::lambda`); a missing or malformed variable stops the function with a
//! message naming it.
//! Logs follow Lambda's log level and format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use dynamodb_outbox::lambda::PublisherFunction;
use lambda_runtime::Error;

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
    let function = PublisherFunction::from_env(&aws).await?;
    // Lambda's redelivery and concurrent batches of a shard, where the local AWS is
    // kinder (OUTBOX_FAULTS_REDELIVER, OUTBOX_FAULTS_PARALLEL): test builds only.
    #[cfg(feature = "fault-injection")]
    if let Some(faults) = outbox_faults::stream::StreamFaults::from_env()? {
        return faults.run(|event| function.handle(event)).await;
    }
    function.run().await
}
