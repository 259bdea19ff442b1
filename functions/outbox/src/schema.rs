//! The outbox item schema: attribute names, states, and the typed view of an item.
//!
//! Items written by *any* producer that follows the schema must work, including the
//! minimal one (`PK, SK, ItemType, Topic, Payload, Status, RetryCount` only) that a
//! hand-written boto3 producer writes. Everything optional here is optional for that
//! reason.

use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;

/// Partition key attribute: the aggregate, e.g. `USER#123`.
pub const PK: &str = "PK";
/// Sort key attribute: `MESSAGE#<EVENT>#<time-ordered id>`.
pub const SK: &str = "SK";
/// Marks an item as an outbox message, whatever its state.
pub const ITEM_TYPE: &str = "ItemType";
/// The value of [`ITEM_TYPE`] on every outbox item.
pub const PENDING_MESSAGE: &str = "PENDING_MESSAGE";
/// Logical topic, routed to a destination by configuration.
pub const TOPIC: &str = "Topic";
/// Message body (JSON text).
pub const PAYLOAD: &str = "Payload";
/// `PENDING`, `SENT` or `FAILED`.
pub const STATUS: &str = "Status";
/// Delivery attempts made by the sweeper.
pub const RETRY_COUNT: &str = "RetryCount";
/// Globally unique message id.
pub const MESSAGE_ID: &str = "MessageId";
/// Epoch milliseconds at which the producer wrote the message.
pub const CREATED_AT: &str = "CreatedAt";
/// Optional per-aggregate sequence number, for consumers that need strict order.
pub const SEQUENCE: &str = "Sequence";
/// Sweeper index partition key (sparse: present only while `PENDING`).
pub const SWEEP_SHARD: &str = "SweepShard";
/// Sweeper index sort key: epoch milliseconds at which the item is due for a sweep.
pub const SWEEP_DUE_AT: &str = "SweepDueAt";
/// Epoch milliseconds at which the message was published.
pub const SENT_AT: &str = "SentAt";
/// Epoch milliseconds at which the message was given up on.
pub const FAILED_AT: &str = "FailedAt";
/// The table's TTL attribute (epoch seconds), set when the item becomes `SENT`.
pub const EXPIRES_AT: &str = "ExpiresAt";
/// Why the last attempt failed, in words an operator understands.
pub const LAST_ERROR: &str = "LastError";

/// Name of the sparse global secondary index the sweeper queries.
pub const SWEEP_INDEX: &str = "OutboxSweepIndex";
/// Number of sweeper index partitions. Fixed: producers and the sweeper must agree.
pub const SWEEP_SHARDS: u32 = 16;

/// Lifecycle state of an outbox item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Written by the producer, not yet published.
    Pending,
    /// Published at least once. Terminal.
    Sent,
    /// Given up on; a copy is on the dead-letter queue. Terminal except for a redrive.
    Failed,
}

impl Status {
    /// The attribute value stored in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Sent => "SENT",
            Status::Failed => "FAILED",
        }
    }

    /// Parses a stored value; `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "PENDING" => Some(Status::Pending),
            "SENT" => Some(Status::Sent),
            "FAILED" => Some(Status::Failed),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The primary key of an outbox item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKey {
    /// Partition key: the aggregate.
    pub pk: String,
    /// Sort key.
    pub sk: String,
}

impl fmt::Display for ItemKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {}", self.pk, self.sk)
    }
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
    /// Whether the item carries the sweeper index keys. Items from minimal producers
    /// do not, and are adopted into the index when the stream path cannot finish them.
    pub indexed: bool,
}

impl OutboxMessage {
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

/// The attributes as stored. Every field is optional so that decoding reports which
/// one is missing rather than failing on the first.
#[derive(Debug, Deserialize)]
struct StoredItem {
    #[serde(rename = "PK")]
    pk: Option<String>,
    #[serde(rename = "SK")]
    sk: Option<String>,
    #[serde(rename = "Topic")]
    topic: Option<String>,
    #[serde(rename = "Payload")]
    payload: Option<String>,
    #[serde(rename = "MessageId")]
    message_id: Option<String>,
    // Numbers a producer may have written with a fraction (`Decimal(time.time()*1000)`):
    // read leniently, so optional metadata never turns a good message into poison.
    #[serde(rename = "CreatedAt")]
    created_at: Option<f64>,
    #[serde(rename = "RetryCount")]
    retry_count: Option<f64>,
    #[serde(rename = "Sequence")]
    sequence: Option<f64>,
    #[serde(rename = "SweepShard")]
    sweep_shard: Option<serde::de::IgnoredAny>,
}

/// Decodes an item image into a message.
///
/// `fallback_key` is used when the image itself lacks `PK`/`SK` (a stream record
/// always carries its keys separately).
pub fn decode_message(
    item: serde_dynamo::Item,
    fallback_key: Option<&ItemKey>,
) -> Result<OutboxMessage, DecodeError> {
    let de = serde_dynamo::Deserializer::from_attribute_value(serde_dynamo::AttributeValue::M(
        item.into(),
    ));
    let stored: StoredItem = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        DecodeError::Malformed(format!("attribute `{path}`: {}", e.into_inner()))
    })?;
    let pk = stored
        .pk
        .or_else(|| fallback_key.map(|k| k.pk.clone()))
        .ok_or(DecodeError::Missing(PK))?;
    let sk = stored
        .sk
        .or_else(|| fallback_key.map(|k| k.sk.clone()))
        .ok_or(DecodeError::Missing(SK))?;
    let topic = stored.topic.ok_or(DecodeError::Missing(TOPIC))?;
    if topic.trim().is_empty() {
        return Err(DecodeError::Empty(TOPIC));
    }
    let payload = stored.payload.ok_or(DecodeError::Missing(PAYLOAD))?;
    let key = ItemKey { pk, sk };
    let message_id = match stored.message_id {
        Some(id) if !id.is_empty() => id,
        _ => derive_message_id(&key),
    };
    Ok(OutboxMessage {
        message_id,
        topic,
        payload,
        created_at: stored.created_at.map_or(0, |v| v as i64),
        retry_count: stored.retry_count.map_or(0, |v| v.max(0.0) as u32),
        sequence: stored.sequence.filter(|v| *v >= 0.0).map(|v| v as u64),
        indexed: stored.sweep_shard.is_some(),
        key,
    })
}

/// Reads a string attribute from an image, if it is there and is a string.
pub fn string_attr<'a>(item: &'a serde_dynamo::Item, name: &str) -> Option<&'a str> {
    let map: &HashMap<String, serde_dynamo::AttributeValue> = item.as_ref();
    match map.get(name) {
        Some(serde_dynamo::AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// Reads the primary key from a key map or an image.
pub fn item_key(item: &serde_dynamo::Item) -> Option<ItemKey> {
    Some(ItemKey {
        pk: string_attr(item, PK)?.to_owned(),
        sk: string_attr(item, SK)?.to_owned(),
    })
}

/// Namespace for message ids derived from `PK`+`SK` (UUID v5): the same item always
/// gets the same id, so duplicates of a minimal producer's message stay recognisable.
const DERIVED_ID_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6f75_7462_6f78_4d73_a7d1_4b0e_9c2f_5e11);

/// The `MessageId` of an item whose producer wrote none: deterministic in `PK`+`SK`.
pub fn derive_message_id(key: &ItemKey) -> String {
    let mut name = Vec::with_capacity(key.pk.len() + key.sk.len() + 1);
    name.extend_from_slice(key.pk.as_bytes());
    name.push(0);
    name.extend_from_slice(key.sk.as_bytes());
    uuid::Uuid::new_v5(&DERIVED_ID_NAMESPACE, &name).to_string()
}

/// 64-bit FNV-1a: small, stable across versions and platforms (unlike `DefaultHasher`),
/// which matters because producers and the sweeper must agree on shard numbers.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The sweeper index shard of an aggregate: a hash of its key, so one aggregate's
/// messages always share a shard (and stay in order within it).
pub fn sweep_shard(pk: &str) -> String {
    format!(
        "{:02}",
        stable_hash(pk.as_bytes()) % u64::from(SWEEP_SHARDS)
    )
}

/// Every sweep shard value, in order.
pub fn all_sweep_shards() -> impl Iterator<Item = String> {
    (0..SWEEP_SHARDS).map(|n| format!("{n:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_dynamo::AttributeValue as Av;

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
        ]);
        let msg = decode_message(it, None).expect("a good message, not poison");
        assert_eq!(msg.created_at, 1_698_765_432_123);
        assert_eq!(msg.sequence, Some(7));
        assert!(!msg.indexed);
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
    fn shards_are_stable_and_in_range() {
        assert_eq!(sweep_shard("USER#123"), sweep_shard("USER#123"));
        let shards: Vec<String> = all_sweep_shards().collect();
        assert_eq!(shards.len(), SWEEP_SHARDS as usize);
        for pk in ["a", "b", "USER#1", "ORDER#99", ""] {
            assert!(shards.contains(&sweep_shard(pk)));
        }
        // FNV-1a reference value: guards against an accidental change of the hash,
        // which would strand pending items in shards the sweeper no longer reads.
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
