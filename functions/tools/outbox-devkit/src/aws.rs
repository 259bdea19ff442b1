//! AWS configuration and clients for the dev kit and the tests: the local AWS when an
//! endpoint is given, the standard AWS configuration chain otherwise.

use crate::counter::RequestCounter;
use aws_config::SdkConfig;

/// The clients the runner and the tests use, all counting their requests.
#[derive(Debug, Clone)]
pub struct Clients {
    /// DynamoDB.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// DynamoDB Streams.
    pub streams: aws_sdk_dynamodbstreams::Client,
    /// SQS.
    pub sqs: aws_sdk_sqs::Client,
    /// SNS.
    pub sns: aws_sdk_sns::Client,
    /// EventBridge.
    pub eventbridge: aws_sdk_eventbridge::Client,
    /// S3 (the large-payload offload's objects), path-style on an overridden endpoint.
    pub s3: aws_sdk_s3::Client,
    /// Lambda (deployments on the local AWS).
    pub lambda: aws_sdk_lambda::Client,
    /// CloudWatch Logs (what deployed functions printed).
    pub logs: aws_sdk_cloudwatchlogs::Client,
    /// IAM (the roles of the functions the dev kit and the tests deploy themselves).
    #[cfg(feature = "chaos")]
    pub iam: aws_sdk_iam::Client,
    /// Requests sent by all of them.
    pub counter: RequestCounter,
    /// The region in use.
    pub region: String,
    /// The configuration they were built from.
    pub sdk_config: SdkConfig,
}

/// Loads AWS configuration: the emulator at `endpoint`, or the standard chain. The
/// operator CLI's, so that the dev kit, the tests and `outbox-ops` reach the local
/// AWS the same way (same region, credentials and retries).
pub use outbox_ops::sdk_config;

impl Clients {
    /// A sink reaching every kind of destination through these clients.
    pub fn sink(&self) -> dynamodb_outbox::sink::AwsSink {
        dynamodb_outbox::sink::AwsSink::new(
            self.sqs.clone(),
            self.sns.clone(),
            self.eventbridge.clone(),
        )
        .with_s3(self.s3.clone())
    }

    /// Builds every client once from `config`.
    pub fn new(config: &SdkConfig) -> Self {
        let counter = RequestCounter::new();
        let dynamodb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(config)
                .interceptor(counter.clone())
                .build(),
        );
        let streams = aws_sdk_dynamodbstreams::Client::from_conf(
            aws_sdk_dynamodbstreams::config::Builder::from(config)
                .interceptor(counter.clone())
                .build(),
        );
        let sqs = aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(config)
                .interceptor(counter.clone())
                .build(),
        );
        let sns = aws_sdk_sns::Client::from_conf(
            aws_sdk_sns::config::Builder::from(config)
                .interceptor(counter.clone())
                .build(),
        );
        let eventbridge = aws_sdk_eventbridge::Client::from_conf(
            aws_sdk_eventbridge::config::Builder::from(config)
                .interceptor(counter.clone())
                .build(),
        );
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(config)
                .force_path_style(dynamodb_outbox::s3::path_style(config))
                .interceptor(counter.clone())
                .build(),
        );
        Clients {
            s3,
            lambda: aws_sdk_lambda::Client::new(config),
            logs: aws_sdk_cloudwatchlogs::Client::new(config),
            #[cfg(feature = "chaos")]
            iam: aws_sdk_iam::Client::new(config),
            dynamodb,
            streams,
            sqs,
            sns,
            eventbridge,
            counter,
            sdk_config: config.clone(),
            region: config
                .region()
                .map(|r| r.to_string())
                .unwrap_or_else(|| "us-east-1".to_owned()),
        }
    }
}
