//! Ceilings that depend on more than one number, stepped through time one second at
//! a time: a burst against the table's on-demand scaling and the sweeper index's
//! partitions (the producers retry what is throttled, so a backlog builds and then
//! drains), and a backlog of pending messages against the sweeper's cadence.

use super::{NEW_TABLE_WARM_WRITE_UNITS, PARTITION_WRITE_UNITS, PerMessage, Settings};

/// A steady rate with a burst on top of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// Messages a second before and after the burst (the table has served it long
    /// enough for it to be its previous peak).
    pub base_rate: f64,
    /// The burst's rate as a multiple of `base_rate`.
    pub factor: f64,
    /// How long the burst lasts, in seconds.
    pub seconds: u32,
}

/// What the producers met during a burst.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstReport {
    /// Commits throttled at least once (retried by the producer).
    pub throttled: f64,
    /// The most commits waiting for a retry at once.
    pub peak_backlog: f64,
    /// Seconds from the burst's start until nothing waits (`None`: not within the
    /// simulated hour).
    pub seconds_to_clear: Option<u32>,
    /// What throttled first: `"table"`, `"index"` or `"nothing"`.
    pub bound_by: &'static str,
}

/// Commits a second the table and the index accept at once when the table's
/// previous peak is `previous_peak_units` write units a second: on demand serves up
/// to twice its previous peak (at least a new table's warm throughput), within the
/// per-table quota; the index, one partition per shard value.
fn accept_limits(previous_peak_units: f64, settings: &Settings, per: &PerMessage) -> (f64, f64) {
    let table_units = (2.0 * previous_peak_units)
        .max(NEW_TABLE_WARM_WRITE_UNITS)
        .min(settings.table_write_quota);
    let index_units = f64::from(settings.index_shards.max(1)) * PARTITION_WRITE_UNITS;
    (
        table_units / per.table_write_units,
        index_units / per.index_write_units,
    )
}

/// Steps `burst` through an hour. The previous peak stays the base rate's for the
/// burst's length (AWS raises it only after a sustained new peak, about 30 minutes),
/// which is what makes a short burst meet the 2x rule.
pub fn burst(burst: &Burst, settings: &Settings, per: &PerMessage) -> BurstReport {
    let (table_limit, index_limit) =
        accept_limits(burst.base_rate * per.table_write_units, settings, per);
    let limit = table_limit.min(index_limit);
    let bound = if burst.base_rate * burst.factor <= limit {
        "nothing"
    } else if table_limit <= index_limit {
        "table"
    } else {
        "index"
    };
    let mut backlog = 0.0_f64;
    let mut report = BurstReport {
        throttled: 0.0,
        peak_backlog: 0.0,
        seconds_to_clear: None,
        bound_by: bound,
    };
    for second in 0..3_600_u32 {
        let offered = if second < burst.seconds {
            burst.base_rate * burst.factor
        } else {
            burst.base_rate
        };
        let fresh_throttled = (offered - limit).max(0.0);
        let demand = offered + backlog;
        let accepted = demand.min(limit);
        backlog = demand - accepted;
        report.throttled += fresh_throttled;
        report.peak_backlog = report.peak_backlog.max(backlog);
        if second >= burst.seconds && backlog <= 0.0 {
            report.seconds_to_clear = Some(second + 1);
            break;
        }
    }
    report
}

/// Minutes the sweeper takes to publish a backlog of `pending` messages whose
/// stream records are gone (discarded after a destination outage), at
/// [`super::drain_rate`], the destination healthy again.
pub fn drain_minutes(pending: f64, settings: &Settings) -> f64 {
    pending / super::drain_rate(settings) / 60.0
}
