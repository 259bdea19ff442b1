//! # dynamodb-outbox
//!
//! A transactional outbox for Amazon DynamoDB. The application writes its business
//! item and an outbox item in one `TransactWriteItems` ([`OutboxWriter`]); the
//! publisher Lambda, triggered by the table's stream, publishes new pending messages
//! and marks them `SENT` ([`stream`], [`publish`]); the sweeper recovers what the
//! stream path missed ([`sweep`]).
//!
//! This crate is the edge: the AWS adapters behind the ports of
//! `dynamodb-outbox-core` — DynamoDB ([`dynamo`], [`producer`]), SQS ([`sqs`]), SNS
//! ([`sns`]) and EventBridge ([`eventbridge`]) sharing one batch-send shape
//! ([`batch`]), with errors classified from the SDK's metadata ([`sdk_error`]) — and
//! the stream event decoding. The core's modules are re-exported under the same
//! names, so `dynamodb_outbox::schema`, `dynamodb_outbox::publish` and the rest are one import away.
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

pub mod batch;
pub mod dynamo;
pub mod eventbridge;
pub mod producer;
pub mod s3;
pub mod sdk_error;
pub mod sink;
pub mod sns;
pub mod sqs;
pub mod stream;

pub use dynamodb_outbox_core::{
    Clock, ConfigError, Destination, Failure, FailureKind, NewMessage, Publisher, PublisherConfig,
    Routes, SharedClock, SystemClock,
};
pub use dynamodb_outbox_core::{
    clock, config, failure, large_payload, message, metrics, policy, ports, publish, route, schema,
};
pub use producer::{OutboxWriter, ProducerError};

use aws_types::SdkConfig;
use dynamo::DynamoStore;
use sink::AwsSink;
use std::future::Future;

/// The stream FilterCriteria the infrastructure deploys, as JSON text. The local
/// runner applies the same filter; keep them one.
pub const STREAM_FILTER_JSON: &str = include_str!("../stream-filter.json");

/// The sweeper, and the sweeper as the Lambda binary builds it.
pub mod sweep {
    pub use dynamodb_outbox_core::sweep::*;

    /// The sweeper on DynamoDB, SQS, SNS and EventBridge.
    pub type AwsSweeper = Sweeper<crate::sink::AwsSink, crate::dynamo::DynamoStore>;
}

pub use sweep::AwsSweeper;

/// The publisher on DynamoDB, SQS, SNS and EventBridge.
pub type AwsPublisher = Publisher<AwsSink, DynamoStore>;

/// Builds the publish path and the sweeper from configuration read once at start-up.
///
/// A trait rather than inherent constructors because [`AwsPublisher`] and
/// [`AwsSweeper`] are the core's generic types with this crate's adapters plugged in,
/// and a crate cannot add inherent methods to another crate's type.
pub trait FromSdkConfig<C>: Sized {
    /// What the Lambda binaries build at a cold start: [`FromSdkConfig::from_conf`]
    /// once every SQS destination's size limit — the routes' queues and the
    /// dead-letter queue — has been read from the queue ([`sqs::learn_limits`]).
    fn load(config: C, aws: &SdkConfig) -> impl Future<Output = Self> + Send;

    /// Every client built once from `aws`: whatever kind of destination a route
    /// names is reachable. The SQS destinations keep the limits `config` gives them.
    fn from_conf(config: C, aws: &SdkConfig) -> Self;

    /// Over clients built elsewhere (with interceptors, say).
    fn with_sink(config: C, dynamodb: aws_sdk_dynamodb::Client, sink: AwsSink) -> Self;
}

impl FromSdkConfig<PublisherConfig> for AwsPublisher {
    async fn load(config: PublisherConfig, aws: &SdkConfig) -> Self {
        let sink = AwsSink::from_conf(aws);
        let config = sink.learn_limits(config).await;
        Self::with_sink(config, aws_sdk_dynamodb::Client::new(aws), sink)
    }

    fn from_conf(config: PublisherConfig, aws: &SdkConfig) -> Self {
        Self::with_sink(
            config,
            aws_sdk_dynamodb::Client::new(aws),
            AwsSink::from_conf(aws),
        )
    }

    fn with_sink(
        config: PublisherConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sink: AwsSink,
    ) -> Self {
        let store = DynamoStore::new(dynamodb, config.table_name.clone());
        Publisher::new(sink, store, config)
    }
}

impl FromSdkConfig<sweep::SweeperConfig> for AwsSweeper {
    async fn load(mut config: sweep::SweeperConfig, aws: &SdkConfig) -> Self {
        let sink = AwsSink::from_conf(aws);
        config.publisher = sink.learn_limits(config.publisher).await;
        Self::with_sink(config, aws_sdk_dynamodb::Client::new(aws), sink)
    }

    fn from_conf(config: sweep::SweeperConfig, aws: &SdkConfig) -> Self {
        Self::with_sink(
            config,
            aws_sdk_dynamodb::Client::new(aws),
            AwsSink::from_conf(aws),
        )
    }

    fn with_sink(
        config: sweep::SweeperConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sink: AwsSink,
    ) -> Self {
        let publisher = AwsPublisher::with_sink(config.publisher.clone(), dynamodb, sink);
        sweep::Sweeper::new(publisher, config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
    use dynamodb_outbox_core::message::OutboundMessage;
    use dynamodb_outbox_core::ports::MessageSink;

    /// A configuration whose every request fails at once: nothing listens there.
    fn unreachable() -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:1")
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "a", "b", None, None, "test",
            )))
            .retry_config(aws_sdk_sns::config::retry::RetryConfig::disabled())
            .build()
    }

    #[tokio::test]
    async fn queues_whose_limit_cannot_be_read_get_sqs_default_and_a_routes_own_limit_stays() {
        let config = PublisherConfig::from_lookup(|name| match name {
            "OUTBOX_TABLE_NAME" => Some("t".into()),
            "OUTBOX_DLQ_URL" => Some("https://sqs.us-east-1.amazonaws.com/1/dlq".into()),
            "OUTBOX_ROUTES" => Some(
                r#"{"a":"https://sqs.us-east-1.amazonaws.com/1/a","b":{"destination":"https://sqs.us-east-1.amazonaws.com/1/b","max_message_bytes":4096}}"#.into(),
            ),
            _ => None,
        })
        .expect("valid");
        let publisher = AwsPublisher::load(config, &unreachable()).await;
        let routes = &publisher.config.routes;
        let limit = |topic: &str| routes.resolve(topic).map(Destination::max_message_bytes);
        assert_eq!(limit("a"), Some(1_048_576));
        assert_eq!(limit("b"), Some(4096));
        assert_eq!(
            publisher.config.dead_letter.limit_source(),
            "SQS's largest message"
        );
    }

    #[tokio::test]
    async fn a_publisher_built_from_one_configuration_reaches_sns_and_eventbridge_routes() {
        // Before, the binaries' shared constructor built an SQS-only sink: a route to
        // SNS or EventBridge failed "transiently" forever without a request being made.
        let config = PublisherConfig::from_lookup(|name| match name {
            "OUTBOX_TABLE_NAME" => Some("t".into()),
            "OUTBOX_DLQ_URL" => Some("https://sqs.us-east-1.amazonaws.com/1/dlq".into()),
            "OUTBOX_DEFAULT_DESTINATION" => Some("https://sqs.us-east-1.amazonaws.com/1/q".into()),
            _ => None,
        })
        .expect("valid");
        let publisher = AwsPublisher::from_conf(config, &unreachable());
        let message = OutboundMessage {
            body: "{}".into(),
            attributes: vec![],
            group_id: None,
            dedup_id: None,
        };
        for dest in [
            "arn:aws:sns:us-east-1:123456789012:orders",
            "arn:aws:events:us-east-1:123456789012:event-bus/shop",
        ] {
            let dest = Destination::parse(dest, None).expect("destination");
            let err = publisher
                .sink
                .send_batch(&dest, &[&message])
                .await
                .expect_err("nothing listens");
            // The request went out (and found nobody), rather than being refused here.
            assert!(err.reason.contains("dispatch failure"), "{dest}: {err}");
            assert!(err.is_retryable());
        }
    }
}
