//! Latency and throughput on a deployed stack (`outbox-devkit bench latency`):
//! commit → publish percentiles (`SentAt` − the time the transaction was sent) at
//! given rates, the highest rate one stream shard carries with p99 under a second,
//! the sweeper's recovery latency for a stuck item, and the functions' billed
//! durations from their `REPORT` log lines (for the cost bench).

mod billed;
mod stuck;

pub use billed::{Billed, billed};

use billed::billed_summary;

use crate::aws::Clients;
use crate::demo::{self, DemoOptions, DemoReport};
use crate::deployment::Deployment;
use dynamodb_outbox::clock::now_ms;
use std::time::Duration;
use stuck::sweeper_recovery;

/// What to run.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// Rates for the percentiles, messages per second.
    pub rates: Vec<u32>,
    /// Rates tried, in order, for the highest one with p99 under a second.
    pub ladder: Vec<u32>,
    /// Seconds of load per rate.
    pub seconds: u32,
    /// Whether to measure the sweeper's recovery of a stuck item (up to its schedule
    /// period and more).
    pub stuck: bool,
}

/// One load at `rate` for `seconds`, its orders' ids prefixed with `tag`: every load
/// runs against the same deployed tables, and each is judged on its own messages only.
async fn load(
    clients: &Clients,
    deployment: &Deployment,
    rate: u32,
    seconds: u32,
    tag: String,
) -> Result<DemoReport, String> {
    let opts = DemoOptions {
        orders: (rate * seconds) as usize,
        rate,
        rollback_every: 0,
        minimal_every: 0,
        progress: false,
        settle_timeout: Duration::from_secs(180),
        tag,
        ..DemoOptions::default()
    };
    demo::run(clients, deployment, &opts).await
}

/// The tag of one load: unique to this run of the bench (the tables keep the items of
/// earlier runs) and to the step within it.
fn step_tag(run: &str, step: usize, rate: u32) -> String {
    format!("b{run}-{step}-{rate}-")
}

/// Whether a step of the max-rate ladder held: it committed messages, every one of
/// them was `SENT`, every guarantee held and their p99 was under a second. `report`
/// must count the step's own messages only (a tagged load), never the table's.
pub fn held(report: &DemoReport) -> bool {
    report.committed > 0
        && report.sent >= report.committed
        && report.broken.is_empty()
        && report.latency_ms.2 < 1000
}

/// Runs the bench; returns the report's lines and the billed durations
/// (publisher, messages per publisher invocation, sweeper).
pub async fn run(
    clients: &Clients,
    deployment: &Deployment,
    opts: &LatencyOptions,
) -> Result<(String, serde_json::Value), String> {
    let since = now_ms() - 1_000;
    let mut out =
        String::from("commit -> publish latency (SentAt - commit time) on the deployed stack\n");
    let mut published = 0usize;
    let run = format!("{:08x}", fastrand::u32(..));
    let mut step = 0;
    let mut tag = |rate| {
        step += 1;
        step_tag(&run, step, rate)
    };
    for &rate in &opts.rates {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        out.push_str(&format!(
            "  {rate:>5} messages/s offered, {:>6} committed in {:.1} s: p50 {} ms, p95 {} ms, p99 {} ms ({} publisher invocations)\n",
            r.committed, r.elapsed.as_secs_f64(), r.latency_ms.0, r.latency_ms.1, r.latency_ms.2, r.publisher_invocations
        ));
    }
    let mut best = None;
    for &rate in &opts.ladder {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        let held = held(&r);
        out.push_str(&format!(
            "  max-rate step {rate:>5} messages/s offered: {} committed, {} SENT, all done in {:.1} s: p99 {} ms -> {}\n",
            r.committed, r.sent, r.elapsed.as_secs_f64(), r.latency_ms.2, if held { "held" } else { "not held" }
        ));
        if !held {
            for why in r.broken.iter().take(3) {
                out.push_str(&format!("    - {why}\n"));
            }
            break;
        }
        best = Some(rate);
    }
    out.push_str(&match best {
        Some(rate) => format!(
            "highest offered rate one stream shard carried with p99 < 1 s: {rate} messages/s\n"
        ),
        None => "no step of the ladder held p99 < 1 s\n".to_owned(),
    });
    if opts.stuck {
        let ms = sweeper_recovery(clients, deployment).await?;
        out.push_str(&format!("sweeper recovery of a stuck item: {ms} ms from due to SentAt (schedule: every minute)\n"));
    }
    let (line, json) = billed_summary(clients, deployment, since, published).await?;
    out.push_str(&line);
    Ok((out, json))
}

#[cfg(test)]
mod tests;
