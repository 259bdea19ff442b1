//! Traces through the deployed pipeline: each library order is committed in a trace
//! of its own; the verdict follows it to the outbox item (`TraceParent`) and to the
//! consumer's `RESULT` line (`trace_id`, read by the consumer library from whatever the
//! queue delivered), and the summary shows one message's trace end to end.

use super::observe::order_id;
use super::produce::Produced;
use dynamodb_outbox::trace::TraceContext;
use dynamodb_outbox_core::schema::OutboxItem;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How far the orders' traces got.
#[derive(Debug, Clone, Default)]
pub struct TraceReport {
    /// Orders committed in a trace (the library's; the minimal producer writes none).
    pub traced: usize,
    /// Of them, whose outbox item carries that trace.
    pub on_item: usize,
    /// Of them, whose consumer `RESULT` line names that trace.
    pub at_consumer: usize,
    /// One message's trace, end to end, when one got all the way.
    pub example: Option<TraceExample>,
}

/// One message followed from its commit to its effect.
#[derive(Debug, Clone)]
pub struct TraceExample {
    /// The order.
    pub order: String,
    /// Its outbox message id.
    pub message_id: String,
    /// The trace id, W3C form.
    pub trace_id: String,
    /// Commit to `SENT`, milliseconds.
    pub sent_after_ms: Option<i64>,
}

/// Follows every traced order; a trace that reached the item or the consumer changed
/// (or the wrong one) is a broken guarantee, named in `broken`.
pub fn follow(
    produced: &Produced,
    items: &[&OutboxItem],
    results: &[Value],
    broken: &mut Vec<String>,
) -> TraceReport {
    let items_by_order: BTreeMap<&str, &OutboxItem> = items
        .iter()
        .filter_map(|item| Some((order_id(item.pk.as_deref()?), *item)))
        .collect();
    let consumer_traces = consumer_traces(results);
    let mut report = TraceReport::default();
    for (order, committed) in &produced.committed {
        let Some(want) = committed.trace_id.map(|t| format!("{t:032x}")) else {
            continue;
        };
        report.traced += 1;
        let item = items_by_order.get(order.as_str());
        match item.and_then(|i| item_trace_id(i)) {
            Some(got) if got == want => report.on_item += 1,
            got => broken.push(format!(
                "trace: order {order} was committed in trace {want}; its outbox item carries {}",
                got.as_deref().unwrap_or("none")
            )),
        }
        let seen = consumer_traces.get(order.as_str()).map(Vec::as_slice);
        match seen.unwrap_or_default() {
            [] => {} // no RESULT line read for it: the effect checks judge that
            lines if lines.iter().all(|t| *t == want) => {
                report.at_consumer += 1;
                if report.example.is_none()
                    && let Some(item) = item
                {
                    report.example = Some(TraceExample {
                        order: order.clone(),
                        message_id: item.message_id.clone().unwrap_or_default(),
                        trace_id: want.clone(),
                        sent_after_ms: item.sent_at.map(|s| s - committed.commit_ms),
                    });
                }
            }
            lines => broken.push(format!(
                "trace: order {order} was committed in trace {want}; the consumer saw {lines:?}"
            )),
        }
    }
    report
}

/// The trace id of an outbox item's `TraceParent` (or X-Ray header).
fn item_trace_id(item: &OutboxItem) -> Option<String> {
    TraceContext::from_attributes(
        item.trace_parent.as_deref(),
        item.trace_state.as_deref(),
        item.aws_trace_header.as_deref(),
    )?
    .ok()
    .map(|t| t.trace_id().to_owned())
}

/// Order id → the trace ids its `RESULT` lines name (empty text: none).
fn consumer_traces(results: &[Value]) -> BTreeMap<&str, Vec<&str>> {
    let mut traces: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in results {
        if let Some(order) = r.get("id").and_then(Value::as_str) {
            let trace = r
                .get("trace_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            traces.entry(order).or_default().push(trace);
        }
    }
    traces
}

impl TraceReport {
    /// The summary's lines: how many traces got through, and one followed end to end.
    pub fn render(&self, table: &str, out: &mut String) {
        let mut line = |label: &str, value: String| {
            let _ = writeln!(out, "{label:<37}{value}");
        };
        line(
            "traces carried to the consumer",
            format!(
                "{} of {} committed in one (on the outbox item: {})",
                self.at_consumer, self.traced, self.on_item
            ),
        );
        let Some(e) = &self.example else {
            return;
        };
        let xray = format!("1-{}-{}", &e.trace_id[..8], &e.trace_id[8..]);
        line(
            "one message's trace",
            format!("{} (X-Ray {xray})", e.trace_id),
        );
        line(
            "  committed",
            format!(
                "order {} as outbox message {}, TraceParent on the item",
                e.order, e.message_id
            ),
        );
        if let Some(ms) = e.sent_after_ms {
            line("  published", format!("SENT {ms} ms after the commit"));
        }
        line(
            "  consumed",
            format!(
                "the consumer's RESULT line for order {} names trace {}",
                e.order, e.trace_id
            ),
        );
        line(
            "  follow it",
            format!(
                "outbox-ops --table {table} show --message-id {}",
                e.message_id
            ),
        );
    }
}

#[cfg(test)]
mod tests;
