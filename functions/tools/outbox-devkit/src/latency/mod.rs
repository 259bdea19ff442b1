//! Latency and throughput on a deployed stack (`outbox-devkit bench latency`):
//! commit → publish percentiles (`SentAt` − the time the transaction was sent) at
//! given rates, the highest rate one stream shard carries with p99 under a second,
//! the sweeper's recovery latency for a stuck item, and the functions' billed
//! durations from their `REPORT` log lines (for the cost bench).
//!
//! The held rate is compared with the local AWS's raw `TransactWriteItems` rate in
//! the same run, measured after a warm-up load: the producers' own transaction,
//! as fast as their writers in flight go, into the deployed table with the pipeline
//! running. Its messages are published like any load's (they carry their own tag, so
//! no step counts them) and the ladder starts only once they are: the raw rate is
//! the rate the table accepts the producers' transactions while the publisher works,
//! the ceiling the held rate can approach. The ratio of the two is what compares
//! across machines; the rates alone say as much about the machine.

mod billed;
mod raw_put;
mod stuck;
mod verdict;

pub use billed::{Billed, billed, billed_ms_per_message, per_message_line};
pub use raw_put::RawPuts;
pub use verdict::{
    RawTransacts, Step, held, held_lines, held_over_raw, highest_held, kept_pace, where_time_goes,
};

use billed::billed_summary;
use raw_put::raw_put_rate;

use crate::aws::Clients;
use crate::demo::produce::IN_FLIGHT;
use crate::demo::{self, DemoOptions, DemoReport};
use crate::deployment::Deployment;
use dynamodb_outbox_core::clock::now_ms;
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
    /// Seconds of load through the pipeline before anything is measured (0: none):
    /// the functions' first processes, the mappings' pollers and the local AWS's
    /// first requests are then behind the measurement, not in it.
    pub warm_seconds: u32,
    /// The warm-up's rate, messages per second.
    pub warm_rate: u32,
    /// Seconds of raw `TransactWriteItems` on the deployed table, the yardstick of
    /// the held rate (0: skip it).
    pub raw_seconds: u32,
    /// Seconds of plain `PutItem`s into a scratch table, beside it (0: skip).
    pub raw_put_seconds: u32,
    /// Whether to measure the sweeper's recovery of a stuck item (up to its schedule
    /// period and more).
    pub stuck: bool,
    /// Each DynamoDB request attempt of the bench (producers, raw writes, the
    /// settling scans) retried after this long (None: the SDK's default, no limit).
    pub attempt_timeout: Option<Duration>,
}

/// `clients` with their DynamoDB requests retried after `attempt_timeout`. MiniStack
/// with TLS leaves a request on a kept-alive connection unanswered now and then until
/// its 75 s keep-alive timeout closes the connection (docs/benchmarks.md, the held
/// rate): without a limit one such request holds a writer 75 s and the bench measures
/// the stall, not the rate.
pub fn with_attempt_timeout(clients: &Clients, attempt_timeout: Option<Duration>) -> Clients {
    let Some(limit) = attempt_timeout else {
        return clients.clone();
    };
    let timeouts = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .operation_attempt_timeout(limit)
        .build();
    let config = clients
        .dynamodb
        .config()
        .to_builder()
        .timeout_config(timeouts)
        .build();
    Clients {
        dynamodb: aws_sdk_dynamodb::Client::from_conf(config),
        ..clients.clone()
    }
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
        ..load_options(tag)
    };
    demo::run(clients, deployment, &opts).await
}

/// The loads' settings: library-written messages only, no rollbacks, no counters.
fn load_options(tag: String) -> DemoOptions {
    DemoOptions {
        rollback_every: 0,
        minimal_every: 0,
        progress: false,
        settle_timeout: Duration::from_secs(180),
        tag,
        ..DemoOptions::default()
    }
}

/// The raw `TransactWriteItems` rate: the producers' transactions with no pacing
/// (IN_FLIGHT at once, each sent when the last answered) for `seconds`, then the wait
/// for their messages to be published, so that the ladder's first step does not
/// start behind a backlog.
async fn raw_transacts(
    clients: &Clients,
    deployment: &Deployment,
    seconds: u32,
    tag: String,
) -> Result<(RawTransacts, DemoReport), String> {
    let opts = DemoOptions {
        // More than any local AWS commits in `seconds`: the time bounds it.
        orders: 100_000 * seconds.max(1) as usize,
        rate: 0,
        produce_for: Some(Duration::from_secs(u64::from(seconds))),
        ..load_options(tag)
    };
    let report = demo::run(clients, deployment, &opts).await?;
    Ok((RawTransacts::of(IN_FLIGHT, &report), report))
}

/// The tag of one load: unique to this run of the bench (the tables keep the items of
/// earlier runs) and to the step within it.
fn step_tag(run: &str, step: usize, rate: u32) -> String {
    format!("b{run}-{step}-{rate}-")
}

/// One ladder step's line.
fn step_line(step: &Step, r: &DemoReport) -> String {
    let verdict = match (step.counts(), step.kept_pace) {
        (true, _) => "held",
        (false, false) => "not held (the producers fell behind the offered rate)",
        (false, true) => "not held",
    };
    format!(
        "  max-rate step {:>5} messages/s offered: {} committed in {:.1} s ({:.0}/s), {} SENT, all done in {:.1} s: p99 {} ms -> {verdict}\n",
        step.rate,
        r.committed,
        step.producing_s,
        step.committed_rate(),
        r.sent,
        r.elapsed.as_secs_f64(),
        r.latency_ms.2
    )
}

/// The raw `PutItem` line.
fn raw_put_line(raw: &RawPuts) -> String {
    let sent = chrono_utc(raw.slowest.1);
    format!(
        "raw PutItem rate into a scratch table ({} writers, {:.1} s): {:.0} puts/s ({} failed); {} puts took 1 s or more, the slowest {} ms, sent {sent} UTC\n",
        raw.writers,
        raw.seconds,
        raw.rate(),
        raw.errors,
        raw.over_1s,
        raw.slowest.0
    )
}

/// Epoch milliseconds as `HH:MM:SS` UTC (the local AWS's log prints its time so).
fn chrono_utc(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The raw measurement's line.
fn raw_line(raw: &RawTransacts, r: &DemoReport) -> String {
    format!(
        "raw TransactWriteItems (business item + outbox item, {} in flight, deployed table): {} committed in {:.1} s = {:.0}/s; their messages all SENT {:.1} s after the first commit ({:.0}/s published, p99 {} ms){}\n",
        raw.in_flight,
        raw.committed,
        raw.seconds,
        raw.rate(),
        raw.publish_span_s,
        raw.published_rate(),
        raw.p99_ms,
        if r.broken.is_empty() && raw.sent >= raw.committed {
            String::new()
        } else {
            format!(
                "; NOT all published: {} SENT, {:?}",
                raw.sent,
                r.broken.first()
            )
        }
    )
}

/// Runs the bench; returns the report's lines and the billed durations
/// (publisher, messages per publisher invocation, sweeper).
pub async fn run(
    clients: &Clients,
    deployment: &Deployment,
    opts: &LatencyOptions,
) -> Result<(String, serde_json::Value), String> {
    let clients = &with_attempt_timeout(clients, opts.attempt_timeout);
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
    if opts.warm_seconds > 0 {
        let warm = format!("b{run}-warm-");
        let r = load(clients, deployment, opts.warm_rate, opts.warm_seconds, warm).await?;
        published += r.sent;
        out.push_str(&format!(
            "warm-up, not judged: {} messages/s for {} s, {} committed, {} SENT, p99 {} ms\n",
            opts.warm_rate, opts.warm_seconds, r.committed, r.sent, r.latency_ms.2
        ));
    }
    if opts.raw_put_seconds > 0 {
        let raw = raw_put_rate(clients, &deployment.prefix, &run, opts.raw_put_seconds).await?;
        out.push_str(&raw_put_line(&raw));
    }
    let raw = match opts.raw_seconds {
        0 => None,
        s => {
            let (raw, r) = raw_transacts(clients, deployment, s, format!("b{run}-raw-")).await?;
            published += r.sent;
            out.push_str(&raw_line(&raw, &r));
            Some(raw)
        }
    };
    let mut steps = Vec::new();
    for &rate in &opts.ladder {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        let step = Step::of(rate, &r);
        out.push_str(&step_line(&step, &r));
        steps.push(step);
        if !step.counts() {
            for why in r.broken.iter().take(3) {
                out.push_str(&format!("    - {why}\n"));
            }
            break;
        }
    }
    let best = highest_held(&steps);
    out.push_str(&held_lines(&steps, opts.seconds, raw.as_ref()));
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
    // Every message the publisher sent counts, the warm-up's and the raw burst's too:
    // its billed durations since the start are theirs as well.
    let (line, mut json) = billed_summary(clients, deployment, since, published).await?;
    out.push_str(&line);
    json["held_rate"] = serde_json::json!(best);
    json["step_seconds"] = serde_json::json!(opts.seconds);
    if let Some(raw) = &raw {
        json["raw_transact"] = serde_json::json!({
            "in_flight": raw.in_flight, "committed": raw.committed, "seconds": raw.seconds,
            "rate": raw.rate(), "published_rate": raw.published_rate(),
        });
        json["held_over_raw"] = serde_json::json!(held_over_raw(best, raw.rate()));
    }
    Ok((out, json))
}

/// The raw rates alone, for a look at the local AWS without the ladder (`outbox-devkit
/// bench raw`): `PutItem`s into a scratch table named after `prefix`, then, given a
/// deployment, `TransactWriteItems` on its table with the pipeline running (each
/// 0 s: skipped).
pub async fn raw_rates(
    clients: &Clients,
    prefix: &str,
    deployment: Option<&Deployment>,
    put_seconds: u32,
    transact_seconds: u32,
    attempt_timeout: Option<Duration>,
) -> Result<String, String> {
    let clients = &with_attempt_timeout(clients, attempt_timeout);
    let run = format!("{:08x}", fastrand::u32(..));
    let mut out = String::new();
    if put_seconds > 0 {
        let raw = raw_put_rate(clients, prefix, &run, put_seconds).await?;
        out.push_str(&raw_put_line(&raw));
    }
    if let Some(deployment) = deployment.filter(|_| transact_seconds > 0) {
        let (raw, r) = raw_transacts(
            clients,
            deployment,
            transact_seconds,
            format!("b{run}-raw-"),
        )
        .await?;
        out.push_str(&raw_line(&raw, &r));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
