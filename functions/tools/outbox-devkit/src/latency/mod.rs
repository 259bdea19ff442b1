//! Latency and throughput on a deployed stack (`outbox-devkit bench latency`):
//! commit → publish percentiles (`SentAt` − the time the transaction was sent) at
//! given rates, the highest rate one stream shard carries with p99 under a second,
//! the sweeper's recovery latency for a stuck item, and the functions' billed
//! durations from their `REPORT` log lines (for the cost bench). Beside the highest
//! rate, the local AWS's own `PutItem` rate in the same run: the ratio of the two is
//! what compares across machines, the rates alone say as much about the machine.

mod billed;
mod raw_put;
mod stuck;

pub use billed::{Billed, billed, billed_ms_per_message, per_message_line};
pub use raw_put::RawPuts;

use billed::billed_summary;
use raw_put::raw_put_rate;

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
    /// Seconds of load per rate (at least 60 for the ladder's figure to count as
    /// sustained; fewer for a quick check).
    pub seconds: u32,
    /// Seconds of raw `PutItem`s for the yardstick (0: skip it).
    pub raw_seconds: u32,
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

/// Whether the producers really offered `rate`: they committed at least 90% of it
/// over their own time. Without it a step could "hold" a rate the local AWS never
/// took (its transactions queuing behind the writers in flight), and the ladder would
/// report a rate nobody offered.
pub fn kept_pace(report: &DemoReport, rate: u32) -> bool {
    let seconds = report.producing.as_secs_f64();
    seconds > 0.0 && report.committed as f64 / seconds >= 0.9 * f64::from(rate)
}

/// The held rate over the raw `PutItem` rate, the figure that compares across
/// machines. None when either is missing.
pub fn held_over_raw(held: Option<u32>, raw_rate: f64) -> Option<f64> {
    held.filter(|_| raw_rate > 0.0)
        .map(|rate| f64::from(rate) / raw_rate)
}

/// The ladder's verdict line, the raw `PutItem` rate beside it and their ratio.
pub fn held_lines(best: Option<u32>, seconds: u32, raw: Option<&RawPuts>) -> String {
    let mut out = match best {
        Some(rate) => format!(
            "highest offered rate one stream shard carried with p99 < 1 s (every step {seconds} s of load): {rate} messages/s\n"
        ),
        None => format!("no step of the ladder ({seconds} s each) held p99 < 1 s\n"),
    };
    if let Some(raw) = raw {
        out.push_str(&format!(
            "raw PutItem rate of this local AWS in the same run ({} writers, {:.1} s, scratch table): {:.0} puts/s ({} failed)\n",
            raw.writers, raw.seconds, raw.rate(), raw.errors
        ));
        out.push_str(&match held_over_raw(best, raw.rate()) {
            Some(ratio) => format!("held rate / raw PutItem rate: {ratio:.3}\n"),
            None => "held rate / raw PutItem rate: none (no held rate)\n".to_owned(),
        });
    }
    out
}

/// One ladder step's line.
fn step_line(rate: u32, r: &DemoReport, held: bool) -> String {
    let verdict = match (held, kept_pace(r, rate)) {
        (true, _) => "held",
        (false, false) => "not held (the producers fell behind the offered rate)",
        (false, true) => "not held",
    };
    format!(
        "  max-rate step {rate:>5} messages/s offered: {} committed in {:.1} s ({:.0}/s), {} SENT, all done in {:.1} s: p99 {} ms -> {verdict}\n",
        r.committed,
        r.producing.as_secs_f64(),
        r.committed as f64 / r.producing.as_secs_f64().max(0.001),
        r.sent,
        r.elapsed.as_secs_f64(),
        r.latency_ms.2
    )
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
    // Before the loads: the yardstick then shares the machine with no function still
    // draining an earlier step.
    let raw = match opts.raw_seconds {
        0 => None,
        s => Some(raw_put_rate(clients, &deployment.prefix, &run, s).await?),
    };
    let mut step = 0;
    let mut tag = |rate| {
        step += 1;
        step_tag(&run, step, rate)
    };
    let mut best = None;
    for &rate in &opts.ladder {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        let held = held(&r) && kept_pace(&r, rate);
        out.push_str(&step_line(rate, &r, held));
        if !held {
            for why in r.broken.iter().take(3) {
                out.push_str(&format!("    - {why}\n"));
            }
            break;
        }
        best = Some(rate);
    }
    out.push_str(&held_lines(best, opts.seconds, raw.as_ref()));
    // After the ladder, not before it: a rate above what the local AWS holds leaves a
    // backlog that would fail the ladder's first steps (seen at 500/s on two cores).
    for &rate in &opts.rates {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        out.push_str(&format!(
            "  {rate:>5} messages/s offered, {:>6} committed in {:.1} s: p50 {} ms, p95 {} ms, p99 {} ms ({} publisher invocations)\n",
            r.committed, r.elapsed.as_secs_f64(), r.latency_ms.0, r.latency_ms.1, r.latency_ms.2, r.publisher_invocations
        ));
    }
    if opts.stuck {
        let ms = sweeper_recovery(clients, deployment).await?;
        out.push_str(&format!("sweeper recovery of a stuck item: {ms} ms from due to SentAt (schedule: every minute)\n"));
    }
    let (line, mut json) = billed_summary(clients, deployment, since, published).await?;
    out.push_str(&line);
    json["held_rate"] = serde_json::json!(best);
    json["step_seconds"] = serde_json::json!(opts.seconds);
    if let Some(raw) = &raw {
        json["raw_put"] = serde_json::json!({
            "writers": raw.writers, "puts": raw.puts, "errors": raw.errors,
            "seconds": raw.seconds, "rate": raw.rate(),
        });
        json["held_over_raw"] = serde_json::json!(held_over_raw(best, raw.rate()));
    }
    Ok((out, json))
}

#[cfg(test)]
mod tests;
