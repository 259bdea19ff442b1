//! The consumer spans the batch runner opens, exported through a real
//! `tracing-opentelemetry` layer and the SDK's in-memory exporter.

use crate::{BatchProcessor, SqsEvent, SqsMessage};
use aws_lambda_events::event::sqs::SqsMessageAttribute;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

const PRODUCER: &str = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";

fn message(id: &str, outbox_id: &str, traceparent: Option<&str>) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(r#"{"order":42}"#.to_owned());
    m.event_source_arn = Some("arn:aws:sqs:eu-west-1:123456789012:orders".to_owned());
    let text = |v: &str| {
        let mut a = SqsMessageAttribute::default();
        a.string_value = Some(v.to_owned());
        a.data_type = Some("String".to_owned());
        a
    };
    m.message_attributes
        .insert("outbox-message-id".to_owned(), text(outbox_id));
    if let Some(tp) = traceparent {
        m.message_attributes
            .insert("traceparent".to_owned(), text(tp));
    }
    m
}

/// Runs `event` through a batch processor whose handler fails `failing`, and returns
/// the spans exported.
async fn spans_of(event: &SqsEvent, failing: &str) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("consumer-test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    let _installed = tracing::subscriber::set_default(subscriber);
    BatchProcessor::new()
        .concurrency(1)
        .run(event, |d| async move {
            match d.sqs_message_id() == failing {
                true => Err("the handler failed"),
                false => Ok(()),
            }
        })
        .await;
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

#[tokio::test(flavor = "current_thread")]
async fn each_message_gets_a_consumer_span_linked_to_its_producer_and_none_is_invented() {
    let mut event = SqsEvent::default();
    event.records = vec![
        message("sqs-1", "outbox-1", Some(PRODUCER)),
        message("sqs-2", "outbox-2", None),
    ];
    let spans = spans_of(&event, "sqs-2").await;
    assert_eq!(spans.len(), 2, "one span per message: {spans:?}");
    let by_message = |id: &str| {
        spans
            .iter()
            .find(|s| attribute(s, "message_id").as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no span for {id}: {spans:?}"))
    };

    let traced = by_message("outbox-1");
    assert_eq!(traced.name, "process orders");
    assert_eq!(traced.span_kind, SpanKind::Consumer);
    assert_eq!(
        attribute(traced, "messaging.system").as_deref(),
        Some("aws_sqs")
    );
    assert_eq!(
        attribute(traced, "messaging.destination.name").as_deref(),
        Some("orders")
    );
    assert_eq!(
        attribute(traced, "messaging.message.id").as_deref(),
        Some("sqs-1")
    );
    let links: Vec<_> = traced.links.iter().collect();
    assert_eq!(links.len(), 1, "linked to the producer: {links:?}");
    let producer = &links[0].span_context;
    assert_eq!(
        producer.trace_id().to_string(),
        "5759e988bd862e3fe1be46a994272793"
    );
    assert_eq!(producer.span_id().to_string(), "53995c3f42cd8ad8");
    assert!(producer.is_remote());
    assert_ne!(
        traced.span_context.trace_id(),
        producer.trace_id(),
        "a link, not a parent: the consumer's own trace stays its own"
    );
    assert_eq!(traced.status, Status::Unset);

    let untraced = by_message("outbox-2");
    assert_eq!(untraced.links.iter().count(), 0, "no context invented");
    assert!(
        matches!(untraced.status, Status::Error { .. }),
        "{:?}",
        untraced.status
    );
}
