//! SNS adapter: `PublishBatch` to one topic.

use crate::batch::{Answer, BatchApi, Refused, entry_id};
use crate::sdk_error::send_failure;
use aws_sdk_sns::operation::publish_batch::PublishBatchError;
use aws_sdk_sns::types::{MessageAttributeValue, PublishBatchRequestEntry};
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::message::OutboundMessage;
use std::collections::HashMap;

/// One topic, through a client built once.
#[derive(Debug, Clone, Copy)]
pub struct Topic<'a> {
    /// The client.
    pub client: &'a aws_sdk_sns::Client,
    /// The topic ARN.
    pub arn: &'a str,
}

/// The modelled errors with which SNS refuses a batch for what it carries.
fn refuses_content(e: &PublishBatchError) -> bool {
    e.is_batch_request_too_long_exception()
        || e.is_invalid_parameter_exception()
        || e.is_invalid_parameter_value_exception()
        || e.is_validation_exception()
}

impl BatchApi for Topic<'_> {
    type Entry = PublishBatchRequestEntry;
    const SERVICE: &'static str = "SNS";

    fn entry(&self, index: usize, m: &OutboundMessage) -> Result<Self::Entry, String> {
        let mut attributes = HashMap::with_capacity(m.attributes.len());
        for (name, value) in &m.attributes {
            let v = MessageAttributeValue::builder()
                .data_type(value.data_type())
                .string_value(value.text())
                .build()
                .map_err(|e| format!("attribute {name}: {e}"))?;
            attributes.insert((*name).to_owned(), v);
        }
        PublishBatchRequestEntry::builder()
            .id(entry_id(index))
            .message(&m.body)
            .set_message_attributes(Some(attributes))
            .set_message_group_id(m.group_id.clone())
            .set_message_deduplication_id(m.dedup_id.clone())
            .build()
            .map_err(|e| e.to_string())
    }

    async fn call(&self, entries: Vec<Self::Entry>) -> Result<Answer, Failure> {
        let out = self
            .client
            .publish_batch()
            .topic_arn(self.arn)
            .set_publish_batch_request_entries(Some(entries))
            .send()
            .await
            .map_err(|e| send_failure(&e, refuses_content))?;
        Ok(Answer {
            sent: out
                .successful()
                .iter()
                .filter_map(|e| e.id().map(str::to_owned))
                .collect(),
            refused: out
                .failed()
                .iter()
                .map(|f| Refused {
                    id: f.id().to_owned(),
                    sender_fault: f.sender_fault(),
                    reason: format!("{}: {}", f.code(), f.message().unwrap_or("no message")),
                })
                .collect(),
        })
    }
}
