//! Part 2: whole invocations against the local AWS, batches of 100.

use super::{
    BATCH, MEMORY_MB, ONE_VCPU_MB, WORTH_KEEPING, on_lambda, order_payload, runtime_parse,
};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{AwsPublisher, NewMessage, OutboxWriter};
use outbox_tests::Outbox;
use outbox_tests::stream::event_of;
use std::time::{Duration, Instant};

/// One invocation's wall time and the process's CPU time in it.
#[derive(Debug, Clone, Copy)]
struct Sample {
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

/// One invocation, timed: the body parsed as the runtime parses it, then handled.
async fn sample(
    ob: &mut Outbox,
    writer: &OutboxWriter,
    publisher: &AwsPublisher,
    b: usize,
) -> Sample {
    let body = committed_batch(ob, writer, b).await;
    let (wall, cpu) = (Instant::now(), process_cpu());
    let event = runtime_parse(&body);
    let (response, _) = handle_stream_event(publisher, &event).await;
    drop(event);
    let sample = Sample {
        wall: wall.elapsed(),
        cpu: process_cpu() - cpu,
    };
    assert!(
        response.batch_item_failures.is_empty(),
        "every message published"
    );
    sample
}

fn median_ms(samples: &[Sample], of: impl Fn(&Sample) -> Duration) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(|s| of(s).as_secs_f64() * 1e3).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs part 2; `parse_us` is part 1's CPU of the parse per invocation.
pub async fn whole_invocations(parse_us: f64) {
    let mut ob = Outbox::new().await;
    let (writer, publisher) = (ob.writer(), ob.publisher());
    // The first, untimed: clients connected, as in a warm execution environment.
    sample(&mut ob, &writer, &publisher, 0).await;
    let mut samples = Vec::new();
    for b in 1..=batches() {
        samples.push(sample(&mut ob, &writer, &publisher, b).await);
    }
    let (wall, cpu) = (
        median_ms(&samples, |s| s.wall),
        median_ms(&samples, |s| s.cpu),
    );
    let stretch = ONE_VCPU_MB / MEMORY_MB;
    let billed = (wall + cpu * (stretch - 1.0)).ceil();
    println!(
        "part 2, batches of {BATCH} published to SQS and marked SENT on the local AWS (median of {}): {wall:.1} ms wall (billed {:.0} ms), {cpu:.2} ms CPU; at {MEMORY_MB} MB the CPU alone takes {:.1} ms, so ~{billed:.0} ms billed with the local AWS's I/O waits",
        batches(),
        wall.ceil(),
        cpu * stretch,
    );
    let share = parse_us / 1000.0 / cpu;
    println!(
        "bound: the parse is {:.1}% of the invocation's CPU ({:.1}% of the ~{billed:.0} ms): a parse of its own saving all of it would save at most that share of any billed duration at any memory up to {ONE_VCPU_MB} MB, however fast AWS answers ({} the {:.0}% that would keep one)",
        100.0 * share,
        100.0 * on_lambda(parse_us) / 1000.0 / billed,
        if share >= WORTH_KEEPING {
            "at least"
        } else {
            "under"
        },
        100.0 * WORTH_KEEPING,
    );
}
