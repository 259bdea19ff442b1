//! The trace a producer commits its messages under: the active OpenTelemetry span's
//! (feature `opentelemetry`), else the Lambda invocation's.

use dynamodb_outbox_core::trace::TraceContext;

/// The variable Lambda (and the Rust runtime, per invocation) sets to the invocation's
/// X-Ray trace header.
pub(super) const LAMBDA_TRACE_VAR: &str = "_X_AMZN_TRACE_ID";

/// The current Lambda invocation's trace, when there is a well-formed one.
pub(super) fn lambda_invocation() -> Option<TraceContext> {
    let header = std::env::var(LAMBDA_TRACE_VAR).ok()?;
    match TraceContext::from_xray(&header) {
        Ok(trace) => Some(trace),
        Err(error) => {
            tracing::debug!(%error, "{LAMBDA_TRACE_VAR} is not a trace context: messages are committed without one");
            None
        }
    }
}

/// The context of the active span, when there is a valid one: the current `tracing`
/// span's through a `tracing-opentelemetry` layer, else OpenTelemetry's current
/// context (an application that uses the OpenTelemetry API directly). The message
/// names that span as its parent, so the consumer's link points at the span that
/// committed it.
#[cfg(feature = "opentelemetry")]
pub(super) fn active_span() -> Option<TraceContext> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let from_tracing = tracing::Span::current().context();
    TraceContext::from_span_context(from_tracing.span().span_context()).or_else(|| {
        TraceContext::from_span_context(opentelemetry::Context::current().span().span_context())
    })
}

/// Without the `opentelemetry` feature there is no active span to read.
#[cfg(not(feature = "opentelemetry"))]
pub(super) fn active_span() -> Option<TraceContext> {
    None
}
