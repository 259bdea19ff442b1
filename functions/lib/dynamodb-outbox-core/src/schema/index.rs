//! The sweeper index attributes of an item as they were read, and whether a sweep
//! can work with them.
//!
//! An item counts as indexed only when its `SweepShard` is one of the shards a sweep
//! queries ([`SweepShards::is_shard`]) and its `SweepDueAt` is an integer: a foreign producer's shard
//! (`"99"`) is never queried, and a due time with a fraction would never match the
//! integer the claim compares. Such an item is treated as unindexed — the publisher's
//! adoption and the scan mode re-index it, conditionally on the values as read here,
//! which overwrites the bad ones.

use super::number::{integer, whole_part};
use super::{SWEEP_DUE_AT, SWEEP_SHARD, SweepShards, string_attr};
use serde_dynamo::AttributeValue;

/// `SweepShard` and `SweepDueAt` exactly as stored (the due time as its decimal
/// text), each `None` when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SeenIndex {
    /// `SweepShard` as read.
    pub shard: Option<String>,
    /// `SweepDueAt` as read: DynamoDB's decimal text.
    pub due: Option<String>,
}

impl SeenIndex {
    /// Reads the two attributes from an item image.
    pub fn of(item: &serde_dynamo::Item) -> Self {
        SeenIndex {
            shard: string_attr(item, SWEEP_SHARD).map(str::to_owned),
            due: match item.inner().get(SWEEP_DUE_AT) {
                Some(AttributeValue::N(n)) => Some(n.clone()),
                _ => None,
            },
        }
    }

    /// Index attributes as this library writes them.
    pub fn ours(shard: impl Into<String>, due_ms: i64) -> Self {
        SeenIndex {
            shard: Some(shard.into()),
            due: Some(due_ms.to_string()),
        }
    }

    /// Whether a sweep of `shards` finds and claims the item as it is: one of its
    /// shards and an integer due time.
    pub fn is_valid(&self, shards: &SweepShards) -> bool {
        self.shard.as_deref().is_some_and(|s| shards.is_shard(s)) && self.due_ms_exact().is_some()
    }

    /// The due time, when it is an integer of epoch milliseconds.
    pub fn due_ms_exact(&self) -> Option<i64> {
        self.due
            .as_deref()
            .and_then(integer)
            .and_then(|d| i64::try_from(d).ok())
    }

    /// The due time for ordering and ages, fractions truncated.
    pub fn due_ms(&self) -> Option<i64> {
        self.due.as_deref().and_then(whole_part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(shard: Option<&str>, due: Option<&str>) -> SeenIndex {
        SeenIndex {
            shard: shard.map(str::to_owned),
            due: due.map(str::to_owned),
        }
    }

    #[test]
    fn only_our_shards_and_integer_due_times_count_as_indexed() {
        let sixteen = SweepShards::default();
        for foreign in ["16", "99", "1", "001", "-1", "ab", ""] {
            assert!(!seen(Some(foreign), Some("1")).is_valid(&sixteen), "{foreign}");
        }
        assert!(seen(Some("07"), Some("1700000000000")).is_valid(&sixteen));
        assert!(seen(Some("07"), Some("1700000000000.000")).is_valid(&sixteen));
        assert!(!seen(Some("07"), Some("1700000000000.5")).is_valid(&sixteen));
        assert!(!seen(Some("99"), Some("1")).is_valid(&sixteen));
        assert!(!seen(Some("07"), None).is_valid(&sixteen));
        assert!(!seen(None, Some("1")).is_valid(&sixteen));
        assert_eq!(seen(None, Some("12.9")).due_ms(), Some(12));
    }

    #[test]
    fn the_attributes_are_read_as_stored() {
        let item: serde_dynamo::Item = std::collections::HashMap::from([
            ("SweepShard".to_owned(), AttributeValue::S("99".into())),
            ("SweepDueAt".to_owned(), AttributeValue::N("1.5".into())),
        ])
        .into();
        assert_eq!(SeenIndex::of(&item), seen(Some("99"), Some("1.5")));
        assert_eq!(SeenIndex::ours("03", 42), seen(Some("03"), Some("42")));
    }
}
