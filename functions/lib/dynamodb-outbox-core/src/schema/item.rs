//! The outbox item as one serde type, and its validation into a message.
//!
//! [`OutboxItem`] is what the table holds: the producer writes it, the stream and
//! sweeper adapters read it, the operator tools list it — all through `serde_dynamo`,
//! so the schema is declared here and nowhere else. Every attribute is optional in
//! the type because items come from any producer; [`OutboxItem::into_message`] says
//! which required one is missing.

use super::index::SeenIndex;
use super::number::{integer, lenient};
use super::{
    ItemKey, PAYLOAD, PK, SEQUENCE, SK, Status, TOPIC, derive_message_id, item_key, string_attr,
};
use crate::trace::TraceContext;
use serde::{Deserialize, Serialize};

/// An outbox item, attribute by attribute, as stored: each field under its name in
/// PascalCase (`retry_count` is `RetryCount`), and written only when set.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct OutboxItem {
    /// `PK`: the aggregate.
    #[serde(rename = "PK")]
    pub pk: Option<String>,
    /// `SK`: `MESSAGE#<EVENT>#<id>`.
    #[serde(rename = "SK")]
    pub sk: Option<String>,
    /// `ItemType`: `PENDING_MESSAGE` on every outbox item.
    pub item_type: Option<String>,
    /// `Topic`.
    pub topic: Option<String>,
    /// `Payload`: the message body.
    pub payload: Option<String>,
    /// `Status` as stored (see [`OutboxItem::status`] for the typed value).
    pub status: Option<String>,
    /// `RetryCount`: sweeper attempts.
    #[serde(default, deserialize_with = "lenient::u32")]
    pub retry_count: Option<u32>,
    /// `MessageId`.
    pub message_id: Option<String>,
    /// `CreatedAt`: epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub created_at: Option<i64>,
    /// `Sequence`: per-aggregate order. [`OutboxItem::from_item`] reads it exactly from
    /// its decimal text (an integer in `u64`, else none).
    #[serde(default, deserialize_with = "lenient::u64")]
    pub sequence: Option<u64>,
    /// `SweepShard`: sweeper index partition (only while `PENDING`).
    pub sweep_shard: Option<String>,
    /// `SweepDueAt`: sweeper index sort key, epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub sweep_due_at: Option<i64>,
    /// `SentAt`: epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub sent_at: Option<i64>,
    /// `ExpiresAt`: the TTL, epoch seconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub expires_at: Option<i64>,
    /// `FailedAt`: epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub failed_at: Option<i64>,
    /// `LastError`.
    pub last_error: Option<String>,
    /// `PayloadSize`: the payload's size in bytes when `Payload` is a large-payload offload
    /// pointer the producer wrote (see [`crate::large_payload`]).
    #[serde(default, deserialize_with = "lenient::u64")]
    pub payload_size: Option<u64>,
    /// `PayloadOn`: where the payload went when a `FAILED` item at its size limit
    /// gave it up (`dead-letter queue`: the dead-letter copy holds it).
    pub payload_on: Option<String>,
    /// `TraceParent`: the W3C `traceparent` of the trace the message was committed in
    /// ([`crate::trace`]). Trace attributes are read leniently: one of another type is
    /// no trace, never a reason to fail the message.
    #[serde(default, deserialize_with = "lenient::text")]
    pub trace_parent: Option<String>,
    /// `TraceState`: the W3C `tracestate` beside `TraceParent`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub trace_state: Option<String>,
    /// `AwsTraceHeader`: the same trace as an X-Ray header (`Root=…;Parent=…;Sampled=…`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub aws_trace_header: Option<String>,
    /// `HomeRegion`: the region whose deployment publishes it, on a global table
    /// ([`crate::home`]); none: the default home region's.
    #[serde(default, deserialize_with = "lenient::text")]
    pub home_region: Option<String>,
    /// `Follows`: the sort key of the message written before this one, of the same
    /// aggregate, in the same transaction (the library's producer writes it). AWS
    /// delivers one transaction's stream records in any order, in any batches: the
    /// order fence reads this one key consistently ([`crate::policy::to_confirm`]).
    #[serde(default, deserialize_with = "lenient::text")]
    pub follows: Option<String>,
}

/// An outbox message, decoded and validated: everything the publish path needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Primary key of the item.
    pub key: ItemKey,
    /// Globally unique id (derived from the key when the producer wrote none).
    pub message_id: String,
    /// Logical topic.
    pub topic: String,
    /// Message body.
    pub payload: String,
    /// Producer's write time, epoch milliseconds (0 when the producer wrote none).
    pub created_at: i64,
    /// Sweeper attempts made so far.
    pub retry_count: u32,
    /// Optional per-aggregate sequence number.
    pub sequence: Option<u64>,
    /// The size of the payload a large-payload offload pointer in `payload` points to, when the
    /// producer said (`PayloadSize`).
    pub payload_size: Option<u64>,
    /// The sweeper index attributes as read. Items from minimal producers carry none,
    /// foreign producers may carry values no sweep claims: either way the item is not
    /// [`OutboxMessage::indexed`], and is adopted into the index when the stream path
    /// cannot finish it.
    pub index: SeenIndex,
    /// The trace the message was committed in, when the item carries a well-formed one.
    pub trace: Option<TraceContext>,
    /// Its `HomeRegion`, when it names one ([`crate::home`]).
    pub home_region: Option<String>,
    /// The key of the message of its aggregate written before it in the same
    /// transaction (`Follows`), when the producer named one.
    pub follows: Option<ItemKey>,
}

impl OutboxMessage {
    /// Whether a sweep of `layout` would find and claim the item as it is.
    pub fn indexed(&self, layout: &super::SweepShards) -> bool {
        self.index.is_valid(layout)
    }

    /// The aggregate this message belongs to (its partition key).
    pub fn aggregate(&self) -> &str {
        &self.key.pk
    }

    /// The W3C trace id of the trace the message was committed in, or `-` without
    /// one: the `trace_id` field of the functions' log lines about this message, so
    /// that an operator finds them from the id shown in X-Ray or `outbox-ops show`.
    pub fn trace_id(&self) -> &str {
        crate::trace::log_trace_id(self.trace.as_ref())
    }
}

/// Why an item could not be turned into a message. Permanent: retrying cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// An attribute has the wrong DynamoDB type or shape.
    #[error("the item does not match the outbox schema: {0}")]
    Malformed(String),
    /// A required attribute is absent.
    #[error(
        "the item has no `{0}` attribute; every outbox item needs one (see the item schema in docs/schema.md)"
    )]
    Missing(&'static str),
    /// The record's keys are not the attributes this deployment reads as the table's
    /// keys: the deployment is configured with other key names than the table has
    /// ([`DecodeError::key_names`] says which).
    #[error("{0}")]
    KeyNames(Box<str>),
    /// A required attribute is present but empty.
    #[error("the item's `{0}` attribute is empty")]
    Empty(&'static str),
}

impl DecodeError {
    /// [`DecodeError::KeyNames`]: the record's keys are `found`, the deployment reads
    /// `expected` (both as the operator should read them, quoted).
    pub fn key_names(expected: &str, found: &str) -> Self {
        DecodeError::KeyNames(format!(
            "the record's keys are {found}, but this deployment reads the table's keys as {expected} (OUTBOX_PARTITION_KEY, OUTBOX_SORT_KEY): set them — the stacks' partition_key_name and sort_key_name, CDK keyNames — to the table's key names (docs/schema.md)"
        ).into())
    }
}

/// An item that is not a message, with what is needed to dead-letter it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    /// Its key, when the item or the record carried one.
    pub key: Option<ItemKey>,
    /// Its topic, when it could be read.
    pub topic: Option<String>,
    /// The raw item as DynamoDB JSON, so that nothing is lost on the dead-letter queue.
    pub raw: String,
    /// Why it is not a message.
    pub error: DecodeError,
}

impl OutboxItem {
    /// Reads an item, naming the attribute whose type is wrong. `Sequence` is read
    /// from its decimal text, exactly: through `f64` it would lose digits above 2^53.
    pub fn from_item(item: serde_dynamo::Item) -> Result<Self, DecodeError> {
        let sequence = match item.inner().get(SEQUENCE) {
            Some(serde_dynamo::AttributeValue::N(n)) => {
                integer(n).and_then(|i| u64::try_from(i).ok())
            }
            _ => None,
        };
        let de = serde_dynamo::Deserializer::from_attribute_value(serde_dynamo::AttributeValue::M(
            item.into_inner(),
        ));
        let mut read: OutboxItem = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            DecodeError::Malformed(format!("attribute `{path}`: {}", e.into_inner()))
        })?;
        read.sequence = sequence;
        Ok(read)
    }

    /// The item carrying `trace` in its trace attributes, in both forms.
    pub fn with_trace(mut self, trace: &TraceContext) -> Self {
        self.trace_parent = Some(trace.traceparent().to_owned());
        self.trace_state = trace.tracestate().map(str::to_owned);
        self.aws_trace_header = Some(trace.xray_header());
        self
    }

    /// The stored `Status`, when it is one of the three states.
    pub fn status(&self) -> Option<Status> {
        self.status.as_deref().and_then(Status::parse)
    }

    /// The primary key, when both parts are present.
    pub fn key(&self) -> Option<ItemKey> {
        Some(ItemKey {
            pk: self.pk.clone()?,
            sk: self.sk.clone()?,
        })
    }

    /// Validates the item into a message. `fallback_key` is used when the item itself
    /// lacks `PK`/`SK` (a stream record always carries its keys separately); `index`
    /// is its sweeper index attributes as read ([`SeenIndex::of`] the image).
    pub fn into_message(
        self,
        fallback_key: Option<&ItemKey>,
        index: SeenIndex,
    ) -> Result<OutboxMessage, DecodeError> {
        let pk = self
            .pk
            .or_else(|| fallback_key.map(|k| k.pk.clone()))
            .ok_or(DecodeError::Missing(PK))?;
        let sk = self
            .sk
            .or_else(|| fallback_key.map(|k| k.sk.clone()))
            .ok_or(DecodeError::Missing(SK))?;
        let topic = self.topic.ok_or(DecodeError::Missing(TOPIC))?;
        if topic.trim().is_empty() {
            return Err(DecodeError::Empty(TOPIC));
        }
        let payload = self.payload.ok_or(DecodeError::Missing(PAYLOAD))?;
        let key = ItemKey { pk, sk };
        let message_id = match self.message_id {
            Some(id) if !id.is_empty() => id,
            _ => derive_message_id(&key),
        };
        let trace = match TraceContext::from_attributes(
            self.trace_parent.as_deref(),
            self.trace_state.as_deref(),
            self.aws_trace_header.as_deref(),
        ) {
            Some(Ok(trace)) => Some(trace),
            Some(Err(error)) => {
                tracing::warn!(%message_id, %error, "the message's trace attributes are malformed: it is published without a trace");
                None
            }
            None => None,
        };
        Ok(OutboxMessage {
            message_id,
            topic,
            payload,
            created_at: self.created_at.unwrap_or(0),
            retry_count: self.retry_count.unwrap_or(0),
            sequence: self.sequence,
            payload_size: self.payload_size,
            index,
            trace,
            follows: self.follows.filter(|sk| !sk.is_empty()).map(|sk| ItemKey {
                pk: key.pk.clone(),
                sk,
            }),
            home_region: self.home_region,
            key,
        })
    }
}

/// Decodes an item image into a message.
pub fn decode_message(
    item: serde_dynamo::Item,
    fallback_key: Option<&ItemKey>,
) -> Result<OutboxMessage, DecodeError> {
    let index = SeenIndex::of(&item);
    OutboxItem::from_item(item)?.into_message(fallback_key, index)
}

/// Decodes an item image into a message, or into what is needed to dead-letter it
/// (the image is read once more only then).
pub fn decode(
    item: &serde_dynamo::Item,
    fallback_key: Option<&ItemKey>,
) -> Result<OutboxMessage, Undecodable> {
    decode_message(item.clone(), fallback_key).map_err(|error| Undecodable {
        key: fallback_key.cloned().or_else(|| item_key(item)),
        topic: string_attr(item, TOPIC).map(str::to_owned),
        raw: serde_json::to_string(item).unwrap_or_else(|_| "(unserialisable item)".to_owned()),
        error,
    })
}

#[cfg(test)]
mod tests;
