//! `outbox-devkit regions`: the outbox on a global table, deployed in two regions of
//! the local AWS (`scripts/deploy-local terraform-global`), driven end to end:
//!
//! 1. a mixed workload committed in both regions — the library producer (its items
//!    homed where they were committed) and a minimal producer (no `HomeRegion`: the
//!    default home's) — is published once across both regions' queues, each message
//!    by its home region;
//! 2. one region goes down (its stream mapping disabled, its sweeper and recovery
//!    throttled to zero); messages committed there wait; `outbox_ops::rehome` fails
//!    them over into the other region, as `outbox-ops failover --from` run there does,
//!    and that region's sweeper publishes each once;
//! 3. more messages committed while it is down are failed over and straight back
//!    (`failback`, as `outbox-ops failback --to` does), the region comes back, and
//!    each is published once — by the returned region, or by the surviving one if its
//!    scheduled sweep took it first — while the returned region's sweeper runs beside
//!    its mapping's replay (failed back, they are due only after the sweeper's grace).
//!
//! The design allows one duplicate during a failover: a message the failed region
//! published whose `SENT` mark had not replicated when it went down is published again
//! by the other (same message id). MiniStack replicates synchronously, so here none
//! can arise; the report counts duplicates all the same.

mod report;
mod stack;
mod tally;
mod workload;

pub use report::{PhaseCount, RegionsReport};
pub use stack::RegionStack;

use aws_config::SdkConfig;
use outbox_ops::{Rehome, Table, rehome};
use std::time::{Duration, Instant};
use tally::{Tally, drain_into, wait_sent};

use workload::{Committed, Producer, commit};

/// How long a failback leaves messages to the returned region's replay before its
/// sweeper may take them (`outbox-ops failback`'s default).
const FAILBACK_DUE_AFTER: Duration = Duration::from_secs(60);
/// How long a failback waits for each entry to stay as read: none here. The settle
/// (the CLI's default 360 s, the longest lease a deployed sweeper holds) guards against
/// an operator's clock ahead of the sweeper's; this run and the local stack share one
/// clock, so the failback's own rule — an entry due after now is a lease or a backoff,
/// and left — keeps it from a message a sweep is publishing. A settle here also let the
/// survivor's scheduled sweep publish every failed-over message first, so that nothing
/// was failed back and the failback went unexercised.
const FAILBACK_SETTLE: Duration = Duration::ZERO;

/// Long enough for a sweep already running when its function is throttled to end.
const SWEEP_IN_FLIGHT: Duration = Duration::from_secs(5);

/// What to run.
#[derive(Debug, Clone)]
pub struct RegionsOptions {
    /// The deployment's prefix (`scripts/deploy-local terraform-global --prefix`).
    pub prefix: String,
    /// The global table's two regions.
    pub regions: Vec<String>,
    /// Messages of the mixed workload, across both regions.
    pub messages: usize,
    /// One message in N of the mixed workload written by the minimal producer.
    pub minimal_every: usize,
    /// Messages committed in the failed region and failed over.
    pub failover_messages: usize,
    /// Messages committed in the failed region, failed over and back.
    pub failback_messages: usize,
    /// The region that goes down; `None`: the second.
    pub fail: Option<String>,
    /// How long each phase may take to publish everything.
    pub settle_timeout: Duration,
}

impl Default for RegionsOptions {
    fn default() -> Self {
        RegionsOptions {
            prefix: "gt".into(),
            regions: vec!["us-east-1".into(), "eu-west-1".into()],
            messages: 2_000,
            minimal_every: 7,
            failover_messages: 200,
            failback_messages: 50,
            fail: None,
            settle_timeout: Duration::from_secs(240),
        }
    }
}

/// Runs the three phases on the deployment; the counts, or why the run could not go on.
pub async fn run(base: &SdkConfig, opts: &RegionsOptions) -> Result<RegionsReport, String> {
    let [first, second] = opts.regions.as_slice() else {
        return Err(format!("two regions, got {:?}", opts.regions));
    };
    let stacks = [
        RegionStack::discover(base, &opts.prefix, first).await?,
        RegionStack::discover(base, &opts.prefix, second).await?,
    ];
    let failed = opts.fail.clone().unwrap_or_else(|| second.clone());
    let (down, up) = match stacks.iter().position(|s| s.region == failed) {
        Some(0) => (&stacks[0], &stacks[1]),
        Some(_) => (&stacks[1], &stacks[0]),
        None => return Err(format!("--fail {failed} is not one of {:?}", opts.regions)),
    };
    // Drain what earlier runs left, so that only this run's deliveries are counted.
    drain_into(&mut Tally::default(), &stacks).await?;
    let run = format!("rg{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let mut report = RegionsReport::default();
    report.phases.push(both_up(&stacks, opts, &run).await?);
    let stopped = down.stop().await?;
    eprintln!(
        "regions: {} down (stream mapping disabled, sweeper and recovery at concurrency 0)",
        down.region
    );
    let failover = failover(&stacks, down, up, opts, &run).await;
    let failback = match failover {
        Ok(phase) => {
            report.phases.push(phase);
            failback(&stacks, down, up, stopped, opts, &run).await?
        }
        Err(e) => {
            // Leave the deployment as it was deployed before saying why.
            let _ = down.start(stopped).await;
            return Err(e);
        }
    };
    report.phases.push(failback);
    Ok(report)
}

/// Both regions up: the mixed workload committed in both at once.
async fn both_up(
    stacks: &[RegionStack; 2],
    opts: &RegionsOptions,
    run: &str,
) -> Result<PhaseCount, String> {
    let started = Instant::now();
    let per_region = opts.messages / 2;
    let minimal = per_region.checked_div(opts.minimal_every).unwrap_or(0);
    let tag = format!("{run}m");
    eprintln!(
        "regions: committing {} messages in each of {} and {} ({} of them by the minimal producer, no HomeRegion)",
        per_region, stacks[0].region, stacks[1].region, minimal
    );
    let commits = |s: &RegionStack| {
        let tag = format!("{tag}-{}", s.region);
        let s = s.clone();
        async move {
            let mut all = commit(
                &s,
                Producer::Library,
                &format!("{tag}-lib"),
                per_region - minimal,
            )
            .await?;
            all.extend(commit(&s, Producer::Minimal, &format!("{tag}-min"), minimal).await?);
            Ok::<_, String>(all)
        }
    };
    let (a, b) = tokio::join!(commits(&stacks[0]), commits(&stacks[1]));
    let committed = [a?, b?].concat();
    eprintln!(
        "regions: {} committed in {}s; waiting until every one is SENT",
        committed.len(),
        started.elapsed().as_secs()
    );
    let count = settle(stacks, &tag, &committed, opts, "both regions up", |c| {
        Some(c.home.clone())
    })
    .await?;
    eprintln!(
        "regions: both regions up: done in {}s",
        started.elapsed().as_secs()
    );
    Ok(count)
}

/// One region down: messages committed there, failed over into the other, which
/// publishes them.
async fn failover(
    stacks: &[RegionStack; 2],
    down: &RegionStack,
    up: &RegionStack,
    opts: &RegionsOptions,
    run: &str,
) -> Result<PhaseCount, String> {
    let tag = format!("{run}f");
    let committed = commit(down, Producer::Library, &tag, opts.failover_messages).await?;
    // A few seconds for anything that would publish them anyway to show itself.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut early = Tally::default();
    drain_into(&mut early, stacks).await?;
    eprintln!(
        "regions: {} committed in {} while it is down; published meanwhile: {}",
        committed.len(),
        down.region,
        early.total()
    );
    let moved = fail_over(down, up).await?;
    eprintln!(
        "regions: failover: {moved} pending messages of {} re-homed into {}",
        down.region, up.region
    );
    let mut count = settle_with_sweeps(
        stacks,
        Sweeps::PublishingAll(up),
        &tag,
        &committed,
        opts,
        "failover",
        early,
    )
    .await?;
    count.notes.push(format!(
        "failover re-homed {moved} pending messages from {} into {}; published twice during it: {} \
         (a message the failed region published whose SENT mark had not replicated would be; \
         MiniStack replicates synchronously, so none can be here)",
        down.region, up.region, count.twice
    ));
    Ok(count)
}

/// Messages committed in the down region, failed over and straight back, then the
/// region started again.
async fn failback(
    stacks: &[RegionStack; 2],
    down: &RegionStack,
    up: &RegionStack,
    stopped: stack::Stopped,
    opts: &RegionsOptions,
    run: &str,
) -> Result<PhaseCount, String> {
    let tag = format!("{run}b");
    // The surviving region's scheduled sweep held between the failover and the
    // failback: failed over, the messages are due there at once, and a tick in between
    // (more likely the slower the machine) published all 20 before any went back,
    // leaving the failback and the replay unexercised.
    let held = up.hold_sweeper().await?;
    let moved = async {
        let committed = commit(down, Producer::Library, &tag, opts.failback_messages).await?;
        // A sweep that started before the hold finishes its (local, one-second) run.
        tokio::time::sleep(SWEEP_IN_FLIGHT).await;
        let over = fail_over(down, up).await?;
        let to = down.region.clone();
        let failback = Rehome::Failback {
            to,
            grace: FAILBACK_DUE_AFTER,
            settle: FAILBACK_SETTLE,
        };
        let back = rehome_from(up, &failback).await?;
        Ok::<_, String>((committed, over, back))
    }
    .await;
    let released = up.release(held).await;
    let (committed, over, back) = match moved.and_then(|moved| released.map(|()| moved)) {
        Ok(moved) => moved,
        Err(e) => {
            // Leave the deployment as it was deployed before saying why.
            let _ = down.start(stopped).await;
            return Err(e);
        }
    };
    eprintln!(
        "regions: failback: {over} failed over, {back} returned to {}; starting it again",
        down.region
    );
    down.start(stopped).await?;
    // Swept at once and every few seconds while its mapping replays the outage's
    // records: the sweep a schedule could run at that moment. When a failback made the
    // messages due at once, that sweep raced the replay and published each of 20 twice;
    // due after the grace, the sweep leaves them to the replay.
    let mut count = settle_with_sweeps(
        stacks,
        Sweeps::Beside(down),
        &tag,
        &committed,
        opts,
        "failback",
        Tally::default(),
    )
    .await?;
    count.notes.push(format!(
        "failback returned {back} of {over} failed over to {} ({} published by {}'s scheduled \
         sweep before the failback), due after the sweeper's grace; {} came back, its \
         mapping replayed them while its sweeper ran",
        down.region,
        over - back.min(over),
        up.region,
        down.region
    ));
    Ok(count)
}

/// `outbox-ops failover --from <down>` run against `up`, with the default home the
/// deployments share.
async fn fail_over(down: &RegionStack, up: &RegionStack) -> Result<usize, String> {
    let rehome = Rehome::Failover {
        from: down.region.clone(),
        to: up.region.clone(),
        from_is_default_home: up.default_home == down.region,
    };
    rehome_from(up, &rehome).await
}

/// A re-home run against `stack`'s region, as the CLI runs it (its default key names).
async fn rehome_from(stack: &RegionStack, what: &Rehome) -> Result<usize, String> {
    let table = Table::new(&stack.table);
    let report = rehome(
        &stack.clients.dynamodb,
        &table,
        what,
        dynamodb_outbox_core::clock::now_ms(),
    )
    .await
    .map_err(|e| format!("{}: {what:?}: {e}", stack.region))?;
    Ok(report.moved.len())
}

/// Waits until the phase's messages are `SENT`, then counts every delivery.
async fn settle(
    stacks: &[RegionStack; 2],
    tag: &str,
    committed: &[Committed],
    opts: &RegionsOptions,
    name: &str,
    publisher: impl Fn(&Committed) -> Option<String>,
) -> Result<PhaseCount, String> {
    wait_sent(&stacks[0], tag, committed.len(), opts.settle_timeout).await?;
    let mut tally = Tally::default();
    drain_into(&mut tally, stacks).await?;
    let regions: Vec<String> = stacks.iter().map(|s| s.region.clone()).collect();
    Ok(PhaseCount::of(name, &regions, committed, &tally, publisher))
}

/// Whose sweeper a phase runs every few seconds (what its schedule does each minute).
enum Sweeps<'a> {
    /// This region's, which must publish every message of the phase (a failover).
    PublishingAll(&'a RegionStack),
    /// This region's, beside its stream mapping; either region may publish a message.
    Beside(&'a RegionStack),
}

impl Sweeps<'_> {
    fn region(&self) -> &RegionStack {
        match self {
            Sweeps::PublishingAll(s) | Sweeps::Beside(s) => s,
        }
    }
}

/// As [`settle`], running a region's sweeper every few seconds meanwhile (`sweeps`);
/// `tally` holds deliveries already counted.
async fn settle_with_sweeps(
    stacks: &[RegionStack; 2],
    sweeps: Sweeps<'_>,
    tag: &str,
    committed: &[Committed],
    opts: &RegionsOptions,
    name: &str,
    mut tally: Tally,
) -> Result<PhaseCount, String> {
    let started = Instant::now();
    loop {
        if let Err(e) = sweeps.region().sweep_now().await {
            eprintln!("regions: {e} (the next sweep retries)");
        }
        let left = opts.settle_timeout.saturating_sub(started.elapsed());
        let wait = left.min(Duration::from_secs(5));
        if wait_sent(&stacks[0], tag, committed.len(), wait)
            .await
            .is_ok()
        {
            break;
        }
        let sent = tally::statuses(&stacks[0], tag).await?;
        eprintln!(
            "regions:   {name}: {}/{} SENT ({}s)",
            sent.get("SENT").copied().unwrap_or(0),
            committed.len(),
            started.elapsed().as_secs()
        );
        if left.is_zero() {
            return Err(format!(
                "{name}: not every message SENT after {}s",
                opts.settle_timeout.as_secs()
            ));
        }
    }
    eprintln!(
        "regions: {name}: every message SENT in {}s",
        started.elapsed().as_secs()
    );
    drain_into(&mut tally, stacks).await?;
    let regions: Vec<String> = stacks.iter().map(|s| s.region.clone()).collect();
    let want = match sweeps {
        Sweeps::PublishingAll(s) => Some(s.region.clone()),
        Sweeps::Beside(_) => None,
    };
    Ok(PhaseCount::of(name, &regions, committed, &tally, |_| {
        want.clone()
    }))
}
