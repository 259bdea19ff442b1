//! Operator commands on an outbox table (the `outbox-ops` binary): how many messages
//! are in each state and how old the oldest pending one is, which messages failed
//! and why, and redrive of failed messages once their cause is fixed.
//!
//! `status` and `failed` scan the table: they are for an operator at a terminal, not
//! for a schedule (the sweeper's metrics are the cheap, continuous view). Items are
//! read as the schema's [`OutboxItem`], so an item of any producer is listed.
//!
//! [`sdk_config`] is how the commands reach AWS — an account through the standard
//! chain, or an emulator at an endpoint — and the one place the workspace's tools
//! and tests build that configuration.

mod error;
mod sdk;

pub use error::OpsError;
pub use sdk::sdk_config;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use dynamodb_outbox::schema::{
    FAILED_AT, ITEM_TYPE, ItemKey, LAST_ERROR, OutboxItem, PAYLOAD_ON, PENDING_MESSAGE,
    RETRY_COUNT, STATUS, Status, TABLE, TOPIC, derive_message_id, sweep_shard,
};
use std::collections::{BTreeMap, HashMap};

type Item = HashMap<String, AttributeValue>;

/// Scans the outbox items of `table` matching `filter` (added to `ItemType =
/// PENDING_MESSAGE`), all pages, returning them and the number of items read.
async fn scan_messages(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    filter: Option<&str>,
    values: &[(&str, &str)],
) -> Result<(Vec<OutboxItem>, u64), OpsError> {
    let expression = match filter {
        Some(f) => format!("#type = :message AND ({f})"),
        None => "#type = :message".to_owned(),
    };
    let mut items = Vec::new();
    let mut read = 0u64;
    let mut start: Option<Item> = None;
    loop {
        let mut req = client
            .scan()
            .table_name(table)
            .filter_expression(&expression)
            .expression_attribute_names("#type", ITEM_TYPE)
            .expression_attribute_values(":message", AttributeValue::S(PENDING_MESSAGE.into()))
            .set_exclusive_start_key(start);
        if expression.contains("#status") {
            req = req.expression_attribute_names("#status", STATUS);
        }
        if expression.contains("#topic") {
            req = req.expression_attribute_names("#topic", TOPIC);
        }
        for (name, value) in values {
            req = req.expression_attribute_values(*name, AttributeValue::S((*value).to_owned()));
        }
        let out = req
            .send()
            .await
            .map_err(|e| OpsError::aws("scan", table, e))?;
        read += u64::try_from(out.scanned_count()).unwrap_or(0);
        for item in out.items() {
            // An item that does not fit the schema is counted, not fatal: a status
            // report must work on the table it is asked about.
            items.push(serde_dynamo::from_item(item.clone()).unwrap_or_default());
        }
        start = out.last_evaluated_key.filter(|k| !k.is_empty());
        if start.is_none() {
            return Ok((items, read));
        }
    }
}

/// Counts per state and the oldest pending message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusReport {
    /// Outbox items per `Status` value.
    pub counts: BTreeMap<String, u64>,
    /// Age of the oldest `PENDING` message with a `CreatedAt`, in milliseconds.
    pub oldest_pending_age_ms: Option<i64>,
    /// `PENDING` messages without `CreatedAt` (minimal producers): their age is unknown.
    pub pending_without_created_at: u64,
    /// `PENDING` messages outside the sweeper index (recovered only in scan mode).
    pub pending_unindexed: u64,
    /// Table items the scan read.
    pub items_read: u64,
}

/// Counts the outbox items of `table` per state.
pub async fn status(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    now_ms: i64,
) -> Result<StatusReport, OpsError> {
    let (items, read) = scan_messages(client, table, None, &[]).await?;
    let mut report = StatusReport {
        items_read: read,
        ..StatusReport::default()
    };
    for item in &items {
        let status = item.status.as_deref().unwrap_or("(no status)");
        *report.counts.entry(status.to_owned()).or_default() += 1;
        if item.status() == Some(Status::Pending) {
            match item.created_at.filter(|c| *c > 0) {
                Some(created) => {
                    let age = now_ms.saturating_sub(created);
                    report.oldest_pending_age_ms = report.oldest_pending_age_ms.max(Some(age));
                }
                None => report.pending_without_created_at += 1,
            }
            if item.sweep_shard.is_none() {
                report.pending_unindexed += 1;
            }
        }
    }
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
}

/// The `FAILED` messages of `table`, optionally of one topic, oldest failure first.
pub async fn failed(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    topic: Option<&str>,
) -> Result<Vec<FailedMessage>, OpsError> {
    let failed = Status::Failed.as_str();
    let (items, _) = match topic {
        Some(t) => {
            let filter = "#status = :failed AND #topic = :topic";
            let values = [(":failed", failed), (":topic", t)];
            scan_messages(client, table, Some(filter), &values).await?
        }
        None => {
            let values = [(":failed", failed)];
            scan_messages(client, table, Some("#status = :failed"), &values).await?
        }
    };
    let mut out: Vec<FailedMessage> = items
        .into_iter()
        .filter_map(|item| {
            let key = item.key()?;
            Some(FailedMessage {
                message_id: item.message_id.unwrap_or_else(|| derive_message_id(&key)),
                topic: item.topic,
                last_error: item.last_error,
                failed_at_ms: item.failed_at,
                retry_count: item.retry_count,
                key,
            })
        })
        .collect();
    out.sort_by(|a, b| (a.failed_at_ms, &a.key).cmp(&(b.failed_at_ms, &b.key)));
    Ok(out)
}

/// Which failed messages to redrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// These items.
    Keys(Vec<ItemKey>),
    /// Every failed message of a topic.
    Topic(String),
    /// Every failed message.
    All,
}

/// What a redrive did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedriveReport {
    /// Moved back to `PENDING`.
    pub redriven: Vec<ItemKey>,
    /// Chosen but not `FAILED` (already redriven, sent, or absent): left alone.
    pub not_failed: Vec<ItemKey>,
    /// `FAILED` items whose payload is not on the item (`PayloadOn`: an item at the
    /// size limit gave it to its dead-letter copy): left alone, as they would only
    /// fail again. Put the payload back (from the dead-letter queue, or a reference
    /// to it), remove `PayloadOn`, then redrive them.
    pub payload_elsewhere: Vec<ItemKey>,
}

/// Moves the chosen `FAILED` messages back to `PENDING` with a fresh retry budget
/// (`RetryCount` 0, due now in the sweeper index, `LastError` removed), each only if
/// it is still `FAILED`. The sweeper republishes them on its next run; they keep
/// their `MessageId`, so consumers that already applied one recognise the duplicate.
pub async fn redrive(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    selection: Selection,
    now_ms: i64,
) -> Result<RedriveReport, OpsError> {
    let keys = match selection {
        Selection::Keys(keys) => keys,
        Selection::Topic(topic) => keys_of(failed(client, table, Some(&topic)).await?),
        Selection::All => keys_of(failed(client, table, None).await?),
    };
    let mut report = RedriveReport::default();
    for key in keys {
        match redrive_one(client, table, &key, now_ms).await {
            Ok(Redrive::Done) => report.redriven.push(key),
            Ok(Redrive::NotFailed) => report.not_failed.push(key),
            Ok(Redrive::PayloadElsewhere) => report.payload_elsewhere.push(key),
            Err(source) => {
                return Err(OpsError::RedriveStopped {
                    key,
                    redriven: report.redriven.len(),
                    source: Box::new(source),
                });
            }
        }
    }
    Ok(report)
}

fn keys_of(failed: Vec<FailedMessage>) -> Vec<ItemKey> {
    failed.into_iter().map(|f| f.key).collect()
}

/// What a redrive of one item did.
enum Redrive {
    Done,
    NotFailed,
    PayloadElsewhere,
}

/// `FAILED` → `PENDING` for one item that still holds its payload.
async fn redrive_one(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &ItemKey,
    now_ms: i64,
) -> Result<Redrive, OpsError> {
    let (shard, due) = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
    let result = client
        .update_item()
        .table_name(table)
        .key(TABLE.partition_key, AttributeValue::S(key.pk.clone()))
        .key(TABLE.sort_key, AttributeValue::S(key.sk.clone()))
        .condition_expression("#status = :failed AND attribute_not_exists(#payload_on)")
        .expression_attribute_names("#payload_on", PAYLOAD_ON)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .update_expression(format!(
            "SET #status = :pending, {RETRY_COUNT} = :zero, {shard} = :shard, {due} = :now REMOVE {LAST_ERROR}, {FAILED_AT}"
        ))
        .expression_attribute_names("#status", STATUS)
        .expression_attribute_values(":failed", AttributeValue::S(Status::Failed.as_str().into()))
        .expression_attribute_values(":pending", AttributeValue::S(Status::Pending.as_str().into()))
        .expression_attribute_values(":zero", AttributeValue::N("0".into()))
        .expression_attribute_values(":shard", AttributeValue::S(sweep_shard(&key.pk)))
        .expression_attribute_values(":now", AttributeValue::N(now_ms.to_string()))
        .send()
        .await;
    match result {
        Ok(_) => Ok(Redrive::Done),
        Err(e) => match e.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(refused)) => {
                let old = refused.item();
                let failed = matches!(old.and_then(|i| i.get(STATUS)), Some(AttributeValue::S(v)) if v == Status::Failed.as_str());
                Ok(
                    if failed && old.is_some_and(|i| i.contains_key(PAYLOAD_ON)) {
                        Redrive::PayloadElsewhere
                    } else {
                        Redrive::NotFailed
                    },
                )
            }
            _ => Err(OpsError::aws("update", table, e)),
        },
    }
}
