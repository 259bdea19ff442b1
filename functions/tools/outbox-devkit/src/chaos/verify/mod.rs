//! The chaos verdict, from the final state only: what was committed, the outbox
//! items, the orders the consumers stored, what they logged, the FIFO queue's
//! deliveries and the dead-letter queue's copies.

mod fifo;
mod report;
mod resent;
mod traces;

pub use report::ChaosReport;
pub use traces::TraceCounts;

use super::workload::{Committed, Planned};
use crate::deployment::{LogLine, log_records};
use dynamodb_outbox_core::schema::{OutboxItem, Status};
use fifo::check_fifo;
use std::collections::{BTreeMap, BTreeSet};

/// One message read from the FIFO destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoDelivery {
    /// Its group (the aggregate).
    pub group: String,
    /// Its `outbox-sequence`.
    pub sequence: u64,
    /// Its `outbox-message-id`.
    pub message_id: String,
    /// SQS's id of this copy.
    pub sqs_id: String,
    /// When SQS accepted it (`SentTimestamp`, epoch ms).
    pub sent_at_ms: Option<i64>,
    /// Its `traceparent` message attribute.
    pub traceparent: Option<String>,
}

/// Everything the verdict reads.
#[derive(Debug, Default)]
pub struct Observed {
    /// Every outbox item at the end.
    pub outbox_items: Vec<OutboxItem>,
    /// Ids of the orders the consumers stored.
    pub stored_orders: BTreeSet<String>,
    /// Every consumer's log lines.
    pub consumer_logs: Vec<LogLine>,
    /// Those of the consumer of a queue the publisher sends to directly (not through
    /// SNS or EventBridge): its copies' `SentTimestamp` is the publisher's send.
    pub direct_consumer_logs: Vec<LogLine>,
    /// The FIFO destination's messages, in delivery order.
    pub fifo: Vec<FifoDelivery>,
    /// Each dead-letter copy's `outbox-message-id` and `outbox-aggregate`.
    pub dead_letters: Vec<(Option<String>, Option<String>)>,
    /// Injected faults and crashes, from every function's logs.
    pub faults_injected: usize,
    /// Crashes among them.
    pub crashes: usize,
    /// Calls AWS denied, from every function's `AccessDenied` metric.
    pub iam_denials: usize,
    /// Stream batches the publisher delivered to itself again (Lambda's rule).
    pub replays: usize,
    /// Index reads answered with an earlier answer (the index-lag fault).
    pub lagged_reads: usize,
    /// Stream batches the publisher split into concurrent parts (a factor above 1).
    pub split_batches: usize,
}

/// Builds the report.
pub fn verdict(planned: &[(Planned, Committed)], seen: &Observed) -> ChaosReport {
    let mut r = ChaosReport {
        committed: count(planned, Committed::Yes),
        rolled_back: count(planned, Committed::RolledBack),
        producer_gave_up: count(planned, Committed::GaveUp),
        dead_letter_copies: seen.dead_letters.len(),
        faults_injected: seen.faults_injected,
        crashes: seen.crashes,
        iam_denials: seen.iam_denials,
        replays: seen.replays,
        lagged_reads: seen.lagged_reads,
        split_batches: seen.split_batches,
        ..ChaosReport::default()
    };
    let committed: Vec<&Planned> = planned
        .iter()
        .filter(|(_, c)| *c == Committed::Yes)
        .map(|(p, _)| p)
        .collect();
    let items = index_items(&seen.outbox_items);
    check_items(&committed, &items, seen, &mut r);
    check_effects(planned, &committed, &items, seen, &mut r);
    check_fifo(&committed, &items, seen, &mut r);
    traces::check_traces(&committed, &items, seen, &mut r);
    let results = log_records(&seen.direct_consumer_logs, "RESULT");
    resent::check_resent(&results, &seen.fifo, &seen.outbox_items, &mut r);
    if r.iam_denials > 0 {
        let n = r.iam_denials;
        problem(
            &mut r,
            format!(
                "AWS denied {n} calls: a role lacks a grant (the functions' logs name the action)"
            ),
        );
    }
    r
}

fn count(planned: &[(Planned, Committed)], what: Committed) -> usize {
    planned.iter().filter(|(_, c)| *c == what).count()
}

/// Outbox items by order id: the sort key ends with it (minimal items) or the
/// payload names it (library items).
fn index_items(items: &[OutboxItem]) -> BTreeMap<String, &OutboxItem> {
    items
        .iter()
        .filter_map(|i| {
            let from_payload = i
                .payload
                .as_deref()
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
                .and_then(|v| v.get("id")?.as_str().map(str::to_owned));
            let from_key =
                i.sk.as_deref()
                    .and_then(|s| s.rsplit('#').next())
                    .map(str::to_owned);
            Some((from_payload.or(from_key)?, i))
        })
        .collect()
}

fn problem(r: &mut ChaosReport, text: String) {
    if r.problems.len() < 30 {
        r.problems.push(text);
    }
}

fn check_items(
    committed: &[&Planned],
    items: &BTreeMap<String, &OutboxItem>,
    seen: &Observed,
    r: &mut ChaosReport,
) {
    let copies: BTreeSet<&str> = seen
        .dead_letters
        .iter()
        .flat_map(|(id, aggregate)| [id.as_deref(), aggregate.as_deref()])
        .flatten()
        .collect();
    for p in committed {
        let Some(item) = items.get(&p.id) else {
            r.lost += 1;
            problem(
                r,
                format!("lost: {} committed but has no outbox item", p.id),
            );
            continue;
        };
        match item.status() {
            Some(Status::Sent) if !p.poison => r.sent += 1,
            Some(Status::Failed) if p.poison => {
                r.failed += 1;
                r.failed_poison += 1;
                let id = item.message_id.clone().unwrap_or_default();
                let pk = item.pk.clone().unwrap_or_default();
                if !copies.contains(id.as_str()) && !copies.contains(pk.as_str()) {
                    r.lost += 1;
                    problem(
                        r,
                        format!("lost: poison {} FAILED without a dead-letter copy", p.id),
                    );
                }
            }
            Some(Status::Failed) => {
                r.failed += 1;
                r.lost += 1;
                problem(
                    r,
                    format!(
                        "lost: {} is not poison but FAILED: {}",
                        p.id,
                        item.last_error.as_deref().unwrap_or("")
                    ),
                );
            }
            Some(Status::Pending) => {
                r.pending += 1;
                problem(r, format!("pending: {} still PENDING", p.id));
            }
            other => {
                r.sent += usize::from(other == Some(Status::Sent));
                r.lost += 1;
                problem(
                    r,
                    format!("lost: {} ends {other:?} (poison: {})", p.id, p.poison),
                );
            }
        }
    }
}

/// Whether the message is still `PENDING` (counted as such, not as lost).
fn pending(items: &BTreeMap<String, &OutboxItem>, p: &Planned) -> bool {
    items
        .get(&p.id)
        .is_some_and(|i| i.status() == Some(Status::Pending))
}

fn check_effects(
    planned: &[(Planned, Committed)],
    committed: &[&Planned],
    items: &BTreeMap<String, &OutboxItem>,
    seen: &Observed,
    r: &mut ChaosReport,
) {
    let mut applied: BTreeMap<String, usize> = BTreeMap::new();
    let results = log_records(&seen.consumer_logs, "RESULT");
    if results.is_empty() && !committed.is_empty() {
        r.effects_twice += 1;
        problem(r, "no RESULT line could be read from the consumers' logs: effects cannot be counted (are they JSON?)".to_owned());
    }
    for rec in results {
        if rec.get("processed").and_then(|v| v.as_bool()) == Some(true) {
            let id = rec.get("id").and_then(|v| v.as_str()).unwrap_or_default();
            *applied.entry(id.to_owned()).or_default() += 1;
        }
    }
    for (id, n) in applied.iter().filter(|(_, n)| **n > 1) {
        r.effects_twice += 1;
        problem(r, format!("effect twice: {id} applied {n} times"));
    }
    let consumed = |p: &Planned| !p.poison && p.sequence.is_none();
    for p in committed.iter().filter(|p| consumed(p)) {
        if !seen.stored_orders.contains(&p.id) && !pending(items, p) {
            r.lost += 1;
            problem(r, format!("lost: {} ({}) was never applied", p.id, p.topic));
        }
    }
    let committed_ids: BTreeSet<&str> = committed.iter().map(|p| p.id.as_str()).collect();
    for id in &seen.stored_orders {
        if !committed_ids.contains(id.as_str()) {
            r.phantom += 1;
            let planned_as = planned.iter().find(|(p, _)| &p.id == id).map(|(_, c)| *c);
            problem(
                r,
                format!("phantom: {id} applied but not committed ({planned_as:?})"),
            );
        }
    }
}

/// Whether the message ended `FAILED` (poison, counted by `check_items`).
fn failed(items: &BTreeMap<String, &OutboxItem>, p: &Planned) -> bool {
    items
        .get(&p.id)
        .is_some_and(|i| i.status() == Some(Status::Failed))
}
