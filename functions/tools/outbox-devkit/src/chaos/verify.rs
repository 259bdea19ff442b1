//! The chaos verdict, from the final state only: what was committed, the outbox
//! items, the orders the consumers stored, what they logged, the FIFO queue's
//! deliveries and the dead-letter queue's copies.

use super::workload::{Committed, Planned};
use crate::deployment::{LogLine, log_records};
use dynamodb_outbox::schema::{OutboxItem, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

/// One message read from the FIFO destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoDelivery {
    /// Its group (the aggregate).
    pub group: String,
    /// Its `outbox-sequence`.
    pub sequence: u64,
    /// Its `outbox-message-id`.
    pub message_id: String,
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
    /// The FIFO destination's messages, in delivery order.
    pub fifo: Vec<FifoDelivery>,
    /// Each dead-letter copy's `outbox-message-id` and `outbox-aggregate`.
    pub dead_letters: Vec<(Option<String>, Option<String>)>,
    /// Injected faults and crashes, from every function's logs.
    pub faults_injected: usize,
    /// Crashes among them.
    pub crashes: usize,
}

/// The figures the benchmark prints; the zeros are the guarantees.
#[derive(Debug, Clone, Default)]
pub struct ChaosReport {
    /// Transactions committed.
    pub committed: usize,
    /// Rolled back on purpose.
    pub rolled_back: usize,
    /// The producer gave up (its own faults); not committed, not counted as loss.
    pub producer_gave_up: usize,
    /// Outbox items `SENT`.
    pub sent: usize,
    /// Outbox items `FAILED`.
    pub failed: usize,
    /// Of those, poison.
    pub failed_poison: usize,
    /// Committed messages that neither reached their destination nor ended `FAILED`
    /// with a dead-letter copy, and are not `PENDING` either (nothing would retry them).
    pub lost: usize,
    /// Committed messages still `PENDING` when the run stopped waiting: not lost (the
    /// sweeper still publishes them), but the run did not reach quiescence in time.
    pub pending: usize,
    /// Deliveries or effects of messages that were never committed.
    pub phantom: usize,
    /// Orders a consumer reported applying more than once.
    pub effects_twice: usize,
    /// FIFO groups whose deliveries were out of order, or repeated past deduplication
    /// (a group whose later messages are still pending is not out of order).
    pub fifo_violations: usize,
    /// FIFO deliveries of a message already delivered, past the queue's 5-minute
    /// deduplication (a republish after a lost mark): duplicates the consumer's
    /// idempotency absorbs, not a reordering — order is judged on first deliveries.
    pub fifo_repeats: usize,
    /// Dead-letter copies on the outbox DLQ.
    pub dead_letter_copies: usize,
    /// Faults injected into AWS calls, crashes included.
    pub faults_injected: usize,
    /// Process crashes.
    pub crashes: usize,
    /// The share of every function's AWS calls set to fail (crashes on top).
    pub fault_rate: f64,
    /// Examples of what went wrong.
    pub problems: Vec<String>,
    /// From the first commit to quiescence.
    pub wall: Duration,
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

fn check_fifo(
    committed: &[&Planned],
    items: &BTreeMap<String, &OutboxItem>,
    seen: &Observed,
    r: &mut ChaosReport,
) {
    let mut want: BTreeMap<&str, Vec<&Planned>> = BTreeMap::new();
    for p in committed.iter().filter(|p| p.sequence.is_some()) {
        want.entry(p.aggregate.as_str()).or_default().push(p);
    }
    let mut got: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for d in &seen.fifo {
        let seqs = got.entry(d.group.as_str()).or_default();
        if seqs.contains(&d.sequence) {
            r.fifo_repeats += 1;
        } else {
            seqs.push(d.sequence);
        }
    }
    for (group, seqs) in &got {
        if !want.contains_key(group) {
            r.phantom += seqs.len();
            problem(
                r,
                format!("phantom: FIFO group {group} was never committed"),
            );
        }
    }
    for (group, want) in &want {
        let got = got.get(group).cloned().unwrap_or_default();
        // What must have arrived, in commit order: every message that did not end
        // FAILED (poison leaves a gap). Still-pending ones may only be missing at the
        // end: a later message delivered before a pending earlier one is out of order.
        let expected: Vec<(u64, bool)> = want
            .iter()
            .filter(|p| !failed(items, p))
            .filter_map(|p| Some((p.sequence?, pending(items, p))))
            .collect();
        if !delivered_in_order(&got, &expected) {
            r.fifo_violations += 1;
            let committed: Vec<u64> = expected.iter().map(|(s, _)| *s).collect();
            problem(
                r,
                format!("FIFO {group}: delivered {got:?}, committed {committed:?}"),
            );
        }
        for p in want {
            let delivered = p.sequence.is_some_and(|s| got.contains(&s));
            if !delivered && !failed(items, p) && !pending(items, p) {
                r.lost += 1;
                problem(r, format!("lost: FIFO {} never delivered", p.id));
            }
        }
    }
}

/// Whether the message ended `FAILED` (poison, counted by `check_items`).
fn failed(items: &BTreeMap<String, &OutboxItem>, p: &Planned) -> bool {
    items
        .get(&p.id)
        .is_some_and(|i| i.status() == Some(Status::Failed))
}

/// Whether `got` is `expected` (sequence, still pending) in order, each once, cut
/// short only where every message left is still pending.
fn delivered_in_order(got: &[u64], expected: &[(u64, bool)]) -> bool {
    got.len() <= expected.len()
        && got.iter().zip(expected).all(|(g, (e, _))| g == e)
        && expected[got.len()..].iter().all(|(_, pending)| *pending)
}

impl ChaosReport {
    /// The table the benchmark prints.
    pub fn render(&self) -> String {
        let mut out = String::from("\n=== dynamodb-outbox chaos ===\n");
        let mut line = |k: &str, v: String| {
            let _ = writeln!(out, "{k:<34}{v}");
        };
        line("committed", self.committed.to_string());
        line("rolled back (on purpose)", self.rolled_back.to_string());
        line(
            "producer gave up (not committed)",
            self.producer_gave_up.to_string(),
        );
        line("SENT", self.sent.to_string());
        line(
            "FAILED (of them poison)",
            format!("{} ({})", self.failed, self.failed_poison),
        );
        line("dead-letter copies", self.dead_letter_copies.to_string());
        line(
            "faults injected (crashes)",
            format!(
                "{} ({}); {:.0}% of every function's calls set to fail, crashes on top",
                self.faults_injected,
                self.crashes,
                self.fault_rate * 100.0
            ),
        );
        line("lost", self.lost.to_string());
        line("still PENDING at the end", self.pending.to_string());
        line("phantom", self.phantom.to_string());
        line("effects applied twice", self.effects_twice.to_string());
        line("FIFO order violations", self.fifo_violations.to_string());
        line(
            "FIFO repeats past deduplication",
            self.fifo_repeats.to_string(),
        );
        line("wall time", format!("{:.1} s", self.wall.as_secs_f64()));
        for p in &self.problems {
            let _ = writeln!(out, "  - {p}");
        }
        out
    }

    /// Whether every guarantee held.
    pub fn held(&self) -> bool {
        self.lost == 0
            && self.pending == 0
            && self.phantom == 0
            && self.effects_twice == 0
            && self.fifo_violations == 0
            && self.failed == self.failed_poison
    }
}

#[cfg(test)]
mod tests {
    use super::delivered_in_order;

    #[test]
    fn deliveries_in_commit_order_cut_short_by_pending_messages_are_no_violation() {
        let all_sent = [(0, false), (1, false), (2, false)];
        assert!(delivered_in_order(&[0, 1, 2], &all_sent));
        let tail_pending = [(0, false), (1, false), (2, true), (3, true)];
        assert!(delivered_in_order(&[0, 1], &tail_pending));
        assert!(delivered_in_order(&[], &[(0, true), (1, true)]));
    }

    #[test]
    fn a_gap_a_reordering_or_a_repeat_is_a_violation() {
        // 2 delivered while 1 is still pending: 1 will arrive after it.
        assert!(!delivered_in_order(
            &[0, 2],
            &[(0, false), (1, true), (2, false)]
        ));
        assert!(!delivered_in_order(&[1, 0], &[(0, false), (1, false)]));
        assert!(!delivered_in_order(&[0, 1, 1], &[(0, false), (1, false)]));
        // A SENT message that never arrived.
        assert!(!delivered_in_order(&[0], &[(0, false), (1, false)]));
    }
}
