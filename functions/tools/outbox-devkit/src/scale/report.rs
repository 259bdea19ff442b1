//! The table `outbox-devkit scale` prints: each ceiling, what 1k, 10k and 100k
//! messages a second need, what binds first at each, and a tenfold burst on each.

use super::simulate::{Burst, burst, drain_minutes};
use super::sizing::outage_index_writes;
use super::{
    Owner, PerMessage, Settings, binding, ceilings, destination_ceilings, lifted_for, needs,
};
use std::fmt::Write;

/// The rates the table is for.
pub const RATES: [f64; 3] = [1_000.0, 10_000.0, 100_000.0];

/// The whole report for a deployment with `settings`.
pub fn report(settings: &Settings) -> String {
    let per = PerMessage::default();
    let all = ceilings(settings, &per);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "settings: {} index shards, parallelization factor {}, table write quota {:.0}/s, \
         Lambda concurrency {:.0}, {} sweep worker(s) of {:.0} msg/s each every {} min",
        settings.index_shards,
        settings.parallelization_factor,
        settings.table_write_quota,
        settings.lambda_concurrency,
        settings.sweep_workers,
        super::sweep_worker_rate(settings),
        settings.sweep_every_minutes
    );
    let _ = writeln!(
        out,
        "per message: {} table write units, {} index write units",
        per.table_write_units, per.index_write_units
    );
    let opt_in = PerMessage::indexed_at_commit();
    let _ = writeln!(
        out,
        "with index_at_commit(true): {} index write units per message; the index binds at {:.0}/s\n",
        opt_in.index_write_units,
        ceilings(settings, &opt_in)
            .iter()
            .find(|c| c.component.starts_with("sweeper index"))
            .map_or(f64::INFINITY, |c| c.messages_per_second)
    );
    let _ = writeln!(out, "ceilings (messages/s):");
    for c in all.iter().chain(destination_ceilings(settings).iter()) {
        let who = match c.owner {
            Owner::Aws => "AWS",
            Owner::Ours => "ours",
        };
        let carries = if c.messages_per_second.is_finite() {
            format!("{:.0}", c.messages_per_second)
        } else {
            "unbound".to_owned()
        };
        let _ = writeln!(
            out,
            "  {carries:>10}  {:<4}  {}  [lift: {}]",
            who, c.component, c.lift
        );
    }
    let _ = writeln!(out, "\nat each rate:");
    for rate in RATES {
        let n = needs(rate, settings, &per);
        let first = binding(rate, &all).map_or("nothing", |c| c.component);
        let lifted = lifted_for(rate, settings, &per);
        let b = burst(
            &Burst {
                base_rate: rate,
                factor: 10.0,
                seconds: 60,
            },
            &lifted,
            &per,
        );
        let clear = b
            .seconds_to_clear
            .map_or("not within an hour".to_owned(), |s| format!("{s} s"));
        let outage =
            outage_index_writes(rate, lifted.sweep_workers) / f64::from(lifted.index_shards);
        let _ = writeln!(
            out,
            "  {rate:>7.0}/s: table {:.0} WU/s, index {:.0} WU/s per shard, >= {:.0} stream shards, \
             {:.0} publishers; binds first: {first}; with quota {:.0}, {} shards and {} worker(s) (the \
             stacks' for this peak; index in an outage {outage:.0} WU/s per shard), a 10x burst for \
             60 s: {:.0} commits throttled (by {}), clear after {clear}; 10 min of it pending after \
             an outage drains in {:.0} min",
            n.table_write_units,
            n.index_units_per_shard,
            n.stream_shards,
            n.publishers,
            lifted.table_write_quota,
            lifted.index_shards,
            lifted.sweep_workers,
            b.throttled,
            b.bound_by,
            drain_minutes(rate * 600.0, &lifted),
        );
    }
    out
}
