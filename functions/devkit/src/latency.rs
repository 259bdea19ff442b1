//! Latency and throughput on a deployed stack (`outbox-devkit bench latency`):
//! commit → publish percentiles (`SentAt` − the time the transaction was sent) at
//! given rates, the highest rate one stream shard carries with p99 under a second,
//! the sweeper's recovery latency for a stuck item, and the functions' billed
//! durations from their `REPORT` log lines (for the cost bench).

use crate::aws::Clients;
use crate::demo::{self, DemoOptions, DemoReport};
use crate::deployment::{Deployment, LogLine};
use aws_sdk_dynamodb::types::AttributeValue;
use outbox::publish::now_ms;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// Rates for the percentiles, messages per second.
    pub rates: Vec<u32>,
    /// Rates tried, in order, for the highest one with p99 under a second.
    pub ladder: Vec<u32>,
    /// Seconds of load per rate.
    pub seconds: u32,
    /// Whether to measure the sweeper's recovery of a stuck item (up to its schedule
    /// period and more).
    pub stuck: bool,
}

/// Billed duration per invocation from Lambda `REPORT` lines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Billed {
    /// Invocations reported.
    pub invocations: usize,
    /// Mean `Billed Duration`, ms.
    pub mean_ms: f64,
}

/// Reads `Billed Duration: N ms` from `REPORT` lines.
pub fn billed(lines: &[LogLine]) -> Billed {
    let durations: Vec<f64> = lines
        .iter()
        .filter(|l| l.message.starts_with("REPORT"))
        .filter_map(|l| {
            let rest = l.message.split("Billed Duration:").nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect();
    Billed {
        invocations: durations.len(),
        mean_ms: if durations.is_empty() {
            0.0
        } else {
            durations.iter().sum::<f64>() / durations.len() as f64
        },
    }
}

async fn load(
    clients: &Clients,
    deployment: &Deployment,
    rate: u32,
    seconds: u32,
) -> Result<DemoReport, String> {
    let opts = DemoOptions {
        orders: (rate * seconds) as usize,
        rate,
        rollback_every: 0,
        minimal_every: 0,
        progress: false,
        settle_timeout: Duration::from_secs(180),
        ..DemoOptions::default()
    };
    demo::run(clients, deployment, &opts).await
}

/// A stuck item: inserted already `SENT` (so the stream path ignores it), then turned
/// `PENDING` and due now (a `MODIFY`, which the publisher's filter drops). Returns the
/// milliseconds from its due time to its `SentAt`.
async fn sweeper_recovery(clients: &Clients, deployment: &Deployment) -> Result<i64, String> {
    let id = uuid::Uuid::now_v7().simple().to_string();
    let (pk, sk) = (format!("STUCK#{id}"), format!("MESSAGE#STUCK#{id}"));
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let topic = deployment.routes.keys().next().cloned().unwrap_or_default();
    clients
        .dynamodb
        .put_item()
        .table_name(&deployment.table)
        .item("PK", s(&pk))
        .item("SK", s(&sk))
        .item("ItemType", s("PENDING_MESSAGE"))
        .item("Topic", s(&topic))
        .item("Payload", s(r#"{"order":"stuck","quantity":1}"#))
        .item("Status", s("SENT"))
        .item("RetryCount", AttributeValue::N("0".into()))
        .send()
        .await
        .map_err(|e| format!("put the stuck item: {e}"))?;
    let due = now_ms();
    clients
        .dynamodb
        .update_item()
        .table_name(&deployment.table)
        .key("PK", s(&pk))
        .key("SK", s(&sk))
        .update_expression("SET #s = :p, SweepShard = :shard, SweepDueAt = :due")
        .expression_attribute_names("#s", "Status")
        .expression_attribute_values(":p", s("PENDING"))
        .expression_attribute_values(":shard", s(&outbox::schema::sweep_shard(&pk)))
        .expression_attribute_values(":due", AttributeValue::N(due.to_string()))
        .send()
        .await
        .map_err(|e| format!("make it stuck: {e}"))?;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(240) {
        let item = clients
            .dynamodb
            .get_item()
            .table_name(&deployment.table)
            .key("PK", s(&pk))
            .key("SK", s(&sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("read the stuck item: {e}"))?
            .item
            .unwrap_or_default();
        if let Some(AttributeValue::N(sent)) = item.get("SentAt") {
            return sent
                .parse::<i64>()
                .map(|s| s - due)
                .map_err(|e| e.to_string());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err("the sweeper did not publish the stuck item within 240 s".to_owned())
}

/// Runs the bench; returns the report's lines and the billed durations
/// (publisher, messages per publisher invocation, sweeper).
pub async fn run(
    clients: &Clients,
    deployment: &Deployment,
    opts: &LatencyOptions,
) -> Result<(String, serde_json::Value), String> {
    let since = now_ms() - 1_000;
    let mut out =
        String::from("commit -> publish latency (SentAt - commit time) on the deployed stack\n");
    let mut published = 0usize;
    for &rate in &opts.rates {
        let r = load(clients, deployment, rate, opts.seconds).await?;
        published += r.sent;
        out.push_str(&format!(
            "  {rate:>5} messages/s offered, {:>6} committed in {:.1} s: p50 {} ms, p95 {} ms, p99 {} ms ({} publisher invocations)\n",
            r.committed, r.elapsed.as_secs_f64(), r.latency_ms.0, r.latency_ms.1, r.latency_ms.2, r.publisher_invocations
        ));
    }
    let mut best = None;
    for &rate in &opts.ladder {
        let r = load(clients, deployment, rate, opts.seconds).await?;
        published += r.sent;
        let held = r.latency_ms.2 < 1000 && r.broken.is_empty() && r.sent >= r.committed;
        out.push_str(&format!(
            "  max-rate step {rate:>5} messages/s offered: {} committed, {} SENT, all done in {:.1} s: p99 {} ms -> {}\n",
            r.committed, r.sent, r.elapsed.as_secs_f64(), r.latency_ms.2, if held { "held" } else { "not held" }
        ));
        if !held {
            break;
        }
        best = Some(rate);
    }
    out.push_str(&match best {
        Some(rate) => format!(
            "highest offered rate one stream shard carried with p99 < 1 s: {rate} messages/s\n"
        ),
        None => "no step of the ladder held p99 < 1 s\n".to_owned(),
    });
    if opts.stuck {
        let ms = sweeper_recovery(clients, deployment).await?;
        out.push_str(&format!("sweeper recovery of a stuck item: {ms} ms from due to SentAt (schedule: every minute)\n"));
    }
    let publisher = billed(
        &deployment
            .logs(clients, &deployment.publisher, since)
            .await
            .map_err(|e| e.to_string())?,
    );
    let sweeper = billed(
        &deployment
            .logs(clients, &deployment.sweeper, since)
            .await
            .map_err(|e| e.to_string())?,
    );
    out.push_str(&format!(
        "billed duration (REPORT lines): publisher {:.1} ms mean over {} invocations; sweeper {:.1} ms over {}\n",
        publisher.mean_ms, publisher.invocations, sweeper.mean_ms, sweeper.invocations
    ));
    let json = serde_json::json!({
        "publisher": {
            "billed_ms_mean": publisher.mean_ms,
            "invocations": publisher.invocations,
            "messages_per_invocation": published as f64 / publisher.invocations.max(1) as f64,
        },
        "sweeper": { "billed_ms_mean": sweeper.mean_ms, "invocations": sweeper.invocations },
    });
    Ok((out, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billed_durations_are_read_from_report_lines_only() {
        let line = |m: &str| LogLine {
            timestamp_ms: 0,
            message: m.to_owned(),
        };
        let lines = [
            line("START RequestId: a Version: $LATEST"),
            line(
                "REPORT RequestId: a\tDuration: 12.34 ms\tBilled Duration: 13 ms\tMemory Size: 256 MB",
            ),
            line(
                "REPORT RequestId: b\tDuration: 40.00 ms\tBilled Duration: 41 ms\tMemory Size: 256 MB",
            ),
            line("{\"message\":\"Billed Duration: 999 ms\"}"),
        ];
        assert_eq!(
            billed(&lines),
            Billed {
                invocations: 2,
                mean_ms: 27.0
            }
        );
        assert_eq!(billed(&[]), Billed::default());
    }
}
