//! The send span, exported through a real `tracing-opentelemetry` layer and the SDK's
//! in-memory exporter.

use super::send_span;
use dynamodb_outbox_core::message::{AttrValue, OutboundMessage};
use dynamodb_outbox_core::Destination;
use dynamodb_outbox_core::trace::ATTR_TRACEPARENT;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;

/// A message as the publisher sends it, with its W3C attribute and/or X-Ray header.
fn outbound(traceparent: Option<&str>, xray: Option<&str>) -> OutboundMessage {
    let mut attributes = vec![("outbox-message-id", AttrValue::String("m".to_owned()))];
    if let Some(tp) = traceparent {
        attributes.push((ATTR_TRACEPARENT, AttrValue::String(tp.to_owned())));
    }
    OutboundMessage {
        body: "{}".to_owned(),
        attributes,
        group_id: None,
        dedup_id: None,
        trace_header: xray.map(str::to_owned),
    }
}

#[test]
fn a_send_links_to_each_traced_message_it_carries_and_to_nothing_else() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("publisher-test"));
    let _installed = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let bus = Destination::EventBridge {
        bus: "arn:aws:events:eu-west-1:123456789012:event-bus/orders".to_owned(),
        source: "shop".to_owned(),
    };
    let messages = [
        outbound(
            Some("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"),
            None,
        ),
        outbound(None, None),
        // Its W3C attribute left out (it would have pushed the message over its limit):
        // the X-Ray header still names the trace.
        outbound(
            None,
            Some("Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0"),
        ),
    ];
    let refs: Vec<&OutboundMessage> = messages.iter().collect();
    drop(send_span(&bus, &refs));
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    let send = &spans[0];
    assert_eq!(send.name, "send orders");
    assert_eq!(send.span_kind, SpanKind::Producer);
    let linked: Vec<(String, String)> = send
        .links
        .iter()
        .map(|l| {
            let c = &l.span_context;
            (c.trace_id().to_string(), c.span_id().to_string())
        })
        .collect();
    let expected = [
        ("5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8"),
        ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
    ]
    .map(|(t, s)| (t.to_owned(), s.to_owned()));
    assert_eq!(
        linked, expected,
        "one link per traced message, none invented for the untraced one"
    );
}
