//! Logging set-up shared by the Lambda binaries.

/// JSON logs, one line per event, level from `RUST_LOG` (default `info`). No
/// timestamps (CloudWatch adds them) and no payloads (the code never logs them).
pub fn init_lambda_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .without_time()
        .init();
}
