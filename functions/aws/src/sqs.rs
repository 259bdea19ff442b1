//! SQS adapter: `SendMessageBatch` with per-entry results.

use crate::message::OutboundMessage;
use crate::ports::{EntryResult, SendError, entry_results};
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use std::collections::HashMap;

/// Builds the request entry for one message; `id` is unique within the call.
pub fn batch_entry(id: usize, m: &OutboundMessage) -> Result<SendMessageBatchRequestEntry, String> {
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
        .id(format!("m{id}"))
        .message_body(&m.body)
        .set_message_attributes(Some(attributes))
        .set_message_group_id(m.group_id.clone())
        .set_message_deduplication_id(m.dedup_id.clone())
        .build()
        .map_err(|e| e.to_string())
}

/// Sends to one SQS queue.
pub async fn send(
    client: &aws_sdk_sqs::Client,
    url: &str,
    messages: &[&OutboundMessage],
) -> Result<Vec<EntryResult>, SendError> {
    let entries = messages
        .iter()
        .enumerate()
        .map(|(i, m)| batch_entry(i, m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(SendError::content)?;
    let out = client
        .send_message_batch()
        .queue_url(url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(|e| SendError::from_sdk(&e))?;
    Ok(entry_results(
        messages.len(),
        "SQS",
        out.successful().iter().map(|e| e.id()),
        out.failed().iter().map(|f| {
            let reason = format!("{}: {}", f.code(), f.message().unwrap_or("no message"));
            (f.id(), f.sender_fault(), reason)
        }),
    ))
}
