//! SQS adapter: `SendMessageBatch` to one queue.

use crate::batch::{Answer, BatchApi, Refused, entry_id};
use crate::sdk_error::send_failure;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use outbox_core::failure::Failure;
use outbox_core::message::OutboundMessage;
use std::collections::HashMap;

/// One queue, through a client built once.
#[derive(Debug, Clone, Copy)]
pub struct Queue<'a> {
    /// The client.
    pub client: &'a aws_sdk_sqs::Client,
    /// The queue URL.
    pub url: &'a str,
}

/// Builds the request entry for the `index`th message of a call.
pub fn batch_entry(
    index: usize,
    m: &OutboundMessage,
) -> Result<SendMessageBatchRequestEntry, String> {
    let mut attributes = HashMap::with_capacity(m.attributes.len());
    for (name, value) in &m.attributes {
        let v = MessageAttributeValue::builder()
            .data_type(value.data_type())
            .string_value(value.text())
            .build()
            .map_err(|e| format!("attribute {name}: {e}"))?;
        attributes.insert((*name).to_owned(), v);
    }
    SendMessageBatchRequestEntry::builder()
        .id(entry_id(index))
        .message_body(&m.body)
        .set_message_attributes(Some(attributes))
        .set_message_group_id(m.group_id.clone())
        .set_message_deduplication_id(m.dedup_id.clone())
        .build()
        .map_err(|e| e.to_string())
}

impl BatchApi for Queue<'_> {
    type Entry = SendMessageBatchRequestEntry;
    const SERVICE: &'static str = "SQS";

    fn entry(&self, index: usize, m: &OutboundMessage) -> Result<Self::Entry, String> {
        batch_entry(index, m)
    }

    async fn call(&self, entries: Vec<Self::Entry>) -> Result<Answer, Failure> {
        let out = self
            .client
            .send_message_batch()
            .queue_url(self.url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| send_failure(&e, SendMessageBatchError::is_batch_request_too_long))?;
        Ok(Answer {
            sent: out.successful().iter().map(|e| e.id().to_owned()).collect(),
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
