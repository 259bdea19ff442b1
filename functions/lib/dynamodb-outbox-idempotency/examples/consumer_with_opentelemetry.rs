//! An idempotent consumer whose spans continue the producer's trace (feature
//! `opentelemetry`): each message is handled in a consumer span (`process <queue>`)
//! linked to the span that committed it, through SQS, SNS or EventBridge alike, and
//! every log line inside carries the outbox `message_id` and the producer's `trace_id`.
//!
//! Spans go to stdout here (CloudWatch Logs, in Lambda); for X-Ray or any OTLP backend
//! replace the stdout exporter with `opentelemetry-otlp`'s and run the ADOT collector
//! layer. The provider is flushed at the end of each invocation: Lambda freezes the
//! process between invocations, and a span still buffered then may never leave.
//!
//! `cargo run --example consumer_with_opentelemetry --features opentelemetry`
use dynamodb_outbox_idempotency::{
    BatchProcessor, BusinessKeyGuard, Deadline, SqsBatchResponse, SqsEvent,
};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(serde::Deserialize, serde::Serialize)]
struct Order {
    id: String,
    quantity: u8,
}

/// Installs `tracing` with an OpenTelemetry layer (spans) and a JSON log layer (log
/// lines, with the message span's `message_id` and `trace_id`).
fn install_tracing() -> SdkTracerProvider {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let spans = tracing_opentelemetry::layer().with_tracer(provider.tracer("orders-consumer"));
    let logs = tracing_subscriber::fmt::layer().json().without_time();
    tracing_subscriber::registry().with(spans).with(logs).init();
    provider
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let provider = &install_tracing();
    let table = std::env::var("ORDERS_TABLE_NAME").map_err(|_| "set ORDERS_TABLE_NAME")?;
    let aws = aws_config::load_from_env().await;
    let guard = &BusinessKeyGuard::new(aws_sdk_dynamodb::Client::new(&aws), table);
    let batch = &BatchProcessor::new();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let deadline = Deadline::from_epoch_millis(event.context.deadline);
        let report = batch
            .run_until(&event.payload, deadline, |msg| async move {
                // Inside the message's consumer span: this line carries its ids.
                tracing::info!(envelope = ?msg.envelope(), "order received");
                let order: Order = msg.parse()?;
                guard.put(&order).await
            })
            .await;
        if let Err(error) = provider.force_flush() {
            tracing::warn!(%error, "spans not flushed");
        }
        Ok::<SqsBatchResponse, Error>(report.response())
    }))
    .await
}
