//! What Lambda's SQS event source mapping does, locally: receive a batch, shape it
//! as Lambda's SQS event, invoke the handler, delete what succeeded, and leave the
//! failures to the queue's visibility timeout and redrive policy.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage, SqsMessageAttribute};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use aws_smithy_types::error::display::DisplayErrorContext;
use std::future::Future;

/// What one poll did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqsPollStats {
    /// Messages received.
    pub received: usize,
    /// Messages deleted after success.
    pub deleted: usize,
    /// Messages reported as failed (left on the queue).
    pub failed: usize,
}

/// An SQS event source mapping running on this machine.
#[derive(Debug, Clone)]
pub struct SqsMapping {
    client: aws_sdk_sqs::Client,
    queue_url: String,
    queue_arn: String,
    region: String,
    batch_size: i32,
}

impl SqsMapping {
    /// A mapping over one queue, receiving up to `batch_size` (1–10) messages per call.
    pub fn new(
        client: aws_sdk_sqs::Client,
        queue_url: impl Into<String>,
        queue_arn: impl Into<String>,
        region: impl Into<String>,
        batch_size: i32,
    ) -> Self {
        SqsMapping {
            client,
            queue_url: queue_url.into(),
            queue_arn: queue_arn.into(),
            region: region.into(),
            batch_size: batch_size.clamp(1, 10),
        }
    }

    /// Receives one batch and delivers it. `handler` returns the partial batch
    /// response, or an error for a failed invocation (nothing is deleted).
    pub async fn poll_once<H, F>(&self, handler: &H) -> Result<SqsPollStats, String>
    where
        H: Fn(SqsEvent) -> F,
        F: Future<Output = Result<SqsBatchResponse, String>>,
    {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(self.batch_size)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(0)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "receiving from {}: {}",
                    self.queue_url,
                    DisplayErrorContext(&e)
                )
            })?;
        let messages = out.messages.unwrap_or_default();
        let mut stats = SqsPollStats {
            received: messages.len(),
            ..SqsPollStats::default()
        };
        if messages.is_empty() {
            return Ok(stats);
        }
        let mut event = SqsEvent::default();
        event.records = messages
            .iter()
            .map(|m| lambda_message(m, &self.queue_arn, &self.region))
            .collect();
        let response = match handler(event).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, messages = messages.len(), "invocation failed; the messages return after their visibility timeout");
                stats.failed = messages.len();
                return Ok(stats);
            }
        };
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        // An identifier that matches no message: Lambda treats the whole batch as failed.
        if failed
            .iter()
            .any(|id| !messages.iter().any(|m| m.message_id() == Some(*id)))
        {
            tracing::warn!(
                "the response names a message that was not in the batch; the whole batch is retried"
            );
            stats.failed = messages.len();
            return Ok(stats);
        }
        let entries: Vec<DeleteMessageBatchRequestEntry> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.message_id().is_some_and(|id| failed.contains(&id)))
            .filter_map(|(i, m)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(format!("d{i}"))
                    .set_receipt_handle(m.receipt_handle.clone())
                    .build()
                    .ok()
            })
            .collect();
        stats.failed = messages.len() - entries.len();
        if !entries.is_empty() {
            match self
                .client
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                Ok(out) => stats.deleted = out.successful().len(),
                // Not fatal: undeleted messages come back and are seen as duplicates.
                Err(e) => {
                    tracing::warn!(error = %DisplayErrorContext(&e), "deleting processed messages failed")
                }
            }
        }
        Ok(stats)
    }

    /// Polls until a receive comes back empty (or `max_batches`).
    pub async fn drain<H, F>(&self, handler: &H, max_batches: usize) -> Result<SqsPollStats, String>
    where
        H: Fn(SqsEvent) -> F,
        F: Future<Output = Result<SqsBatchResponse, String>>,
    {
        let mut total = SqsPollStats::default();
        for _ in 0..max_batches {
            let s = self.poll_once(handler).await?;
            total.received += s.received;
            total.deleted += s.deleted;
            total.failed += s.failed;
            if s.received == 0 {
                break;
            }
        }
        Ok(total)
    }
}

/// An SQS message as Lambda's SQS event carries it.
pub fn lambda_message(
    m: &aws_sdk_sqs::types::Message,
    queue_arn: &str,
    region: &str,
) -> SqsMessage {
    let mut out = SqsMessage::default();
    out.message_id = m.message_id.clone();
    out.receipt_handle = m.receipt_handle.clone();
    out.body = m.body.clone();
    out.md5_of_body = m.md5_of_body.clone();
    out.md5_of_message_attributes = m.md5_of_message_attributes.clone();
    out.attributes = m
        .attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    out.message_attributes = m
        .message_attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| {
                    let mut attr = SqsMessageAttribute::default();
                    attr.string_value = v.string_value.clone();
                    attr.data_type = Some(v.data_type.clone());
                    (k.clone(), attr)
                })
                .collect()
        })
        .unwrap_or_default();
    out.event_source = Some("aws:sqs".to_owned());
    out.event_source_arn = Some(queue_arn.to_owned());
    out.aws_region = Some(region.to_owned());
    out
}
