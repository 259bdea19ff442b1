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
use serde::{Deserialize, Serialize};

/// An outbox item, attribute by attribute, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxItem {
    /// `PK`: the aggregate.
    #[serde(rename = "PK", skip_serializing_if = "Option::is_none")]
    pub pk: Option<String>,
    /// `SK`: `MESSAGE#<EVENT>#<id>`.
    #[serde(rename = "SK", skip_serializing_if = "Option::is_none")]
    pub sk: Option<String>,
    /// `ItemType`: `PENDING_MESSAGE` on every outbox item.
    #[serde(rename = "ItemType", skip_serializing_if = "Option::is_none")]
    pub item_type: Option<String>,
    /// `Topic`.
    #[serde(rename = "Topic", skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// `Payload`: the message body.
    #[serde(rename = "Payload", skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// `Status` as stored (see [`OutboxItem::status`] for the typed value).
    #[serde(rename = "Status", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `RetryCount`: sweeper attempts.
    #[serde(
        rename = "RetryCount",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::u32"
    )]
    pub retry_count: Option<u32>,
    /// `MessageId`.
    #[serde(rename = "MessageId", skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// `CreatedAt`: epoch milliseconds.
    #[serde(
        rename = "CreatedAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::i64"
    )]
    pub created_at: Option<i64>,
    /// `Sequence`: per-aggregate order. [`OutboxItem::from_item`] reads it exactly from
    /// its decimal text (an integer in `u64`, else none).
    #[serde(
        rename = "Sequence",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::u64"
    )]
    pub sequence: Option<u64>,
    /// `SweepShard`: sweeper index partition (only while `PENDING`).
    #[serde(rename = "SweepShard", skip_serializing_if = "Option::is_none")]
    pub sweep_shard: Option<String>,
    /// `SweepDueAt`: sweeper index sort key, epoch milliseconds.
    #[serde(
        rename = "SweepDueAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::i64"
    )]
    pub sweep_due_at: Option<i64>,
    /// `SentAt`: epoch milliseconds.
    #[serde(
        rename = "SentAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::i64"
    )]
    pub sent_at: Option<i64>,
    /// `ExpiresAt`: the TTL, epoch seconds.
    #[serde(
        rename = "ExpiresAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::i64"
    )]
    pub expires_at: Option<i64>,
    /// `FailedAt`: epoch milliseconds.
    #[serde(
        rename = "FailedAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::i64"
    )]
    pub failed_at: Option<i64>,
    /// `LastError`.
    #[serde(rename = "LastError", skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// `PayloadOn`: where the payload went when a `FAILED` item at its size limit
    /// gave it up (`dead-letter queue`: the dead-letter copy holds it).
    #[serde(rename = "PayloadOn", skip_serializing_if = "Option::is_none")]
    pub payload_on: Option<String>,
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
    /// The sweeper index attributes as read. Items from minimal producers carry none,
    /// foreign producers may carry values no sweep claims: either way the item is not
    /// [`OutboxMessage::indexed`], and is adopted into the index when the stream path
    /// cannot finish it.
    pub index: SeenIndex,
}

impl OutboxMessage {
    /// Whether a sweep would find and claim the item as it is.
    pub fn indexed(&self) -> bool {
        self.index.is_valid()
    }

    /// The aggregate this message belongs to (its partition key).
    pub fn aggregate(&self) -> &str {
        &self.key.pk
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
        "the item has no `{0}` attribute; every outbox item needs one (see the item schema in README.md)"
    )]
    Missing(&'static str),
    /// A required attribute is present but empty.
    #[error("the item's `{0}` attribute is empty")]
    Empty(&'static str),
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
        Ok(OutboxMessage {
            message_id,
            topic,
            payload,
            created_at: self.created_at.unwrap_or(0),
            retry_count: self.retry_count.unwrap_or(0),
            sequence: self.sequence,
            index,
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
mod tests {
    use super::*;
    use serde_dynamo::AttributeValue as Av;
    use std::collections::HashMap;

    fn item(pairs: &[(&str, Av)]) -> serde_dynamo::Item {
        let map: HashMap<String, Av> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        map.into()
    }

    fn s(v: &str) -> Av {
        Av::S(v.to_owned())
    }

    #[test]
    fn minimal_boto3_item_decodes_with_a_derived_message_id() {
        let it = item(&[
            ("PK", s("USER#123")),
            ("SK", s("MESSAGE#PROFILE_UPDATED#1698765432")),
            ("ItemType", s("PENDING_MESSAGE")),
            ("Topic", s("user-profile-updated")),
            ("Payload", s("{\"user_id\":\"123\"}")),
            ("Status", s("PENDING")),
            ("RetryCount", Av::N("0".into())),
        ]);
        let msg = decode_message(it.clone(), None).expect("decodes");
        assert_eq!(msg.topic, "user-profile-updated");
        assert_eq!(msg.created_at, 0);
        assert_eq!(msg.message_id, derive_message_id(&msg.key));
        // Deterministic: the same item decodes to the same id.
        assert_eq!(
            decode_message(it, None).expect("decodes").message_id,
            msg.message_id
        );
    }

    #[test]
    fn wrong_attribute_type_names_the_attribute() {
        let it = item(&[
            ("PK", s("A")),
            ("SK", s("B")),
            ("Topic", s("t")),
            ("Payload", Av::M(HashMap::new())),
        ]);
        let err = decode_message(it, None).expect_err("payload map is malformed");
        let text = err.to_string();
        assert!(text.contains("Payload"), "{text}");
    }

    #[test]
    fn missing_topic_is_reported_by_name() {
        let it = item(&[("PK", s("A")), ("SK", s("B")), ("Payload", s("{}"))]);
        assert_eq!(
            decode_message(it, None).expect_err("no topic"),
            DecodeError::Missing("Topic")
        );
    }

    #[test]
    fn fractional_metadata_numbers_are_read_leniently() {
        let it = item(&[
            ("PK", s("A")),
            ("SK", s("B")),
            ("Topic", s("t")),
            ("Payload", s("{}")),
            ("CreatedAt", Av::N("1698765432123.456".into())),
            ("Sequence", Av::N("7.0".into())),
            ("RetryCount", Av::N("-2".into())),
        ]);
        let msg = decode_message(it, None).expect("a good message, not poison");
        assert_eq!(msg.created_at, 1_698_765_432_123);
        assert_eq!(msg.sequence, Some(7));
        assert_eq!(msg.retry_count, 0);
        assert!(!msg.indexed());
    }

    #[test]
    fn a_sequence_above_two_to_the_fifty_three_is_read_exactly_in_any_notation() {
        // Through f64, 2^53 + 1 reads as 2^53: consumers would see two messages with
        // one sequence number and lose one in their ordering.
        for text in [
            "9007199254740993",
            "9007199254740993.0",
            "9.007199254740993E15",
        ] {
            let it = item(&[
                ("PK", s("A")),
                ("SK", s("B")),
                ("Topic", s("t")),
                ("Payload", s("{}")),
                ("Sequence", Av::N(text.into())),
            ]);
            let msg = decode_message(it, None).expect("decodes");
            assert_eq!(msg.sequence, Some(9_007_199_254_740_993), "{text}");
        }
        let fraction = item(&[
            ("PK", s("A")),
            ("SK", s("B")),
            ("Topic", s("t")),
            ("Payload", s("{}")),
            ("Sequence", Av::N("7.5".into())),
        ]);
        assert_eq!(
            decode_message(fraction, None).expect("decodes").sequence,
            None
        );
    }

    #[test]
    fn foreign_index_attributes_leave_a_message_unindexed_with_the_values_as_read() {
        let with = |shard: &str, due: &str| {
            item(&[
                ("PK", s("A")),
                ("SK", s("B")),
                ("Topic", s("t")),
                ("Payload", s("{}")),
                ("SweepShard", s(shard)),
                ("SweepDueAt", Av::N(due.into())),
            ])
        };
        let ours = crate::schema::sweep_shard("A");
        assert!(
            decode_message(with(&ours, "1700000000000"), None)
                .expect("ok")
                .indexed()
        );
        let fractional = decode_message(with(&ours, "1700000000000.5"), None).expect("ok");
        assert!(!fractional.indexed());
        assert_eq!(fractional.index.due.as_deref(), Some("1700000000000.5"));
        let foreign = decode_message(with("99", "1"), None).expect("ok");
        assert!(!foreign.indexed());
        assert_eq!(foreign.index.shard.as_deref(), Some("99"));
    }

    #[test]
    fn keys_fall_back_to_the_stream_record_keys() {
        let it = item(&[("Topic", s("t")), ("Payload", s("{}"))]);
        let key = ItemKey {
            pk: "A".into(),
            sk: "B".into(),
        };
        let msg = decode_message(it, Some(&key)).expect("decodes");
        assert_eq!(msg.key, key);
    }

    #[test]
    fn an_undecodable_item_keeps_its_raw_content_key_and_topic() {
        let it = item(&[("PK", s("A")), ("SK", s("B")), ("Topic", s("t"))]);
        let bad = decode(&it, None).expect_err("no payload");
        assert_eq!(bad.error, DecodeError::Missing("Payload"));
        assert_eq!(bad.topic.as_deref(), Some("t"));
        assert_eq!(bad.key.map(|k| k.pk), Some("A".to_owned()));
        assert!(bad.raw.contains("\"Topic\""), "{}", bad.raw);
    }

    #[test]
    fn an_item_written_and_read_back_is_the_same() {
        let written = OutboxItem {
            pk: Some("A".into()),
            sk: Some("MESSAGE#X#1".into()),
            status: Some(Status::Pending.as_str().into()),
            retry_count: Some(0),
            created_at: Some(1_700_000_000_000),
            sequence: Some(3),
            ..OutboxItem::default()
        };
        let stored: serde_dynamo::Item = serde_dynamo::to_item(&written).expect("serialises");
        assert_eq!(
            stored.inner().get("CreatedAt"),
            Some(&Av::N("1700000000000".into()))
        );
        assert!(!stored.inner().contains_key("Topic"), "absent stays absent");
        let read = OutboxItem::from_item(stored).expect("reads");
        assert_eq!(read, written);
        assert_eq!(read.status(), Some(Status::Pending));
    }
}
