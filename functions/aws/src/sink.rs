//! The destinations adapter: SQS, SNS or EventBridge by the destination's kind.

use crate::message::OutboundMessage;
use crate::ports::{EntryResult, MessageSink, SendError};
use crate::route::Destination;

/// Sends to whichever service a destination names, with clients built once.
#[derive(Debug, Clone)]
pub struct AwsSink {
    sqs: aws_sdk_sqs::Client,
    sns: Option<aws_sdk_sns::Client>,
    eventbridge: Option<aws_sdk_eventbridge::Client>,
}

impl AwsSink {
    /// A sink for SQS destinations (add the others with the `with_` methods).
    pub fn new(sqs: aws_sdk_sqs::Client) -> Self {
        AwsSink {
            sqs,
            sns: None,
            eventbridge: None,
        }
    }

    /// Enables SNS topic destinations.
    pub fn with_sns(mut self, client: aws_sdk_sns::Client) -> Self {
        self.sns = Some(client);
        self
    }

    /// Enables EventBridge bus destinations.
    pub fn with_eventbridge(mut self, client: aws_sdk_eventbridge::Client) -> Self {
        self.eventbridge = Some(client);
        self
    }
}

impl MessageSink for AwsSink {
    async fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> Result<Vec<EntryResult>, SendError> {
        match destination {
            Destination::Sqs { url, .. } => crate::sqs::send(&self.sqs, url, messages).await,
            Destination::Sns { arn } => match &self.sns {
                Some(client) => crate::sns::send(client, arn, messages).await,
                None => Err(SendError::transient(format!(
                    "{arn}: this publisher was built without an SNS client (use AwsSink::with_sns)"
                ))),
            },
            Destination::EventBridge { bus, source } => match &self.eventbridge {
                Some(client) => crate::eventbridge::send(client, bus, source, messages).await,
                None => Err(SendError::transient(format!(
                    "{bus}: this publisher was built without an EventBridge client (use AwsSink::with_eventbridge)"
                ))),
            },
        }
    }
}
