//! Traces through every kind of destination. Each library message is committed in a
//! trace of its own (see `workload`); it must arrive with that trace whichever path
//! published it (the publisher, a redelivered batch, the sweeper's republish): on its
//! outbox item, at the consumers behind the standard queue, the SNS topic and the
//! EventBridge bus (each `RESULT` line names the trace the consumer library read from
//! whatever envelope the queue delivered), and on the FIFO queue's copies. A message
//! committed without a trace arrives without one: nothing invents a context.

use super::super::workload::Planned;
use super::{ChaosReport, Observed, problem};
use crate::deployment::log_records;
use dynamodb_outbox::trace::TraceContext;
use dynamodb_outbox_core::schema::OutboxItem;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How far the traces got, per topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Committed messages committed in a trace.
    pub traced: usize,
    /// Of them, whose outbox item carries that trace.
    pub on_item: usize,
    /// Per topic: traced messages seen at their destination, and of them those whose
    /// every copy seen carried their trace.
    pub arrived: BTreeMap<&'static str, Arrived>,
    /// Traced messages whose item or a delivered copy carried another trace, or none.
    pub wrong: usize,
    /// Messages committed without a trace but delivered with one.
    pub invented: usize,
}

/// One topic's traced messages at their destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrived {
    /// Traced messages of which a copy was seen (a consumer's `RESULT` line, or a
    /// FIFO copy).
    pub seen: usize,
    /// Of them, every copy with the message's trace.
    pub carried: usize,
}

impl TraceCounts {
    /// Whether no trace was changed, dropped or invented.
    pub fn held(&self) -> bool {
        self.wrong == 0 && self.invented == 0
    }

    /// The report's lines.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "{:<34}{} committed in one, {} on their outbox item",
            "traces", self.traced, self.on_item
        );
        for (topic, a) in &self.arrived {
            let _ = writeln!(
                out,
                "{:<34}{} of {} seen there carried theirs",
                format!("  at {topic}'s destination"),
                a.carried,
                a.seen
            );
        }
        let _ = writeln!(
            out,
            "{:<34}{} wrong or dropped, {} invented",
            "  traces broken", self.wrong, self.invented
        );
    }
}

/// Follows every committed message's trace; a change is a problem in the report.
pub(super) fn check_traces(
    committed: &[&Planned],
    items: &BTreeMap<String, &OutboxItem>,
    seen: &Observed,
    r: &mut ChaosReport,
) {
    let results = log_records(&seen.consumer_logs, "RESULT");
    let at_consumer = consumer_traces(&results);
    let mut fifo: BTreeMap<&str, Vec<Option<String>>> = BTreeMap::new();
    for copy in &seen.fifo {
        let trace = copy.traceparent.as_deref().and_then(trace_id_of);
        fifo.entry(copy.message_id.as_str())
            .or_default()
            .push(trace);
    }
    for p in committed {
        let item = items.get(&p.id).copied();
        let copies: Vec<Option<String>> = if p.sequence.is_some() {
            item.and_then(|i| i.message_id.as_deref())
                .and_then(|id| fifo.get(id))
                .cloned()
                .unwrap_or_default()
        } else {
            at_consumer.get(p.id.as_str()).cloned().unwrap_or_default()
        };
        follow(p, item, &copies, r);
    }
}

/// One message: its item's trace and its delivered copies' traces.
fn follow(p: &Planned, item: Option<&OutboxItem>, copies: &[Option<String>], r: &mut ChaosReport) {
    let Some(want) = p.trace_id() else {
        if let Some(Some(got)) = copies.iter().find(|c| c.is_some()) {
            r.traces.invented += 1;
            let text = format!("trace: {} was committed in none; delivered in {got}", p.id);
            problem(r, text);
        }
        return;
    };
    r.traces.traced += 1;
    if let Some(item) = item {
        match item_trace_id(item) {
            Some(got) if got == want => r.traces.on_item += 1,
            got => {
                r.traces.wrong += 1;
                let got = got.unwrap_or_else(|| "none".into());
                problem(
                    r,
                    format!(
                        "trace: {} committed in {want}; its item carries {got}",
                        p.id
                    ),
                );
            }
        }
    }
    if copies.is_empty() {
        return; // not seen at its destination: the effect checks judge that
    }
    let arrived = r.traces.arrived.entry(p.topic).or_default();
    arrived.seen += 1;
    if copies.iter().all(|c| c.as_deref() == Some(want)) {
        arrived.carried += 1;
    } else {
        r.traces.wrong += 1;
        let text = format!(
            "trace: {} ({}) committed in {want}; delivered in {copies:?}",
            p.id, p.topic
        );
        problem(r, text);
    }
}

/// The trace id of an outbox item's `TraceParent` (or its X-Ray header).
fn item_trace_id(item: &OutboxItem) -> Option<String> {
    let trace = TraceContext::from_attributes(
        item.trace_parent.as_deref(),
        item.trace_state.as_deref(),
        item.aws_trace_header.as_deref(),
    )?;
    trace.ok().map(|t| t.trace_id().to_owned())
}

fn trace_id_of(traceparent: &str) -> Option<String> {
    let trace = TraceContext::from_w3c(traceparent, None).ok()?;
    Some(trace.trace_id().to_owned())
}

/// Order id → the trace id each of its `RESULT` lines names (none: an empty text).
fn consumer_traces(results: &[Value]) -> BTreeMap<&str, Vec<Option<String>>> {
    let mut traces: BTreeMap<&str, Vec<Option<String>>> = BTreeMap::new();
    for line in results {
        let Some(order) = line.get("id").and_then(Value::as_str) else {
            continue;
        };
        let trace = line.get("trace_id").and_then(Value::as_str);
        let trace = trace.filter(|t| !t.is_empty()).map(str::to_owned);
        traces.entry(order).or_default().push(trace);
    }
    traces
}

#[cfg(test)]
mod tests;
