//! `redrive`: chosen `FAILED` messages back to `PENDING`, each only if it still is.

use crate::read::{FailedMessage, failed, failed_message};
use crate::{OpsError, Reads, Table, index};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use dynamodb_outbox_core::schema::{
    FAILED_AT, ItemKey, LAST_ERROR, PAYLOAD_ON, RETRY_COUNT, STATUS, Status, TABLE,
};

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

/// What a redrive did (or, from [`redrive_dry_run`], would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedriveReport {
    /// Moved back to `PENDING` (would be, in a dry run).
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
/// (`RetryCount` 0, due now in their sweep partition `NN` of the index, `LastError`
/// and `FailedAt` removed), each only if it is still `FAILED`. The sweeper
/// republishes them on its next run; they keep their `MessageId`, so consumers that
/// already applied one recognise the duplicate.
pub async fn redrive(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
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

/// What [`redrive`] would do with `selection`, changing nothing: the failed
/// messages chosen (read as `failed` reads them; chosen keys read by key), sorted
/// into those it would redrive and those it would leave alone.
pub async fn redrive_dry_run(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    selection: Selection,
) -> Result<RedriveReport, OpsError> {
    let mut report = RedriveReport::default();
    let chosen = match selection {
        Selection::Topic(topic) => failed(client, table, Some(&topic)).await?,
        Selection::All => failed(client, table, None).await?,
        Selection::Keys(keys) => {
            let mut reads = Reads::default();
            let items = index::items(client, table, &keys, &mut reads).await?;
            let failed: Vec<FailedMessage> = items
                .into_iter()
                .filter(|i| i.status() == Some(Status::Failed))
                .filter_map(failed_message)
                .collect();
            report.not_failed = keys
                .into_iter()
                .filter(|k| !failed.iter().any(|f| f.key == *k))
                .collect();
            failed
        }
    };
    for message in chosen {
        match message.payload_on {
            Some(_) => report.payload_elsewhere.push(message.key),
            None => report.redriven.push(message.key),
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
    table: &Table,
    key: &ItemKey,
    now_ms: i64,
) -> Result<Redrive, OpsError> {
    let (shard, due) = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
    let result = client
        .update_item()
        .table_name(&table.name)
        .set_key(Some(index::key_of(table, key)))
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
        .expression_attribute_values(":shard", AttributeValue::S(table.keys.sweep_shards.shard_of(&key.pk)))
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
            _ => Err(OpsError::aws("update", &table.name, e)),
        },
    }
}
