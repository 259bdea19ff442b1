use super::*;
use crate::demo::produce::CommittedOrder;
use serde_json::json;

const TRACE: u128 = 0x5759e988_bd862e3fe1be46a994272793;
const TRACE_HEX: &str = "5759e988bd862e3fe1be46a994272793";

fn committed(trace_id: Option<u128>) -> CommittedOrder {
    CommittedOrder {
        quantity: 1,
        minimal: trace_id.is_none(),
        commit_ms: 1_000,
        trace_id,
    }
}

fn item(order: &str, traceparent: Option<String>) -> OutboxItem {
    OutboxItem {
        pk: Some(format!("ORDER#{order}")),
        message_id: Some(format!("m-{order}")),
        sent_at: Some(1_250),
        trace_parent: traceparent,
        ..OutboxItem::default()
    }
}

fn traceparent(trace: &str) -> Option<String> {
    Some(format!("00-{trace}-53995c3f42cd8ad8-01"))
}

#[test]
fn a_trace_followed_to_the_item_and_the_consumer_is_counted_and_shown() {
    let mut produced = Produced::default();
    produced
        .committed
        .insert("a".into(), committed(Some(TRACE)));
    produced.committed.insert("b".into(), committed(None));
    let items = [item("a", traceparent(TRACE_HEX)), item("b", None)];
    let refs: Vec<&OutboxItem> = items.iter().collect();
    // A duplicate delivery logs a second RESULT line with the same trace.
    let results = [
        json!({"id": "a", "trace_id": TRACE_HEX}),
        json!({"id": "a", "trace_id": TRACE_HEX, "duplicate": true}),
        json!({"id": "b", "trace_id": ""}),
    ];
    let mut broken = Vec::new();
    let report = follow(&produced, &refs, &results, &mut broken);
    assert!(broken.is_empty(), "{broken:?}");
    assert_eq!(
        (report.traced, report.on_item, report.at_consumer),
        (1, 1, 1)
    );
    let example = report.example.as_ref().expect("one followed end to end");
    assert_eq!(example.trace_id, TRACE_HEX);
    assert_eq!(example.sent_after_ms, Some(250));
    let mut out = String::new();
    report.render("orders", &mut out);
    assert!(out.contains("1 of 1"), "{out}");
    assert!(
        out.contains("X-Ray 1-5759e988-bd862e3fe1be46a994272793"),
        "{out}"
    );
    assert!(out.contains("show --message-id m-a"), "{out}");
}

#[test]
fn a_trace_lost_or_changed_on_the_way_is_a_broken_guarantee() {
    let mut produced = Produced::default();
    produced
        .committed
        .insert("a".into(), committed(Some(TRACE)));
    produced
        .committed
        .insert("c".into(), committed(Some(TRACE + 1)));
    let items = [
        item("a", None),
        item("c", traceparent(&format!("{:032x}", TRACE + 1))),
    ];
    let refs: Vec<&OutboxItem> = items.iter().collect();
    let results = [json!({"id": "c", "trace_id": ""})];
    let mut broken = Vec::new();
    let report = follow(&produced, &refs, &results, &mut broken);
    assert_eq!(
        (report.traced, report.on_item, report.at_consumer),
        (2, 1, 0)
    );
    assert!(report.example.is_none());
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("order a") && broken[0].contains("carries none"));
    assert!(broken[1].contains("order c") && broken[1].contains("the consumer saw"));
}
