//! Latency and throughput on a deployed stack (`outbox-devkit bench latency`):
//! commit → publish percentiles (`SentAt` − the time the transaction was sent) at
//! given rates, the highest rate one stream shard carries with p99 under a second,
//! the sweeper's recovery latency for a stuck item, and the functions' billed
//! durations from their `REPORT` log lines (for the cost bench).

use crate::aws::Clients;
use crate::demo::{self, DemoOptions, DemoReport};
use crate::deployment::{Deployment, LogLine};
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::clock::now_ms;
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

/// One load at `rate` for `seconds`, its orders' ids prefixed with `tag`: every load
/// runs against the same deployed tables, and each is judged on its own messages only.
async fn load(
    clients: &Clients,
    deployment: &Deployment,
    rate: u32,
    seconds: u32,
    tag: String,
) -> Result<DemoReport, String> {
    let opts = DemoOptions {
        orders: (rate * seconds) as usize,
        rate,
        rollback_every: 0,
        minimal_every: 0,
        progress: false,
        settle_timeout: Duration::from_secs(180),
        tag,
        ..DemoOptions::default()
    };
    demo::run(clients, deployment, &opts).await
}

/// The tag of one load: unique to this run of the bench (the tables keep the items of
/// earlier runs) and to the step within it.
fn step_tag(run: &str, step: usize, rate: u32) -> String {
    format!("b{run}-{step}-{rate}-")
}

/// Whether a step of the max-rate ladder held: it committed messages, every one of
/// them was `SENT`, every guarantee held and their p99 was under a second. `report`
/// must count the step's own messages only (a tagged load), never the table's.
pub fn held(report: &DemoReport) -> bool {
    report.committed > 0
        && report.sent >= report.committed
        && report.broken.is_empty()
        && report.latency_ms.2 < 1000
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
        .expression_attribute_values(":shard", s(&dynamodb_outbox::schema::sweep_shard(&pk)))
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
    let run = format!("{:08x}", fastrand::u32(..));
    let mut step = 0;
    let mut tag = |rate| {
        step += 1;
        step_tag(&run, step, rate)
    };
    for &rate in &opts.rates {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        out.push_str(&format!(
            "  {rate:>5} messages/s offered, {:>6} committed in {:.1} s: p50 {} ms, p95 {} ms, p99 {} ms ({} publisher invocations)\n",
            r.committed, r.elapsed.as_secs_f64(), r.latency_ms.0, r.latency_ms.1, r.latency_ms.2, r.publisher_invocations
        ));
    }
    let mut best = None;
    for &rate in &opts.ladder {
        let r = load(clients, deployment, rate, opts.seconds, tag(rate)).await?;
        published += r.sent;
        let held = held(&r);
        out.push_str(&format!(
            "  max-rate step {rate:>5} messages/s offered: {} committed, {} SENT, all done in {:.1} s: p99 {} ms -> {}\n",
            r.committed, r.sent, r.elapsed.as_secs_f64(), r.latency_ms.2, if held { "held" } else { "not held" }
        ));
        if !held {
            for why in r.broken.iter().take(3) {
                out.push_str(&format!("    - {why}\n"));
            }
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
    use crate::demo::observe::Item;
    use crate::demo::produce::{CommittedOrder, Produced};
    use crate::demo::verify::{FunctionLogs, verify};
    use dynamodb_outbox::schema::{OutboxItem, PENDING_MESSAGE};

    const T0: i64 = 1_700_000_000_000;

    fn message(id: &str, status: &str, sent_at: Option<i64>) -> OutboxItem {
        OutboxItem {
            pk: Some(format!("ORDER#{id}")),
            sk: Some(format!("MESSAGE#ORDER_PLACED#{id}")),
            item_type: Some(PENDING_MESSAGE.to_owned()),
            topic: Some("orders".to_owned()),
            status: Some(status.to_owned()),
            sent_at,
            ..OutboxItem::default()
        }
    }

    fn order(id: &str) -> Item {
        let n = |v: i64| AttributeValue::N(v.to_string());
        Item::from([
            ("id".to_owned(), AttributeValue::S(id.to_owned())),
            ("quantity".to_owned(), n(1)),
            (
                "total_cents".to_owned(),
                n(i64::from(orders_consumer::order::total_cents(1))),
            ),
        ])
    }

    fn applied(id: &str) -> LogLine {
        LogLine {
            timestamp_ms: T0,
            message: serde_json::json!({"fields": {
                "message": "RESULT", "id": id, "quantity": 1, "processed": true, "duplicate": false
            }})
            .to_string(),
        }
    }

    /// A step of `n` orders committed at T0, published `latency_ms` later: what it
    /// committed, its outbox items, its stored orders and the consumer's lines.
    fn step(
        tag: &str,
        n: usize,
        latency_ms: i64,
    ) -> (Produced, Vec<OutboxItem>, Vec<Item>, Vec<LogLine>) {
        let ids: Vec<String> = (0..n).map(|i| format!("{tag}order-{i:05}")).collect();
        let produced = Produced {
            tag: tag.to_owned(),
            committed: ids
                .iter()
                .map(|id| {
                    let c = CommittedOrder {
                        quantity: 1,
                        minimal: false,
                        commit_ms: T0,
                    };
                    (id.clone(), c)
                })
                .collect(),
            ..Produced::default()
        };
        let items = ids
            .iter()
            .map(|id| message(id, "SENT", Some(T0 + latency_ms)))
            .collect();
        let orders = ids.iter().map(|id| order(id)).collect();
        let logs = ids.iter().map(|id| applied(id)).collect();
        (produced, items, orders, logs)
    }

    #[test]
    fn a_ladder_step_is_judged_on_its_own_messages_not_on_earlier_steps_in_the_table() {
        // The ladder's steps run one after another against one deployed table. Before,
        // a step's verdict read the whole table: the orders of earlier (bigger) loads
        // were "applied but never committed" and an earlier leftover still PENDING was
        // "lost", so a step that held was reported "not held".
        let (_, mut table, mut stored, _) = step("bX-1-500-", 8, 2_500);
        table.push(message("bX-1-500-order-00008", "PENDING", None));
        stored.push(order("bX-1-500-order-00008"));
        let (produced, items, orders, consumer) = step("bX-2-100-", 4, 80);
        table.extend(items);
        stored.extend(orders);
        let logs = FunctionLogs {
            consumer,
            ..FunctionLogs::default()
        };

        let report = verify(&produced, &table, &stored, &logs);
        assert!(report.broken.is_empty(), "{:?}", report.broken);
        assert_eq!((report.committed, report.sent, report.applied), (4, 4, 4));
        assert_eq!(
            report.latency_ms,
            (80, 80, 80),
            "the step's own latencies only"
        );
        assert!(held(&report));
    }

    #[test]
    fn a_step_is_not_held_when_its_own_messages_are_late_unsent_or_unapplied() {
        let (produced, items, orders, consumer) = step("bX-3-800-", 4, 1_200);
        let logs = FunctionLogs {
            consumer,
            ..FunctionLogs::default()
        };
        let report = verify(&produced, &items, &orders, &logs);
        assert!(report.broken.is_empty(), "{:?}", report.broken);
        assert!(!held(&report), "p99 1,200 ms");

        let (produced, mut items, orders, consumer) = step("bX-3-800-", 4, 80);
        items[3] = message("bX-3-800-order-00003", "PENDING", None);
        // An earlier step's SENT messages must not make up for this one's.
        items.extend(step("bX-2-400-", 4, 80).1);
        let logs = FunctionLogs {
            consumer,
            ..FunctionLogs::default()
        };
        let report = verify(&produced, &items, &orders, &logs);
        assert_eq!(report.sent, 3);
        assert!(!held(&report), "one message still PENDING");

        let (produced, items, mut orders, consumer) = step("bX-3-800-", 4, 80);
        orders.pop();
        // An earlier step's stored order with the same number does not count either.
        orders.push(order("bX-2-400-order-00003"));
        let logs = FunctionLogs {
            consumer,
            ..FunctionLogs::default()
        };
        assert!(
            !held(&verify(&produced, &items, &orders, &logs)),
            "an order never applied"
        );

        assert!(!held(&DemoReport::default()), "nothing committed");
    }

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
