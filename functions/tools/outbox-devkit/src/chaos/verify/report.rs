//! The chaos benchmark's figures and the table it prints.

use super::TraceCounts;
use std::fmt::Write as _;
use std::time::Duration;

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
    /// Copies sent after their message was marked `SENT` (a redelivered stream batch
    /// publishing again what it already published).
    pub sent_after_sent: usize,
    /// Calls AWS denied for a missing permission (the local AWS checks IAM).
    pub iam_denials: usize,
    /// Dead-letter copies on the outbox DLQ.
    pub dead_letter_copies: usize,
    /// Faults injected into AWS calls, crashes included.
    pub faults_injected: usize,
    /// Process crashes.
    pub crashes: usize,
    /// Stream batches the publisher delivered to itself again, from the lowest
    /// reported record or after a success (Lambda's rule; the local AWS ignores it).
    pub replays: usize,
    /// Index reads answered with an earlier answer to the same request (the
    /// index-lag fault; counted among the faults too).
    pub lagged_reads: usize,
    /// Stream batches the publisher ran as concurrent parts (the parallelization
    /// factor AWS applies; the local AWS does not).
    pub split_batches: usize,
    /// The stream mapping's parallelization factor.
    pub parallelization_factor: u32,
    /// The share of every function's AWS calls set to fail (crashes on top).
    pub fault_rate: f64,
    /// How far the messages' traces got, per destination.
    pub traces: TraceCounts,
    /// Examples of what went wrong.
    pub problems: Vec<String>,
    /// From the first commit to quiescence.
    pub wall: Duration,
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
        line(
            "stream batches delivered again",
            format!(
                "{} (Lambda's redelivery rule, applied by the publisher)",
                self.replays
            ),
        );
        line(
            "stream batches run as parts",
            format!(
                "{} (parallelization factor {}: concurrent batches of a shard, per-item order only)",
                self.split_batches, self.parallelization_factor
            ),
        );
        line(
            "index reads answered stale",
            format!("{} (of the faults)", self.lagged_reads),
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
        line("sent again after SENT", self.sent_after_sent.to_string());
        line("IAM denials", self.iam_denials.to_string());
        line("wall time", format!("{:.1} s", self.wall.as_secs_f64()));
        self.traces.render(&mut out);
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
            && self.sent_after_sent == 0
            && self.iam_denials == 0
            && self.failed == self.failed_poison
            && self.traces.held()
    }
}
