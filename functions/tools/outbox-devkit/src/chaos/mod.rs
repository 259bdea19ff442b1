//! The chaos benchmark: thousands of messages through a stack deployed on the local
//! AWS while every function's AWS calls fail (throttling, 5xx, timeouts, resets,
//! answers lost after the call took effect), processes crash between steps, the
//! order fence's index reads lag, the publisher's stream batches are delivered again
//! as Lambda redelivers them, split into concurrent batches as a parallelization
//! factor lets AWS run them, and the stream mapping discards what keeps failing — then, once everything is quiet, the
//! guarantees counted from the final state: lost, phantom, effects applied twice,
//! FIFO order violations, and whether every `FAILED` message is poison with its
//! dead-letter copy.
//!
//! [`setup`] adds an SNS topic and an EventBridge bus (each with a queue and an orders
//! consumer) to the deployed stack and switches the faults on; [`workload`] commits
//! through a producer whose own calls fail too; [`verify`] gives the verdict. The
//! sweeper runs on its schedule and, so that retries finish within minutes, is also
//! invoked every few seconds (backoff 2–10 s instead of the deployed 30–900 s).

pub mod setup;
pub mod verify;
pub mod workload;

use crate::aws::Clients;
use crate::demo::observe;
use crate::deployment::Deployment;
use aws_sdk_lambda::types::InvocationType;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use dynamodb_outbox::Clock as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
pub use verify::ChaosReport;
use workload::{Committed, Planned};

/// Chaos settings.
#[derive(Debug, Clone)]
pub struct ChaosOptions {
    /// Transactions.
    pub messages: usize,
    /// Share of every function's AWS calls that fail (crashes come on top).
    pub fault_rate: f64,
    /// Seed of the workload and of the faults.
    pub seed: u64,
    /// Where `scripts/package --debug --features fault-injection` put the functions.
    pub assets: PathBuf,
    /// Longest wait for quiescence after the last commit.
    pub settle_timeout: Duration,
    /// Print progress.
    pub progress: bool,
    /// The stream mapping's `ParallelizationFactor` (1 to 10); above 1 the publisher
    /// also runs each batch as concurrent parts as AWS may (`OUTBOX_FAULTS_PARALLEL`:
    /// the local AWS runs one batch per shard at a time whatever the factor).
    pub parallelization_factor: u32,
}

/// Runs the benchmark against a deployment (which it changes: routes, faults,
/// timeouts; deploy a fresh one for each run).
pub async fn run(
    clients: &Clients,
    d: &Deployment,
    opts: &ChaosOptions,
) -> Result<ChaosReport, String> {
    let plans = setup::FaultPlans::at(opts.fault_rate);
    let chaos = setup::prepare(
        clients,
        d,
        &opts.assets,
        &plans,
        opts.parallelization_factor,
    )
    .await?;
    d.set_environment(
        clients,
        &d.sweeper,
        &[
            ("OUTBOX_SWEEP_BASE_BACKOFF_SECONDS", Some("2")),
            ("OUTBOX_SWEEP_MAX_BACKOFF_SECONDS", Some("10")),
            ("OUTBOX_FAULTS_SEED", Some(&opts.seed.to_string())),
        ],
    )
    .await
    .map_err(|e| e.to_string())?;
    let since_ms = dynamodb_outbox::SystemClock.now_ms() - 1_000;
    let started = Instant::now();
    let planned = produce(clients, d, opts, &plans.producer).await?;
    settle(clients, d, &chaos, opts).await?;
    let wall = started.elapsed();
    let seen = observe_all(clients, d, &chaos, since_ms).await?;
    let mut report = verify::verdict(&planned, &seen);
    report.wall = wall;
    report.fault_rate = opts.fault_rate;
    report.parallelization_factor = opts.parallelization_factor;
    Ok(report)
}

async fn produce(
    clients: &Clients,
    d: &Deployment,
    opts: &ChaosOptions,
    producer_faults: &str,
) -> Result<Vec<(Planned, Committed)>, String> {
    let plan: outbox_faults::FaultPlan = producer_faults
        .parse()
        .map_err(|e: outbox_faults::PlanError| e.to_string())?;
    let faulty = aws_sdk_dynamodb::Client::new(&outbox_faults::with_plan(
        clients.sdk_config.clone(),
        plan,
        Some(opts.seed),
    ));
    let work = workload::plan(opts.messages, opts.seed);
    let mut workers: Vec<Vec<Planned>> = vec![Vec::new(); workload::WORKERS];
    for p in work {
        let w = workload::worker_of(&p);
        workers[w].push(p);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for share in workers {
        let (client, table) = (faulty.clone(), d.table.clone());
        tasks.spawn(async move {
            let mut done = Vec::with_capacity(share.len());
            for p in share {
                let c = workload::commit(&client, &table, &p).await;
                done.push((p, c));
            }
            done
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.map_err(|e| e.to_string())?);
    }
    if opts.progress {
        eprintln!("chaos: {} transactions done", all.len());
    }
    Ok(all)
}

/// Waits until every outbox item is finished and every consumer queue is empty,
/// invoking the sweeper every 5 s meanwhile — and waiting for each sweep to end, as
/// the deployed sweeper runs one sweep at a time (reserved concurrency 1). Sweeps
/// started every 5 s regardless overlapped on the local AWS: each refused the
/// other's claims, held back the later messages behind them, and a FIFO backlog
/// drained a few messages per minute.
async fn settle(
    clients: &Clients,
    d: &Deployment,
    chaos: &setup::ChaosSetup,
    opts: &ChaosOptions,
) -> Result<(), String> {
    let deadline = Instant::now() + opts.settle_timeout;
    loop {
        let _ = clients
            .lambda
            .invoke()
            .function_name(&d.sweeper)
            .invocation_type(InvocationType::RequestResponse)
            .payload(aws_sdk_lambda::primitives::Blob::new("{}"))
            .send()
            .await;
        let items = observe::outbox_items(observe::scan_all(clients, &d.table).await?);
        let pending = items
            .iter()
            .filter(|i| i.status() == Some(dynamodb_outbox_core::schema::Status::Pending))
            .count();
        let mut queued = 0;
        for (url, _) in &chaos.consumer_queues {
            queued += observe::queue_depth(clients, url).await?;
        }
        if opts.progress {
            eprintln!(
                "chaos: {} items, {pending} pending, {queued} messages on the consumer queues",
                items.len()
            );
        }
        if pending == 0 && queued == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            eprintln!(
                "chaos: not quiet after {:?}; judging as it is",
                opts.settle_timeout
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

async fn observe_all(
    clients: &Clients,
    d: &Deployment,
    chaos: &setup::ChaosSetup,
    since_ms: i64,
) -> Result<verify::Observed, String> {
    // Let the last log lines arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut seen = verify::Observed {
        outbox_items: observe::outbox_items(observe::scan_all(clients, &d.table).await?),
        stored_orders: observe::scan_all(clients, &d.orders_table)
            .await?
            .iter()
            .filter_map(|o| observe::text(o, "id"))
            .collect(),
        ..verify::Observed::default()
    };
    for (_, consumer) in &chaos.consumer_queues {
        let lines = consumer_logs(clients, d, consumer, since_ms).await?;
        // The stack's own consumer reads the queue the publisher sends to directly:
        // its copies' SentTimestamp is the publisher's send. (SNS and EventBridge
        // deliver to their queues after the publish, so later than the mark.)
        if *consumer == d.consumer {
            seen.direct_consumer_logs.extend(lines.iter().cloned());
        }
        seen.consumer_logs.extend(lines);
    }
    let mut lines = seen.consumer_logs.clone();
    for f in [
        d.publisher.clone(),
        d.sweeper.clone(),
        format!("{}-recovery", d.prefix),
    ] {
        lines.extend(d.logs(clients, &f, since_ms).await.unwrap_or_default());
    }
    count_faults(&lines, &mut seen);
    // A sum of counts: whole numbers, however CloudWatch's EMF writes them.
    seen.iam_denials =
        crate::deployment::emf_sum(&lines, dynamodb_outbox_core::metrics::ACCESS_DENIED) as usize;
    for m in drain(clients, &chaos.fifo_url).await? {
        let attr = |name: &str| {
            m.message_attributes()
                .and_then(|a| a.get(name))
                .and_then(|v| v.string_value())
                .map(str::to_owned)
        };
        seen.fifo.push(verify::FifoDelivery {
            group: m
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                .cloned()
                .unwrap_or_default(),
            sequence: attr("outbox-sequence")
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX),
            message_id: attr("outbox-message-id").unwrap_or_default(),
            sqs_id: m.message_id().unwrap_or_default().to_owned(),
            sent_at_ms: m
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::SentTimestamp))
                .and_then(|t| t.parse().ok()),
            traceparent: attr(dynamodb_outbox::trace::ATTR_TRACEPARENT),
        });
    }
    for m in drain(clients, &d.dlq_url).await? {
        let attr = |name: &str| {
            m.message_attributes()
                .and_then(|a| a.get(name))
                .and_then(|v| v.string_value())
                .map(str::to_owned)
        };
        seen.dead_letters
            .push((attr("outbox-message-id"), attr("outbox-aggregate")));
    }
    Ok(seen)
}

/// A consumer's log lines; none when it never logged (its log group does not exist
/// yet: nothing reached it), so the verdict still comes and says what was not applied.
async fn consumer_logs(
    clients: &Clients,
    d: &Deployment,
    consumer: &str,
    since_ms: i64,
) -> Result<Vec<crate::deployment::LogLine>, String> {
    match d.logs(clients, consumer, since_ms).await {
        Ok(lines) => Ok(lines),
        Err(e) if e.to_string().contains("ResourceNotFoundException") => {
            eprintln!("chaos: {consumer} never logged");
            Ok(Vec::new())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Counts the faults the functions' logs report: `injected fault` lines in JSON
/// (`"message":"injected fault"`) or text (`injected fault operation=…`) — the
/// functions log either way — and `injected crash` lines; a crash's own
/// `injected fault` line is not counted twice. Among the faults, the index reads
/// answered stale (`index_lag`); apart, the publisher's redelivered and split batches.
fn count_faults(lines: &[crate::deployment::LogLine], seen: &mut verify::Observed) {
    for l in lines {
        if l.message.starts_with("injected crash") {
            seen.crashes += 1;
            seen.faults_injected += 1;
        } else if is_fault_line(&l.message) && !l.message.contains("crash_") {
            seen.faults_injected += 1;
            seen.lagged_reads +=
                usize::from(l.message.contains(outbox_faults::Fault::IndexLag.name()));
        } else if l.message.contains(outbox_faults::replay::REPLAY_LOG) {
            seen.replays += 1;
        } else if l.message.contains(outbox_faults::parallel::SPLIT_LOG) {
            seen.split_batches += 1;
        }
    }
}

fn is_fault_line(message: &str) -> bool {
    message.contains("\"injected fault\"") || message.contains("injected fault operation=")
}

async fn drain(clients: &Clients, url: &str) -> Result<Vec<aws_sdk_sqs::types::Message>, String> {
    let mut all = Vec::new();
    loop {
        let out = clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(1)
            .send()
            .await
            .map_err(|e| aws_smithy_types::error::display::DisplayErrorContext(&e).to_string())?;
        let msgs = out.messages.unwrap_or_default();
        if msgs.is_empty() {
            return Ok(all);
        }
        for m in &msgs {
            if let Some(h) = m.receipt_handle() {
                let _ = clients
                    .sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(h)
                    .send()
                    .await;
            }
        }
        all.extend(msgs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::LogLine;

    fn line(message: &str) -> LogLine {
        LogLine {
            timestamp_ms: 0,
            message: message.to_owned(),
        }
    }

    #[test]
    fn faults_are_counted_from_json_and_text_logs_and_a_crash_once() {
        let lines = [
            line(
                r#"{"level":"WARN","fields":{"message":"injected fault","operation":"PutItem","fault":"lost_response"}}"#,
            ),
            line(
                r#" WARN Lambda runtime invoke{requestId="a"}: injected fault operation=SendMessageBatch fault=throttle"#,
            ),
            line(
                r#" WARN Lambda runtime invoke{requestId="b"}: injected fault operation=SendMessageBatch fault=crash_after"#,
            ),
            line("injected crash after SendMessageBatch"),
            line("sweep done found=18"),
            line(
                r#"{"level":"WARN","fields":{"message":"injected fault","operation":"ExecuteStatement","fault":"index_lag"}}"#,
            ),
            line(
                r#" WARN Lambda runtime invoke{requestId="c"}: injected fault operation=Query fault=index_lag"#,
            ),
            line(
                r#"{"level":"WARN","fields":{"message":"replayed stream batch","records":4,"from":1,"retry":1,"after":"partial_batch_response"}}"#,
            ),
            line(
                r#" WARN Lambda runtime invoke{requestId="d"}: replayed stream batch records=2 from=3 retry=1 after=lost_answer"#,
            ),
            line(
                r#"{"level":"WARN","fields":{"message":"split stream batch","records":9,"parts":2,"stagger_ms":40}}"#,
            ),
        ];
        let mut seen = verify::Observed::default();
        count_faults(&lines, &mut seen);
        assert_eq!((seen.faults_injected, seen.crashes), (5, 1));
        assert_eq!((seen.lagged_reads, seen.replays), (2, 2));
        assert_eq!(seen.split_batches, 1);
    }
}
