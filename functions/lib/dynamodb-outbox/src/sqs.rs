//! SQS adapter: `SendMessageBatch` to one queue, and each queue's own message size
//! limit (`GetQueueAttributes` `MaximumMessageSize`) read once ([`learn_limits`]).
//!
//! ## When the limits are read
//!
//! Not at start: a function's initialisation makes no AWS call (Lambda bills init,
//! and a TLS round trip there was most of a cold start: `docs/benchmarks.md`). The
//! Lambda functions read the limits on their first invocation, every queue
//! concurrently, so one round trip whatever the number of routes, and build the
//! publish path from the result (`lambda::learned`). Once every queue has answered,
//! that publish path is kept for the life of the process: it stays immutable and the
//! planning a pure function of it, with no lock on the way and no plan racing a
//! lookup. A queue that could not be read (throttled, say) gets SQS's default for
//! that invocation, is reported, and is read again on the next one: a failed read
//! is never kept.

use crate::batch::{Answer, BatchApi, Refused, entry_id};
use crate::regional::Regional;
use crate::sdk_error::{describe, send_failure};
use aws_sdk_sqs::config::timeout::TimeoutConfig;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use dynamodb_outbox_core::{PublisherConfig, Failure};
use dynamodb_outbox_core::message::OutboundMessage;
use dynamodb_outbox_core::__private::policy::{
    LimitRead, QueueLimits, QueueRole, sqs_limit, unknown_limit_advice,
};
use dynamodb_outbox_core::route::SqsLimit;
use dynamodb_outbox_core::route::region::queue_url_region;
use std::collections::HashMap;
use std::time::Duration;

/// How long reading one queue's limit may take, retries included: the invocation
/// that reads it waits for it.
pub const LIMIT_LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

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
    let mut entry = SendMessageBatchRequestEntry::builder()
        .id(entry_id(index))
        .message_body(&m.body)
        .set_message_attributes(Some(attributes))
        .set_message_group_id(m.group_id.clone())
        .set_message_deduplication_id(m.dedup_id.clone());
    if let Some(header) = &m.trace_header {
        // X-Ray's own attribute, the one OpenTelemetry's SQS conventions read; not
        // counted against the message's size or its ten attributes.
        let trace = MessageSystemAttributeValue::builder()
            .data_type("String")
            .string_value(header)
            .build()
            .map_err(|e| format!("AWSTraceHeader: {e}"))?;
        entry = entry.message_system_attributes(MessageSystemAttributeNameForSends::AwsTraceHeader, trace);
    }
    entry.build().map_err(|e| e.to_string())
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

/// Reads a queue's `MaximumMessageSize`, within [`LIMIT_LOOKUP_TIMEOUT`].
pub async fn maximum_message_size(client: &aws_sdk_sqs::Client, url: &str) -> LimitRead {
    let timeout = TimeoutConfig::builder()
        .operation_timeout(LIMIT_LOOKUP_TIMEOUT)
        .build();
    // Boxed: see "Future depth" in the crate docs.
    let out = Box::pin(
        client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::MaximumMessageSize)
            .customize()
            .config_override(aws_sdk_sqs::config::Builder::default().timeout_config(timeout))
            .send(),
    )
    .await
    .map_err(|e| {
        crate::sdk_error::report_denial(&e);
        describe(&e)
    })?;
    let text = out
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::MaximumMessageSize))
        .ok_or("the answer has no MaximumMessageSize")?;
    text.parse()
        .map_err(|e| format!("MaximumMessageSize `{text}` is not a number: {e}"))
}

/// Learns the size limit of every SQS queue `config` sends to — the routes' queues
/// whose route sets no `max_message_bytes`, and the dead-letter queue — by reading
/// each one's `MaximumMessageSize` once, concurrently, and returns the configuration
/// with the limits that apply ([`sqs_limit`]: the route's, else the queue's, else
/// SQS's default of 1 MiB). Logs each limit learned, and once per queue that could
/// not be read what is assumed and what to do about it.
///
/// Each queue is read through a client of the region its URL names (`clients`).
pub async fn learn_limits(
    clients: &Regional<aws_sdk_sqs::Client>,
    config: PublisherConfig,
) -> PublisherConfig {
    learn_limits_counting(clients, config).await.0
}

/// [`learn_limits`], and how many queues could not be read (worth reading again).
pub async fn learn_limits_counting(
    clients: &Regional<aws_sdk_sqs::Client>,
    config: PublisherConfig,
) -> (PublisherConfig, usize) {
    let queues = config.queues_to_learn();
    if queues.is_empty() {
        return (config, 0);
    }
    let reads = futures::future::join_all(queues.iter().map(|(url, role)| async move {
        let client = clients.client(queue_url_region(url));
        (url.clone(), *role, maximum_message_size(&client, url).await)
    }))
    .await;
    let unread = reads.iter().filter(|(_, _, read)| read.is_err()).count();
    let mut limits = QueueLimits::with_capacity(reads.len());
    for (url, role, read) in reads {
        log_limit(&url, role, &read);
        limits.insert(url, read);
    }
    (config.with_queue_limits(&limits), unread)
}

/// The log line for what one queue's read gave: the limit learned, or what is assumed
/// and what to do.
fn log_limit(url: &str, role: QueueRole, read: &LimitRead) {
    match (sqs_limit(None, Some(read)), read) {
        (SqsLimit::Queue(bytes), _) => {
            tracing::info!(queue = %url, max_message_bytes = bytes, ?role, "learned the queue's MaximumMessageSize");
        }
        (_, Err(error)) => {
            tracing::warn!(queue = %url, ?role, %error, "{}", unknown_limit_advice(url, role, error));
        }
        (_, Ok(bytes)) => {
            let error = format!("it read as {bytes}");
            tracing::warn!(queue = %url, ?role, %error, "{}", unknown_limit_advice(url, role, &error));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_core::message::AttrValue;

    #[test]
    fn a_traced_message_sends_its_x_ray_header_as_aws_trace_header() {
        let header = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
        let message = OutboundMessage {
            body: "{}".into(),
            attributes: vec![("outbox-topic", AttrValue::String("orders".into()))],
            group_id: None,
            dedup_id: None,
            trace_header: Some(header.into()),
        };
        let entry = batch_entry(3, &message).expect("entry");
        let sent = entry
            .message_system_attributes()
            .and_then(|a| a.get(&MessageSystemAttributeNameForSends::AwsTraceHeader))
            .and_then(|v| v.string_value());
        assert_eq!(sent, Some(header));
        let untraced = OutboundMessage {
            trace_header: None,
            ..message
        };
        let entry = batch_entry(3, &untraced).expect("entry");
        assert!(entry.message_system_attributes().is_none());
    }
}
