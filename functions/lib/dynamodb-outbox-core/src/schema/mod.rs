//! The outbox item schema: attribute names, states, the table's shape, and the typed
//! view of an item ([`OutboxItem`], read and written through `serde_dynamo`).
//!
//! Items written by *any* producer that follows the schema must work, including the
//! minimal one (`PK, SK, ItemType, Topic, Payload, Status, RetryCount` only) that a
//! hand-written boto3 producer writes. Everything optional here is optional for that
//! reason.

mod index;
mod item;
pub mod number;
mod sequence;
mod shape;
mod shards;
pub mod table_check;

pub use index::SeenIndex;
pub use sequence::{
    RESERVED_EVENT, SEQUENCED_PREFIX, SequencePlace, is_sequenced, sequence_place,
    sequenced_sort_key,
};
pub use shards::{DEFAULT_SWEEP_SHARDS, MAX_SWEEP_SHARDS, SweepShards};
pub use item::{DecodeError, OutboxItem, OutboxMessage, Undecodable, decode, decode_message};
pub use shape::{ScalarType, TABLE, TableShape};

/// The status a status read reports for an item still `PENDING` whose home is now
/// another region (a failover re-homed it after its insert; [`crate::home`]): the
/// record's image still names this region, so only the current item tells. Such a
/// record is reported for retry — not published, not skipped — until the owner has
/// finished it (then it is settled) or a failback returns it (then it is published
/// here), so a later message of its aggregate never overtakes it. In the schema, not
/// in `publish`: the order fence (`policy`) reads it too.
pub const PENDING_ELSEWHERE: &str = "PENDING (homed in another region)";

use std::fmt;

/// Partition key attribute: the aggregate, e.g. `USER#123`. The name the engine reads
/// items with; a table keyed otherwise is translated at the adapters' edge
/// ([`KeyNames`](crate::KeyNames)).
pub const PK: &str = "PK";
/// Sort key attribute: `MESSAGE#<EVENT>#<time-ordered id>` (the engine's name, as
/// [`PK`]).
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
/// Sweeper index partition key (sparse: present only while `PENDING`, as one of the
/// [`SweepShards`], and on `FAILED` items, as [`failed_sweep_shard`]).
pub const SWEEP_SHARD: &str = "SweepShard";
/// Sweeper index sort key: epoch milliseconds at which the item is due for a sweep
/// (on a `FAILED` item: when it failed).
pub const SWEEP_DUE_AT: &str = "SweepDueAt";
/// Epoch milliseconds at which the message was published.
pub const SENT_AT: &str = "SentAt";
/// Epoch milliseconds at which the message was given up on.
pub const FAILED_AT: &str = "FailedAt";
/// The table's TTL attribute (epoch seconds), set when the item becomes `SENT` (the
/// engine's name; the table's own is [`KeyNames::ttl_attribute`](crate::KeyNames)).
pub const EXPIRES_AT: &str = "ExpiresAt";
/// Why the last attempt failed, in words an operator understands.
pub const LAST_ERROR: &str = "LastError";
/// Where the payload went when a `FAILED` item at its size limit could not keep it
/// and take its `LastError` too: `dead-letter queue` (the dead-letter copy holds it).
pub const PAYLOAD_ON: &str = "PayloadOn";
/// The size in bytes of a payload the producer wrote to S3 (the large-payload offload):
/// `Payload` then holds the pointer, and the published message carries this size as
/// `ExtendedPayloadSize`, as the extended clients expect.
pub const PAYLOAD_SIZE: &str = "PayloadSize";

/// Partition key of the sweeper's own bookkeeping items in the outbox table (not
/// outbox items: no `ItemType`, so neither the stream filter nor the publisher takes
/// them): one per adoption scan segment, `SK` = [`scan_cursor_sk`].
pub const SWEEPER_PK: &str = "OUTBOX#SWEEPER";
/// Attribute of a scan cursor item: the number of segments the cursor is for.
pub const SCAN_SEGMENTS: &str = "Segments";
/// Attribute of a scan cursor item: where the segment stopped (the store's page
/// token), absent when it reached the end.
pub const SCAN_CURSOR: &str = "Cursor";

/// The sort key of the scan cursor item of `segment` for the deployment in `region`
/// (`SCAN#<region>#<segment>`; `SCAN#<segment>` when the region is unknown). On a
/// global table every region scans for its own messages: one cursor shared by the
/// regions, written last-writer-wins, made each resume from the other's position and
/// skip pages (issue 36, finding 8).
pub fn scan_cursor_sk(segment: u32, region: Option<&str>) -> String {
    match region {
        Some(region) => format!("SCAN#{region}#{segment}"),
        None => format!("SCAN#{segment}"),
    }
}

/// Name of the sparse global secondary index the sweeper queries.
pub const SWEEP_INDEX: &str = "OutboxSweepIndex";
/// Number of index partitions of `FAILED` items: fixed, whatever the pending items'
/// [`SweepShards`], so the operator's reads of failed items never depend on a setting
/// (failures arrive at the sweeper's pace, far below a partition's write ceiling).
pub const FAILED_SHARDS: u16 = 16;

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

/// Reads a string attribute from an item, if it is there and is a string. For what
/// must be read before an item is known to be an outbox item (a business item in the
/// same table may hold anything); outbox items are read as [`OutboxItem`].
pub fn string_attr<'a>(item: &'a serde_dynamo::Item, name: &str) -> Option<&'a str> {
    match item.inner().get(name) {
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

/// What a `FAILED` item's [`SWEEP_SHARD`] starts with. The sweeper queries only the
/// [`SweepShards::all`] partitions, so a failed item in the index is never swept;
/// the operator's `failed` and `status` read these partitions instead of the table.
pub const FAILED_SHARD_PREFIX: &str = "FAILED#";

/// The index partition of a `FAILED` item of aggregate `pk`: `FAILED#<n>`, `n` its
/// hash modulo [`FAILED_SHARDS`]. Sharded, so that a storm of failures does not make
/// one hot index partition, whose throttling would throttle the table's writes.
pub fn failed_sweep_shard(pk: &str) -> String {
    let n = stable_hash(pk.as_bytes()) % u64::from(FAILED_SHARDS);
    format!("{FAILED_SHARD_PREFIX}{n:02}")
}

/// Every index partition of `FAILED` items, in order.
pub fn all_failed_sweep_shards() -> impl Iterator<Item = String> {
    (0..FAILED_SHARDS).map(|n| format!("{FAILED_SHARD_PREFIX}{n:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_region_keeps_its_own_scan_cursor() {
        let (us, eu) = (Some("us-east-1"), Some("eu-west-1"));
        assert_ne!(scan_cursor_sk(3, us), scan_cursor_sk(3, eu));
        assert_eq!(scan_cursor_sk(3, us), "SCAN#us-east-1#3");
        assert_ne!(scan_cursor_sk(3, us), scan_cursor_sk(4, us));
        assert_eq!(scan_cursor_sk(3, None), "SCAN#3");
    }

    #[test]
    fn the_hash_is_stable() {
        // FNV-1a reference value: guards against an accidental change of the hash,
        // which would strand pending items in shards the sweeper no longer reads.
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_failed_item_has_the_default_shard_of_its_aggregate_under_a_prefix_no_sweep_queries() {
        let failed = failed_sweep_shard("USER#123");
        let default = SweepShards::default();
        assert_eq!(failed, format!("FAILED#{}", default.shard_of("USER#123")));
        for layout in [default, SweepShards::new(256).unwrap_or_default()] {
            assert!(!layout.is_shard(&failed));
        }
        let all: Vec<String> = all_failed_sweep_shards().collect();
        assert_eq!(all.len(), usize::from(FAILED_SHARDS));
        assert_eq!((all[0].as_str(), all[15].as_str()), ("FAILED#00", "FAILED#15"));
    }
}
