//! Handler work per record without I/O: decode the Lambda stream record, filter,
//! route, plan batches and build the SQS request entries. Prints records per second
//! on one core (the loop runs on one thread).
//!
//! `cargo bench -p dynamodb-outbox --bench handler`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use outbox::config::PublisherConfig;
use outbox::publish::{WorkItem, plan};
use outbox::route::{Destination, Routes};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn event(n: usize, payload_bytes: usize) -> Event {
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
    serde_json::from_value(serde_json::json!({ "Records": records })).expect("event")
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
    }
}

fn run(batch: usize, payload: usize) {
    let config = config();
    let template = event(batch, payload);
    let mut records = 0usize;
    let mut entries = 0usize;
    let start = Instant::now();
    let budget = Duration::from_secs(3);
    while start.elapsed() < budget {
        let ev = template.clone(); // Lambda hands the handler an owned event
        let work: Vec<WorkItem> = ev
            .records
            .iter()
            .filter_map(|r| outbox::stream::classify(r).ok())
            .collect();
        let p = plan(&config, &work);
        for (i, m) in p.messages().enumerate() {
            black_box(outbox::sqs::batch_entry(i % 10, m).expect("entry"));
            entries += 1;
        }
        records += ev.records.len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "handler (no I/O): batch {batch:>3} records, payload {payload:>5} B: {:>10.0} records/s on one core ({} entries built)",
        records as f64 / secs,
        entries
    );
}

fn main() {
    for (batch, payload) in [(100, 256), (100, 4096), (10, 256)] {
        run(batch, payload);
    }
}
