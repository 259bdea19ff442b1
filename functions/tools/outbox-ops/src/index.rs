//! The sweeper index reads every command is built on: a partition's count, its
//! earliest entry, its keys; and the items of some keys, by key.

use crate::{OpsError, Reads, Table};
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity, Select};
use dynamodb_outbox_core::schema::{
    ItemKey, OutboxItem, SWEEP_INDEX, SWEEP_SHARD, SeenIndex, item_key,
};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

/// `BatchGetItem` takes at most this many keys.
const BATCH_GET_KEYS: usize = 100;

/// An item as the engine reads it: the table's key names renamed to `PK`/`SK`.
pub(crate) fn canonical(table: &Table, raw: &Item) -> serde_dynamo::Item {
    let mut item = raw.clone();
    table.keys.to_canonical(&mut item);
    item.into()
}

fn last_key(last: Option<Item>) -> Option<Item> {
    last.filter(|k| !k.is_empty())
}

/// A query of the index partition `shard`, reporting the capacity it consumes.
fn partition(client: &aws_sdk_dynamodb::Client, table: &Table, shard: &str) -> QueryFluentBuilder {
    client
        .query()
        .table_name(&table.name)
        .index_name(SWEEP_INDEX)
        .key_condition_expression("#shard = :shard")
        .expression_attribute_names("#shard", SWEEP_SHARD)
        .expression_attribute_values(":shard", AttributeValue::S(shard.to_owned()))
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
}

/// The number of index entries in `shard`, all pages.
pub(crate) async fn count(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    shard: &str,
    reads: &mut Reads,
) -> Result<u64, OpsError> {
    let mut total = 0u64;
    let mut start = None;
    loop {
        let out = partition(client, table, shard)
            .select(Select::Count)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| OpsError::aws("query", &table.name, e))?;
        reads.add(out.consumed_capacity(), out.scanned_count(), 0);
        total += u64::try_from(out.count()).unwrap_or(0);
        start = last_key(out.last_evaluated_key);
        if start.is_none() {
            return Ok(total);
        }
    }
}

/// The earliest `SweepDueAt` in `shard` (one entry read).
pub(crate) async fn earliest_due(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    shard: &str,
    reads: &mut Reads,
) -> Result<Option<i64>, OpsError> {
    let out = partition(client, table, shard)
        .scan_index_forward(true)
        .limit(1)
        .send()
        .await
        .map_err(|e| OpsError::aws("query", &table.name, e))?;
    reads.add(out.consumed_capacity(), out.scanned_count(), 0);
    Ok(out
        .items()
        .first()
        .and_then(|i| SeenIndex::of(&canonical(table, i)).due_ms()))
}

/// The keys of every entry in `shard`, all pages.
pub(crate) async fn keys(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    shard: &str,
    reads: &mut Reads,
) -> Result<Vec<ItemKey>, OpsError> {
    let entries = entries(client, table, shard, reads).await?;
    Ok(entries.into_iter().map(|(key, _)| key).collect())
}

/// Every entry in `shard`, all pages: its key and its index attributes as stored.
pub(crate) async fn entries(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    shard: &str,
    reads: &mut Reads,
) -> Result<Vec<(ItemKey, SeenIndex)>, OpsError> {
    let mut entries = Vec::new();
    let mut start = None;
    loop {
        let out = partition(client, table, shard)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| OpsError::aws("query", &table.name, e))?;
        reads.add(out.consumed_capacity(), out.scanned_count(), 0);
        entries.extend(out.items().iter().filter_map(|i| {
            let item = canonical(table, i);
            Some((item_key(&item)?, SeenIndex::of(&item)))
        }));
        start = last_key(out.last_evaluated_key);
        if start.is_none() {
            return Ok(entries);
        }
    }
}

/// How often keys DynamoDB left unprocessed (throttling) are asked for again, with a
/// doubling pause from [`UNPROCESSED_FIRST_PAUSE`], before the command gives up.
const UNPROCESSED_ROUNDS: u32 = 8;
const UNPROCESSED_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// The items of `keys` (those that exist), read by key in batches of 100; keys
/// DynamoDB leaves unprocessed are asked for again after a growing pause.
pub(crate) async fn items(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    keys: &[ItemKey],
    reads: &mut Reads,
) -> Result<Vec<OutboxItem>, OpsError> {
    let mut found = Vec::new();
    for chunk in keys.chunks(BATCH_GET_KEYS) {
        let mut pending: Vec<Item> = chunk.iter().map(|k| key_of(table, k)).collect();
        let mut round = 0;
        while !pending.is_empty() {
            if round > 0 {
                if round > UNPROCESSED_ROUNDS {
                    return Err(OpsError::Request(format!(
                        "DynamoDB left {} keys of {} unread after {UNPROCESSED_ROUNDS} retries (throttled): run the command again later",
                        pending.len(),
                        table.name
                    )));
                }
                tokio::time::sleep(UNPROCESSED_FIRST_PAUSE * 2u32.pow(round - 1)).await;
            }
            round += 1;
            let request = KeysAndAttributes::builder()
                .set_keys(Some(pending))
                .consistent_read(true)
                .build()
                .map_err(|e| OpsError::Request(e.to_string()))?;
            let out = client
                .batch_get_item()
                .request_items(&table.name, request)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| OpsError::aws("batch get", &table.name, e))?;
            let items = out
                .responses()
                .and_then(|r| r.get(&table.name))
                .map(Vec::as_slice)
                .unwrap_or_default();
            let capacity = out.consumed_capacity().first();
            reads.add(capacity, 0, items.len());
            // An item that does not fit the schema is listed as far as it reads: a
            // listing must work on the table it is asked about.
            found.extend(
                items
                    .iter()
                    .map(|i| OutboxItem::from_item(canonical(table, i)).unwrap_or_default()),
            );
            pending = out
                .unprocessed_keys()
                .and_then(|u| u.get(&table.name))
                .map(|k| k.keys().to_vec())
                .unwrap_or_default();
        }
    }
    Ok(found)
}

/// The key of one item in a request, under the table's names.
pub(crate) fn key_of(table: &Table, key: &ItemKey) -> Item {
    HashMap::from([
        (
            table.keys.partition_key.clone(),
            AttributeValue::S(key.pk.clone()),
        ),
        (
            table.keys.sort_key.clone(),
            AttributeValue::S(key.sk.clone()),
        ),
    ])
}

/// Whether a conditional `UpdateItem` took effect: `false` when its condition refused
/// it (the item changed since it was read), an error for anything else.
pub(crate) fn applied<T>(
    result: Result<T, aws_sdk_dynamodb::error::SdkError<UpdateItemError>>,
    table: &Table,
) -> Result<bool, OpsError> {
    match result {
        Ok(_) => Ok(true),
        Err(e) => match e.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
            _ => Err(OpsError::aws("update", &table.name, e)),
        },
    }
}
