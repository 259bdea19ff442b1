//! What the publisher's way of reading a stream event is worth per invocation, at batch
//! 100 (issue 37, item 4: keep a path of its own only for ≥ 5% of the billed duration).
//!
//! Two ways from the bytes Lambda sends to the publish path's work, each as the function
//! would run it, with what differs between them and nothing else:
//! - **runtime**: `lambda_runtime`'s own parse of the body into `aws_lambda_events`'s
//!   owned `Event` (serde_json through serde_path_to_error, as
//!   `lambda_runtime::deserializer` does), each record then decided by
//!   `stream::classify_keyed` (what `handle_stream_event` does), the event dropped.
//! - **lean** (`PublisherFunction::run`): the body kept by a runtime layer by request
//!   id, the runtime left `null` to parse, the body read by the lean, borrowing parse
//!   (`stream::classify_json`).
//!
//! Part 1, no emulator: CPU per invocation on one core (the thread's own CPU time, so
//! other processes on the machine do not count), median of interleaved rounds, for a
//! batch of 100 inserted `PENDING` messages with ~1 KB JSON payloads and for a batch
//! of 100 records of which 90 are `SENT` marks and TTL deletes (what a mapping without
//! the FilterCriteria delivers). Beside them, the CPU both ways then share: planning
//! the batch and building its SQS entries.
//!
//! Part 2, with `OUTBOX_ENDPOINT` (a running local AWS: `scripts/emulator start`, then
//! the exports `scripts/emulator env` prints): the whole invocation, batches of 100
//! committed by the writer and read back from the table's stream, published to SQS and
//! marked `SENT` by the publisher against the local AWS; its wall time (Lambda bills
//! it, rounded up to 1 ms) and the process's CPU time.
//!
//! Then the verdict's arithmetic: Lambda gives a function of `MEMORY_MB` that share of
//! one vCPU (1,769 MB is one), so CPU saved here is stretched by 1769/256 there; the
//! saving is worth keeping when it is ≥ 5% of the billed duration of an invocation.
//!
//! `cargo bench -p outbox-tests --bench stream_parse` (`STREAM_PARSE_ROUNDS`, default 15;
//! `STREAM_PARSE_BATCHES`, part 2's batches each way, default 10).
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox::KeyNames;
use dynamodb_outbox::config::PublisherConfig;
use dynamodb_outbox::publish::{WorkItem, plan};
use dynamodb_outbox::route::{Destination, Routes};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod stack;

// The Lambda binaries' allocator: the owned parse's cost is mostly allocation.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The publisher's memory in the Terraform module and the CDK construct.
const MEMORY_MB: f64 = 256.0;
/// The memory at which Lambda gives a function one full vCPU.
const ONE_VCPU_MB: f64 = 1769.0;
/// The threshold: a path of its own is kept for at least this share.
const WORTH_KEEPING: f64 = 0.05;
const BATCH: usize = 100;

/// A ~1 KB order, as JSON text: what a producer commits as a message's payload.
fn order_payload(i: usize) -> String {
    let lines: Vec<serde_json::Value> = (0..6)
        .map(|l| {
            serde_json::json!({
                "sku": format!("SKU-{:06}", (i * 7 + l) % 100_000),
                "name": "Stainless steel water bottle, 750 ml",
                "quantity": 1 + l % 3,
                "unitPriceCents": 1299 + 100 * l,
            })
        })
        .collect();
    serde_json::json!({
        "orderId": format!("ORD-2026-{i:08}"),
        "customerId": format!("CUST-{:06}", i % 9973),
        "currency": "EUR",
        "lines": lines,
        "shipTo": {"name": "A. Customer", "street": "1 Example Street", "city": "Dublin", "postcode": "D02 X285", "country": "IE"},
        "placedAt": "2026-12-05T21:30:00.123Z",
    })
    .to_string()
}

/// The image the writer stores for message `i`: every attribute it writes.
fn pending_image(i: usize, status: &str) -> serde_json::Value {
    let pk = format!("ORDER#{:08}", i % 997);
    let sk = format!("MESSAGE#ORDER_PLACED#0193a8f2-{i:012x}");
    serde_json::json!({
        "PK": {"S": pk}, "SK": {"S": sk}, "ItemType": {"S": "PENDING_MESSAGE"},
        "Status": {"S": status}, "Topic": {"S": "orders"}, "Payload": {"S": order_payload(i)},
        "MessageId": {"S": format!("0193a8f2-7c1e-7d3a-9b1f-{i:012x}")},
        "CreatedAt": {"N": "1764970200123"}, "RetryCount": {"N": "0"},
        "SweepShard": {"S": format!("{:02}", i % 16)}, "SweepDueAt": {"N": "1764970260123"},
        "TraceParent": {"S": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    })
}

/// One stream record as Lambda delivers it (the table's view is `NEW_IMAGE`).
fn record(i: usize, name: &str, image: Option<serde_json::Value>) -> serde_json::Value {
    let pk = format!("ORDER#{:08}", i % 997);
    let sk = format!("MESSAGE#ORDER_PLACED#0193a8f2-{i:012x}");
    let mut change = serde_json::json!({
        "ApproximateCreationDateTime": 1764970200.0, "SequenceNumber": format!("{}", 4_000_000_000_000_000u64 + i as u64),
        "SizeBytes": 1400, "StreamViewType": "NEW_IMAGE",
        "Keys": {"PK": {"S": pk}, "SK": {"S": sk}},
    });
    if let Some(image) = image {
        change["NewImage"] = image;
    }
    let mut record = serde_json::json!({
        "eventID": format!("c81e728d9d4c2f636f067f89cc14862c{i:04}"), "eventName": name,
        "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
        "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000",
        "dynamodb": change,
    });
    if name == "REMOVE" {
        record["userIdentity"] =
            serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
    }
    record
}

/// 100 inserted `PENDING` messages: what the FilterCriteria let through.
fn inserts() -> Vec<u8> {
    event((0..BATCH).map(|i| record(i, "INSERT", Some(pending_image(i, "PENDING")))))
}

/// 10 inserts among 60 `SENT` marks and 30 TTL deletes: a mapping without the filter.
fn mostly_filtered() -> Vec<u8> {
    event((0..BATCH).map(|i| match i % 10 {
        0 => record(i, "INSERT", Some(pending_image(i, "PENDING"))),
        1..=6 => record(i, "MODIFY", Some(pending_image(i, "SENT"))),
        _ => record(i, "REMOVE", None),
    }))
}

fn event(records: impl Iterator<Item = serde_json::Value>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "Records": records.collect::<Vec<_>>() }))
        .expect("json")
}

/// `lambda_runtime`'s parse of an invocation's body into the handler's payload type
/// (`lambda_runtime::deserializer::deserialize`), for a stream event.
fn runtime_parse(body: &[u8]) -> Event {
    let jd = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(jd).expect("the event parses")
}

/// The same for the `null` the lean path's layer leaves the runtime.
fn runtime_parse_null() {
    let jd = &mut serde_json::Deserializer::from_slice(b"null");
    serde_path_to_error::deserialize::<_, ()>(jd).expect("null parses");
}

/// The runtime's own path: the owned event, each record decided, the event dropped.
fn runtime_path(body: &[u8], keys: &KeyNames) -> Vec<WorkItem> {
    let event = runtime_parse(body);
    event
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox::stream::classify_keyed(r, keys).ok())
        .collect()
}

/// The request id the layer keeps a body under (the context's, in the function).
const REQUEST_ID: &str = "8476a536-e9f4-5d2a-9b61-5b2a0c1a7f3e";

/// The lean path: what the layer does (the body kept by request id, as `bytes::Bytes`
/// is, without a copy; `null` left for the runtime), the runtime's parse of `null`,
/// the body taken back and read by the lean parse.
fn lean_path(
    body: &Arc<[u8]>,
    kept: &Mutex<HashMap<String, Arc<[u8]>>>,
    keys: &KeyNames,
) -> Vec<WorkItem> {
    kept.lock()
        .unwrap()
        .insert(REQUEST_ID.to_owned(), body.clone());
    runtime_parse_null();
    let body = kept.lock().unwrap().remove(REQUEST_ID).expect("kept");
    let (work, _skipped) =
        dynamodb_outbox::stream::classify_json(&*body, keys).expect("the event parses");
    work
}

fn config() -> PublisherConfig {
    PublisherConfig {
        table_name: "orders".into(),
        routes: Routes::new(
            [(
                "orders".to_owned(),
                Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/orders"),
            )],
            None,
        ),
        dead_letter: Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

/// What both ways do next with the work, without I/O: the batch planned and its
/// SQS request entries built.
fn shared_work(config: &PublisherConfig, work: &[WorkItem]) -> usize {
    let p = plan(config, work);
    let mut entries = 0;
    for (i, m) in p.messages().enumerate() {
        black_box(dynamodb_outbox::sqs::batch_entry(i % 10, m).expect("entry"));
        entries += 1;
    }
    entries
}

/// This thread's CPU time so far (Linux's scheduler statistics), else the wall clock.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .unwrap_or_else(|| START.with(|s| s.elapsed()))
}

thread_local! {
    static START: Instant = Instant::now();
}

/// CPU per call of `f`, µs, over `calls` calls: one round of way `way`.
fn per_call_us(per_way: &mut [Vec<f64>], way: usize, calls: usize, f: &dyn Fn()) {
    let start = thread_cpu();
    for _ in 0..calls {
        f();
    }
    per_way[way].push((thread_cpu() - start).as_secs_f64() * 1e6 / calls as f64);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// How many calls of `f` take about `target` of CPU.
fn calls_for(target: Duration, f: &dyn Fn()) -> usize {
    let start = thread_cpu();
    let mut n = 0;
    while thread_cpu() - start < Duration::from_millis(50) {
        f();
        n += 1;
    }
    let each = (thread_cpu() - start).as_secs_f64() / n as f64;
    ((target.as_secs_f64() / each) as usize).max(1)
}

/// Per-invocation CPU of one event each way, µs.
struct Measured {
    runtime: f64,
    lean: f64,
    shared: f64,
}

fn rounds() -> usize {
    std::env::var("STREAM_PARSE_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15)
}

fn measure(body: &[u8]) -> Measured {
    let (config, keys) = (config(), KeyNames::default());
    let (shared_body, kept): (Arc<[u8]>, _) = (body.into(), Mutex::default());
    let work = runtime_path(body, &keys);
    assert_eq!(
        format!("{work:?}"),
        format!("{:?}", lean_path(&shared_body, &kept, &keys)),
        "both ways read the same work"
    );
    let ways: [&dyn Fn(); 3] = [
        &|| drop(black_box(runtime_path(black_box(body), &keys))),
        &|| drop(black_box(lean_path(black_box(&shared_body), &kept, &keys))),
        &|| {
            black_box(shared_work(&config, &work));
        },
    ];
    let calls = ways.map(|f| calls_for(Duration::from_millis(150), f));
    let mut per_way = vec![Vec::new(); ways.len()];
    for _ in 0..rounds() {
        for (w, f) in ways.iter().enumerate() {
            per_call_us(&mut per_way, w, calls[w], f);
        }
    }
    let [runtime, lean, shared] = [0, 1, 2].map(|w| median(std::mem::take(&mut per_way[w])));
    Measured {
        runtime,
        lean,
        shared,
    }
}

/// CPU stretched to a function of `MEMORY_MB`.
fn on_lambda(cpu_us: f64) -> f64 {
    cpu_us * ONE_VCPU_MB / MEMORY_MB
}

/// Part 1 for one event; returns the CPU the lean path saves per invocation, µs.
fn report(name: &str, body: &[u8]) -> f64 {
    let m = measure(body);
    println!(
        "part 1, {name} ({} B of JSON), CPU per invocation on one core: runtime's own parse {:.0} µs; then planning and SQS entries {:.0} µs",
        body.len(),
        m.runtime,
        m.shared
    );
    let lean = m.lean;
    let saved = m.runtime - lean;
    println!(
        "  lean parse + layer {lean:.0} µs: saves {saved:.0} µs per invocation on one core ({:.0}% of the runtime's path), {:.2} ms at {MEMORY_MB} MB ({MEMORY_MB}/{ONE_VCPU_MB} of a vCPU); that is ≥ {:.0}% only of an invocation billed ≤ {:.0} ms",
        100.0 * saved / m.runtime,
        on_lambda(saved) / 1000.0,
        100.0 * WORTH_KEEPING,
        on_lambda(saved) / 1000.0 / WORTH_KEEPING,
    );
    saved
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "stream parse at batch {BATCH}: the runtime's own path beside the lean parse (issue 37)"
    );
    let saved = report("100 inserts, ~1 KB payloads", &inserts());
    report(
        "10 inserts, 60 SENT marks, 30 TTL deletes (no FilterCriteria)",
        &mostly_filtered(),
    );
    if std::env::var("OUTBOX_ENDPOINT").is_err() {
        println!(
            "part 2: not run (OUTBOX_ENDPOINT unset: start the local AWS with scripts/emulator)"
        );
        return;
    }
    stack::whole_invocations(on_lambda(saved)).await;
}
