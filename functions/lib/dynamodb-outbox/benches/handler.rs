//! Handler work per record without I/O, from the event's JSON bytes as Lambda hands
//! them to the runtime: parse, decode the stream records, filter, route, plan batches
//! and build the SQS request entries. Prints records per second on one core (the loop
//! runs on one thread), and the same from an already parsed event.
//!
//! `cargo bench -p dynamodb-outbox --features unstable-internals --bench handler`. Writes the events it uses to
//! `HANDLER_BENCH_EVENTS` (a directory), for the Python peer (`handler_peer.py`)
//! to run on the same records. `HANDLER_BENCH_ITERATIONS=N` runs the first case N
//! times and nothing else: for `valgrind --tool=callgrind`, which counts
//! instructions.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox::config::PublisherConfig;
use dynamodb_outbox::publish::{WorkItem, plan};
use dynamodb_outbox::route::{Destination, Routes};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn event_json(n: usize, payload_bytes: usize) -> serde_json::Value {
    let payload = serde_json::to_string(&"x".repeat(payload_bytes)).expect("json");
    let records: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let pk = format!("USER#{}", i % 37);
            let sk = format!("MESSAGE#ORDER_PLACED#0193{i:028}");
            serde_json::json!({
                "eventID": format!("e{i}"), "eventName": if i % 10 == 9 { "MODIFY" } else { "INSERT" },
                "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
                "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/x",
                "dynamodb": {
                    "ApproximateCreationDateTime": 1732870800, "SequenceNumber": format!("{}", 1000 + i),
                    "SizeBytes": 400, "StreamViewType": "NEW_IMAGE",
                    "Keys": {"PK": {"S": pk}, "SK": {"S": sk}},
                    "NewImage": {
                        "PK": {"S": pk}, "SK": {"S": sk}, "ItemType": {"S": "PENDING_MESSAGE"},
                        "Topic": {"S": if i % 2 == 0 { "orders" } else { "ledger" }},
                        "Payload": {"S": serde_json::from_str::<String>(&payload).expect("str")},
                        "Status": {"S": "PENDING"}, "RetryCount": {"N": "0"},
                        "MessageId": {"S": format!("0193-{i}")}, "CreatedAt": {"N": "1732870800123"},
                        "SweepShard": {"S": "07"}, "SweepDueAt": {"N": "1732870860123"}
                    }
                }
            })
        })
        .collect();
    serde_json::json!({ "Records": records })
}

fn config() -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                (
                    "orders".to_owned(),
                    Destination::sqs("https://sqs.eu-west-1.amazonaws.com/1/orders"),
                ),
                (
                    "ledger".to_owned(),
                    Destination::sqs("https://sqs.eu-west-1.amazonaws.com/1/ledger.fifo"),
                ),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://sqs.eu-west-1.amazonaws.com/1/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

/// What the handler does with one event without I/O: the entries of every call.
fn handle(config: &PublisherConfig, ev: &Event) -> usize {
    let work: Vec<WorkItem> = ev
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox::stream::classify(r).ok())
        .collect();
    let p = plan(config, &work);
    let mut entries = 0;
    for (i, m) in p.messages().enumerate() {
        black_box(dynamodb_outbox::sqs::batch_entry(i % 10, m).expect("entry"));
        entries += 1;
    }
    entries
}

/// The event as JSON bytes, as the Lambda Runtime API hands it over.
fn event_bytes(batch: usize, payload: usize) -> Vec<u8> {
    serde_json::to_vec(&event_json(batch, payload)).expect("json")
}

fn run(batch: usize, payload: usize) {
    let config = config();
    let bytes = event_bytes(batch, payload);
    if let Ok(dir) = std::env::var("HANDLER_BENCH_EVENTS") {
        let path = std::path::Path::new(&dir).join(format!("batch{batch}-payload{payload}.json"));
        std::fs::write(&path, &bytes).expect("write the event for the Python peer");
    }
    let template: Event = serde_json::from_slice(&bytes).expect("event");
    let budget = Duration::from_secs(3);
    let (mut records, mut entries) = (0usize, 0usize);
    let start = Instant::now();
    while start.elapsed() < budget {
        let ev: Event = serde_json::from_slice(black_box(&bytes)).expect("event");
        entries += handle(&config, &ev);
        records += ev.records.len();
    }
    let from_bytes = records as f64 / start.elapsed().as_secs_f64();
    let (mut parsed_records, start) = (0usize, Instant::now());
    while start.elapsed() < budget {
        let ev = template.clone(); // an owned event, as the runtime would hand it
        handle(&config, &ev);
        parsed_records += ev.records.len();
    }
    let parsed = parsed_records as f64 / start.elapsed().as_secs_f64();
    println!(
        "handler (no I/O): batch {batch:>3} records, payload {payload:>5} B, {:>7} B of JSON: {from_bytes:>9.0} records/s from JSON bytes, {parsed:>9.0} records/s from a parsed event, on one core ({entries} entries built)",
        bytes.len()
    );
}

fn main() {
    if let Some(n) = std::env::var("HANDLER_BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let (config, bytes) = (config(), event_bytes(100, 256));
        for _ in 0..n {
            let ev: Event = serde_json::from_slice(black_box(&bytes)).expect("event");
            black_box(handle(&config, &ev));
        }
        println!("{n} events of 100 records, 256 B payloads, handled from JSON bytes");
        return;
    }
    for (batch, payload) in [(100, 256), (100, 4096), (10, 256)] {
        run(batch, payload);
    }
}
