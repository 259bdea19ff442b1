//! `outbox-sweeper`: on an EventBridge schedule, recovers the outbox messages the
//! stream publisher did not finish (see `outbox::sweep`).
//!
//! Configuration is read and clients are built once, at start-up; a missing or
//! malformed variable stops the function with a message naming it. The event itself
//! carries nothing the sweep needs (any JSON is accepted, so a manual test invoke
//! works too); the invocation's deadline sets the time budget.

// The runtime nests the handler's future deeply; a clean build once hit the default
// query depth limit computing its layout (the publish path is also boxed).
#![recursion_limit = "256"]

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use lambda_runtime::{Error, LambdaEvent, service_fn};
use outbox::metrics;
use outbox::sweep::{AwsSweeper, SweepSummary, SweeperConfig, handle_scheduled_event};

#[tokio::main]
async fn main() -> Result<(), Error> {
    outbox::telemetry::init_lambda_logs();
    let config = SweeperConfig::from_env()
        .inspect_err(|e| tracing::error!(error = %e, "bad configuration"))?;
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    let sweeper = AwsSweeper::with_sink(
        config,
        aws_sdk_dynamodb::Client::new(&aws),
        outbox::sink::AwsSink::new(aws_sdk_sqs::Client::new(&aws))
            .with_sns(aws_sdk_sns::Client::new(&aws))
            .with_eventbridge(aws_sdk_eventbridge::Client::new(&aws)),
    );
    let sweeper = &sweeper;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move {
            let summary = handle_scheduled_event(sweeper, event.context.deadline).await;
            metrics::emit(
                outbox::publish::now_ms(),
                &metrics::sweeper_metrics(&summary),
            );
            Ok::<SweepSummary, Error>(summary)
        },
    ))
    .await
}
