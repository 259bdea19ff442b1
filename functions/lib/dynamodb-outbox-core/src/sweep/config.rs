//! The sweeper's configuration: the publisher's, plus retry policy, scan mode and
//! the bounds of one sweep.

use crate::config::{ConfigError, PublisherConfig, parse_or};
use std::time::Duration;

/// Names of the sweeper's variables (the publisher's are read too).
pub mod vars {
    /// Sweeper attempts before a message is given up on.
    pub const MAX_ATTEMPTS: &str = "OUTBOX_MAX_ATTEMPTS";
    /// Seconds after its write before an adopted item is due (scan mode).
    pub const GRACE_SECONDS: &str = "OUTBOX_SWEEP_GRACE_SECONDS";
    /// `backstop` or `on` to adopt items written without index attributes (`off`, the
    /// default, scans nothing).
    pub const SCAN_MODE: &str = "OUTBOX_SWEEP_SCAN_MODE";
    /// First retry delay, seconds.
    pub const BASE_BACKOFF_SECONDS: &str = "OUTBOX_SWEEP_BASE_BACKOFF_SECONDS";
    /// Longest retry delay, seconds.
    pub const MAX_BACKOFF_SECONDS: &str = "OUTBOX_SWEEP_MAX_BACKOFF_SECONDS";
    /// The sweep schedule's period, seconds.
    pub const PERIOD_SECONDS: &str = "OUTBOX_SWEEP_PERIOD_SECONDS";
}

/// Whether, and how fast, the sweeper also scans the table for pending items no index
/// knows about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanMode {
    /// The default: only the index. A scan reads every item of the table, the user's
    /// business items too, so it is asked for, not assumed (issue 39); after a lost
    /// stream range `outbox-ops reconcile` makes one pass ([`super::adopt_pass`]).
    #[default]
    Off,
    /// A slow, bounded scan (one page of 100 items per sweep, resumed
    /// from a saved cursor) that finds what nothing else would — an item whose stream
    /// records were trimmed before anyone read them (a mapping disabled for a day), a
    /// discarded range already past the stream's retention. Costs one small read per
    /// sweep; covers a table of N items every N / 100 sweeps.
    Backstop,
    /// Minimal producers as the rule, not the exception: every sweep reads up to 4 ×
    /// 2 pages of 1000 items, so their items are found within minutes.
    On,
}

impl ScanMode {
    /// Segments, items per page and pages per segment one sweep reads, if any.
    pub fn scan_bounds(self, limits: &SweepLimits) -> Option<(u32, i32, u32)> {
        match self {
            ScanMode::Off => None,
            ScanMode::Backstop => Some((1, 100, 1)),
            ScanMode::On => Some((
                limits.scan_segments.max(1),
                limits.scan_page_size,
                limits.scan_pages_per_segment.max(1),
            )),
        }
    }
}

/// Bounds on one sweep, so that one invocation's work stays predictable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepLimits {
    /// Most due items taken in one round of a sweep (one read of the index, of about
    /// as many keys). While more is due, a round claims something and the budget
    /// lasts, the sweep reads the index again and goes on: the time budget, not a count
    /// of rounds, bounds a sweep.
    pub max_items: usize,
    /// Items claimed and published together (one `Publisher::process` call).
    pub chunk: usize,
    /// Chunks of a round claimed and published at once (they never share an
    /// aggregate): a worker's drain rate is this many chunks' request latencies in
    /// parallel.
    pub chunk_concurrency: usize,
    /// Index query page size.
    pub page_size: i32,
    /// Claims in flight at once, per chunk.
    pub concurrency: usize,
    /// Index shards queried at once.
    pub query_concurrency: usize,
    /// Parallel scan segments (scan mode).
    pub scan_segments: u32,
    /// Items each segment reads per page (scan mode).
    pub scan_page_size: i32,
    /// Pages each segment reads per sweep (scan mode); the next sweep continues.
    pub scan_pages_per_segment: u32,
}

impl Default for SweepLimits {
    fn default() -> Self {
        SweepLimits {
            max_items: 1000,
            chunk: 100,
            chunk_concurrency: 4,
            page_size: 100,
            concurrency: 16,
            query_concurrency: 16,
            scan_segments: 4,
            scan_page_size: 1000,
            scan_pages_per_segment: 2,
        }
    }
}

/// The sweeper's configuration: the publisher's, plus retry policy and scan mode.
#[derive(Debug, Clone)]
pub struct SweeperConfig {
    /// Routing, dead-letter queue, TTL: shared with the stream publisher.
    pub publisher: PublisherConfig,
    /// Attempts before giving up (`OUTBOX_MAX_ATTEMPTS`, default 8).
    pub max_attempts: u32,
    /// Grace before an adopted item is due (`OUTBOX_SWEEP_GRACE_SECONDS`, default 60).
    pub grace: Duration,
    /// Scan for unindexed items (`OUTBOX_SWEEP_SCAN_MODE`: `off` — the default —,
    /// `backstop`, `on`).
    pub scan_mode: ScanMode,
    /// First retry delay (default 30 s).
    pub base_backoff: Duration,
    /// Longest retry delay (default 15 min).
    pub max_backoff: Duration,
    /// How often the schedule runs a sweep (`OUTBOX_SWEEP_PERIOD_SECONDS`, default
    /// 60): a message due now is republished up to this much later, so a FIFO
    /// message's retry delay is capped to land inside the deduplication window
    /// ([`crate::policy::fifo_retry_cap`]).
    pub period: Duration,
    /// Bounds per sweep.
    pub limits: SweepLimits,
}

impl SweeperConfig {
    /// Defaults around a publisher configuration.
    pub fn new(publisher: PublisherConfig) -> Self {
        SweeperConfig {
            publisher,
            max_attempts: 8,
            grace: Duration::from_secs(60),
            scan_mode: ScanMode::Off,
            base_backoff: Duration::from_secs(30),
            max_backoff: Duration::from_secs(900),
            period: Duration::from_secs(60),
            limits: SweepLimits::default(),
        }
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let publisher = PublisherConfig::from_lookup(&lookup)?;
        let max_attempts = parse_or(&lookup, vars::MAX_ATTEMPTS, 8u32, |n| {
            (1..=100)
                .contains(n)
                .then_some(())
                .ok_or("must be between 1 and 100 attempts")
        })?;
        let grace = parse_or(&lookup, vars::GRACE_SECONDS, 60u64, |s| {
            (*s <= 86_400)
                .then_some(())
                .ok_or("must be at most 86400 seconds (stream records live 24 hours)")
        })?;
        let base = parse_or(&lookup, vars::BASE_BACKOFF_SECONDS, 30u64, |s| {
            (1..=86_400)
                .contains(s)
                .then_some(())
                .ok_or("must be between 1 and 86400 seconds")
        })?;
        let max = parse_or(&lookup, vars::MAX_BACKOFF_SECONDS, 900u64, |s| {
            (1..=86_400)
                .contains(s)
                .then_some(())
                .ok_or("must be between 1 and 86400 seconds")
        })?;
        if max < base {
            return Err(ConfigError::Invalid {
                name: vars::MAX_BACKOFF_SECONDS,
                reason: format!(
                    "`{max}` is below {} (`{base}`): the longest delay cannot be shorter than the first",
                    vars::BASE_BACKOFF_SECONDS
                ),
            });
        }
        let period = parse_or(&lookup, vars::PERIOD_SECONDS, 60u64, |s| {
            (1..=86_400)
                .contains(s)
                .then_some(())
                .ok_or("must be between 1 and 86400 seconds (the sweep schedule's rate)")
        })?;
        let scan_mode = match lookup(vars::SCAN_MODE)
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("" | "off") => ScanMode::Off,
            Some("backstop") => ScanMode::Backstop,
            Some("on") => ScanMode::On,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: vars::SCAN_MODE,
                    reason: format!("`{other}` is none of `off` (the default), `backstop`, `on`"),
                });
            }
        };
        Ok(SweeperConfig {
            publisher,
            max_attempts,
            grace: Duration::from_secs(grace),
            scan_mode,
            base_backoff: Duration::from_secs(base),
            max_backoff: Duration::from_secs(max),
            period: Duration::from_secs(period),
            limits: SweepLimits::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::{GOOD, lookup};

    #[test]
    fn configuration_defaults_follow_the_contract() {
        let cfg = SweeperConfig::from_lookup(lookup(GOOD)).expect("valid");
        assert_eq!(cfg.max_attempts, 8);
        assert_eq!(cfg.grace, Duration::from_secs(60));
        assert_eq!(
            cfg.scan_mode,
            ScanMode::Off,
            "no scan of the table by default"
        );
        assert_eq!(cfg.publisher.table_name, "outbox");
    }

    #[test]
    fn the_schedule_period_is_read_and_checked() {
        let cfg = SweeperConfig::from_lookup(lookup(GOOD)).expect("valid");
        assert_eq!(cfg.period, Duration::from_secs(60));
        let mut vars = GOOD.to_vec();
        vars.push(("OUTBOX_SWEEP_PERIOD_SECONDS", "120"));
        let cfg = SweeperConfig::from_lookup(lookup(&vars)).expect("valid");
        assert_eq!(cfg.period, Duration::from_secs(120));
        let mut bad = GOOD.to_vec();
        bad.push(("OUTBOX_SWEEP_PERIOD_SECONDS", "0"));
        let err = SweeperConfig::from_lookup(lookup(&bad)).expect_err("zero");
        assert!(err.to_string().contains("OUTBOX_SWEEP_PERIOD_SECONDS"), "{err}");
    }

    #[test]
    fn configuration_reads_and_checks_every_sweeper_variable() {
        let mut vars = GOOD.to_vec();
        vars.extend([
            ("OUTBOX_MAX_ATTEMPTS", "3"),
            ("OUTBOX_SWEEP_GRACE_SECONDS", "0"),
            ("OUTBOX_SWEEP_SCAN_MODE", "ON"),
            ("OUTBOX_SWEEP_BASE_BACKOFF_SECONDS", "2"),
            ("OUTBOX_SWEEP_MAX_BACKOFF_SECONDS", "20"),
        ]);
        let cfg = SweeperConfig::from_lookup(lookup(&vars)).expect("valid");
        assert_eq!(cfg.max_attempts, 3);
        assert_eq!(cfg.grace, Duration::ZERO);
        assert_eq!(cfg.scan_mode, ScanMode::On);
        assert_eq!(cfg.base_backoff, Duration::from_secs(2));
        assert_eq!(cfg.max_backoff, Duration::from_secs(20));

        for (name, bad) in [
            ("OUTBOX_MAX_ATTEMPTS", "0"),
            ("OUTBOX_MAX_ATTEMPTS", "many"),
            ("OUTBOX_SWEEP_SCAN_MODE", "sometimes"),
            ("OUTBOX_SWEEP_MAX_BACKOFF_SECONDS", "1"),
        ] {
            let mut vars = GOOD.to_vec();
            vars.push(("OUTBOX_SWEEP_BASE_BACKOFF_SECONDS", "5"));
            vars.push((name, bad));
            let err = SweeperConfig::from_lookup(lookup(&vars)).expect_err(bad);
            assert!(err.to_string().contains(name), "{err}");
        }
        // The publisher's own checks still apply.
        let err = SweeperConfig::from_lookup(lookup(&GOOD[1..])).expect_err("no table");
        assert!(err.to_string().contains("OUTBOX_TABLE_NAME"), "{err}");
    }
}
