//! `outbox-publisher`: the DynamoDB stream of the outbox table in, messages out.
//!
//! Configuration is read and clients are built once, at start-up; a missing or
//! malformed variable stops the function with a message naming it.

// The runtime nests the handler's future deeply; a clean build once hit the default
// query depth limit computing its layout (the publish path is also boxed).
#![recursion_limit = "256"]

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use outbox::{AwsPublisher, PublisherConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    outbox::telemetry::init_lambda_logs();
    let config = PublisherConfig::from_env()
        .inspect_err(|e| tracing::error!(error = %e, "bad configuration"))?;
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    let publisher = AwsPublisher::with_sink(
        config,
        aws_sdk_dynamodb::Client::new(&aws),
        outbox::sink::AwsSink::new(aws_sdk_sqs::Client::new(&aws))
            .with_sns(aws_sdk_sns::Client::new(&aws))
            .with_eventbridge(aws_sdk_eventbridge::Client::new(&aws)),
    );
    let publisher = &publisher;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| async move {
        let (response, summary) =
            outbox::stream::handle_stream_event(publisher, &event.payload).await;
        outbox::metrics::emit(
            outbox::publish::now_ms(),
            &outbox::metrics::publisher_metrics(&summary),
        );
        Ok::<DynamoDbEventResponse, Error>(response)
    }))
    .await
}
