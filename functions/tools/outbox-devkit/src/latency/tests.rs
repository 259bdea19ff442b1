use super::*;
use crate::demo::observe::Item;
use crate::demo::produce::{CommittedOrder, Produced};
use crate::demo::verify::{FunctionLogs, stored_total_cents, verify};
use crate::deployment::LogLine;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::schema::{OutboxItem, PENDING_MESSAGE};
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
fn the_held_rate_over_the_raw_put_rate_needs_both() {
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
    };
    assert_eq!(raw.rate(), 1_600.0);
    assert_eq!(RawPuts::default().rate(), 0.0);
}

#[test]
fn the_verdict_lines_give_the_held_rate_the_raw_rate_and_their_ratio() {
    let raw = RawPuts {
        writers: 16,
        puts: 19_200,
        errors: 0,
        seconds: 12.0,
    };
    let lines = held_lines(Some(400), 60, Some(&raw));
    assert_eq!(
        lines,
        "highest offered rate one stream shard carried with p99 < 1 s (every step 60 s of load): 400 messages/s\n\
         raw PutItem rate of this local AWS in the same run (16 writers, 12.0 s, scratch table): 1600 puts/s (0 failed)\n\
         held rate / raw PutItem rate: 0.250\n"
    );
    let none = held_lines(None, 10, Some(&raw));
    assert!(none.starts_with("no step of the ladder (10 s each) held p99 < 1 s\n"));
    assert!(none.ends_with("held rate / raw PutItem rate: none (no held rate)\n"));
    assert_eq!(
        held_lines(Some(100), 60, None).lines().count(),
        1,
        "no yardstick line when it was skipped"
    );
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
