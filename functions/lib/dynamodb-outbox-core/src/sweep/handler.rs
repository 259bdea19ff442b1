//! One sweeper invocation: the budget from the runtime's deadline, then a sweep.
//! The Lambda binary calls this with the invocation's deadline; the tools and
//! the tests call [`Sweeper::sweep`] with a budget of their own.

use super::{SweepGroup, SweepSummary, Sweeper};
use crate::policy::Budget;
use crate::policy::FALLBACK_WINDOW;
use crate::ports::{MessageSink, OutboxStore, SweepStore};

/// The sweeper Lambda's handler: one sweep of `group`'s share of the index within
/// the invocation's remaining time (`deadline_ms`, epoch milliseconds). A deadline
/// that cannot be real (some local runtimes send seconds, or nothing) gives a fixed
/// window rather than no sweep.
pub async fn handle_scheduled_event<K: MessageSink, S: OutboxStore + SweepStore>(
    sweeper: &Sweeper<K, S>,
    deadline_ms: u64,
    group: SweepGroup,
) -> SweepSummary {
    let now = sweeper.publisher.clock.now_ms();
    let budget = Budget::for_invocation(deadline_ms, now).unwrap_or_else(|| {
        tracing::warn!(
            deadline_ms,
            now_ms = now,
            "the runtime's deadline is implausible; sweeping for 30 s"
        );
        Budget::for_window(now, FALLBACK_WINDOW)
    });
    sweeper.sweep_group(budget, group).await
}
