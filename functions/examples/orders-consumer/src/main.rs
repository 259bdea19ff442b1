//! `orders-consumer`: SQS order jobs in, each order stored once.
//!
//! Configuration is read and the client built once, at start-up; a missing variable
//! stops the function with a message naming it. Logs follow Lambda's log level and
//! format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use dynamodb_outbox_idempotency::{Deadline, S3Payloads, SqsDeleter};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use orders_consumer::{Config, Deps, handle_until};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let config = Config::from_env()
        .inspect_err(|e| lambda_runtime::tracing::error!(error = %e, "bad configuration"))?;
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    // Offloaded payloads (the large-payload offload) are read from S3 before a job is
    // parsed; each finished message is deleted at once, so that a message crashing the
    // process later in the batch cannot send it to the dead-letter queue.
    let deps = Deps::new(aws_sdk_dynamodb::Client::new(&aws), &config)
        .with_large_payloads(S3Payloads::from_conf(&aws))
        .deleting_finished(SqsDeleter::from_conf(&aws));
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        handle_event(event, &deps)
    }))
    .await
}

async fn handle_event(
    event: LambdaEvent<SqsEvent>,
    deps: &Deps,
) -> Result<SqsBatchResponse, Error> {
    let deadline = Deadline::from_epoch_millis(event.context.deadline);
    Ok(handle_until(&event.payload, deadline, deps)
        .await
        .response())
}
