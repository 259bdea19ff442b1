//! The bench's decisions, apart from its I/O: which ladder step is the held rate,
//! its ratio to the raw `TransactWriteItems` rate, and where the time goes when the
//! ratio misses its target.

use crate::demo::DemoReport;

/// A held rate counts as sustained only over steps at least this long.
pub const SUSTAINED_SECONDS: u32 = 60;

/// The held rate over the raw transaction rate that issue 38 asks for.
pub const TARGET_RATIO: f64 = 0.5;

/// One ladder step, as the verdict needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Step {
    /// Messages per second offered.
    pub rate: u32,
    /// Transactions committed.
    pub committed: usize,
    /// Seconds from the first transaction sent to the last answered.
    pub producing_s: f64,
    /// Commit → `SENT` p99 of the step's own messages, ms.
    pub p99_ms: i64,
    /// Every message `SENT`, every guarantee held, p99 under a second.
    pub held: bool,
    /// The producers committed at least 90% of `rate` ([`kept_pace`]).
    pub kept_pace: bool,
}

impl Step {
    /// The step at `rate` from its load's report.
    pub fn of(rate: u32, report: &DemoReport) -> Self {
        Step {
            rate,
            committed: report.committed,
            producing_s: report.producing.as_secs_f64(),
            p99_ms: report.latency_ms.2,
            held: held(report),
            kept_pace: kept_pace(report, rate),
        }
    }

    /// Whether it counts: held, at the rate offered.
    pub fn counts(&self) -> bool {
        self.held && self.kept_pace
    }

    /// Transactions committed per second.
    pub fn committed_rate(&self) -> f64 {
        if self.producing_s > 0.0 {
            self.committed as f64 / self.producing_s
        } else {
            0.0
        }
    }
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

/// The held rate: the highest rate of the steps that counted, in ladder order, before
/// the first that did not (a higher step that happened to pass after a failure is
/// not a rate the stack holds). None when the first step failed.
pub fn highest_held(steps: &[Step]) -> Option<u32> {
    steps
        .iter()
        .take_while(|s| s.counts())
        .map(|s| s.rate)
        .max()
}

/// The held rate over the raw transaction rate, the figure that compares across
/// machines. None when either is missing.
pub fn held_over_raw(held: Option<u32>, raw_rate: f64) -> Option<f64> {
    held.filter(|_| raw_rate > 0.0)
        .map(|rate| f64::from(rate) / raw_rate)
}

/// The raw `TransactWriteItems` measurement: the producers' own transaction (business
/// item + outbox item) as fast as the writers in flight go, into the deployed table
/// with the pipeline publishing what they commit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RawTransacts {
    /// Transactions in flight at once.
    pub in_flight: usize,
    /// Transactions committed.
    pub committed: usize,
    /// Seconds from the first sent to the last answered.
    pub seconds: f64,
    /// Their messages `SENT` at the end.
    pub sent: usize,
    /// Seconds from the first commit to the last `SentAt`.
    pub publish_span_s: f64,
    /// Commit → `SENT` p99, ms.
    pub p99_ms: i64,
}

impl RawTransacts {
    /// The measurement from its load's report.
    pub fn of(in_flight: usize, report: &DemoReport) -> Self {
        RawTransacts {
            in_flight,
            committed: report.committed,
            seconds: report.producing.as_secs_f64(),
            sent: report.sent,
            publish_span_s: report.publish_span_ms as f64 / 1000.0,
            p99_ms: report.latency_ms.2,
        }
    }

    /// Transactions the table accepted per second.
    pub fn rate(&self) -> f64 {
        per_second(self.committed, self.seconds)
    }

    /// Messages the pipeline published per second, first commit to last `SentAt`:
    /// below [`Self::rate`], the publisher fell behind the burst.
    pub fn published_rate(&self) -> f64 {
        per_second(self.sent, self.publish_span_s)
    }
}

fn per_second(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// Where the time goes when the ratio is under `TARGET_RATIO` (0.5); empty when it is
/// not, or when there is no ratio. Otherwise the first step that failed says whether the producers
/// fell behind the offered rate or the pipeline behind the commits; the raw burst
/// says how fast the publisher drains when the table is written as fast as it goes.
pub fn where_time_goes(ratio: Option<f64>, failed: Option<&Step>, raw: &RawTransacts) -> String {
    if ratio.is_none_or(|r| r >= TARGET_RATIO) {
        return String::new();
    }
    let mut out = format!("where the time goes (ratio under {TARGET_RATIO}):\n");
    match failed {
        Some(s) if !s.kept_pace => out.push_str(&format!(
            "  the producers: at {} messages/s offered they committed {:.0}/s, {:.0}% of the raw rate the table took from them alone\n",
            s.rate,
            s.committed_rate(),
            100.0 * s.committed_rate() / raw.rate().max(f64::MIN_POSITIVE)
        )),
        Some(s) => out.push_str(&format!(
            "  the publisher: at {} messages/s the producers kept pace ({:.0}/s) but p99 commit -> publish was {} ms\n",
            s.rate,
            s.committed_rate(),
            s.p99_ms
        )),
        None => out.push_str("  no step failed: the ladder stopped below the stack's rate (add higher steps)\n"),
    }
    out.push_str(&format!(
        "  in the raw burst the table took {:.0} transactions/s and the pipeline published {:.0} messages/s (p99 {} ms)\n",
        raw.rate(),
        raw.published_rate(),
        raw.p99_ms
    ));
    out
}

/// The ladder's verdict, the raw transaction rate beside it, their ratio against the
/// target and, under it, where the time goes.
pub fn held_lines(steps: &[Step], seconds: u32, raw: Option<&RawTransacts>) -> String {
    let best = highest_held(steps);
    let mut out = match best {
        Some(rate) => format!(
            "highest offered rate one stream shard carried with p99 < 1 s (every step {seconds} s of load): {rate} messages/s\n"
        ),
        None => format!("no step of the ladder ({seconds} s each) held p99 < 1 s\n"),
    };
    if seconds < SUSTAINED_SECONDS {
        out.push_str(&format!(
            "  (steps under {SUSTAINED_SECONDS} s: a quick check, not a sustained held rate)\n"
        ));
    }
    let Some(raw) = raw else {
        return out;
    };
    out.push_str(&format!(
        "raw TransactWriteItems rate on the deployed table, pipeline running ({} in flight, {:.1} s): {:.0} transactions/s\n",
        raw.in_flight,
        raw.seconds,
        raw.rate()
    ));
    let ratio = held_over_raw(best, raw.rate());
    out.push_str(&match ratio {
        Some(r) => format!(
            "held rate / raw TransactWriteItems rate: {r:.3} (target >= {TARGET_RATIO}: {})\n",
            if r >= TARGET_RATIO { "met" } else { "not met" }
        ),
        None => "held rate / raw TransactWriteItems rate: none (no held rate)\n".to_owned(),
    });
    // No held rate at all is a ratio of 0 for the explanation.
    let explained = ratio.or(best.is_none().then_some(0.0));
    let failed = steps.iter().find(|s| !s.counts());
    out.push_str(&where_time_goes(explained, failed, raw));
    out
}
