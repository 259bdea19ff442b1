#![doc = include_str!("../README.md")]
//!
//! ## The public surface
//!
//! - The producer: [`OutboxWriter`] (commit, or [`prepare`](OutboxWriter::prepare) and
//!   [`commit_prepared`](OutboxWriter::commit_prepared) for a retry-safe commit),
//!   [`NewMessage`], [`Committed`], [`PreparedCommit`], [`ProducerError`].
//! - The Lambda functions for a binary of your own ([`lambda`], feature `lambda`), and
//!   their configuration: [`PublisherConfig`], [`Routes`], [`Destination`],
//!   [`ConfigError`], and the table's attribute names: [`KeyNames`].
//! - Time as an input: [`Clock`], [`SystemClock`], [`ManualClock`].
//! - [`STREAM_FILTER_JSON`]: the stream mapping's FilterCriteria, for infrastructure
//!   code of your own.
//!
//! The adapters (DynamoDB, SQS, SNS, EventBridge, S3) are public only with the
//! `unstable-internals` feature, which also makes the core's engine public at its own
//! paths (`dynamodb_outbox_core::schema`, `::policy`, …), for this project's own tools,
//! tests and model checker; they are not covered by semver.
//!
//! ## Future depth
//!
//! The adapters box every SDK request future where they make the request. The SDK's
//! request futures are deep generic state machines, and a Lambda binary nests the
//! handler's future inside the runtime's own: unboxed, computing the layout of a
//! binary's `main` future overflows the compiler's query depth. Boxing at the one
//! place each request is made keeps every future above it — the core's, the
//! handlers', the runtime's — shallow and small, for one allocation per network
//! request, so the binaries need neither a raised `recursion_limit` nor boxes of
//! their own.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod producer;

#[cfg(feature = "lambda")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda")))]
pub mod lambda;

/// Modules public only with `unstable-internals`; private (and partly unused) without.
macro_rules! internal {
    ($($name:ident;)*) => {$(
        #[cfg(feature = "unstable-internals")]
        pub mod $name;
        #[cfg(not(feature = "unstable-internals"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}
internal! {
    batch;
    dynamo;
    eventbridge;
    regional;
    s3;
    sdk_error;
    sink;
    sns;
    sqs;
    stream;
    sweep;
    wiring;
}

/// Which region publishes a message on a global table (`HomeRegion`).
pub use dynamodb_outbox_core::home;
pub use dynamodb_outbox_core::large_payload::PayloadPointer;
/// The trace context a message carries from its commit to its consumer.
pub use dynamodb_outbox_core::trace;
pub use dynamodb_outbox_core::{
    Clock, ConfigError, Destination, FailureKind, HomeRegions, KeyNames, ManualClock, NewMessage,
    PublisherConfig, Routes, SharedClock, SweepShards, SystemClock,
};
pub use producer::{CancelledAction, Committed, OutboxWriter, PreparedCommit, ProducerError};
pub use s3::client as s3_client;
#[cfg(feature = "lambda")]
pub use {aws_lambda_events, lambda_runtime};
/// The foreign types in this crate's signatures.
pub use {aws_sdk_dynamodb, aws_sdk_s3};

#[cfg(feature = "unstable-internals")]
pub use sweep::AwsSweeper;
#[cfg(feature = "unstable-internals")]
pub use wiring::{AwsPublisher, FromSdkConfig};

/// The stream FilterCriteria the infrastructure deploys, as JSON text. The local
/// runner applies the same filter; keep them one.
///
/// ```
/// let filter: serde_json::Value = serde_json::from_str(dynamodb_outbox::STREAM_FILTER_JSON)?;
/// // Lambda's FilterCriteria: a list of filters, each a JSON pattern as text.
/// assert!(filter["Filters"][0]["Pattern"].as_str().is_some_and(|p| p.contains("PENDING_MESSAGE")));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub const STREAM_FILTER_JSON: &str = include_str!("../stream-filter.json");
