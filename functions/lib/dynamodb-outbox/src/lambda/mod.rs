//! The outbox's three Lambda functions, for a binary of your own (feature `lambda`).
//!
//! Each is built once per execution environment — configuration read, clients built
//! from one [`SdkConfig`](aws_types::SdkConfig), no request made: what the publisher
//! and the sweeper read from AWS (their SQS destinations' size limits) waits for their
//! first invocation — and its `handle` is what the runtime calls:
//!
//! - [`PublisherFunction`]: the outbox table's stream → destinations, `SENT` marks;
//! - [`SweeperFunction`]: on a schedule, what the stream path did not finish;
//! - [`RecoveryFunction`]: the stream mapping's on-failure records → back into the
//!   sweeper's index.
//!
//! The SDK configuration is yours: wrap its HTTP client, set timeouts (yours win; the
//! ones you leave unset get the functions' own, `OUTBOX_SDK_ATTEMPT_TIMEOUT_MS` and
//! `OUTBOX_SDK_OPERATION_TIMEOUT_MS`, 5 s and 20 s by default), point it at a local AWS. Logs follow Lambda's log level and format settings when you install
//! `lambda_runtime`'s default subscriber.
//!
//! ```no_run
//! use dynamodb_outbox::lambda::SweeperFunction;
//! use lambda_runtime::{Error, service_fn};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Error> {
//!     lambda_runtime::tracing::init_default_subscriber();
//!     let aws = aws_config::load_from_env().await;
//!     let function = SweeperFunction::from_env(&aws).await?;
//!     lambda_runtime::run(service_fn(|event| function.handle(event))).await
//! }
//! ```

mod learned;
mod publisher;
mod recovery;
mod start;
mod sweeper;
mod table;

pub use crate::sweep::{ScanMode, SweepLimits, SweepSummary, SweeperConfig};
pub use publisher::PublisherFunction;
pub use recovery::RecoveryFunction;
pub use sweeper::SweeperFunction;

use dynamodb_outbox_core::ConfigError;

/// A bad configuration is logged where the function's operator looks (the function's
/// log) before start-up fails with it.
fn log_config_error(e: &ConfigError) {
    tracing::error!(error = %e, "bad configuration");
}
