//! The span a message is handled in, and — with the `opentelemetry` feature — its link
//! to the producer's span.

#[cfg(test)]
#[cfg(feature = "opentelemetry")]
mod tests;

use super::Delivery;
use dynamodb_outbox_core::trace::TraceContext;

impl Delivery<'_> {
    /// The span to handle this message in (the [`BatchProcessor`](crate::BatchProcessor)
    /// enters it around the handler): every log line inside carries the outbox
    /// `message_id` and the producer's `trace_id`, to find the message by (`outbox-ops
    /// show`, X-Ray, any OpenTelemetry backend).
    ///
    /// With the `opentelemetry` feature and a `tracing-opentelemetry` layer installed,
    /// it is also an OpenTelemetry consumer span (`process <queue>`, the messaging
    /// semantic conventions' `aws_sqs` attributes) **linked** to the span that committed
    /// the message: a batch consumer's spans link to each message's producer rather than
    /// take it as parent, so the invocation's own trace stays whole. A message without a
    /// trace gets a span without a link: no context is invented.
    pub fn span(&self) -> tracing::Span {
        let message_id = self.outbox_message_id().unwrap_or_default();
        let trace_id = self.trace().map(TraceContext::trace_id).unwrap_or_default();
        #[cfg(not(feature = "opentelemetry"))]
        let span = tracing::info_span!("outbox.message", message_id, trace_id);
        #[cfg(feature = "opentelemetry")]
        let span = {
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            let queue = self.queue_name();
            let span = tracing::info_span!(
                "outbox.message",
                message_id,
                trace_id,
                otel.name = format!("process {queue}"),
                otel.kind = "consumer",
                messaging.system = "aws_sqs",
                messaging.operation.type = "process",
                messaging.operation.name = "process",
                messaging.destination.name = queue,
                messaging.message.id = self.sqs_message_id(),
                // "error" when the handler fails (the batch runner records it).
                otel.status_code = tracing::field::Empty,
            );
            if let Some(producer) = self.span_context() {
                span.add_link(producer);
            }
            span
        };
        span
    }

    /// The producer's span as an OpenTelemetry [`SpanContext`](opentelemetry::trace::SpanContext),
    /// remote, from whichever envelope carried it ([`Delivery::trace`]); `None` when
    /// the message has none. For a span of your own: link it
    /// (`OpenTelemetrySpanExt::add_link`) or, handling one message alone, parent it.
    #[cfg(feature = "opentelemetry")]
    pub fn span_context(&self) -> Option<opentelemetry::trace::SpanContext> {
        self.trace().map(TraceContext::span_context)
    }

    /// The queue's name, the last part of the event source's ARN (empty without one).
    #[cfg(feature = "opentelemetry")]
    fn queue_name(&self) -> &str {
        let arn = self.sqs().event_source_arn.as_deref().unwrap_or_default();
        arn.rsplit(':').next().unwrap_or_default()
    }
}
