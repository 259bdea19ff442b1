//! The sweeper's drain of a backlog on a deployed stack (`outbox-devkit bench
//! drain`, issue 38): `items` pending outbox items, already in the sweeper index and
//! due, written so that only the sweeper publishes them; the local AWS's raw read
//! rates measured in the same run; then the deployed sweeper invoked — as many
//! workers at once as the stack's schedule runs, each with its group — until the
//! index has no due item. Printed: the drain rate beside the raw read rates and their
//! ratio (what compares across machines; the rates alone say as much about the
//! machine), and every backlog item's final status.
//!
//! The sweeper's schedule is disabled from the backlog's first write to the end (and
//! enabled again, also after a failure), so that every sweep of the drain is one of
//! ours, counted; the rest of the stack runs as deployed (the example consumer reads
//! what is sent).

mod backlog;
mod raw_read;
mod sweep;

pub use backlog::{BATCH, Item, Written, key_of, pending, placeholder};
pub use raw_read::RawReads;
pub use sweep::{Invocations, Timeline, payload, summary_count, sweeps_in_log};

use crate::aws::Clients;
use crate::demo::produce::IN_FLIGHT;
use crate::deployment::{Deployment, environment};
use dynamodb_outbox::SweepShards;
use raw_read::{ReadKind, read_for, settle};
use std::collections::HashMap;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// Backlog items.
    pub items: usize,
    /// Seconds of each raw read measurement (0: skip them).
    pub raw_seconds: u32,
    /// Sweeper workers at once (None: as many as the stack's schedule runs).
    pub workers: Option<usize>,
    /// How the functions were built, for the report (`release`, `debug`).
    pub build: String,
    /// The longest the drain may take before it is reported unfinished.
    pub limit: Duration,
}

/// What the run measured.
#[derive(Debug, Clone, Default)]
pub struct DrainReport {
    /// The deployment's prefix.
    pub prefix: String,
    /// How its functions were built.
    pub build: String,
    /// Backlog items.
    pub items: usize,
    /// Shards of the index.
    pub shards: usize,
    /// The placeholders' pass and the items' pass.
    pub written: (Written, Written),
    /// Seconds the local AWS took to answer reads promptly after the writes.
    pub settle_seconds: f64,
    /// Consistent `GetItem`s, then index `Query` pages (None when skipped).
    pub raw: Option<(RawReads, RawReads)>,
    /// Sweeper workers at once.
    pub workers: usize,
    /// What this command's invocations did.
    pub invocations: Invocations,
    /// Every sweep in the drain's time by the sweeper's log (the schedule's included):
    /// (sweeps, items marked); None when the log could not be read.
    pub logged: Option<(usize, u64)>,
    /// When the index had no due item, and when it was empty.
    pub timeline: Timeline,
    /// Items left in the index at the end (due or not).
    pub left: usize,
    /// The backlog's items by status at the end.
    pub statuses: HashMap<String, usize>,
}

/// Query page size of the raw index reads: the sweeper's index page.
const INDEX_PAGE: i32 = 100;

impl DrainReport {
    /// Items drained by the time the index first held no due item: the backlog less
    /// what the index still held (claims waiting out their lease).
    pub fn drained_by_then(&self) -> usize {
        self.items.saturating_sub(self.timeline.left_then)
    }

    /// Items drained per second while the sweeps worked: [`Self::drained_by_then`]
    /// over the time to then.
    pub fn drain_rate(&self) -> f64 {
        per_second(self.drained_by_then() as f64, self.timeline.no_due_seconds)
    }

    /// Backlog items `SENT` at the end over the time to the index found empty (the
    /// leases of claims left by a sweep's time budget included).
    pub fn overall_rate(&self) -> f64 {
        per_second(self.sent() as f64, self.timeline.empty_seconds)
    }

    /// Backlog items `SENT` at the end.
    pub fn sent(&self) -> usize {
        self.statuses.get("SENT").copied().unwrap_or(0)
    }

    /// Whether every backlog item was `SENT` and no due item is left.
    pub fn drained(&self) -> bool {
        self.sent() == self.items && self.left == 0
    }

    /// The report's lines.
    pub fn render(&self) -> String {
        let (places, items) = self.written;
        let mut out = format!(
            "sweeper drain of a backlog on the deployed stack `{}` (functions: {} build)\n",
            self.prefix, self.build
        );
        out.push_str(&format!(
            "backlog: {} PENDING items, due, in the sweeper index over {} shards; BatchWriteItem of {BATCH}: placeholders {:.1} s, items {:.1} s ({:.0} items/s, {} requests)\n",
            self.items, self.shards, places.seconds, items.seconds, items.rate(), items.requests
        ));
        if let Some((get, query)) = &self.raw {
            out.push_str(&format!(
                "the local AWS answered reads promptly again {:.1} s after the writes\n",
                self.settle_seconds
            ));
            out.push_str(&format!(
                "raw reads of this local AWS in the same run, {} readers: consistent GetItem {:.0} items/s ({:.1} s, {} failed, slowest {} ms); index Query pages of {INDEX_PAGE}: {:.0} items/s ({} pages in {:.1} s, {} failed, slowest {} ms)\n",
                get.readers, get.rate(), get.seconds, get.errors, get.slowest_ms, query.rate(), query.requests, query.seconds, query.errors, query.slowest_ms
            ));
        }
        let (i, t) = (&self.invocations, &self.timeline);
        out.push_str(&format!(
            "drain by {} sweeper worker(s) invoked at once: {} items out of the index in {:.1} s, when it first held no due item: {:.0} items/s; the index empty after {:.1} s ({:.0} items/s over that time, the last claims waiting out their lease)\n",
            self.workers, self.drained_by_then(), t.no_due_seconds, self.drain_rate(), t.empty_seconds, self.overall_rate()
        ));
        out.push_str(&format!(
            "sweeper invocations by this command: {} ({} function errors, {} refused and retried; their summaries: {} found, {} marked, {} index items read, {} per item marked)",
            i.count, i.function_errors, i.refused, i.found, i.marked, i.index_read, ratio(i.index_read as f64, i.marked as f64)
        ));
        out.push_str(&match self.logged {
            Some((sweeps, marked)) => format!("; all sweeps in the sweeper's log meanwhile (its schedule's rule disabled; a tick of it would count here): {sweeps}, {marked} marked\n"),
            None => "; the sweeper's log could not be read\n".to_owned(),
        });
        if let Some((get, query)) = &self.raw {
            out.push_str(&format!(
                "drain rate / raw GetItem rate: {}; drain rate / raw index Query rate: {}\n",
                ratio(self.drain_rate(), get.rate()),
                ratio(self.drain_rate(), query.rate())
            ));
        }
        let count = |s: &str| self.statuses.get(s).copied().unwrap_or(0);
        let others: usize = self
            .statuses
            .iter()
            .filter(|(s, _)| !matches!(s.as_str(), "SENT" | "FAILED"))
            .map(|(_, n)| n)
            .sum();
        out.push_str(&format!(
            "at the end: {} of {} SENT, {} FAILED, {others} other or missing; items left in the index: {}\n",
            self.sent(), self.items, count("FAILED"), self.left
        ));
        out
    }
}

/// `count / seconds`, 0 without time.
fn per_second(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { count / seconds } else { 0.0 }
}

/// `a / b` to three places, or `none` when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}", a / b)
    } else {
        "none".to_owned()
    }
}

/// The topic of the backlog: the deployment's first route with a standard queue (the
/// example's `orders`); else its first route.
fn topic(deployment: &Deployment) -> Result<String, String> {
    let standard = deployment.routes.keys().find(|t| {
        deployment
            .destination(t)
            .is_some_and(|d| !d.ends_with(".fifo"))
    });
    standard
        .or_else(|| deployment.routes.keys().next())
        .cloned()
        .ok_or_else(|| format!("{} routes no topic", deployment.publisher))
}

/// Runs the measurement with the sweeper's schedule disabled, enabling it again after.
pub async fn run(
    clients: &Clients,
    deployment: &Deployment,
    opts: &DrainOptions,
) -> Result<DrainReport, String> {
    let (rules, targets) = sweep::sweeper_rules(clients, deployment).await;
    if rules.is_empty() {
        return Err(format!(
            "no schedule rule invokes {}: is the stack deployed?",
            deployment.sweeper
        ));
    }
    let workers = opts.workers.unwrap_or(targets).max(1);
    let measured = match sweep::set_rules(clients, &rules, false).await {
        Ok(()) => measure(clients, deployment, opts, workers).await,
        Err(e) => Err(e),
    };
    let enabled = sweep::set_rules(clients, &rules, true).await;
    let report = measured?;
    enabled.map(|()| report)
}

/// The measurement itself, with `workers` sweeper workers at once.
async fn measure(
    clients: &Clients,
    deployment: &Deployment,
    opts: &DrainOptions,
    workers: usize,
) -> Result<DrainReport, String> {
    let env = environment(clients, &deployment.sweeper).await?;
    let shards = SweepShards::from_lookup(|name| env.get(name).cloned())
        .map_err(|e| format!("{}: {e}", deployment.sweeper))?;
    let topic = topic(deployment)?;
    let run = format!("{:08x}", fastrand::u32(..));
    let db = &clients.dynamodb;
    let table = &deployment.table;
    let due = dynamodb_outbox_core::clock::now_ms() - 1_000;
    eprintln!(
        "bench drain: writing {} placeholders, then the items",
        opts.items
    );
    let places = (0..opts.items).map(|i| placeholder(&run, i)).collect();
    let places = backlog::write_all(db, table, places, IN_FLIGHT).await?;
    let items = (0..opts.items)
        .map(|i| pending(&run, i, &topic, &shards, due))
        .collect();
    let items = backlog::write_all(db, table, items, IN_FLIGHT).await?;
    let all = shards.all();
    let settle_seconds = settle(db, table, &run, Duration::from_secs(900)).await?;
    let raw = match opts.raw_seconds {
        0 => None,
        s => {
            eprintln!("bench drain: raw reads, {s} s each");
            let length = Duration::from_secs(u64::from(s));
            let get = ReadKind::GetItem {
                run: run.clone(),
                items: opts.items,
            };
            let query = ReadKind::IndexQuery {
                shards: all.clone(),
                page: INDEX_PAGE,
            };
            let get = read_for(db, table, &get, IN_FLIGHT, length).await?;
            let query = read_for(db, table, &query, IN_FLIGHT, length).await?;
            Some((get, query))
        }
    };
    eprintln!(
        "bench drain: invoking {} with {workers} worker(s) until the index has no due item",
        deployment.sweeper
    );
    let since = dynamodb_outbox_core::clock::now_ms();
    let (invocations, timeline, left) =
        sweep::drain(clients, deployment, &all, workers, opts.limit).await?;
    let logged = deployment
        .logs(clients, &deployment.sweeper, since)
        .await
        .ok()
        .map(|lines| sweeps_in_log(lines.iter().map(|l| l.message.as_str())));
    let statuses = sweep::statuses(db, table, &run, opts.items).await?;
    Ok(DrainReport {
        prefix: deployment.prefix.clone(),
        build: opts.build.clone(),
        items: opts.items,
        shards: all.len(),
        written: (places, items),
        raw,
        workers,
        settle_seconds,
        invocations,
        logged,
        timeline,
        left,
        statuses,
    })
}

#[cfg(test)]
mod tests;
