//! # dynamodb-outbox
//!
//! A transactional outbox for Amazon DynamoDB. The application writes its business
//! item and an outbox item in one `TransactWriteItems` ([`producer`]); the publisher
//! Lambda, triggered by the table's stream, publishes new pending messages and marks
//! them `SENT` ([`stream`], [`publish`]); the sweeper recovers what the stream path
//! missed.
//!
//! The logic is kept apart from I/O: [`publish`] works against the narrow traits in
//! [`ports`], implemented for SQS in [`sqs`] and DynamoDB in [`dynamo`].
#![warn(missing_docs)]

pub mod config;
pub mod dynamo;
pub mod error;
pub mod eventbridge;
pub mod message;
pub mod metrics;
pub mod ports;
pub mod producer;
pub mod publish;
pub mod route;
pub mod schema;
pub mod sink;
pub mod sns;
pub mod sqs;
pub mod stream;
pub mod sweep;
pub mod telemetry;

pub use config::PublisherConfig;
pub use producer::{NewMessage, OutboxWriter, ProducerError};
pub use publish::Publisher;
pub use route::{Destination, Routes};

/// The stream FilterCriteria the infrastructure deploys, as JSON text. The local
/// runner applies the same filter; keep them one.
pub const STREAM_FILTER_JSON: &str = include_str!("../../../infra/stream-filter.json");

/// The publisher as the Lambda binary and the local runner build it.
pub type AwsPublisher = Publisher<sink::AwsSink, dynamo::DynamoStore>;

impl AwsPublisher {
    /// Builds the publisher from configuration and clients created once at start-up.
    pub fn from_clients(
        config: PublisherConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sqs_client: aws_sdk_sqs::Client,
    ) -> Self {
        Self::with_sink(config, dynamodb, sink::AwsSink::new(sqs_client))
    }

    /// Builds the publisher with a sink that may also reach SNS and EventBridge.
    pub fn with_sink(
        config: PublisherConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sink: sink::AwsSink,
    ) -> Self {
        Publisher {
            store: dynamo::DynamoStore::new(dynamodb, config.table_name.clone()),
            sink,
            config,
        }
    }
}
