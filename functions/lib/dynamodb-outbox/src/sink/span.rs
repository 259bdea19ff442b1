//! The span a batch is sent to its destination in. With the `opentelemetry` feature and
//! a `tracing-opentelemetry` layer it is an OpenTelemetry producer span (`send <name>`)
//! **linked** to every message's producer context — one send carries up to ten
//! messages of as many traces, so it cannot be a child of each; the links let a
//! backend walk from any of those traces to the send that published it, by the stream
//! path or by a sweeper's republish alike.

use dynamodb_outbox_core::message::OutboundMessage;
use dynamodb_outbox_core::Destination;
#[cfg(feature = "opentelemetry")]
use dynamodb_outbox_core::trace::{ATTR_TRACEPARENT, ATTR_TRACESTATE, TraceContext};

/// The span `messages` are sent to `destination` in.
pub(crate) fn send_span(destination: &Destination, messages: &[&OutboundMessage]) -> tracing::Span {
    let name = short_name(destination);
    #[cfg(not(feature = "opentelemetry"))]
    let span = tracing::debug_span!("outbox.send", destination = name, count = messages.len());
    #[cfg(feature = "opentelemetry")]
    let span = {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let span = tracing::info_span!(
            "outbox.send",
            destination = name,
            count = messages.len(),
            otel.name = format!("send {name}"),
            otel.kind = "producer",
            messaging.system = messaging_system(destination),
            messaging.operation.type = "send",
            messaging.destination.name = name,
            messaging.batch.message_count = messages.len(),
        );
        for producer in messages.iter().filter_map(|m| producer_context(m)) {
            span.add_link(producer.span_context());
        }
        span
    };
    span
}

/// The destination's short name: a queue's or a topic's name, a bus's.
fn short_name(destination: &Destination) -> &str {
    match destination {
        Destination::Sqs { url, .. } => url.rsplit('/').next().unwrap_or(url),
        Destination::Sns { arn, .. } => arn.rsplit(':').next().unwrap_or(arn),
        Destination::EventBridge { bus, .. } => bus.rsplit(['/', ':']).next().unwrap_or(bus),
    }
}

/// The messaging system as OpenTelemetry's conventions name it (they have no name for
/// EventBridge: `aws.eventbridge`, the name its AWS SDK instrumentation uses).
#[cfg(feature = "opentelemetry")]
fn messaging_system(destination: &Destination) -> &'static str {
    match destination {
        Destination::Sqs { .. } => "aws_sqs",
        Destination::Sns { .. } => "aws_sns",
        Destination::EventBridge { .. } => "aws.eventbridge",
    }
}

/// The context a message was committed in, as it goes out: its W3C attributes, else
/// its X-Ray header (the W3C ones are left out of a message they would push over its
/// limit); `None` without a trace.
#[cfg(feature = "opentelemetry")]
fn producer_context(message: &OutboundMessage) -> Option<TraceContext> {
    let attribute = |name: &str| {
        message
            .attributes
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.text())
    };
    TraceContext::from_attributes(
        attribute(ATTR_TRACEPARENT),
        attribute(ATTR_TRACESTATE),
        message.trace_header.as_deref(),
    )
    .and_then(Result::ok)
}

#[cfg(test)]
#[cfg(feature = "opentelemetry")]
mod tests;
