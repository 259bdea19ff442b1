//! How much time a sweep may use, as plain data: the sweep's notion of now, how long
//! it may start new work, and how long a claim holds an item. The sweeper measures
//! the window on its clock; nothing here reads one.

use std::time::Duration;

/// The time a sweep may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The sweep's notion of now, epoch milliseconds (due times are compared to it).
    pub now_ms: i64,
    /// How long after its start the sweep may start a new page, claim or chunk.
    pub window: Duration,
    /// How long a claim holds an item: past the end of the invocation, so that a
    /// concurrent sweeper never takes an item this one may still publish.
    pub lease: Duration,
}

/// The longest a Lambda invocation runs.
const MAX_INVOCATION: Duration = Duration::from_secs(900);
/// What a sweep uses when the runtime's deadline cannot be real.
pub const FALLBACK_WINDOW: Duration = Duration::from_secs(30);

impl Budget {
    /// The budget of a Lambda invocation ending at `deadline_ms` (epoch ms).
    pub fn until_deadline(deadline_ms: u64, now_ms: i64) -> Self {
        let remaining_ms = i64::try_from(deadline_ms)
            .unwrap_or(i64::MAX)
            .saturating_sub(now_ms)
            .max(0);
        let remaining = Duration::from_millis(u64::try_from(remaining_ms).unwrap_or(0));
        Budget {
            now_ms,
            window: work_window(remaining),
            lease: remaining + Duration::from_secs(60),
        }
    }

    /// A budget of `window` from now (tests, tools).
    pub fn for_window(now_ms: i64, window: Duration) -> Self {
        Budget {
            now_ms,
            window,
            lease: window + Duration::from_secs(60),
        }
    }

    /// The budget of an invocation whose runtime reports `deadline_ms`; `None` when
    /// that deadline cannot be real. Lambda's longest timeout is 15 minutes, and a
    /// deadline a day in the past is no deadline at all: some local runtimes send
    /// seconds, or nothing.
    pub fn for_invocation(deadline_ms: u64, now_ms: i64) -> Option<Self> {
        let remaining_ms = i64::try_from(deadline_ms)
            .unwrap_or(i64::MAX)
            .saturating_sub(now_ms);
        let plausible = -86_400_000..=millis(MAX_INVOCATION);
        plausible
            .contains(&remaining_ms)
            .then(|| Budget::until_deadline(deadline_ms, now_ms))
    }

    /// The epoch millisecond after which a sweep that started at `started_ms` (on
    /// its clock) starts nothing new.
    pub fn stop_at_ms(&self, started_ms: i64) -> i64 {
        started_ms.saturating_add(millis(self.window))
    }
}

/// Whether a sweep that must stop at `stop_at_ms` has used up its window at `now_ms`.
pub fn expired(stop_at_ms: i64, now_ms: i64) -> bool {
    now_ms >= stop_at_ms
}

/// How much of an invocation's remaining time the sweep may spend starting work,
/// keeping a reserve to finish what it started (publish, mark, reschedule) and to
/// report: a fifth of the time, at least 1 s and at most 30 s.
pub fn work_window(remaining: Duration) -> Duration {
    let reserve = (remaining / 5).clamp(Duration::from_secs(1), Duration::from_secs(30));
    remaining.saturating_sub(reserve)
}

/// When an adopted item becomes due: its write time plus the grace (so the stream
/// path has its chance), or now plus the grace when the producer wrote no time.
pub fn adopted_due(created_at_ms: Option<i64>, now_ms: i64, grace: Duration) -> i64 {
    created_at_ms
        .filter(|c| *c > 0)
        .unwrap_or(now_ms)
        .saturating_add(millis(grace))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_window_keeps_a_reserve_to_finish_started_work() {
        assert_eq!(
            work_window(Duration::from_secs(60)),
            Duration::from_secs(48)
        );
        assert_eq!(
            work_window(Duration::from_secs(900)),
            Duration::from_secs(870),
            "reserve capped at 30 s"
        );
        assert_eq!(
            work_window(Duration::from_secs(3)),
            Duration::from_secs(2),
            "at least 1 s"
        );
        assert_eq!(work_window(Duration::from_millis(500)), Duration::ZERO);
    }

    #[test]
    fn a_budget_from_a_lambda_deadline_leases_past_the_invocation() {
        let b = Budget::until_deadline(1_000_060_000, 1_000_000_000);
        assert_eq!(b.window, Duration::from_secs(48));
        assert_eq!(b.lease, Duration::from_secs(120));
        assert_eq!(b.stop_at_ms(5_000), 53_000);
        // A deadline already passed: no work, no panic.
        let late = Budget::until_deadline(5, 1_000);
        assert!(expired(late.stop_at_ms(1_000), 1_000));
    }

    #[test]
    fn a_deadline_that_cannot_be_real_gives_no_budget() {
        let now = 1_700_000_000_000;
        assert!(Budget::for_invocation(1_700_000_060_000, now).is_some());
        assert!(
            Budget::for_invocation(1_700_000, now).is_none(),
            "seconds, not ms"
        );
        assert!(Budget::for_invocation(0, now).is_none(), "no deadline");
        assert!(
            Budget::for_invocation(1_700_001_000_000, now).is_none(),
            "over 15 min"
        );
    }

    #[test]
    fn adopted_items_are_due_after_the_grace_from_their_write_or_from_now() {
        let g = Duration::from_secs(60);
        assert_eq!(adopted_due(Some(1_000), 50_000, g), 61_000);
        assert_eq!(adopted_due(None, 50_000, g), 110_000);
        assert_eq!(adopted_due(Some(0), 50_000, g), 110_000);
    }
}
