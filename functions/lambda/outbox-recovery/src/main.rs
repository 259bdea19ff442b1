//! `outbox-recovery`: the stream mapping's on-failure records in, the outbox items of
//! the discarded records back where the sweeper finds them.
//!
//! Lambda discards stream records it gave up on (past `MaximumRecordAgeInSeconds`,
//! after `MaximumRetryAttempts`, when every invocation holding them timed out or ran
//! out of memory) and sends only their sequence range to the on-failure destination.
//! This function reads that range back from the stream (it keeps records 24 hours)
//! and puts every pending outbox item it finds that no index knows about into the
//! sweeper's index, due now. Items the library wrote are indexed already; this is
//! what saves the items of minimal producers.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use dynamodb_outbox::lambda::RecoveryFunction;
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
    let function = RecoveryFunction::from_env(&aws)?;
    lambda_runtime::run(service_fn(|event| function.handle(event))).await
}
