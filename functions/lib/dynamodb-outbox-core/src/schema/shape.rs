//! The outbox table's shape, declared once for the Rust side: what provisioning
//! creates and what the adapters query. The CDK app and the Terraform module declare
//! the same table; keep them equal to this.

use super::{EXPIRES_AT, PK, SK, SWEEP_DUE_AT, SWEEP_INDEX, SWEEP_SHARD};

/// A key attribute's DynamoDB type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// String.
    S,
    /// Number.
    N,
}

/// Keys, the sparse sweeper index, TTL and stream of the outbox table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableShape {
    /// Partition key (string): the aggregate.
    pub partition_key: &'static str,
    /// Sort key (string).
    pub sort_key: &'static str,
    /// The sparse global secondary index the sweeper queries (`KEYS_ONLY`).
    pub sweep_index: &'static str,
    /// Its partition key (string): one of the [`SweepShards`](super::SweepShards)
    /// (how many is a deployment setting: the index's definition does not change).
    pub sweep_index_partition_key: &'static str,
    /// Its sort key (number): the due time, epoch milliseconds.
    pub sweep_index_sort_key: &'static str,
    /// The TTL attribute (epoch seconds).
    pub ttl_attribute: &'static str,
    /// The stream carries new images (`NEW_IMAGE`): the publisher reads the item
    /// from its record.
    pub stream_new_image: bool,
}

/// The outbox table.
pub const TABLE: TableShape = TableShape {
    partition_key: PK,
    sort_key: SK,
    sweep_index: SWEEP_INDEX,
    sweep_index_partition_key: SWEEP_SHARD,
    sweep_index_sort_key: SWEEP_DUE_AT,
    ttl_attribute: EXPIRES_AT,
    stream_new_image: true,
};

impl TableShape {
    /// Every attribute a key of the table or its index uses, with its type: what a
    /// `CreateTable` must define.
    pub fn key_attributes(&self) -> [(&'static str, ScalarType); 4] {
        [
            (self.partition_key, ScalarType::S),
            (self.sort_key, ScalarType::S),
            (self.sweep_index_partition_key, ScalarType::S),
            (self.sweep_index_sort_key, ScalarType::N),
        ]
    }
}
