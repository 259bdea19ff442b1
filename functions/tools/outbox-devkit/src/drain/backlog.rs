//! The backlog: pending outbox items already in the sweeper index and due, written
//! with `BatchWriteItem` so that only the sweeper can drain them.
//!
//! Why two writes per item. The publisher's mapping filter (infra/stream-filter.json)
//! passes `INSERT`s of `ItemType = PENDING_MESSAGE, Status = PENDING`. A key's first
//! write here is a placeholder with neither attribute (not an outbox item: the filter
//! drops its `INSERT`); the second, the full item, replaces it, which the stream
//! records as a `MODIFY`, which the filter drops too. Disabling the publisher's event
//! source mapping instead was not chosen: re-enabled, a mapping may resume from where
//! it stopped and hand the publisher every backlog `INSERT` after the drain, and how
//! the local AWS resumes is its own business. The placeholders' stream records are
//! filtered by the local AWS on the same cores; the raw reads measured between the
//! backlog and the drain give it time for that.

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use aws_smithy_types::error::display::DisplayErrorContext;
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::schema::{
    CREATED_AT, ITEM_TYPE, MESSAGE_ID, PAYLOAD, PENDING_MESSAGE, PK, RETRY_COUNT, SK, STATUS,
    SWEEP_DUE_AT, SWEEP_SHARD, Status, TOPIC,
};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One item's attributes.
pub type Item = HashMap<String, AttributeValue>;

/// Items in one `BatchWriteItem` (the API's most).
pub const BATCH: usize = 25;

/// The keys of backlog item `i` of run `run`: one aggregate per item (an order each,
/// as the demo's), so the items spread over every shard of the index.
pub fn key_of(run: &str, i: usize) -> (String, String) {
    (
        format!("ORDER#drain-{run}-{i:06}"),
        format!("MESSAGE#ORDER_PLACED#drain-{run}-{i:06}"),
    )
}

/// The placeholder first written at item `i`'s key: no `ItemType` and no `Status`,
/// so the publisher's filter drops its `INSERT` (see the module's comment).
pub fn placeholder(run: &str, i: usize) -> Item {
    let (pk, sk) = key_of(run, i);
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(pk)),
        (SK.to_owned(), AttributeValue::S(sk)),
    ])
}

/// Backlog item `i`: `PENDING` on `topic`, in the shard `shards` puts its aggregate in
/// and due at `due_ms`, with `RetryCount` 0 — what the sweeper's adoption leaves on an
/// item (`SweepShard`, `SweepDueAt`, `RetryCount` if absent), on a message as the
/// library's producer writes it. The payload is an order the demo's consumer takes.
pub fn pending(run: &str, i: usize, topic: &str, shards: &SweepShards, due_ms: i64) -> Item {
    let (pk, sk) = key_of(run, i);
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let n = |v: i64| AttributeValue::N(v.to_string());
    let payload = serde_json::json!({"id": format!("drain-{run}-{i:06}"), "quantity": 1});
    HashMap::from([
        (SWEEP_SHARD.to_owned(), s(&shards.shard_of(&pk))),
        (PK.to_owned(), AttributeValue::S(pk)),
        (SK.to_owned(), AttributeValue::S(sk)),
        (ITEM_TYPE.to_owned(), s(PENDING_MESSAGE)),
        (TOPIC.to_owned(), s(topic)),
        ("EventType".to_owned(), s("ORDER_PLACED")),
        (MESSAGE_ID.to_owned(), s(&uuid::Uuid::now_v7().to_string())),
        (PAYLOAD.to_owned(), s(&payload.to_string())),
        (STATUS.to_owned(), s(Status::Pending.as_str())),
        (RETRY_COUNT.to_owned(), n(0)),
        (CREATED_AT.to_owned(), n(due_ms)),
        (SWEEP_DUE_AT.to_owned(), n(due_ms)),
    ])
}

/// What a pass of batch writes did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Written {
    /// Items written (unprocessed ones retried until written).
    pub items: usize,
    /// `BatchWriteItem` requests, retries of unprocessed items included.
    pub requests: usize,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl Written {
    /// Items written per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.items as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Writes `items` into `table` in batches of [`BATCH`], `writers` batches at once.
pub async fn write_all(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    items: Vec<Item>,
    writers: usize,
) -> Result<Written, String> {
    let began = Instant::now();
    let total = items.len();
    let batches: Vec<Vec<Item>> = items.chunks(BATCH).map(<[Item]>::to_vec).collect();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(batches));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..writers.max(1) {
        let (db, table, queue) = (db.clone(), table.to_owned(), queue.clone());
        tasks.spawn(async move {
            let mut requests = 0;
            loop {
                let next = queue.lock().map_err(|e| e.to_string())?.pop();
                let Some(batch) = next else {
                    return Ok::<usize, String>(requests);
                };
                requests += write_batch(&db, &table, batch).await?;
            }
        });
    }
    let mut requests = 0;
    while let Some(joined) = tasks.join_next().await {
        requests += joined.map_err(|e| format!("a backlog writer stopped: {e}"))??;
    }
    Ok(Written {
        items: total,
        requests,
        seconds: began.elapsed().as_secs_f64(),
    })
}

/// One batch, its unprocessed items sent again (after a pause) until none is left;
/// the number of requests it took.
async fn write_batch(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    batch: Vec<Item>,
) -> Result<usize, String> {
    let mut pending: Vec<WriteRequest> = batch
        .into_iter()
        .map(|item| {
            PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map(|put| WriteRequest::builder().put_request(put).build())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut requests = 0;
    while !pending.is_empty() {
        if requests > 0 {
            tokio::time::sleep(Duration::from_millis(50 * requests.min(20) as u64)).await;
        }
        if requests > 50 {
            return Err(format!(
                "BatchWriteItem into {table}: {} items still unprocessed after 50 attempts",
                pending.len()
            ));
        }
        requests += 1;
        let out = db
            .batch_write_item()
            .request_items(table, pending)
            .send()
            .await
            .map_err(|e| format!("BatchWriteItem into {table}: {}", DisplayErrorContext(&e)))?;
        pending = out
            .unprocessed_items
            .and_then(|mut left| left.remove(table))
            .unwrap_or_default();
    }
    Ok(requests)
}
