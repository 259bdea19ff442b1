//! Handler work per record without I/O, from the event's JSON bytes as Lambda hands
//! them to the runtime, on the publisher binary's path (`PublisherFunction::run`: the
//! runtime's parse into the owned `aws_lambda_events` event, then
//! `handle_stream_event`'s): parse, decode the stream records, filter, route, plan
//! batches and build the SQS request entries. Prints records per second on one core
//! (the loop runs on one thread), from bytes and from an already parsed event; then
//! runs the plain-Python peer (`peer.py` beside it, when `python3` is there) on the same
//! records and prints the ratio.
//!
//! `cargo bench -p outbox-tests --bench handler` (with mimalloc, the Lambda binaries'
//! allocator; `--features system-allocator` for the system's). Writes the events it uses to
//! `HANDLER_BENCH_EVENTS` (a directory; a temporary one when unset), where the Python
//! peer reads them. `HANDLER_BENCH_ITERATIONS=N` runs the first case N
//! times and nothing else: for `valgrind --tool=callgrind`, which counts
//! instructions.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox_core::publish::{WorkItem, plan};
use dynamodb_outbox_core::{Destination, KeyNames, PublisherConfig, Routes};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// What the publisher binary does with one event's bytes without I/O: the runtime's
/// parse of the body into the owned event, then [`handle`].
fn handle_bytes(config: &PublisherConfig, bytes: &[u8]) -> (usize, usize) {
    let ev: Event = serde_json::from_slice(bytes).expect("event");
    (handle(config, &ev), ev.records.len())
}

/// What `handle_stream_event` does with a parsed event without I/O.
fn handle(config: &PublisherConfig, ev: &Event) -> usize {
    let work: Vec<WorkItem> = ev
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox::stream::classify_keyed(r, &KeyNames::default()).ok())
        .collect();
    entries(config, &work)
}

/// Plans the calls and builds the request entry of every message.
fn entries(config: &PublisherConfig, work: &[WorkItem]) -> usize {
    let p = plan(config, work);
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

/// Records per second of `f`, which handles one event and says how many records.
fn rate(mut f: impl FnMut() -> usize) -> f64 {
    let budget = Duration::from_secs(3);
    let (mut records, start) = (0usize, Instant::now());
    while start.elapsed() < budget {
        records += f();
    }
    records as f64 / start.elapsed().as_secs_f64()
}

/// One case: returns the file its event was written to and the rate from bytes.
fn run(dir: &Path, batch: usize, payload: usize) -> (String, f64) {
    let config = config();
    let bytes = event_bytes(batch, payload);
    let name = format!("batch{batch}-payload{payload}.json");
    std::fs::write(dir.join(&name), &bytes).expect("write the event for the Python peer");
    let template: Event = serde_json::from_slice(&bytes).expect("event");
    let mut entries = 0;
    let from_bytes = rate(|| {
        let (built, records) = handle_bytes(&config, black_box(&bytes));
        entries += built;
        records
    });
    let parsed = rate(|| {
        let ev = template.clone(); // an owned event, as the runtime would hand it
        handle(&config, &ev);
        ev.records.len()
    });
    println!(
        "handler (no I/O): batch {batch:>3} records, payload {payload:>5} B, {:>7} B of JSON: {from_bytes:>9.0} records/s from JSON bytes (the publisher binary's path), {parsed:>9.0} from a parsed event; on one core ({entries} entries built)",
        bytes.len()
    );
    (name, from_bytes)
}

/// The Python peer's records/s per event file, when `python3` runs it.
fn python_peer(dir: &Path) -> Option<Vec<(String, f64)>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/handler/peer.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    // "python peer: NAME  BYTES B of JSON:  RATE records/s from JSON bytes, …"
    Some(
        text.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix("python peer: ")?;
                let name = rest.split_whitespace().next()?.to_owned();
                let (_, after) = rest.split_once("of JSON:")?;
                let rate = after.split_whitespace().next()?.parse::<f64>().ok()?;
                Some((name, rate))
            })
            .collect(),
    )
}

fn main() {
    if let Some(n) = std::env::var("HANDLER_BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let (config, bytes) = (config(), event_bytes(100, 256));
        for _ in 0..n {
            black_box(handle_bytes(&config, black_box(&bytes)));
        }
        println!("{n} events of 100 records, 256 B payloads, handled from JSON bytes");
        return;
    }
    let dir = match std::env::var("HANDLER_BENCH_EVENTS") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => std::env::temp_dir().join(format!("handler-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).expect("the events directory");
    let rust: Vec<(String, f64)> = [(100, 256), (100, 4096), (10, 256)]
        .into_iter()
        .map(|(batch, payload)| run(&dir, batch, payload))
        .collect();
    let Some(peer) = python_peer(&dir) else {
        println!("python peer: not run (no python3); the ratio needs it");
        return;
    };
    for (name, from_bytes) in &rust {
        if let Some((_, py)) = peer.iter().find(|(n, _)| n == name) {
            println!(
                "ratio: {name:<26} Rust {from_bytes:>9.0} / Python {py:>9.0} records/s from JSON bytes = {:.2}x",
                from_bytes / py
            );
        }
    }
}
