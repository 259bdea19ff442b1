//! The demo: the deployed system on the local AWS, driven from outside.
//!
//! `scripts/demo` packages the functions, starts MiniStack and deploys one of our
//! stacks into it; this module then [`produce`]s orders (library and minimal
//! producers, some transactions rolled back), [`observe`]s the pipeline — the real
//! `outbox-publisher` behind the stream's event source mapping, the real
//! `orders-consumer` behind the queue's, the `outbox-sweeper` on its EventBridge
//! schedule — with live counters until it settles, and [`verify`]s every guarantee
//! from the final state and the functions' own logs.
//!
//! Crash options switch on the functions' fault injection (a debug build with the
//! `fault-injection` feature): the processes really abort, after publishing and
//! before marking, or after storing an order and before answering the queue.

pub mod observe;
pub mod produce;
pub mod trace;
pub mod verify;

use crate::aws::Clients;
use crate::deployment::{Deployment, JSON_LOGS};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
pub use verify::DemoReport;

/// Demo settings.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Orders to commit.
    pub orders: usize,
    /// Orders committed per second (0: as fast as possible).
    pub rate: u32,
    /// Stop committing after this long even if fewer than `orders` were committed
    /// (the latency bench's raw transaction rate: as many as the table takes in a
    /// given time). None: all `orders`.
    pub produce_for: Option<Duration>,
    /// One transaction in this many rolls back (0: none).
    pub rollback_every: usize,
    /// One order in this many is written by the minimal producer (0: none).
    pub minimal_every: usize,
    /// When a library-written message becomes the sweeper's to recover.
    pub sweep_grace: Duration,
    /// Probability, per call to a destination, that the publisher process dies after
    /// the destination accepted the batch and before the batch is marked `SENT`.
    pub publisher_crash: f64,
    /// Probability, per order stored, that the consumer process dies right after the
    /// write and before answering the queue (the batch comes back after its
    /// visibility timeout). Per order: with batches of 10, 0.03 crashes about one
    /// invocation in four.
    pub consumer_crash: f64,
    /// Longest wait for the pipeline to settle after the last commit.
    pub settle_timeout: Duration,
    /// Print live counters.
    pub progress: bool,
    /// This run's mark: the prefix of every order id it commits (so of its outbox
    /// items' aggregates and of the orders the consumer stores). The wait and the
    /// verdict count only what carries it, so that runs one after another against
    /// one deployment are each judged on their own messages. Empty: everything in
    /// the tables counts (a demo on a fresh deployment).
    pub tag: String,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            orders: 200,
            rate: 50,
            produce_for: None,
            rollback_every: 10,
            minimal_every: 7,
            sweep_grace: Duration::from_secs(5),
            publisher_crash: 0.0,
            consumer_crash: 0.0,
            settle_timeout: Duration::from_secs(180),
            progress: true,
            tag: String::new(),
        }
    }
}

/// Runs the demo against a deployment.
pub async fn run(
    clients: &Clients,
    deployment: &Deployment,
    opts: &DemoOptions,
) -> Result<DemoReport, String> {
    inject_crashes(clients, deployment, opts).await?;
    let started = Instant::now();
    let since_ms = dynamodb_outbox_core::clock::now_ms() - 1_000;
    let committed = Arc::new(AtomicUsize::new(0));
    let producing = {
        let (clients, table, opts, committed) = (
            clients.clone(),
            deployment.table.clone(),
            opts.clone(),
            committed.clone(),
        );
        tokio::spawn(async move {
            let began = Instant::now();
            let produced = produce::produce(&clients, &table, &opts, committed).await;
            (produced, began.elapsed())
        })
    };
    // On a terminal the counters redraw in place; in a log, a line every 5 s.
    let terminal = std::io::stderr().is_terminal();
    let last_line = std::sync::Mutex::new(Instant::now());
    let progress = |snap: &observe::Snapshot| {
        if !opts.progress {
            return;
        }
        let line = format!(
            "committed {:>5}  pending {:>5}  sent {:>5}  failed {:>3}  orders stored {:>5}  on the queue {:>4}",
            committed.load(Ordering::Relaxed),
            snap.pending,
            snap.sent,
            snap.failed,
            snap.stored,
            snap.in_queue
        );
        if terminal {
            eprint!("\r{line}   ");
        } else if let Ok(mut last) = last_line.lock()
            && last.elapsed() >= Duration::from_secs(5)
        {
            eprintln!("{line}");
            *last = Instant::now();
        }
    };
    // The counters scan both tables: without them (the latency bench), no scan while
    // the load runs, so that the local AWS serves the pipeline rather than the
    // observer (at a sustained rate the scans grow with the table every 500 ms).
    while opts.progress && !producing.is_finished() {
        progress(&observe::snapshot(clients, deployment, &opts.tag).await?);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (produced, producing) = producing.await.map_err(|e| e.to_string())?;
    settle(
        clients,
        deployment,
        produced.committed.len(),
        opts,
        &progress,
    )
    .await?;
    if opts.progress {
        eprintln!();
    }
    let elapsed = started.elapsed();
    let mut report = judge(clients, deployment, &produced, since_ms).await?;
    report.elapsed = elapsed;
    report.producing = producing;
    Ok(report)
}

/// The verdict from the final state and the functions' logs since `since_ms`.
async fn judge(
    clients: &Clients,
    deployment: &Deployment,
    produced: &produce::Produced,
    since_ms: i64,
) -> Result<DemoReport, String> {
    // Let the last invocations' log lines arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let d = deployment;
    let logs = verify::FunctionLogs {
        publisher: d
            .logs(clients, &d.publisher, since_ms)
            .await
            .map_err(|e| e.to_string())?,
        sweeper: d
            .logs(clients, &d.sweeper, since_ms)
            .await
            .unwrap_or_default(),
        consumer: d
            .logs(clients, &d.consumer, since_ms)
            .await
            .map_err(|e| e.to_string())?,
    };
    let outbox_items = observe::outbox_items(observe::scan_all(clients, &deployment.table).await?);
    let orders = observe::scan_all(clients, &deployment.orders_table).await?;
    let mut report = verify::verify(produced, &outbox_items, &orders, &logs);
    report.table = deployment.table.clone();
    if let Some(dlq) = &deployment.consumer_dlq_url {
        report.consumer_dead_lettered = observe::queue_depth(clients, dlq).await?;
        if report.consumer_dead_lettered > 0 {
            report.broken.push(format!(
                "effect once: the consumer gave up on {} messages (its dead-letter queue): with crashes this frequent, a message failed every receive; they are not lost — redrive them",
                report.consumer_dead_lettered
            ));
        }
    }
    Ok(report)
}

/// Waits until every committed message is finished, every order stored and the
/// consumer's queue empty — or the timeout (this run's messages and orders only, when
/// it has a tag).
async fn settle(
    clients: &Clients,
    deployment: &Deployment,
    committed: usize,
    opts: &DemoOptions,
    progress: &impl Fn(&observe::Snapshot),
) -> Result<(), String> {
    let deadline = Instant::now() + opts.settle_timeout;
    let mut announced = false;
    loop {
        let snap = observe::snapshot(clients, deployment, &opts.tag).await?;
        progress(&snap);
        let settled = snap.pending == 0
            && snap.sent + snap.failed >= committed
            && snap.stored >= committed
            && snap.in_queue == 0;
        if settled {
            return Ok(());
        }
        if Instant::now() > deadline {
            eprintln!(
                "\ndemo: the pipeline did not settle within {:?}",
                opts.settle_timeout
            );
            return Ok(());
        }
        if !announced && snap.pending > 0 && snap.sent + snap.failed < committed {
            announced = true;
            if opts.progress && (opts.publisher_crash > 0.0 || opts.consumer_crash > 0.0) {
                eprintln!(
                    "\ndemo: waiting for retries, redeliveries and the scheduled sweeper (runs every minute)"
                );
            }
        }
        tokio::time::sleep(settle_poll(opts)).await;
    }
}

/// How often the settling is checked: twice a second for the live counters; every
/// 2 s without them (the latency bench's figures come from `SentAt`, not from when
/// the check saw it, and each check scans both tables).
fn settle_poll(opts: &DemoOptions) -> Duration {
    Duration::from_millis(if opts.progress { 500 } else { 2_000 })
}

/// Switches on the functions' fault injection for the crash options (and their JSON
/// logs, which the verdict reads: the local AWS ignores `LoggingConfig`), and shortens
/// the consumer queue's visibility timeout to 20 s so that a crashed delivery returns
/// within the demo rather than after the deployed 3 minutes (yet a slow batch is not
/// received twice while it still runs).
async fn inject_crashes(
    clients: &Clients,
    deployment: &Deployment,
    opts: &DemoOptions,
) -> Result<(), String> {
    let plans = [
        (
            &deployment.publisher,
            "SendMessageBatch",
            opts.publisher_crash,
        ),
        (&deployment.consumer, "PutItem", opts.consumer_crash),
    ];
    for (function, operation, p) in plans {
        let plan = format!("{operation}:crash_after:{p}");
        let value = (p > 0.0).then_some(plan.as_str());
        deployment
            .set_environment(clients, function, &[("OUTBOX_FAULTS", value), JSON_LOGS])
            .await
            .map_err(|e| e.to_string())?;
    }
    deployment
        .set_environment(clients, &deployment.sweeper, &[JSON_LOGS])
        .await
        .map_err(|e| e.to_string())?;
    if opts.consumer_crash > 0.0 {
        clients
            .sqs
            .set_queue_attributes()
            .queue_url(&deployment.consumer_queue_url)
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
                "20",
            )
            .send()
            .await
            .map_err(|e| aws_smithy_types::error::display::DisplayErrorContext(&e).to_string())?;
    }
    Ok(())
}
