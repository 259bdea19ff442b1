//! The local AWS's plain write rate: `PutItem`s with as many writers as the demo
//! producer keeps in flight, printed beside the raw transaction rate (and alone by
//! `outbox-devkit bench raw`, to watch the local AWS right after a deploy).
//!
//! They go to a scratch table the bench creates and deletes: a table without a
//! stream, so that they measure the local AWS's writes without the pipeline.

use crate::aws::Clients;
use crate::demo::produce::IN_FLIGHT;
use crate::provision::create_keyed_table;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_types::error::display::DisplayErrorContext;
use std::time::{Duration, Instant};

/// What the writers did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RawPuts {
    /// Writers at once.
    pub writers: usize,
    /// `PutItem`s answered with success.
    pub puts: usize,
    /// `PutItem`s that failed (the rate counts successes only).
    pub errors: usize,
    /// Wall time of the writing, seconds.
    pub seconds: f64,
    /// The slowest single put: its milliseconds and when it was sent (epoch ms), to
    /// find a stall of the local AWS in its log.
    pub slowest: (u64, i64),
    /// Puts that took a second or more (retries included).
    pub over_1s: usize,
}

impl RawPuts {
    /// Successful `PutItem`s per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.puts as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Writes for `seconds` into a scratch table named after `prefix` and `run`, then
/// deletes the table (also when the writing failed).
pub(super) async fn raw_put_rate(
    clients: &Clients,
    prefix: &str,
    run: &str,
    seconds: u32,
) -> Result<RawPuts, String> {
    let table = format!("{prefix}-rawput-{run}");
    let db = &clients.dynamodb;
    create_keyed_table(db, &table, "PK")
        .await
        .map_err(|e| e.to_string())?;
    let measured = match wait_active(db, &table).await {
        Ok(()) => write_for(db, &table, Duration::from_secs(u64::from(seconds))).await,
        Err(e) => Err(e),
    };
    let deleted = db.delete_table().table_name(&table).send().await;
    let puts = measured?;
    deleted.map_err(|e| format!("delete {table}: {}", DisplayErrorContext(&e)))?;
    Ok(puts)
}

/// Until the scratch table takes writes (the emulator makes it active at once; AWS
/// within seconds).
async fn wait_active(db: &aws_sdk_dynamodb::Client, table: &str) -> Result<(), String> {
    for _ in 0..60 {
        let out = db
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| format!("describe {table}: {}", DisplayErrorContext(&e)))?;
        let active = out
            .table()
            .and_then(|t| t.table_status())
            .is_some_and(|s| *s == aws_sdk_dynamodb::types::TableStatus::Active);
        if active {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("{table} did not become active within 30 s"))
}

/// IN_FLIGHT writers, each putting one item after another until `length` has passed.
async fn write_for(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    length: Duration,
) -> Result<RawPuts, String> {
    let began = Instant::now();
    let deadline = began + length;
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..IN_FLIGHT {
        let (db, table) = (db.clone(), table.to_owned());
        writers.spawn(async move { writer(&db, &table, w, deadline).await });
    }
    let mut total = RawPuts {
        writers: IN_FLIGHT,
        ..RawPuts::default()
    };
    while let Some(joined) = writers.join_next().await {
        let w = joined.map_err(|e| format!("a writer stopped: {e}"))?;
        total.puts += w.puts;
        total.errors += w.errors;
        total.over_1s += w.over_1s;
        total.slowest = total.slowest.max(w.slowest);
    }
    total.seconds = began.elapsed().as_secs_f64();
    Ok(total)
}

/// One writer's [`RawPuts`] (its `writers` and `seconds` unset).
async fn writer(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    w: usize,
    deadline: Instant,
) -> RawPuts {
    let mut out = RawPuts::default();
    let mut i = 0usize;
    while Instant::now() < deadline {
        let (started, sent_ms) = (Instant::now(), dynamodb_outbox_core::clock::now_ms());
        let sent = db
            .put_item()
            .table_name(table)
            .set_item(Some(message_like(w, i)))
            .send()
            .await;
        if sent.is_ok() {
            out.puts += 1;
        } else {
            out.errors += 1;
        }
        let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        out.over_1s += usize::from(took >= 1_000);
        out.slowest = out.slowest.max((took, sent_ms));
        i += 1;
    }
    out
}

/// An item with the attributes and about the size of a library-written outbox
/// message of the demo's order (so the yardstick writes what the producers write).
pub(super) fn message_like(
    writer: usize,
    i: usize,
) -> std::collections::HashMap<String, AttributeValue> {
    let s = |v: String| AttributeValue::S(v);
    let n = |v: i64| AttributeValue::N(v.to_string());
    let id = format!("raw-{writer:02}-{i:07}");
    let now = dynamodb_outbox_core::clock::now_ms();
    [
        ("PK", s(format!("ORDER#{id}"))),
        ("SK", s(format!("MESSAGE#ORDER_PLACED#{id}"))),
        ("ItemType", s("PENDING_MESSAGE".to_owned())),
        ("Topic", s("orders".to_owned())),
        ("EventType", s("ORDER_PLACED".to_owned())),
        ("MessageId", s(uuid::Uuid::now_v7().to_string())),
        (
            "Payload",
            s(serde_json::json!({"id": id, "quantity": 1}).to_string()),
        ),
        ("Status", s("PENDING".to_owned())),
        ("RetryCount", n(0)),
        ("CreatedAt", n(now)),
        ("SweepShard", s("00".to_owned())),
        ("SweepDueAt", n(now + 5_000)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
