//! Time as an input. The publish and sweep logic read a [`Clock`] they are given
//! (and pass plain `now` values to the pure decisions), so tests set the time instead
//! of sleeping.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Wall-clock time, epoch milliseconds.
///
/// ```
/// use dynamodb_outbox_core::{Clock, ManualClock, SharedClock, SystemClock};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let system: SharedClock = Arc::new(SystemClock);
/// assert!(system.now_ms() > 1_700_000_000_000);
///
/// // In a test: time moves only when told.
/// let clock = ManualClock::at(1_000);
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now_ms(), 61_000);
/// ```
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, epoch milliseconds.
    fn now_ms(&self) -> i64;
}

/// A clock shared by the parts of a function.
pub type SharedClock = Arc<dyn Clock>;

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// The system clock shared: what the functions run with.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// Wall-clock epoch milliseconds (the system clock, read once).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A clock that shows what it was set to and moves only when told: tests, replays.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn at(now_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(now_ms)))
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::at(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(Duration::from_millis(2_500));
        assert_eq!(clock.now_ms(), 3_500);
        clock.set(7);
        assert_eq!(clock.now_ms(), 7);
    }
}
