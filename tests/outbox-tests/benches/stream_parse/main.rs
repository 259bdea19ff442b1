//! What the stream parse costs the publisher per invocation, at batch 100, beside the
//! whole invocation: the most any parse of its own could save (issue 37, item 4: a path
//! of its own is kept only for ≥ 5% of the billed duration).
//!
//! The publisher's path from the bytes Lambda sends to the publish path's work:
//! `lambda_runtime`'s parse of the body into `aws_lambda_events`'s owned `Event`
//! (serde_json through serde_path_to_error, as `lambda_runtime::deserializer` does),
//! each record decided by `stream::classify_keyed` (as `handle_stream_event` does), the
//! event dropped.
//!
//! Part 1, no emulator: that path's CPU per invocation on one core (the thread's own CPU
//! time, so other processes on the machine do not count), the median of rounds, for a
//! batch of 100 inserted `PENDING` messages with ~1 KB JSON payloads and for a batch
//! of 100 records of which 90 are `SENT` marks and TTL deletes (what a mapping without
//! the FilterCriteria delivers); beside it, what follows without I/O: planning the
//! batch and building its SQS entries.
//!
//! Part 2, with `OUTBOX_ENDPOINT` (a running local AWS: `scripts/emulator start`, then
//! the exports `scripts/emulator env` prints): whole invocations, batches of 100
//! committed by the writer and read back from the table's stream, published to SQS and
//! marked `SENT` by the publisher against the local AWS; their wall time (Lambda bills
//! it, rounded up to 1 ms) and the process's CPU time.
//!
//! Then the arithmetic: Lambda gives a function of `MEMORY_MB` that share of one vCPU
//! (1,769 MB is one), so CPU here is stretched by 1769/256 there; the billed duration
//! is at least the invocation's CPU so stretched, whatever AWS's I/O waits, so a saving
//! of CPU is at most its share of the invocation's CPU.
//!
//! `cargo bench -p outbox-tests --bench stream_parse` (`STREAM_PARSE_ROUNDS`, default 15;
//! `STREAM_PARSE_BATCHES`, part 2's batches, default 10).
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox::KeyNames;
use dynamodb_outbox_core::publish::{WorkItem, plan};
use dynamodb_outbox_core::{Destination, PublisherConfig, Routes};
use std::hint::black_box;
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

/// The publisher's path: the owned event, each record decided, the event dropped.
fn parse_path(body: &[u8], keys: &KeyNames) -> Vec<WorkItem> {
    let event = runtime_parse(body);
    event
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox::stream::classify_keyed(r, keys).ok())
        .collect()
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

/// What follows the parse, without I/O: the batch planned and its SQS request
/// entries built.
fn after_the_parse(config: &PublisherConfig, work: &[WorkItem]) -> usize {
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

/// CPU per call of each of `ways`, µs: the median of rounds of ~150 ms each,
/// the ways interleaved so that the machine's moods fall on all alike.
fn per_call_us<const N: usize>(ways: [&dyn Fn(); N]) -> [f64; N] {
    let calls = ways.map(|f| calls_for(Duration::from_millis(150), f));
    let mut rounds = [(); N].map(|_| Vec::new());
    for _ in 0..rounds_wanted() {
        for (w, f) in ways.iter().enumerate() {
            let start = thread_cpu();
            for _ in 0..calls[w] {
                f();
            }
            rounds[w].push((thread_cpu() - start).as_secs_f64() * 1e6 / calls[w] as f64);
        }
    }
    rounds.map(median)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rounds_wanted() -> usize {
    std::env::var("STREAM_PARSE_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15)
}

/// CPU stretched to a function of `MEMORY_MB`.
fn on_lambda(cpu_us: f64) -> f64 {
    cpu_us * ONE_VCPU_MB / MEMORY_MB
}

/// Part 1 for one event; returns the parse's CPU per invocation, µs.
fn report(name: &str, body: &[u8]) -> f64 {
    let (config, keys) = (config(), KeyNames::default());
    let work = parse_path(body, &keys);
    let [parse, after] = per_call_us([
        &|| drop(black_box(parse_path(black_box(body), &keys))),
        &|| {
            black_box(after_the_parse(&config, &work));
        },
    ]);
    println!(
        "part 1, {name} ({} B of JSON), CPU per invocation on one core: the runtime's parse and the records decided {parse:.0} µs ({:.2} ms at {MEMORY_MB} MB, {MEMORY_MB}/{ONE_VCPU_MB} of a vCPU); then planning and SQS entries {after:.0} µs",
        body.len(),
        on_lambda(parse) / 1000.0,
    );
    parse
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("stream parse at batch {BATCH}: lambda_runtime's parse into the owned event");
    let parse = report("100 inserts, ~1 KB payloads", &inserts());
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
    stack::whole_invocations(parse).await;
}
