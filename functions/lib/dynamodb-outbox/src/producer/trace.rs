//! The trace a producer running in Lambda commits its messages under.

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
