use super::*;
use crate::demo::observe::Item;
use crate::demo::produce::{CommittedOrder, Produced};
use crate::demo::verify::{FunctionLogs, stored_total_cents, verify};
use crate::deployment::LogLine;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::schema::{OutboxItem, PENDING_MESSAGE};
use std::time::Duration;

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
        ("total_cents".to_owned(), n(stored_total_cents(1))),
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
                    trace_id: None,
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
fn a_stored_order_whose_total_is_not_its_committed_quantitys_breaks_effect_once() {
    let (produced, items, mut orders, consumer) = step("bX-4-100-", 2, 80);
    // The total of one unit applied twice (350 + 350), on the second order.
    orders[1].insert(
        "total_cents".to_owned(),
        AttributeValue::N("700".to_owned()),
    );
    let logs = FunctionLogs {
        consumer,
        ..FunctionLogs::default()
    };
    let report = verify(&produced, &items, &orders, &logs);
    assert_eq!(
        report.broken,
        [
            "effect once: order bX-4-100-order-00001 stored as quantity 1, total 700; committed quantity 1, total 350"
        ],
    );
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
            mean_ms: 27.0,
            total_ms: 54.0,
        }
    );
    assert_eq!(billed(&[]), Billed::default());
}

fn produced(committed: usize, producing_s: u64) -> DemoReport {
    DemoReport {
        committed,
        producing: Duration::from_secs(producing_s),
        ..DemoReport::default()
    }
}

#[test]
fn a_step_kept_pace_only_when_its_producers_committed_at_nine_tenths_of_the_rate() {
    assert!(kept_pace(&produced(6_000, 60), 100));
    assert!(kept_pace(&produced(5_400, 60), 100), "exactly 90%");
    // 800/s offered, but the transactions queued behind the writers in flight: the
    // commits took 100 s, 480/s. That step did not offer 800/s.
    assert!(!kept_pace(&produced(48_000, 100), 800));
    assert!(!kept_pace(&produced(0, 0), 100), "nothing produced");
}

#[test]
fn the_held_rate_over_the_raw_rate_needs_both() {
    assert_eq!(held_over_raw(Some(400), 1_600.0), Some(0.25));
    assert_eq!(held_over_raw(None, 1_600.0), None);
    assert_eq!(held_over_raw(Some(400), 0.0), None, "no yardstick");
}

#[test]
fn the_raw_put_rate_counts_successes_over_the_wall_time() {
    let raw = RawPuts {
        writers: 16,
        puts: 19_200,
        errors: 7,
        seconds: 12.0,
        ..RawPuts::default()
    };
    assert_eq!(raw.rate(), 1_600.0);
    assert_eq!(RawPuts::default().rate(), 0.0);
}

fn step_at(rate: u32, committed_rate: u32, p99_ms: i64) -> Step {
    let report = DemoReport {
        committed: committed_rate as usize * 60,
        sent: committed_rate as usize * 60,
        producing: Duration::from_secs(60),
        latency_ms: (p99_ms / 2, p99_ms, p99_ms),
        ..DemoReport::default()
    };
    Step::of(rate, &report)
}

#[test]
fn the_held_rate_is_the_top_of_the_steps_held_before_the_first_that_was_not() {
    let held = |r| step_at(r, r, 300);
    assert_eq!(highest_held(&[held(25), held(50), held(100)]), Some(100));
    // 200/s missed its p99; a later 400/s that passed is not a held rate.
    let late = step_at(200, 200, 1_500);
    assert!(!late.counts());
    assert_eq!(
        highest_held(&[held(25), held(50), late, held(400)]),
        Some(50)
    );
    // The producers committed 55/s of 100/s offered: p99 fine, not held.
    let behind = step_at(100, 55, 200);
    assert!(behind.held && !behind.kept_pace && !behind.counts());
    assert_eq!(highest_held(&[held(50), behind]), Some(50));
    assert_eq!(highest_held(&[behind]), None);
    assert_eq!(highest_held(&[]), None);
}

fn raw_burst() -> RawTransacts {
    let report = DemoReport {
        committed: 4_000,
        sent: 4_000,
        producing: Duration::from_secs(10),
        publish_span_ms: 40_000,
        latency_ms: (9_000, 20_000, 25_000),
        ..DemoReport::default()
    };
    RawTransacts::of(16, &report)
}

#[test]
fn the_raw_burst_gives_the_tables_rate_and_the_pipelines() {
    let raw = raw_burst();
    assert_eq!(raw.rate(), 400.0, "4,000 transactions in 10 s");
    assert_eq!(
        raw.published_rate(),
        100.0,
        "all SENT 40 s after the first commit"
    );
    assert_eq!(RawTransacts::default().rate(), 0.0);
    assert_eq!(RawTransacts::default().published_rate(), 0.0);
}

#[test]
fn under_the_target_the_first_failed_step_says_whether_producers_or_publisher_fell_behind() {
    let raw = raw_burst();
    assert_eq!(where_time_goes(Some(0.5), None, &raw), "", "target met");
    assert_eq!(where_time_goes(None, None, &raw), "", "no ratio");
    let producers = where_time_goes(Some(0.125), Some(&step_at(100, 55, 200)), &raw);
    assert!(
        producers.contains(
            "the producers: at 100 messages/s offered they committed 55/s, 14% of the raw rate"
        ),
        "{producers}"
    );
    let publisher = where_time_goes(Some(0.125), Some(&step_at(100, 100, 1_800)), &raw);
    assert!(
        publisher.contains("the publisher: at 100 messages/s the producers kept pace (100/s) but p99 commit -> publish was 1800 ms"),
        "{publisher}"
    );
    assert!(publisher.ends_with(
        "in the raw burst the table took 400 transactions/s and the pipeline published 100 messages/s (p99 25000 ms)\n"
    ));
    assert!(where_time_goes(Some(0.1), None, &raw).contains("no step failed"));
}

#[test]
fn the_verdict_lines_give_the_held_rate_the_raw_rate_their_ratio_and_the_target() {
    let raw = raw_burst();
    let steps = [
        step_at(100, 100, 300),
        step_at(200, 200, 400),
        step_at(400, 300, 900),
    ];
    assert_eq!(
        held_lines(&steps, 60, Some(&raw)),
        "highest offered rate one stream shard carried with p99 < 1 s (every step 60 s of load): 200 messages/s\n\
         raw TransactWriteItems rate on the deployed table, pipeline running (16 in flight, 10.0 s): 400 transactions/s\n\
         held rate / raw TransactWriteItems rate: 0.500 (target >= 0.5: met)\n"
    );
    let below = held_lines(&steps[..1], 60, Some(&raw));
    assert!(
        below.contains("0.250 (target >= 0.5: not met)\n"),
        "{below}"
    );
    assert!(below.contains("no step failed"), "{below}");
    let none = held_lines(&[step_at(10, 5, 300)], 10, Some(&raw));
    assert!(none.starts_with("no step of the ladder (10 s each) held p99 < 1 s\n"));
    assert!(none.contains("(steps under 60 s: a quick check, not a sustained held rate)"));
    assert!(none.contains("held rate / raw TransactWriteItems rate: none (no held rate)\n"));
    assert!(
        none.contains("the producers: at 10 messages/s offered"),
        "{none}"
    );
    assert_eq!(
        held_lines(&steps[..1], 60, None).lines().count(),
        1,
        "no yardstick lines when it was skipped"
    );
}

#[test]
fn the_publish_span_runs_from_the_first_commit_to_the_last_sent_at() {
    let (mut produced, mut items, orders, consumer) = step("bX-raw-", 3, 80);
    // The second order was committed 500 ms later and sent 2 s after the first commit.
    if let Some(c) = produced.committed.get_mut("bX-raw-order-00001") {
        c.commit_ms = T0 + 500;
    }
    items[1] = message("bX-raw-order-00001", "SENT", Some(T0 + 2_000));
    let logs = FunctionLogs {
        consumer,
        ..FunctionLogs::default()
    };
    let report = verify(&produced, &items, &orders, &logs);
    assert_eq!(report.publish_span_ms, 2_000);
    let none_sent = verify(&Produced::default(), &[], &[], &FunctionLogs::default());
    assert_eq!(none_sent.publish_span_ms, 0);
}

#[test]
fn billed_duration_per_message_is_the_total_over_the_messages_published() {
    let publisher = Billed {
        invocations: 20,
        mean_ms: 27.0,
        total_ms: 540.0,
    };
    assert_eq!(billed_ms_per_message(&publisher, 200), Some(2.7));
    assert_eq!(billed_ms_per_message(&publisher, 0), None);
    assert_eq!(
        per_message_line(&publisher, 200),
        "billed duration per message: publisher 2.700 ms (540 ms billed in total / 200 messages published)\n"
    );
    assert_eq!(
        per_message_line(&Billed::default(), 0),
        "billed duration per message: no messages published\n"
    );
}

#[test]
fn every_raw_put_writes_a_new_item_shaped_like_an_outbox_message() {
    // Overwrites of one item would measure something else than writes of new ones.
    let a = raw_put::message_like(0, 1);
    let b = raw_put::message_like(1, 0);
    let c = raw_put::message_like(0, 2);
    assert_ne!(a["PK"], b["PK"]);
    assert_ne!(a["PK"], c["PK"]);
    assert_eq!(a["ItemType"], AttributeValue::S(PENDING_MESSAGE.to_owned()));
    assert_eq!(a["Status"], AttributeValue::S("PENDING".to_owned()));
}
