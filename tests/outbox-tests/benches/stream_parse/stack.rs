//! Part 2: whole invocations against the local AWS, batches of 100 each way.

use super::{
    BATCH, MEMORY_MB, ONE_VCPU_MB, WORTH_KEEPING, order_payload, runtime_parse, runtime_parse_null,
};
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use dynamodb_outbox::stream::{handle_stream_event, handle_stream_json};
use dynamodb_outbox::{AwsPublisher, NewMessage, OutboxWriter};
use outbox_tests::Outbox;
use outbox_tests::stream::event_of;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    Runtime,
    Lean,
}

/// One invocation's wall time and the process's CPU time in it.
#[derive(Debug, Clone, Copy)]
struct Sample {
    way: Way,
    wall: Duration,
    cpu: Duration,
}

fn batches() -> usize {
    std::env::var("STREAM_PARSE_BATCHES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10)
}

/// The CPU time of every thread of this process so far (Linux's scheduler statistics).
fn process_cpu() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux's /proc");
    let nanos: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// Commits batch `b`'s 100 messages and returns them as the stream event's JSON
/// bytes, as Lambda (with the FilterCriteria) would deliver them.
async fn committed_batch(ob: &mut Outbox, writer: &OutboxWriter, b: usize) -> Vec<u8> {
    let ids: Vec<usize> = (b * BATCH..(b + 1) * BATCH).collect();
    for chunk in ids.chunks(25) {
        let msgs: Vec<NewMessage> = chunk
            .iter()
            .map(|i| NewMessage::new(format!("ORDER#{:08}", i % 997), "orders", order_payload(*i)))
            .collect();
        writer.commit(vec![], &msgs).await.expect("commit");
    }
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while records.len() < BATCH {
        assert!(
            Instant::now() < deadline,
            "the stream gave {} of {BATCH} records",
            records.len()
        );
        records.extend(ob.filtered_event().await.records);
    }
    serde_json::to_vec(&event_of(records)).expect("json")
}

async fn invoke(publisher: &AwsPublisher, way: Way, body: &[u8]) -> DynamoDbEventResponse {
    match way {
        Way::Runtime => {
            let event: Event = runtime_parse(body);
            handle_stream_event(publisher, &event).await.0
        }
        Way::Lean => {
            runtime_parse_null();
            handle_stream_json(publisher, body)
                .await
                .expect("the event parses")
                .0
        }
    }
}

async fn sample(
    ob: &mut Outbox,
    writer: &OutboxWriter,
    publisher: &AwsPublisher,
    b: usize,
    way: Way,
) -> Sample {
    let body = committed_batch(ob, writer, b).await;
    let (wall, cpu) = (Instant::now(), process_cpu());
    let response = invoke(publisher, way, &body).await;
    let sample = Sample {
        way,
        wall: wall.elapsed(),
        cpu: process_cpu() - cpu,
    };
    assert!(
        response.batch_item_failures.is_empty(),
        "every message published"
    );
    sample
}

fn median_ms(samples: &[Sample], way: Way, of: impl Fn(&Sample) -> Duration) -> f64 {
    let mut v: Vec<f64> = samples
        .iter()
        .filter(|s| s.way == way)
        .map(|s| of(s).as_secs_f64() * 1e3)
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs part 2; `saved_on_lambda_us` is part 1's saving stretched to `MEMORY_MB`.
pub async fn whole_invocations(saved_on_lambda_us: f64) {
    let mut ob = Outbox::new().await;
    let (writer, publisher) = (ob.writer(), ob.publisher());
    // The first, untimed: clients connected, as in a warm execution environment.
    sample(&mut ob, &writer, &publisher, 0, Way::Runtime).await;
    let mut samples = Vec::new();
    for b in 0..2 * batches() {
        let way = if b % 2 == 0 { Way::Runtime } else { Way::Lean };
        samples.push(sample(&mut ob, &writer, &publisher, b + 1, way).await);
    }
    let stretch = ONE_VCPU_MB / MEMORY_MB;
    for way in [Way::Runtime, Way::Lean] {
        let (wall, cpu) = (
            median_ms(&samples, way, |s| s.wall),
            median_ms(&samples, way, |s| s.cpu),
        );
        println!(
            "part 2, {way:?} way, batches of {BATCH} published to SQS and marked SENT on the local AWS (median of {}): {wall:.1} ms wall (billed {:.0} ms), {cpu:.2} ms CPU; at {MEMORY_MB} MB the CPU alone takes {:.1} ms",
            batches(),
            wall.ceil(),
            cpu * stretch,
        );
    }
    let (wall, cpu) = (
        median_ms(&samples, Way::Lean, |s| s.wall),
        median_ms(&samples, Way::Lean, |s| s.cpu),
    );
    let runtime_cpu = median_ms(&samples, Way::Runtime, |s| s.cpu);
    let billed = (wall + cpu * (stretch - 1.0)).ceil();
    let saved = saved_on_lambda_us / 1000.0;
    println!(
        "verdict: an invocation of {BATCH} billed ~{billed:.0} ms at {MEMORY_MB} MB (the local AWS's I/O waits, this process's CPU stretched to {MEMORY_MB} MB); the lean path saves {saved:.2} ms of it: {:.1}% ({} the {:.0}% to keep it)",
        100.0 * saved / billed,
        if saved / billed >= WORTH_KEEPING {
            "at least"
        } else {
            "under"
        },
        100.0 * WORTH_KEEPING,
    );
    // Lambda bills at least the CPU time stretched by 1769/MB, and the saving is CPU
    // stretched by the same factor: whatever the I/O waits on AWS and the memory, its
    // share of an invocation is at most its share of the invocation's CPU.
    println!(
        "bound: part 1's saving is {:.1}% of the whole invocation's CPU on the runtime's way ({runtime_cpu:.2} ms on one core): the most it can be of a billed duration at any memory up to {ONE_VCPU_MB} MB, however fast AWS answers",
        100.0 * saved / (runtime_cpu * stretch),
    );
}
