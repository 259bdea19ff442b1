//! The publish path and the sweeper with this crate's adapters plugged in, built from
//! configuration read once at start-up — every client with the functions' SDK
//! timeouts (`with_sdk_timeouts`).

use crate::dynamo::DynamoStore;
use crate::sink::AwsSink;
use crate::sweep::{self, AwsSweeper};
use aws_smithy_types::timeout::TimeoutConfig;
use aws_types::SdkConfig;
use dynamodb_outbox_core::config::timeouts::SdkTimeouts;
use dynamodb_outbox_core::PublisherConfig;
use dynamodb_outbox_core::__private::Publisher;
use std::future::Future;

/// `aws` with `timeouts` as its per-attempt and operation timeouts wherever it sets
/// none of its own (a timeout `aws` sets, or disables, wins): every client built from
/// the result fails a call that hangs as a timeout — a transient failure, reported
/// and retried — instead of holding the invocation until Lambda ends it (for the
/// stream path a bisect and a re-send of the whole batch). Why the defaults are what
/// they are: [`dynamodb_outbox_core::config::timeouts`].
pub(crate) fn with_sdk_timeouts(aws: &SdkConfig, timeouts: SdkTimeouts) -> SdkConfig {
    let ours = TimeoutConfig::builder()
        .operation_attempt_timeout(timeouts.attempt)
        .operation_timeout(timeouts.operation)
        .build();
    let mut merged = aws.timeout_config().cloned().unwrap_or_else(|| ours.clone());
    merged.take_defaults_from(&ours);
    aws.to_builder().timeout_config(merged).build()
}

/// The timeouts of the clients a function builds at a cold start:
/// `OUTBOX_SDK_ATTEMPT_TIMEOUT_MS` and `OUTBOX_SDK_OPERATION_TIMEOUT_MS`, else the
/// defaults. The functions' `from_env` has already refused a bad value, naming it
/// (the publisher's configuration checks them); a configuration built in code with a
/// bad value in the environment is logged and gets the defaults.
pub(crate) fn timeouts_from_env() -> SdkTimeouts {
    SdkTimeouts::from_env().unwrap_or_else(|e| {
        tracing::error!(error = %e, "bad SDK timeout; the clients get the default timeouts");
        SdkTimeouts::default()
    })
}

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
    /// dead-letter queue — has been read from the queue ([`crate::sqs::learn_limits`]),
    /// the clients' timeouts from `OUTBOX_SDK_ATTEMPT_TIMEOUT_MS` and
    /// `OUTBOX_SDK_OPERATION_TIMEOUT_MS` where `aws` sets none.
    fn load(config: C, aws: &SdkConfig) -> impl Future<Output = Self> + Send;

    /// Every client built once from `aws`, with the default SDK timeouts where `aws`
    /// sets none: whatever kind of destination a route names is reachable. The SQS
    /// destinations keep the limits `config` gives them.
    fn from_conf(config: C, aws: &SdkConfig) -> Self;

    /// Over clients built elsewhere (with interceptors, say).
    fn with_sink(config: C, dynamodb: aws_sdk_dynamodb::Client, sink: AwsSink) -> Self;
}

impl FromSdkConfig<PublisherConfig> for AwsPublisher {
    async fn load(config: PublisherConfig, aws: &SdkConfig) -> Self {
        let aws = &with_sdk_timeouts(aws, timeouts_from_env());
        let sink = AwsSink::from_conf(aws);
        let config = sink.learn_limits(config).await;
        Self::with_sink(config, aws_sdk_dynamodb::Client::new(aws), sink)
    }

    fn from_conf(config: PublisherConfig, aws: &SdkConfig) -> Self {
        let aws = &with_sdk_timeouts(aws, SdkTimeouts::default());
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
        let store = DynamoStore::new(dynamodb, config.table_name.clone())
            .with_key_names(config.key_names.clone());
        Publisher::new(sink, store, config)
    }
}

impl FromSdkConfig<sweep::SweeperConfig> for AwsSweeper {
    async fn load(mut config: sweep::SweeperConfig, aws: &SdkConfig) -> Self {
        let aws = &with_sdk_timeouts(aws, timeouts_from_env());
        let sink = AwsSink::from_conf(aws);
        config.publisher = sink.learn_limits(config.publisher).await;
        Self::with_sink(config, aws_sdk_dynamodb::Client::new(aws), sink)
    }

    fn from_conf(config: sweep::SweeperConfig, aws: &SdkConfig) -> Self {
        let aws = &with_sdk_timeouts(aws, SdkTimeouts::default());
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
    use dynamodb_outbox_core::Destination;
    use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
    use dynamodb_outbox_core::message::OutboundMessage;
    use dynamodb_outbox_core::__private::ports::MessageSink;
    use std::time::Duration;

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

    /// A configuration that sends every topic to one queue.
    fn everything_to_one_queue() -> PublisherConfig {
        PublisherConfig::from_lookup(|name| match name {
            "OUTBOX_TABLE_NAME" => Some("t".into()),
            "OUTBOX_DLQ_URL" => Some("https://sqs.us-east-1.amazonaws.com/1/dlq".into()),
            "OUTBOX_DEFAULT_DESTINATION" => Some("https://sqs.us-east-1.amazonaws.com/1/q".into()),
            _ => None,
        })
        .expect("valid")
    }

    fn attempt_and_operation(t: Option<&TimeoutConfig>) -> (Option<Duration>, Option<Duration>) {
        (
            t.and_then(TimeoutConfig::operation_attempt_timeout),
            t.and_then(TimeoutConfig::operation_timeout),
        )
    }

    #[test]
    fn the_clients_a_function_builds_carry_an_attempt_and_an_operation_timeout() {
        // Before, no client set an operation timeout: a call that hung held the
        // invocation until Lambda's timeout.
        let config = everything_to_one_queue();
        let publisher = AwsPublisher::from_conf(config, &unreachable());
        let dynamodb = publisher.store.client().config();
        assert_eq!(
            attempt_and_operation(dynamodb.timeout_config()),
            (Some(Duration::from_secs(5)), Some(Duration::from_secs(20)))
        );
        let timed = with_sdk_timeouts(&unreachable(), SdkTimeouts::default());
        for client_timeouts in [
            aws_sdk_sqs::Client::new(&timed).config().timeout_config().cloned(),
            aws_sdk_sns::Client::new(&timed).config().timeout_config().cloned(),
            aws_sdk_eventbridge::Client::new(&timed).config().timeout_config().cloned(),
            crate::s3::client(&timed).config().timeout_config().cloned(),
        ] {
            assert_eq!(
                attempt_and_operation(client_timeouts.as_ref()),
                (Some(Duration::from_secs(5)), Some(Duration::from_secs(20)))
            );
        }
    }

    #[test]
    fn a_timeout_the_callers_sdk_configuration_sets_wins_and_the_others_are_filled_in() {
        let own = TimeoutConfig::builder()
            .operation_attempt_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(1))
            .build();
        let aws = unreachable().to_builder().timeout_config(own).build();
        let timeouts = SdkTimeouts {
            attempt: Duration::from_secs(7),
            operation: Duration::from_secs(30),
        };
        let timed = with_sdk_timeouts(&aws, timeouts);
        let t = timed.timeout_config();
        assert_eq!(
            attempt_and_operation(t),
            (Some(Duration::from_secs(2)), Some(Duration::from_secs(30)))
        );
        assert_eq!(t.and_then(TimeoutConfig::connect_timeout), Some(Duration::from_secs(1)));
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
        let config = everything_to_one_queue();
        let publisher = AwsPublisher::from_conf(config, &unreachable());
        let message = OutboundMessage {
            body: "{}".into(),
            attributes: vec![],
            group_id: None,
            dedup_id: None,
            trace_header: None,
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
