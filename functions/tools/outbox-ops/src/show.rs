//! One aggregate's messages (or one of them) as the table holds them: state, attempts,
//! why it failed, when it was sent, and the trace it was committed in — to answer
//! "why did order 42's message go out late, twice, or never?".
//!
//! A query of the aggregate's partition (`PK = <aggregate>`, sort keys beginning
//! `MESSAGE#`), never a scan: the outbox keys a message by its aggregate, and an
//! operator asked about an order knows the order.

use crate::{OpsError, Reads, Table};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use dynamodb_outbox::trace::TraceContext;
use dynamodb_outbox_core::schema::{ItemKey, OutboxItem, Status, derive_message_id, item_key};
use std::collections::HashMap;

/// Every outbox item's sort key begins so.
const MESSAGE_SORT_KEY_PREFIX: &str = "MESSAGE#";

/// A message's life as its item tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageLife {
    /// Its key.
    pub key: ItemKey,
    /// Its message id (derived from the key when the producer wrote none).
    pub message_id: String,
    /// Its topic.
    pub topic: Option<String>,
    /// `PENDING`, `SENT` or `FAILED` (`None`: not one of them).
    pub status: Option<Status>,
    /// When it was committed, epoch milliseconds.
    pub created_at_ms: Option<i64>,
    /// Sweeper attempts made.
    pub retry_count: Option<u32>,
    /// While pending: when the sweeper may next take it, epoch milliseconds.
    pub due_ms: Option<i64>,
    /// When it was marked `SENT`, epoch milliseconds.
    pub sent_at_ms: Option<i64>,
    /// When the item expires (its TTL), epoch seconds.
    pub expires_at_s: Option<i64>,
    /// When it was given up on, epoch milliseconds.
    pub failed_at_ms: Option<i64>,
    /// Why the last attempt failed, or why it was given up on.
    pub last_error: Option<String>,
    /// Where its payload went when a `FAILED` mark had to move it off the item (at
    /// the 400 KB limit): `PayloadOn`, its dead-letter copy then the only one.
    pub payload_on: Option<String>,
    /// The trace it was committed in, when it carries a well-formed one.
    pub trace: Option<TraceContext>,
    /// Why its trace attributes are not a trace, when they are there but malformed.
    pub trace_error: Option<String>,
    /// Why the item does not read as an outbox item (poison), when it does not: the
    /// other fields are then only what its key says.
    pub decode_error: Option<String>,
}

impl MessageLife {
    fn of(item: OutboxItem) -> Option<Self> {
        let key = item.key()?;
        let (trace, trace_error) = match TraceContext::from_attributes(
            item.trace_parent.as_deref(),
            item.trace_state.as_deref(),
            item.aws_trace_header.as_deref(),
        ) {
            Some(Ok(trace)) => (Some(trace), None),
            Some(Err(e)) => (None, Some(e.to_string())),
            None => (None, None),
        };
        Some(MessageLife {
            message_id: item
                .message_id
                .clone()
                .unwrap_or_else(|| derive_message_id(&key)),
            status: item.status(),
            topic: item.topic,
            created_at_ms: item.created_at,
            retry_count: item.retry_count,
            due_ms: item.sweep_due_at,
            sent_at_ms: item.sent_at,
            expires_at_s: item.expires_at,
            failed_at_ms: item.failed_at,
            last_error: item.last_error,
            payload_on: item.payload_on,
            trace,
            trace_error,
            decode_error: None,
            key,
        })
    }

    /// An item that does not read as an outbox item: shown by its key, with why.
    fn undecodable(key: ItemKey, error: String) -> Self {
        MessageLife {
            message_id: derive_message_id(&key),
            key,
            topic: None,
            status: None,
            created_at_ms: None,
            retry_count: None,
            due_ms: None,
            sent_at_ms: None,
            expires_at_s: None,
            failed_at_ms: None,
            last_error: None,
            payload_on: None,
            trace: None,
            trace_error: None,
            decode_error: Some(error),
        }
    }
}

/// The messages of `aggregate`, oldest first, or only `message_id` among them; and
/// what was read.
pub async fn show(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    aggregate: &str,
    message_id: Option<&str>,
) -> Result<(Vec<MessageLife>, Reads), OpsError> {
    let mut reads = Reads::default();
    let mut lives = Vec::new();
    let mut start: Option<HashMap<String, AttributeValue>> = None;
    loop {
        let out = client
            .query()
            .table_name(&table.name)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :message)")
            .expression_attribute_names("#pk", &table.keys.partition_key)
            .expression_attribute_names("#sk", &table.keys.sort_key)
            .expression_attribute_values(":pk", AttributeValue::S(aggregate.to_owned()))
            .expression_attribute_values(
                ":message",
                AttributeValue::S(MESSAGE_SORT_KEY_PREFIX.to_owned()),
            )
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| OpsError::aws("query", &table.name, e))?;
        reads.add(out.consumed_capacity(), 0, out.items().len());
        for raw in out.items() {
            let mut raw = raw.clone();
            table.keys.to_canonical(&mut raw);
            let key = item_key(&raw.clone().into());
            match OutboxItem::from_item(raw.into()) {
                Ok(item) => lives.extend(MessageLife::of(item)),
                // Poison is what an operator most needs to see: by its key, with why.
                Err(e) => lives.extend(key.map(|k| MessageLife::undecodable(k, e.to_string()))),
            }
        }
        match out.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => break,
        }
    }
    lives.retain(|l| message_id.is_none_or(|id| l.message_id == id));
    lives.sort_by(|a, b| (a.created_at_ms, &a.key).cmp(&(b.created_at_ms, &b.key)));
    Ok((lives, reads))
}
