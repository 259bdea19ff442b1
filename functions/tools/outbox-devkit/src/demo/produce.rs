//! The demo's producers: orders committed with their outbox message in one
//! transaction, through the library (`OutboxWriter`) and the way the seed document's
//! hand-written boto3 producer does it (a minimal item: no message id, no sweeper
//! index). One transaction in N rolls back on purpose.

use super::DemoOptions;
use crate::aws::Clients;
use crate::writes::{never_holds, transact};
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::trace::TraceContext;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Transactions in flight at once when the rate allows it (the latency bench's raw
/// `PutItem` yardstick writes with as many).
pub(crate) const IN_FLIGHT: usize = 16;

/// One committed order, as the verification needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedOrder {
    /// Its quantity (1..=10): the consumer stores it and a total derived from it.
    pub quantity: u8,
    /// Written as the minimal producer writes it.
    pub minimal: bool,
    /// Epoch ms just before the transaction was sent.
    pub commit_ms: i64,
    /// The trace id it was committed in (as an application's request trace would
    /// be): library orders only; the minimal producer writes none.
    pub trace_id: Option<u128>,
}

/// What the producers did.
#[derive(Debug, Default)]
pub struct Produced {
    /// Order id → what was committed.
    pub committed: BTreeMap<String, CommittedOrder>,
    /// Orders whose transaction rolled back as intended.
    pub rolled_back: BTreeSet<String>,
    /// Orders whose transaction failed for another reason, with the reason.
    pub errors: Vec<(String, String)>,
    /// The prefix of every order id of this run ([`DemoOptions::tag`]).
    pub tag: String,
}

/// Commits `opts.orders` orders into `table` at `opts.rate` per second, counting
/// commits into `committed_so_far` for the live counters.
pub async fn produce(
    clients: &Clients,
    table: &str,
    opts: &DemoOptions,
    committed_so_far: Arc<AtomicUsize>,
) -> Produced {
    // Indexed at commit, as before the producer's default changed: the chaos runs
    // count on the sweeper finding a crashed publisher's messages `sweep_grace` after
    // their commit (with the default, the stream's retries and the recovery function
    // find them; a demo run of that is still to do).
    let writer = dynamodb_outbox::OutboxWriter::new(clients.dynamodb.clone(), table)
        .index_at_commit(true)
        .sweep_grace(opts.sweep_grace);
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    // An absolute schedule, not a sleep after each commit: the timer's millisecond
    // granularity made a 1.25 ms sleep last about 2 ms, so 800/s offered ~500/s. The
    // ticker bursts to catch up after a wait for a permit, so the offered rate is
    // `rate` as long as IN_FLIGHT transactions keep up.
    let mut ticker = (opts.rate > 0).then(|| {
        let mut t = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(opts.rate)));
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        t
    });
    let deadline = opts.produce_for.map(|d| tokio::time::Instant::now() + d);
    for i in 0..opts.orders {
        if let Some(ticker) = ticker.as_mut() {
            ticker.tick().await;
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            break;
        }
        let plan = OrderPlan::of(i, opts);
        let permit = permits.clone().acquire_owned().await;
        let (writer, dynamodb, table, counter) = (
            writer.clone(),
            clients.dynamodb.clone(),
            table.to_owned(),
            committed_so_far.clone(),
        );
        tasks.spawn(async move {
            let _permit = permit;
            let commit_ms = dynamodb_outbox_core::clock::now_ms();
            let result = if plan.minimal {
                commit_minimal(&dynamodb, &table, &plan).await
            } else {
                commit_with_library(&writer, &table, &plan).await
            };
            if result.is_ok() {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            (plan, commit_ms, result)
        });
    }
    let mut produced = Produced {
        tag: opts.tag.clone(),
        ..Produced::default()
    };
    while let Some(joined) = tasks.join_next().await {
        let Ok((plan, commit_ms, result)) = joined else {
            continue;
        };
        match result {
            Ok(()) => {
                produced.committed.insert(
                    plan.id,
                    CommittedOrder {
                        quantity: plan.quantity,
                        minimal: plan.minimal,
                        commit_ms,
                        trace_id: plan.trace_id,
                    },
                );
            }
            Err(_) if plan.rollback => {
                produced.rolled_back.insert(plan.id);
            }
            Err(e) => produced.errors.push((plan.id, e)),
        }
    }
    produced
}

/// What one order will be.
#[derive(Debug, Clone)]
struct OrderPlan {
    id: String,
    quantity: u8,
    rollback: bool,
    minimal: bool,
    trace_id: Option<u128>,
}

impl OrderPlan {
    fn of(i: usize, opts: &DemoOptions) -> Self {
        let every = |n: usize| n > 0 && i % n == n - 1;
        OrderPlan {
            id: format!("{}order-{i:05}", opts.tag),
            quantity: u8::try_from(i % 10 + 1).unwrap_or(1),
            rollback: every(opts.rollback_every),
            minimal: every(opts.minimal_every),
            trace_id: (!every(opts.minimal_every)).then(new_trace_id),
        }
    }

    /// The context the order is committed in: a root span of its own trace, as an
    /// instrumented application's request would give.
    fn trace(&self) -> Option<TraceContext> {
        let trace_id = self.trace_id?;
        let span_id = uuid::Uuid::now_v7().as_u128() as u64;
        let traceparent = format!("00-{trace_id:032x}-{span_id:016x}-01");
        TraceContext::from_w3c(&traceparent, None).ok()
    }

    fn payload(&self) -> String {
        serde_json::json!({"id": self.id, "quantity": self.quantity}).to_string()
    }

    fn aggregate(&self) -> String {
        format!("ORDER#{}", self.id)
    }
}

async fn commit_with_library(
    writer: &dynamodb_outbox::OutboxWriter,
    table: &str,
    plan: &OrderPlan,
) -> Result<(), String> {
    let business = business_actions(table, plan)?;
    writer
        .commit(
            business,
            &[with_trace(
                NewMessage::new(plan.aggregate(), "orders", plan.payload())
                    .event_type("ORDER_PLACED"),
                plan.trace(),
            )],
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn with_trace(message: NewMessage, trace: Option<TraceContext>) -> NewMessage {
    match trace {
        Some(trace) => message.trace(trace),
        None => message,
    }
}

/// A new trace id as X-Ray accepts it too: the epoch seconds in its first 8 hex
/// digits, then 96 random bits (a UUIDv7's tail: its random bits and a few of its
/// milliseconds).
fn new_trace_id() -> u128 {
    let seconds = u128::from(dynamodb_outbox_core::clock::now_ms().max(0).unsigned_abs() / 1_000);
    let tail = uuid::Uuid::now_v7().as_u128() & ((1u128 << 96) - 1);
    (seconds << 96) | tail
}

/// As the seed document's boto3 producer writes it: `PK, SK, ItemType, Topic,
/// Payload, Status, RetryCount` and nothing else.
async fn commit_minimal(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    plan: &OrderPlan,
) -> Result<(), String> {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let message = Put::builder()
        .table_name(table)
        .item("PK", s(&plan.aggregate()))
        .item(
            "SK",
            s(&format!("MESSAGE#ORDER_PLACED#{}", uuid::Uuid::now_v7())),
        )
        .item("ItemType", s("PENDING_MESSAGE"))
        .item("Topic", s("orders"))
        .item("Payload", s(&plan.payload()))
        .item("Status", s("PENDING"))
        .item("RetryCount", AttributeValue::N("0".into()))
        .build()
        .map_err(|e| e.to_string())?;
    let mut actions = business_actions(table, plan)?;
    actions.push(TransactWriteItem::builder().put(message).build());
    transact(client, actions)
        .await
        .map_err(|e| aws_smithy_types::error::display::DisplayErrorContext(&e).to_string())
}

/// The business write: the order record in the aggregate's partition, plus — for a
/// transaction meant to roll back — a condition that cannot hold.
fn business_actions(table: &str, plan: &OrderPlan) -> Result<Vec<TransactWriteItem>, String> {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let order = Put::builder()
        .table_name(table)
        .item("PK", s(&plan.aggregate()))
        .item("SK", s("ORDER"))
        .item("ItemType", s("ORDER"))
        .item("Quantity", AttributeValue::N(plan.quantity.to_string()))
        .build()
        .map_err(|e| e.to_string())?;
    let mut actions = vec![TransactWriteItem::builder().put(order).build()];
    if plan.rollback {
        actions.push(never_holds(table, &format!("{}#NEVER", plan.aggregate()))?);
    }
    Ok(actions)
}
