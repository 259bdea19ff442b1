//! [`TraceContext`] as OpenTelemetry's [`SpanContext`] and back (feature
//! `opentelemetry`): a consumer links its span to the producer's context; a producer
//! commits its active span's context.

use super::TraceContext;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

impl TraceContext {
    /// The producer's span as a remote [`SpanContext`], to link a consumer's span to
    /// (or parent it on). The `tracestate` goes with it when OpenTelemetry reads it;
    /// one it refuses is dropped alone, as with any other carrier.
    ///
    /// ```
    /// use dynamodb_outbox_core::trace::TraceContext;
    ///
    /// let tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";
    /// let context = TraceContext::from_w3c(tp, Some("vendor=x"))?.span_context();
    /// assert!(context.is_remote() && context.is_sampled());
    /// assert_eq!(context.trace_id().to_string(), "5759e988bd862e3fe1be46a994272793");
    /// assert_eq!(context.trace_state().header(), "vendor=x");
    /// # Ok::<(), dynamodb_outbox_core::trace::TraceError>(())
    /// ```
    pub fn span_context(&self) -> SpanContext {
        // Both ids were checked as lowercase hex and non-zero when the context was
        // read, so neither parse can fail; an invalid context is the fallback anyway.
        let trace_id = TraceId::from_hex(self.trace_id()).unwrap_or(TraceId::INVALID);
        let span_id = SpanId::from_hex(self.parent_id()).unwrap_or(SpanId::INVALID);
        let flags = if self.sampled() {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let state = self
            .tracestate()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        SpanContext::new(trace_id, span_id, flags, true, state)
    }

    /// The context of `span`: `None` when it is not a valid context (no OpenTelemetry
    /// layer, or a span outside any trace), never an invented one.
    pub fn from_span_context(span: &SpanContext) -> Option<Self> {
        if !span.is_valid() {
            return None;
        }
        let traceparent = format!(
            "00-{}-{}-{:02x}",
            span.trace_id(),
            span.span_id(),
            span.trace_flags().to_u8()
        );
        let state = span.trace_state().header();
        Self::from_w3c(&traceparent, Some(state.as_str()).filter(|s| !s.is_empty())).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";

    #[test]
    fn a_context_goes_to_opentelemetry_and_back_unchanged() {
        let ours = TraceContext::from_w3c(TP, Some("a=1,b=2")).unwrap();
        let theirs = ours.span_context();
        assert_eq!(theirs.span_id().to_string(), "53995c3f42cd8ad8");
        assert_eq!(TraceContext::from_span_context(&theirs), Some(ours));
    }

    #[test]
    fn an_unsampled_context_stays_unsampled() {
        let tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00";
        let theirs = TraceContext::from_w3c(tp, None).unwrap().span_context();
        assert!(!theirs.is_sampled());
        let back = TraceContext::from_span_context(&theirs).unwrap();
        assert_eq!(back.traceparent(), tp);
        assert_eq!(back.tracestate(), None);
    }

    #[test]
    fn no_valid_span_is_no_context() {
        assert_eq!(TraceContext::from_span_context(&SpanContext::NONE), None);
    }

    #[test]
    fn a_tracestate_opentelemetry_refuses_is_dropped_alone() {
        // Printable ASCII (we keep it) but not `key=value` list members.
        let theirs = TraceContext::from_w3c(TP, Some("not a list member"))
            .unwrap()
            .span_context();
        assert!(theirs.is_valid());
        assert_eq!(theirs.trace_state().header(), "");
    }
}
