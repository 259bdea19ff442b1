//! The verdict: from what the producers committed, the final state of the outbox
//! table and the orders table, and what the deployed functions logged, whether every
//! guarantee of the README held — and the figures a reader wants.

use super::observe::{Item, number, order_id, own_message, own_order, text};
use super::produce::Produced;
use super::trace::{self, TraceReport};
use crate::deployment::{LogLine, emf_sum, log_records};
use dynamodb_outbox_core::schema::{OutboxItem, Status};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// What the demo saw and whether the guarantees held.
#[derive(Debug, Clone, Default)]
pub struct DemoReport {
    /// Which stack was deployed (`terraform` or `cdk`) and its prefix.
    pub deployment: String,
    /// Transactions committed (of them, written by the minimal producer).
    pub committed: usize,
    /// Of those, written as the minimal producer writes them.
    pub minimal: usize,
    /// Transactions rolled back on purpose.
    pub rolled_back: usize,
    /// Outbox items `SENT` at the end.
    pub sent: usize,
    /// Outbox items `FAILED` at the end.
    pub failed: usize,
    /// Committed orders the consumer stored (each at most once: the business-key
    /// guard's conditional write).
    pub applied: usize,
    /// Deliveries recognised as duplicates and acknowledged without effect.
    pub duplicates: usize,
    /// Messages the consumer gave up on (its dead-letter queue), at the end.
    pub consumer_dead_lettered: usize,
    /// Crashes injected into the functions (the processes really died).
    pub crashes: usize,
    /// Messages the scheduled sweeper published after the stream path missed them.
    pub recovered: usize,
    /// Publisher invocations.
    pub publisher_invocations: usize,
    /// Commit → `SENT` latency percentiles (p50, p95, p99), milliseconds.
    pub latency_ms: (i64, i64, i64),
    /// From the first commit sent to the last `SentAt` of the run's messages,
    /// milliseconds (0 when none was sent): over it the pipeline published `sent`.
    pub publish_span_ms: i64,
    /// Guarantees that did not hold, in words. Empty when all held.
    pub broken: Vec<String>,
    /// Wall time of the workload (after the deployment).
    pub elapsed: Duration,
    /// Of it, from the first transaction sent to the last one answered: the rate the
    /// producers really offered is `committed` over this.
    pub producing: Duration,
    /// How far the orders' traces got, and one followed end to end.
    pub traces: TraceReport,
    /// The outbox table (for the summary's `outbox-ops` line).
    pub table: String,
}

/// The logs of the three functions over the demo.
#[derive(Debug, Default)]
pub struct FunctionLogs {
    /// The publisher's.
    pub publisher: Vec<LogLine>,
    /// The sweeper's.
    pub sweeper: Vec<LogLine>,
    /// The consumer's.
    pub consumer: Vec<LogLine>,
}

/// Builds the report and checks every guarantee, on the run's own outbox items,
/// orders and consumer results (those carrying its tag, [`Produced::tag`]): the
/// tables may hold earlier runs' too.
pub fn verify(
    produced: &Produced,
    outbox_items: &[OutboxItem],
    orders: &[Item],
    logs: &FunctionLogs,
) -> DemoReport {
    let tag = produced.tag.as_str();
    let outbox_items: Vec<&OutboxItem> = outbox_items
        .iter()
        .filter(|item| own_message(item, tag))
        .collect();
    let orders: Vec<&Item> = orders.iter().filter(|o| own_order(o, tag)).collect();
    let mut report = DemoReport {
        committed: produced.committed.len(),
        minimal: produced.committed.values().filter(|c| c.minimal).count(),
        rolled_back: produced.rolled_back.len(),
        ..DemoReport::default()
    };
    count_outbox(produced, &outbox_items, &mut report);
    count_logs(logs, &mut report);
    let results = consumer_results(logs, tag);
    check_effects(produced, &orders, &results, &mut report);
    report.traces = trace::follow(produced, &outbox_items, &results, &mut report.broken);
    for (id, error) in produced.errors.iter().take(3) {
        report
            .broken
            .push(format!("a commit failed unexpectedly ({id}): {error}"));
    }
    report
}

fn count_outbox(produced: &Produced, items: &[&OutboxItem], report: &mut DemoReport) {
    let mut latencies = Vec::new();
    let mut last_sent = None;
    let mut stuck = Vec::new();
    let mut messages_per_order: BTreeMap<String, usize> = BTreeMap::new();
    for item in items {
        let aggregate = item.pk.clone().unwrap_or_default();
        *messages_per_order
            .entry(order_id(&aggregate).to_owned())
            .or_default() += 1;
        match item.status() {
            Some(Status::Sent) => {
                report.sent += 1;
                let committed = produced.committed.get(order_id(&aggregate));
                if let (Some(c), Some(sent)) = (committed, item.sent_at) {
                    latencies.push(sent - c.commit_ms);
                    last_sent = last_sent.max(Some(sent));
                }
            }
            Some(Status::Failed) => report.failed += 1,
            _ => stuck.push(format!(
                "{aggregate} (retries {}, last error: {})",
                item.retry_count.unwrap_or(0),
                item.last_error.as_deref().unwrap_or("none")
            )),
        }
    }
    latencies.sort_unstable();
    let first_commit = produced.committed.values().map(|c| c.commit_ms).min();
    if let (Some(first), Some(last)) = (first_commit, last_sent) {
        report.publish_span_ms = last - first;
    }
    report.latency_ms = (
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.95),
        percentile(&latencies, 0.99),
    );
    if !stuck.is_empty() {
        report.broken.push(format!(
            "no loss: {} outbox items neither SENT nor FAILED, e.g. {}",
            stuck.len(),
            stuck[..stuck.len().min(3)].join("; ")
        ));
    }
    let missing: Vec<&String> = produced
        .committed
        .keys()
        .filter(|id| !messages_per_order.contains_key(*id))
        .collect();
    if let Some(first) = missing.first() {
        report.broken.push(format!(
            "no loss: {} committed orders have no outbox item (e.g. {first})",
            missing.len()
        ));
    }
    if let Some(id) = produced
        .rolled_back
        .iter()
        .find(|id| messages_per_order.contains_key(*id))
    {
        report.broken.push(format!(
            "nothing phantom: the rolled-back order {id} has an outbox item"
        ));
    }
    if report.failed > 0 {
        report.broken.push(format!(
            "no loss: {} messages FAILED although the demo writes no poison",
            report.failed
        ));
    }
}

fn count_logs(logs: &FunctionLogs, report: &mut DemoReport) {
    let crashed = |lines: &[LogLine]| {
        lines
            .iter()
            .filter(|l| l.message.starts_with("injected crash"))
            .count()
    };
    report.crashes = crashed(&logs.publisher) + crashed(&logs.consumer) + crashed(&logs.sweeper);
    report.recovered = emf_sum(&logs.sweeper, "RecoveredBySweeper") as usize;
    report.publisher_invocations = logs
        .publisher
        .iter()
        .filter(|l| l.message.starts_with("START RequestId"))
        .count();
}

/// The consumer's `RESULT` lines for this run's orders.
fn consumer_results(logs: &FunctionLogs, tag: &str) -> Vec<serde_json::Value> {
    log_records(&logs.consumer, "RESULT")
        .into_iter()
        .filter(|r| {
            tag.is_empty()
                || r.get("id")
                    .and_then(|v| v.as_str())
                    .is_some_and(|id| id.starts_with(tag))
        })
        .collect()
}

fn check_effects(
    produced: &Produced,
    orders: &[&Item],
    results: &[serde_json::Value],
    report: &mut DemoReport,
) {
    // The verdict on effects reads these lines: not finding any is a failure to
    // check, never a pass.
    if results.is_empty() && !produced.committed.is_empty() {
        report.broken.push(
            "effect once: no RESULT line could be read from the consumer's logs (are they JSON? set AWS_LAMBDA_LOG_FORMAT=JSON)".to_owned(),
        );
    }
    let flag =
        |r: &serde_json::Value, name: &str| r.get(name).and_then(|v| v.as_bool()) == Some(true);
    let mut applied_per_order: BTreeMap<String, usize> = BTreeMap::new();
    for r in results {
        if flag(r, "processed") {
            let id = r.get("id").and_then(|v| v.as_str()).unwrap_or_default();
            *applied_per_order.entry(id.to_owned()).or_default() += 1;
        }
    }
    report.duplicates = results.iter().filter(|r| flag(r, "duplicate")).count();
    let stored: BTreeMap<String, (i64, i64)> = orders
        .iter()
        .filter_map(|o| {
            let id = text(o, "id")?;
            Some((id, (number(o, "quantity")?, number(o, "total_cents")?)))
        })
        .collect();
    let mut problems = Vec::new();
    for (id, c) in &produced.committed {
        let want_total = stored_total_cents(c.quantity);
        match stored.get(id) {
            None => problems.push(format!("no loss: the committed order {id} was never applied")),
            Some(&(q, total)) if q != i64::from(c.quantity) || total != want_total => problems.push(
                format!("effect once: order {id} stored as quantity {q}, total {total}; committed quantity {}, total {want_total}", c.quantity),
            ),
            Some(_) => {}
        }
        // A consumer that dies right after its write never logs it, so the logs
        // can only show too many applications, never too few: the store is the truth.
        if let Some(n) = applied_per_order.get(id).filter(|n| **n > 1) {
            problems.push(format!("effect once: order {id} was applied {n} times"));
        }
    }
    for id in stored
        .keys()
        .filter(|id| !produced.committed.contains_key(*id))
    {
        problems.push(format!(
            "nothing phantom: order {id} was applied but never committed"
        ));
    }
    report.applied = stored
        .keys()
        .filter(|id| produced.committed.contains_key(*id))
        .count();
    let total = problems.len();
    report.broken.extend(problems.into_iter().take(5));
    if total > 5 {
        report
            .broken
            .push(format!("... and {} more of the same", total - 5));
    }
}

/// The total the reference consumer stores for an order of `quantity`: 250 cents a
/// unit plus 100 for handling, the effect its `Order` documents
/// (`functions/examples/orders-consumer/src/order.rs`). Written out here, not called
/// from the consumer: an expectation computed by the code under test would agree with
/// whatever that code stores, and the dev kit needs nothing of the example's crate.
pub(crate) fn stored_total_cents(quantity: u8) -> i64 {
    i64::from(quantity) * 250 + 100
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

impl DemoReport {
    /// The summary a person reads.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |label: &str, value: String| {
            let _ = writeln!(out, "{label:<37}{value}");
        };
        line("deployment", self.deployment.clone());
        line(
            "committed transactions",
            format!(
                "{} ({} by the minimal producer)",
                self.committed, self.minimal
            ),
        );
        line("rolled back (on purpose)", self.rolled_back.to_string());
        line("published (SENT)", self.sent.to_string());
        line("failed (FAILED + DLQ)", self.failed.to_string());
        line("effects applied", self.applied.to_string());
        line("duplicates suppressed", self.duplicates.to_string());
        line(
            "on the consumer's dead-letter queue",
            self.consumer_dead_lettered.to_string(),
        );
        line("injected crashes", self.crashes.to_string());
        line("recovered by the sweeper", self.recovered.to_string());
        line(
            "publisher invocations",
            self.publisher_invocations.to_string(),
        );
        line(
            "commit -> publish latency",
            format!(
                "p50 {} ms, p95 {} ms, p99 {} ms",
                self.latency_ms.0, self.latency_ms.1, self.latency_ms.2
            ),
        );
        line("wall time", format!("{:.1} s", self.elapsed.as_secs_f64()));
        self.traces.render(&self.table, &mut out);
        if self.broken.is_empty() {
            out.push_str(
                "guarantees: HELD (no loss, nothing phantom, effect once, terminal states)\n",
            );
        } else {
            out.push_str("guarantees: BROKEN\n");
            for b in &self.broken {
                let _ = writeln!(out, "  - {b}");
            }
        }
        format!("\n=== dynamodb-outbox demo summary ===\n{out}")
    }
}
