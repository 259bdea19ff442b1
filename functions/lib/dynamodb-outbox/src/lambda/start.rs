//! What a function builds at start, without a request: its configuration and its
//! clients (with the functions' SDK timeouts). What it reads from AWS — every SQS
//! destination's size limit — waits for the first invocation that needs it
//! ([`super::learned`]).

use super::learned::Lookup;
use crate::sink::AwsSink;
use crate::sweep::{AwsSweeper, SweeperConfig};
use crate::wiring::{AwsPublisher, FromSdkConfig, timeouts_from_env, with_sdk_timeouts};
use aws_types::SdkConfig;
use dynamodb_outbox_core::PublisherConfig;

/// A function's configuration and clients, before its first invocation.
#[derive(Debug)]
pub(crate) struct Start<C> {
    config: C,
    dynamodb: aws_sdk_dynamodb::Client,
    sink: AwsSink,
}

impl<C> Start<C> {
    /// Builds the clients from `aws` with the timeouts of `OUTBOX_SDK_ATTEMPT_TIMEOUT_MS`
    /// and `OUTBOX_SDK_OPERATION_TIMEOUT_MS` where `aws` sets none; makes no request.
    pub(crate) fn new(config: C, aws: &SdkConfig) -> Self {
        let aws = &with_sdk_timeouts(aws, timeouts_from_env());
        Start {
            config,
            dynamodb: aws_sdk_dynamodb::Client::new(aws),
            sink: AwsSink::from_conf(aws),
        }
    }

    /// The DynamoDB client, for the check of the table ([`super::table`]).
    pub(crate) fn dynamodb(&self) -> &aws_sdk_dynamodb::Client {
        &self.dynamodb
    }
}

impl Start<PublisherConfig> {
    /// The publish path, once its SQS destinations' limits are read.
    pub(crate) async fn learn(&self) -> Lookup<AwsPublisher> {
        let (config, unread) = self.sink.learn_limits_counting(self.config.clone()).await;
        let publisher = AwsPublisher::with_sink(config, self.dynamodb.clone(), self.sink.clone());
        known_when_all_read(publisher, unread)
    }
}

impl Start<SweeperConfig> {
    /// The sweeper, once its SQS destinations' limits are read.
    pub(crate) async fn learn(&self) -> Lookup<AwsSweeper> {
        let mut config = self.config.clone();
        let (publisher, unread) = self.sink.learn_limits_counting(config.publisher).await;
        config.publisher = publisher;
        let sweeper = AwsSweeper::with_sink(config, self.dynamodb.clone(), self.sink.clone());
        known_when_all_read(sweeper, unread)
    }
}

/// Kept when every queue was read; else used for now and read again next time.
fn known_when_all_read<T>(value: T, unread: usize) -> Lookup<T> {
    if unread == 0 {
        Lookup::Known(value)
    } else {
        Lookup::ForNow(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
    use dynamodb_outbox_core::Destination;

    /// A configuration whose every request fails at once: nothing listens there.
    fn unreachable() -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:1")
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "a", "b", None, None, "test",
            )))
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build()
    }

    fn config(routes: &str, dead_letter: &str) -> PublisherConfig {
        PublisherConfig::from_lookup(|name| match name {
            "OUTBOX_TABLE_NAME" => Some("t".into()),
            "OUTBOX_DLQ_URL" => Some(dead_letter.into()),
            "OUTBOX_ROUTES" => Some(routes.into()),
            _ => None,
        })
        .expect("valid")
    }

    #[tokio::test]
    async fn queues_that_could_not_be_read_give_sqs_default_for_now_and_are_read_again() {
        let config = config(
            r#"{"a":"https://sqs.us-east-1.amazonaws.com/1/a"}"#,
            "https://sqs.us-east-1.amazonaws.com/1/dlq",
        );
        let start = Start::new(config, &unreachable());
        let Lookup::ForNow(publisher) = start.learn().await else {
            panic!("an unread queue must be read again on the next invocation");
        };
        let limit = publisher
            .config
            .routes
            .resolve("a")
            .map(Destination::max_message_bytes);
        assert_eq!(limit, Some(1_048_576));
    }

    #[tokio::test]
    async fn a_function_with_no_queue_to_read_knows_everything_at_once() {
        // Every route states its limit and the dead letters go to SNS: nothing to read.
        let config = config(
            r#"{"a":{"destination":"https://sqs.us-east-1.amazonaws.com/1/a","max_message_bytes":4096}}"#,
            "arn:aws:sns:us-east-1:123456789012:dead-letters",
        );
        let sweeper = SweeperConfig::new(config);
        let start = Start::new(sweeper, &unreachable());
        let Lookup::Known(sweeper) = start.learn().await else {
            panic!("with nothing to read, the lookup is complete");
        };
        let limit = sweeper
            .publisher
            .config
            .routes
            .resolve("a")
            .map(Destination::max_message_bytes);
        assert_eq!(limit, Some(4096));
    }
}
