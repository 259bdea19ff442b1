//! `status` and `failed`: what the sweeper index says about the outbox, read from
//! the index's partitions only.

use crate::{OpsError, Reads, Table, index};
use dynamodb_outbox_core::schema::{
    ItemKey, OutboxItem, Status, all_failed_sweep_shards, derive_message_id,
};
use std::collections::BTreeMap;

/// Counts per state from the sweeper index, and what reading them cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusReport {
    /// Messages per state: `PENDING` (in the sweep partitions of the table's
    /// [`SweepShards`](dynamodb_outbox_core::SweepShards)) and `FAILED` (in the
    /// sixteen `FAILED#NN` partitions). `SENT` messages have left the index and are
    /// not counted, nor are pending messages the stream path is still publishing:
    /// the producer leaves them out of the index unless it indexes at commit.
    pub counts: BTreeMap<String, u64>,
    /// The earliest due time of a pending message, epoch milliseconds: the sweeper
    /// takes a message once it is due, so one long past due is one it cannot finish.
    pub earliest_due_ms: Option<i64>,
    /// DynamoDB's approximate item count of the whole table (`DescribeTable`, updated
    /// about every six hours; business items included), when the caller may read it.
    pub approximate_table_items: Option<i64>,
    /// What the command read.
    pub reads: Reads,
}

/// Counts the pending and failed messages of `table` from the sweeper index: a
/// `Select=COUNT` query of each sweep partition and of the 16 failed ones, the earliest entry of each
/// sweep partition that holds any, and `DescribeTable` for the table's approximate
/// size. No table item is read.
pub async fn status(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
) -> Result<StatusReport, OpsError> {
    let mut report = StatusReport::default();
    let mut pending = 0;
    for shard in table.keys.sweep_shards.all() {
        let count = index::count(client, table, &shard, &mut report.reads).await?;
        pending += count;
        if count == 0 {
            continue;
        }
        let due = index::earliest_due(client, table, &shard, &mut report.reads).await?;
        report.earliest_due_ms = match (report.earliest_due_ms, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    let mut failed = 0;
    for shard in all_failed_sweep_shards() {
        failed += index::count(client, table, &shard, &mut report.reads).await?;
    }
    for (status, count) in [(Status::Pending, pending), (Status::Failed, failed)] {
        if count > 0 {
            report.counts.insert(status.as_str().to_owned(), count);
        }
    }
    // The size of the table is context, not a count of ours: a caller without
    // dynamodb:DescribeTable still gets the counts.
    report.approximate_table_items = client
        .describe_table()
        .table_name(&table.name)
        .send()
        .await
        .ok()
        .and_then(|d| d.table.and_then(|t| t.item_count));
    report.reads.requests += 1;
    Ok(report)
}

/// A message the outbox gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedMessage {
    /// Its key.
    pub key: ItemKey,
    /// Its topic.
    pub topic: Option<String>,
    /// Its message id (derived from the key when the producer wrote none).
    pub message_id: String,
    /// Why.
    pub last_error: Option<String>,
    /// When, epoch milliseconds.
    pub failed_at_ms: Option<i64>,
    /// Sweeper attempts made.
    pub retry_count: Option<u32>,
    /// Where its payload went, when an item at the size limit gave it to its
    /// dead-letter copy (`PayloadOn`): a redrive leaves it alone.
    pub payload_on: Option<String>,
}

/// A failed item as a listing's line, when it has a key.
pub(crate) fn failed_message(item: OutboxItem) -> Option<FailedMessage> {
    let key = item.key()?;
    Some(FailedMessage {
        message_id: item.message_id.unwrap_or_else(|| derive_message_id(&key)),
        topic: item.topic,
        last_error: item.last_error,
        failed_at_ms: item.failed_at,
        retry_count: item.retry_count,
        payload_on: item.payload_on,
        key,
    })
}

/// The `FAILED` messages of `table`, optionally of one topic, oldest failure first.
pub async fn failed(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    topic: Option<&str>,
) -> Result<Vec<FailedMessage>, OpsError> {
    Ok(failed_read(client, table, topic).await?.0)
}

/// [`failed`], and what it read: the keys of the 16 `FAILED#NN` index partitions,
/// then those items only, by key (`BatchGetItem`, 100 keys a request). The topic is
/// not in the index, so every failed item is read and the topic chosen among them.
pub async fn failed_read(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    topic: Option<&str>,
) -> Result<(Vec<FailedMessage>, Reads), OpsError> {
    let mut reads = Reads::default();
    let mut keys = Vec::new();
    for shard in all_failed_sweep_shards() {
        keys.extend(index::keys(client, table, &shard, &mut reads).await?);
    }
    let items = index::items(client, table, &keys, &mut reads).await?;
    let mut out: Vec<FailedMessage> = items
        .into_iter()
        // The index is eventually consistent: an item redriven since is not listed.
        .filter(|item| item.status() == Some(Status::Failed))
        .filter(|item| topic.is_none() || item.topic.as_deref() == topic)
        .filter_map(failed_message)
        .collect();
    out.sort_by(|a, b| (a.failed_at_ms, &a.key).cmp(&(b.failed_at_ms, &b.key)));
    Ok((out, reads))
}
