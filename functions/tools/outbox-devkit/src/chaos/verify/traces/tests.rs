use super::*;
use crate::deployment::LogLine;
use serde_json::json;

const TRACE: &str = "6ab13b80bd862e3fe1be46a994272793";
const OTHER: &str = "6ab13b80000000000000000000000001";

fn planned(id: &str, topic: &'static str, trace: Option<&str>, sequence: Option<u64>) -> Planned {
    Planned {
        id: id.into(),
        aggregate: format!("ORDER#{id}"),
        topic,
        minimal: trace.is_none(),
        poison: false,
        rollback: false,
        sequence,
        traceparent: trace.map(traceparent),
    }
}

fn traceparent(trace: &str) -> String {
    format!("00-{trace}-53995c3f42cd8ad8-01")
}

fn item(id: &str, trace: Option<&str>) -> OutboxItem {
    OutboxItem {
        message_id: Some(format!("m-{id}")),
        trace_parent: trace.map(traceparent),
        ..OutboxItem::default()
    }
}

/// A consumer's `RESULT` line as the example consumer writes it (JSON logs).
fn result(id: &str, trace: &str) -> LogLine {
    let fields = json!({"message": "RESULT", "id": id, "processed": true, "trace_id": trace});
    LogLine {
        timestamp_ms: 0,
        message: json!({"level": "INFO", "fields": fields}).to_string(),
    }
}

fn fifo_copy(id: &str, trace: Option<&str>) -> super::super::FifoDelivery {
    super::super::FifoDelivery {
        group: "ACC#0".into(),
        sequence: 0,
        message_id: format!("m-{id}"),
        sqs_id: format!("q-{id}"),
        sent_at_ms: None,
        traceparent: trace.map(traceparent),
    }
}

fn check(plans: &[Planned], items: &[(String, OutboxItem)], seen: &Observed) -> ChaosReport {
    let committed: Vec<&Planned> = plans.iter().collect();
    let items: BTreeMap<String, &OutboxItem> = items.iter().map(|(k, v)| (k.clone(), v)).collect();
    let mut r = ChaosReport::default();
    check_traces(&committed, &items, seen, &mut r);
    r
}

#[test]
fn traces_that_arrive_through_every_kind_of_destination_are_counted_per_topic() {
    let plans = [
        planned("a", "orders", Some(TRACE), None),
        planned("b", "chaos-sns", Some(TRACE), None),
        planned("c", "chaos-bus", Some(TRACE), None),
        planned("d", "orders-events", Some(TRACE), Some(0)),
        planned("e", "orders", None, None),
    ];
    let items: Vec<(String, OutboxItem)> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|id| (id.to_owned(), item(id, Some(TRACE))))
        .chain([("e".to_owned(), item("e", None))])
        .collect();
    let seen = Observed {
        // A redelivery logs a second line with the same trace; the minimal message's
        // line names none.
        consumer_logs: vec![
            result("a", TRACE),
            result("a", TRACE),
            result("b", TRACE),
            result("c", TRACE),
            result("e", ""),
        ],
        fifo: vec![fifo_copy("d", Some(TRACE))],
        ..Observed::default()
    };
    let r = check(&plans, &items, &seen);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!((r.traces.traced, r.traces.on_item), (4, 4));
    for topic in ["orders", "chaos-sns", "chaos-bus", "orders-events"] {
        assert_eq!(
            r.traces.arrived[topic],
            Arrived {
                seen: 1,
                carried: 1
            },
            "{topic}"
        );
    }
    assert!(r.traces.held());
}

#[test]
fn a_dropped_changed_or_invented_trace_is_a_broken_guarantee() {
    let plans = [
        planned("dropped", "chaos-sns", Some(TRACE), None),
        planned("changed", "chaos-bus", Some(TRACE), None),
        planned("fifo", "orders-events", Some(TRACE), Some(0)),
        planned("item", "orders", Some(TRACE), None),
        planned("invented", "orders", None, None),
    ];
    let items = vec![
        ("dropped".to_owned(), item("dropped", Some(TRACE))),
        ("changed".to_owned(), item("changed", Some(TRACE))),
        ("fifo".to_owned(), item("fifo", Some(TRACE))),
        ("item".to_owned(), item("item", Some(OTHER))),
        ("invented".to_owned(), item("invented", None)),
    ];
    let seen = Observed {
        consumer_logs: vec![
            result("dropped", ""),
            result("changed", TRACE),
            result("changed", OTHER),
            result("item", TRACE),
            result("invented", TRACE),
        ],
        fifo: vec![fifo_copy("fifo", None)],
        ..Observed::default()
    };
    let r = check(&plans, &items, &seen);
    assert_eq!(r.traces.wrong, 4, "{:?}", r.problems);
    assert_eq!(r.traces.invented, 1, "{:?}", r.problems);
    assert_eq!(r.problems.len(), 5, "{:?}", r.problems);
    assert!(!r.traces.held());
    assert!(r.problems.iter().any(|p| p.contains("its item carries")));
}

#[test]
fn a_message_not_seen_at_its_destination_is_left_to_the_effect_checks() {
    let plans = [planned("a", "chaos-sns", Some(TRACE), None)];
    let items = vec![("a".to_owned(), item("a", Some(TRACE)))];
    let r = check(&plans, &items, &Observed::default());
    assert!(r.problems.is_empty());
    assert_eq!((r.traces.traced, r.traces.on_item), (1, 1));
    assert!(r.traces.arrived.is_empty());
}
