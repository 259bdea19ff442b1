//! The destinations adapter: SQS, SNS or EventBridge by the destination's kind, with
//! every client built once from one configuration, so that every kind of destination
//! a route can name is reachable — in whichever region it is: each destination goes
//! through a client of the region its address names ([`crate::regional`]).

mod span;

use crate::batch::send;
use span::send_span;
use tracing::Instrument;
use crate::eventbridge::Bus;
use crate::regional::Regional;
use crate::sns::Topic;
use crate::sqs::Queue;
use aws_types::SdkConfig;
use dynamodb_outbox_core::{PublisherConfig, Failure, Destination};
use dynamodb_outbox_core::large_payload::PayloadPointer;
use dynamodb_outbox_core::message::OutboundMessage;
use dynamodb_outbox_core::__private::ports::{EntryResult, MessageSink};

/// Sends to whichever service a destination names.
#[derive(Debug, Clone)]
pub struct AwsSink {
    sqs: Regional<aws_sdk_sqs::Client>,
    sns: Regional<aws_sdk_sns::Client>,
    eventbridge: Regional<aws_sdk_eventbridge::Client>,
    s3: Option<aws_sdk_s3::Client>,
}

impl AwsSink {
    /// A sink with a client for every kind of destination, from one configuration.
    /// Building the S3 client costs nothing until a payload is offloaded, so every
    /// sink from a configuration has one: a bucket set later needs no new sink.
    pub fn from_conf(config: &SdkConfig) -> Self {
        AwsSink::new(
            aws_sdk_sqs::Client::new(config),
            aws_sdk_sns::Client::new(config),
            aws_sdk_eventbridge::Client::new(config),
        )
        .with_s3(crate::s3::client(config))
    }

    /// The same sink writing large payloads (the large-payload offload) through `s3`; build it
    /// with [`crate::s3::client`] for path-style addressing on an overridden endpoint.
    pub fn with_s3(mut self, s3: aws_sdk_s3::Client) -> Self {
        self.s3 = Some(s3);
        self
    }

    /// `config` with every SQS destination's size limit learned from its queue, once:
    /// see [`crate::sqs::learn_limits`].
    pub async fn learn_limits(&self, config: PublisherConfig) -> PublisherConfig {
        crate::sqs::learn_limits(&self.sqs, config).await
    }

    /// [`AwsSink::learn_limits`], and how many queues could not be read: see
    /// [`crate::sqs::learn_limits_counting`].
    pub async fn learn_limits_counting(&self, config: PublisherConfig) -> (PublisherConfig, usize) {
        crate::sqs::learn_limits_counting(&self.sqs, config).await
    }

    /// A sink over clients built elsewhere (with interceptors, say): the clients of
    /// the function's region; those of other regions are built from their
    /// configurations when a destination there is first sent to.
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        sns: aws_sdk_sns::Client,
        eventbridge: aws_sdk_eventbridge::Client,
    ) -> Self {
        AwsSink {
            sqs: Regional::new(sqs),
            sns: Regional::new(sns),
            eventbridge: Regional::new(eventbridge),
            s3: None,
        }
    }
}

impl MessageSink for AwsSink {
    async fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> Result<Vec<EntryResult>, Failure> {
        let span = send_span(destination, messages);
        self.send_to(destination, messages).instrument(span).await
    }

    async fn put_payload(&self, pointer: &PayloadPointer, payload: &str) -> Result<(), Failure> {
        match &self.s3 {
            Some(s3) => crate::s3::put_payload(s3, pointer, payload).await,
            None => Err(Failure::permanent(format!(
                "cannot write {pointer}: this sink was built without an S3 client (AwsSink::with_s3)"
            ))),
        }
    }

    async fn copy_payload(&self, from: &PayloadPointer, to: &PayloadPointer) -> Result<(), Failure> {
        match &self.s3 {
            Some(s3) => crate::s3::copy_payload(s3, from, to).await,
            None => Err(Failure::permanent(format!(
                "cannot copy {from} to {to}: this sink was built without an S3 client (AwsSink::with_s3)"
            ))),
        }
    }
}

impl AwsSink {
    /// Sends `messages` to `destination` with the client of its region.
    async fn send_to(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> Result<Vec<EntryResult>, Failure> {
        match destination {
            Destination::Sqs { url, .. } => {
                let client = self.sqs.for_destination(destination);
                let queue = Queue {
                    client: &client,
                    url,
                };
                send(&queue, messages).await
            }
            Destination::Sns { arn, .. } => {
                let client = self.sns.for_destination(destination);
                let topic = Topic {
                    client: &client,
                    arn,
                };
                send(&topic, messages).await
            }
            Destination::EventBridge { bus, source } => {
                let client = self.eventbridge.for_destination(destination);
                let bus = Bus {
                    client: &client,
                    bus,
                    source,
                };
                send(&bus, messages).await
            }
        }
    }
}
