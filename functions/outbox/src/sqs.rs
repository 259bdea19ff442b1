//! SQS adapter: `SendMessageBatch` with per-entry results.

use crate::message::OutboundMessage;
use crate::ports::{EntryResult, SendError};
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use aws_smithy_types::error::display::DisplayErrorContext;
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
        .map_err(SendError)?;
    let out = client
        .send_message_batch()
        .queue_url(url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(|e| SendError(DisplayErrorContext(&e).to_string()))?;
    let mut results = vec![EntryResult::Sent; messages.len()];
    let mut answered = vec![false; messages.len()];
    for ok in out.successful() {
        if let Some(i) = entry_index(ok.id(), messages.len()) {
            answered[i] = true;
        }
    }
    for failed in out.failed() {
        if let Some(i) = entry_index(failed.id(), messages.len()) {
            answered[i] = true;
            results[i] = EntryResult::Failed {
                permanent: failed.sender_fault(),
                reason: format!(
                    "{}: {}",
                    failed.code(),
                    failed.message().unwrap_or("no message")
                ),
            };
        }
    }
    // An entry SQS said nothing about is not known to be sent.
    for (i, seen) in answered.iter().enumerate() {
        if !seen {
            results[i] = EntryResult::Failed {
                permanent: false,
                reason: "SQS returned no result for this entry".to_owned(),
            };
        }
    }
    Ok(results)
}

fn entry_index(id: &str, len: usize) -> Option<usize> {
    id.strip_prefix('m')?.parse().ok().filter(|i| *i < len)
}
