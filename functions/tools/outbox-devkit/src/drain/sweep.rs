//! Driving the deployed sweeper: invoked by `workers` loops at once, each with its
//! share of the index, until the index holds no due item; then the backlog's
//! items counted by status.

use super::backlog::key_of;
use crate::aws::Clients;
use crate::deployment::Deployment;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_smithy_types::error::display::DisplayErrorContext;
use dynamodb_outbox_core::schema::{PK, SK, STATUS, SWEEP_DUE_AT, SWEEP_INDEX, SWEEP_SHARD};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the invocations did, summed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Invocations {
    /// Invocations answered (with or without a function error).
    pub count: usize,
    /// Of them, those that returned a function error (the sweep failed a request).
    pub function_errors: usize,
    /// Invocations Lambda refused (throttled or failed to run); tried again.
    pub refused: usize,
    /// Items the sweeps marked `SENT` (their summaries' `marked`).
    pub marked: u64,
    /// Due keys the sweeps read from the index (their summaries' `found`).
    pub found: u64,
    /// Index items their queries read (their summaries' `index_items_read`): about
    /// `marked` when each round reads only what it can claim.
    pub index_read: u64,
}

impl Invocations {
    fn add(&mut self, other: &Invocations) {
        self.count += other.count;
        self.function_errors += other.function_errors;
        self.refused += other.refused;
        self.marked += other.marked;
        self.found += other.found;
        self.index_read += other.index_read;
    }
}

/// The payload of worker `group` of `groups`: the schedule's, `{}` for a single worker.
pub fn payload(group: usize, groups: usize) -> Value {
    if groups <= 1 {
        serde_json::json!({})
    } else {
        serde_json::json!({"sweepGroup": group, "sweepGroups": groups})
    }
}

/// A sweep summary's count `field` (0 when the response is not a summary).
pub fn summary_count(response: &Value, field: &str) -> u64 {
    response.get(field).and_then(Value::as_u64).unwrap_or(0)
}

/// The schedule's rules invoking the sweeper, and their targets invoking it (one per
/// worker of a tick); none when they cannot be read.
pub(super) async fn sweeper_rules(
    clients: &Clients,
    deployment: &Deployment,
) -> (Vec<String>, usize) {
    let Ok(config) = clients
        .lambda
        .get_function_configuration()
        .function_name(&deployment.sweeper)
        .send()
        .await
    else {
        return (Vec::new(), 0);
    };
    let Some(arn) = config.function_arn() else {
        return (Vec::new(), 0);
    };
    let events = &clients.eventbridge;
    let Ok(rules) = events
        .list_rule_names_by_target()
        .target_arn(arn)
        .send()
        .await
    else {
        return (Vec::new(), 0);
    };
    let mut targets = 0;
    for rule in rules.rule_names() {
        if let Ok(out) = events.list_targets_by_rule().rule(rule).send().await {
            targets += out.targets().iter().filter(|t| t.arn() == arn).count();
        }
    }
    (rules.rule_names().to_vec(), targets)
}

/// Disables (`enable` false) or enables the schedule's `rules`.
pub(super) async fn set_rules(
    clients: &Clients,
    rules: &[String],
    enable: bool,
) -> Result<(), String> {
    let events = &clients.eventbridge;
    for rule in rules {
        let done = if enable {
            let sent = events.enable_rule().name(rule).send().await;
            sent.map(|_| ())
                .map_err(|e| DisplayErrorContext(&e).to_string())
        } else {
            let sent = events.disable_rule().name(rule).send().await;
            sent.map(|_| ())
                .map_err(|e| DisplayErrorContext(&e).to_string())
        };
        let verb = if enable { "enable" } else { "disable" };
        done.map_err(|e| format!("{verb} the rule {rule}: {e}"))?;
    }
    Ok(())
}

/// Items left in the index over `shards` (counted by `Query`, every page): those
/// due now, or (`all`) any, claimed ones waiting out their lease included.
pub(super) async fn left_in_index(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    shards: &[String],
    all: bool,
) -> Result<usize, String> {
    let now = if all {
        i64::MAX
    } else {
        dynamodb_outbox_core::clock::now_ms()
    };
    let mut left = 0usize;
    for shard in shards {
        let mut start = None;
        loop {
            let out = due_in_shard(db, table, shard, now)
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| {
                    format!(
                        "count the index's shard {shard}: {}",
                        DisplayErrorContext(&e)
                    )
                })?;
            left += usize::try_from(out.count()).unwrap_or(0);
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
    }
    Ok(left)
}

/// How the drain went in time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timeline {
    /// Seconds from the first invocation to the index first found with no due item.
    pub no_due_seconds: f64,
    /// Items still in the index then (claimed, waiting out their lease).
    pub left_then: usize,
    /// Seconds from the first invocation to the index found empty (claims whose
    /// invocation's time budget ran out wait out their lease first).
    pub empty_seconds: f64,
}

/// What the workers share: when the index was first seen with no due item, and how
/// many items it still held then.
#[derive(Debug)]
struct Progress {
    began: Instant,
    no_due: std::sync::Mutex<Option<(f64, usize)>>,
}

impl Progress {
    fn saw_no_due(&self, seconds: f64, left: usize) {
        if let Ok(mut first) = self.no_due.lock() {
            first.get_or_insert((seconds, left));
        }
    }
}

/// `workers` loops invoking the sweeper, each with its group, until the index over
/// `shards` is empty or `limit` has passed. Returns what they did, the timeline and
/// the items left in the index.
pub(super) async fn drain(
    clients: &Clients,
    deployment: &Deployment,
    shards: &[String],
    workers: usize,
    limit: Duration,
) -> Result<(Invocations, Timeline, usize), String> {
    let progress = std::sync::Arc::new(Progress {
        began: Instant::now(),
        no_due: std::sync::Mutex::new(None),
    });
    let deadline = progress.began + limit;
    let mut tasks = tokio::task::JoinSet::new();
    for group in 0..workers.max(1) {
        let (clients, deployment, shards) = (clients.clone(), deployment.clone(), shards.to_vec());
        let progress = progress.clone();
        tasks.spawn(async move {
            let share = (group, workers);
            worker(&clients, &deployment, &shards, share, &progress, deadline).await
        });
    }
    let mut total = Invocations::default();
    while let Some(joined) = tasks.join_next().await {
        total.add(&joined.map_err(|e| format!("a sweeper worker stopped: {e}"))??);
    }
    let empty_seconds = progress.began.elapsed().as_secs_f64();
    let left = left_in_index(&clients.dynamodb, &deployment.table, shards, true).await?;
    let (no_due_seconds, left_then) = progress
        .no_due
        .lock()
        .ok()
        .and_then(|first| *first)
        .unwrap_or((empty_seconds, left));
    let timeline = Timeline {
        no_due_seconds,
        left_then,
        empty_seconds,
    };
    Ok((total, timeline, left))
}

/// One worker: invokes the sweeper for its group while the sweeps find due items;
/// when one finds none, looks at the whole index and stops once it is empty
/// (others' groups included: a worker that stopped early would leave its
/// share to a schedule tick).
async fn worker(
    clients: &Clients,
    deployment: &Deployment,
    shards: &[String],
    (group, groups): (usize, usize),
    progress: &Progress,
    deadline: Instant,
) -> Result<Invocations, String> {
    let mut done = Invocations::default();
    let body = payload(group, groups).to_string();
    while Instant::now() < deadline {
        let out = clients
            .lambda
            .invoke()
            .function_name(&deployment.sweeper)
            .payload(aws_smithy_types::Blob::new(body.clone()))
            .send()
            .await;
        let found = match out {
            Ok(out) => {
                done.count += 1;
                done.function_errors += usize::from(out.function_error().is_some());
                let response: Value = out
                    .payload()
                    .and_then(|p| serde_json::from_slice(p.as_ref()).ok())
                    .unwrap_or(Value::Null);
                done.marked += summary_count(&response, "marked");
                done.index_read += summary_count(&response, "index_items_read");
                let found = summary_count(&response, "found");
                done.found += found;
                found
            }
            Err(e) => {
                done.refused += 1;
                if done.refused > 100 {
                    return Err(format!(
                        "invoking {}: refused 100 times, last: {}",
                        deployment.sweeper,
                        DisplayErrorContext(&e)
                    ));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if found == 0 {
            let db = &clients.dynamodb;
            if left_in_index(db, &deployment.table, shards, false).await? == 0 {
                let seconds = progress.began.elapsed().as_secs_f64();
                let left = left_in_index(db, &deployment.table, shards, true).await?;
                progress.saw_no_due(seconds, left);
                if left == 0 {
                    break;
                }
            }
            // Due items in other groups, or claims waiting out their lease.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Ok(done)
}

/// The backlog's items by status (`SENT`, `FAILED`, other or missing), read with
/// consistent `BatchGetItem`s of 100 keys.
pub(super) async fn statuses(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    run: &str,
    items: usize,
) -> Result<HashMap<String, usize>, String> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut found = 0;
    for start in (0..items).step_by(100) {
        let keys = (start..(start + 100).min(items))
            .map(|i| {
                let (pk, sk) = key_of(run, i);
                HashMap::from([
                    (PK.to_owned(), AttributeValue::S(pk)),
                    (SK.to_owned(), AttributeValue::S(sk)),
                ])
            })
            .collect();
        let mut request = KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(true)
            .projection_expression("#status")
            .expression_attribute_names("#status", STATUS)
            .build()
            .map_err(|e| e.to_string())?;
        for _ in 0..50 {
            let out = db
                .batch_get_item()
                .request_items(table, request.clone())
                .send()
                .await
                .map_err(|e| format!("BatchGetItem from {table}: {}", DisplayErrorContext(&e)))?;
            for item in out
                .responses
                .and_then(|mut r| r.remove(table))
                .unwrap_or_default()
            {
                found += 1;
                let status = match item.get(STATUS) {
                    Some(AttributeValue::S(s)) => s.clone(),
                    _ => "(none)".to_owned(),
                };
                *counts.entry(status).or_default() += 1;
            }
            match out.unprocessed_keys.and_then(|mut u| u.remove(table)) {
                Some(left) if !left.keys().is_empty() => request = left,
                _ => break,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    if found < items {
        counts.insert("(missing)".to_owned(), items - found);
    }
    Ok(counts)
}

/// Sweeps in the sweeper's log lines: (summaries, items they marked `SENT`), from its
/// `sweep done … marked=N` lines.
pub fn sweeps_in_log<'a>(lines: impl IntoIterator<Item = &'a str>) -> (usize, u64) {
    lines
        .into_iter()
        .filter(|l| l.contains("sweep done"))
        .fold((0, 0), |(sweeps, marked), line| {
            let n = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("marked="))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            (sweeps + 1, marked + n)
        })
}

/// A `Query` of the sweeper index for `shard`'s keys due by `now_ms`, as the sweeper
/// reads them: what the drain counts and the raw read rate is measured on.
pub(super) fn due_in_shard(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: &str,
    now_ms: i64,
) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
    db.query()
        .table_name(table)
        .index_name(SWEEP_INDEX)
        .key_condition_expression("#shard = :shard AND #due <= :now")
        .expression_attribute_names("#shard", SWEEP_SHARD)
        .expression_attribute_names("#due", SWEEP_DUE_AT)
        .expression_attribute_values(":shard", AttributeValue::S(shard.to_owned()))
        .expression_attribute_values(":now", AttributeValue::N(now_ms.to_string()))
}
