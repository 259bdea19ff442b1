//! What `show` prints, as text: pure, so that a test reads exactly what an operator
//! reads.

use crate::{FoundBy, MessageLife, MessageLogs, MessageView};
use aws_smithy_types::date_time::{DateTime, Format};
use std::fmt::Write;

/// An instant as an operator reads it, UTC: `2026-12-04T15:14:28.123Z`.
fn instant(ms: i64) -> String {
    DateTime::from_millis(ms)
        .fmt(Format::DateTime)
        .unwrap_or_else(|_| format!("{ms} (epoch ms)"))
}

/// Seconds from one instant to another, as `1.5 s`.
fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The messages of an aggregate (or the one asked for), one block each.
pub fn render_lives(lives: &[MessageLife], aggregate: &str, now: i64) -> String {
    let mut out = String::new();
    if lives.is_empty() {
        let _ = writeln!(
            out,
            "no outbox message of {aggregate} (SENT ones expire by TTL)"
        );
    }
    for life in lives {
        out.push_str(&render_life(life, now));
    }
    out
}

/// One message's item, line by line.
fn render_life(life: &MessageLife, now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "message {} ({} / {}), topic {}",
        life.message_id,
        life.key.pk,
        life.key.sk,
        life.topic.as_deref().unwrap_or("-")
    );
    let since_commit = |ms: i64| match life.created_at_ms {
        Some(created) => format!("{} ({} ms after commit)", instant(ms), ms - created),
        None => instant(ms),
    };
    if let Some(created) = life.created_at_ms {
        let _ = writeln!(
            out,
            "  committed   {} ({} ago)",
            instant(created),
            seconds(now - created)
        );
    }
    let status = life.status.map_or("unknown", |s| s.as_str());
    let _ = match (life.sent_at_ms, life.failed_at_ms, life.due_ms) {
        (Some(sent), _, _) => writeln!(out, "  status      {status} at {}", since_commit(sent)),
        (_, Some(failed), _) => writeln!(out, "  status      {status} at {}", since_commit(failed)),
        (_, _, Some(due)) if due <= now => writeln!(
            out,
            "  status      {status}, the sweeper may take it now (due {} ago)",
            seconds(now - due)
        ),
        (_, _, Some(due)) => writeln!(
            out,
            "  status      {status}, the sweeper may take it in {}",
            seconds(due - now)
        ),
        _ => writeln!(out, "  status      {status}"),
    };
    let _ = writeln!(
        out,
        "  attempts    {} by the sweeper",
        life.retry_count.unwrap_or(0)
    );
    if let Some(error) = &life.last_error {
        let _ = writeln!(out, "  last error  {error}");
    }
    if let Some(line) = dead_letter(life) {
        let _ = writeln!(out, "  dead letter {line}");
    }
    if let Some(error) = &life.decode_error {
        let _ = writeln!(
            out,
            "  unreadable  {error} (poison: the publisher marks it FAILED with a dead-letter copy)"
        );
    }
    if let Some(expires) = life.expires_at_s {
        let _ = writeln!(
            out,
            "  expires     {} (the table's TTL)",
            instant(expires.saturating_mul(1000))
        );
    }
    let _ = match (&life.trace, &life.trace_error) {
        (Some(trace), _) => writeln!(
            out,
            "  trace       {} (X-Ray {}), parent span {}",
            trace.trace_id(),
            trace.xray_trace_id(),
            trace.parent_id()
        ),
        (None, Some(error)) => writeln!(out, "  trace       none readable: {error}"),
        (None, None) => writeln!(out, "  trace       none (committed outside a trace)"),
    };
    out
}

/// Where a failed message's copy is, when it failed.
fn dead_letter(life: &MessageLife) -> Option<String> {
    if let Some(on) = &life.payload_on {
        return Some(format!(
            "its payload left the item for its copy on the {on} (PayloadOn): that copy is the only one"
        ));
    }
    let failed = life.status == Some(dynamodb_outbox_core::schema::Status::Failed);
    failed.then(|| {
        "copied to the deployment's dead-letter queue (<prefix>-dlq, OUTBOX_DLQ_URL) before the FAILED mark; the logs say if a copy could not be sent".to_owned()
    })
}

/// One message asked for by its id: its item (or why there is none) and its log lines.
pub fn render_message(view: &MessageView, now: i64) -> String {
    let mut out = String::new();
    if view.lives.is_empty() {
        let _ = writeln!(
            out,
            "message {} not found in the table: {}",
            view.message_id,
            not_found_why(view.found_by)
        );
    }
    for life in &view.lives {
        out.push_str(&render_life(life, now));
        if view.found_by == FoundBy::Logs {
            let _ = writeln!(out, "  found by    a log line naming its aggregate");
        }
    }
    let (start, end) = view.window_ms;
    match &view.logs {
        Err(why) => {
            let _ = writeln!(out, "logs: not read: {why}");
        }
        Ok(logs) => out.push_str(&render_logs(logs, start, end)),
    }
    out
}

/// Why a message asked for by its id alone may not be found.
fn not_found_why(found_by: FoundBy) -> &'static str {
    match found_by {
        FoundBy::Aggregate => {
            "not among the aggregate's messages (a SENT one is removed by TTL, 7 days by default)"
        }
        _ => {
            "no log line in the window names its aggregate and it is not FAILED; the table is keyed by aggregate and never scanned: give the aggregate (show AGGREGATE --message-id ID) or widen --since"
        }
    }
}

/// The log lines, one a line: time, function, level, message.
fn render_logs(logs: &MessageLogs, start: i64, end: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "logs from {} to {} ({} group(s), {} FilterLogEvents request(s)): {} line(s)",
        instant(start),
        instant(end),
        logs.groups.len(),
        logs.requests,
        logs.lines.len()
    );
    for l in &logs.lines {
        let _ = writeln!(
            out,
            "  {}  {:<10} {:<5} {}",
            instant(l.timestamp_ms),
            l.function,
            l.line.level.as_deref().unwrap_or("-"),
            l.line.message
        );
    }
    for note in &logs.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logline::parse;
    use crate::{FunctionLogLine, Reads};
    use dynamodb_outbox::trace::TraceContext;
    use dynamodb_outbox_core::schema::{ItemKey, Status};

    const T: i64 = 1_764_860_068_000; // 2025-12-04T14:54:28Z

    fn life() -> MessageLife {
        MessageLife {
            key: ItemKey {
                pk: "ORDER#42".into(),
                sk: "MESSAGE#X#1".into(),
            },
            message_id: "m-1".into(),
            topic: Some("nowhere".into()),
            status: Some(Status::Failed),
            created_at_ms: Some(T),
            retry_count: Some(0),
            due_ms: None,
            sent_at_ms: None,
            expires_at_s: None,
            failed_at_ms: Some(T + 250),
            last_error: Some("no route for topic nowhere".into()),
            payload_on: None,
            trace: TraceContext::from_w3c(
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                None,
            )
            .ok(),
            trace_error: None,
            decode_error: None,
        }
    }

    fn view(
        lives: Vec<MessageLife>,
        found_by: FoundBy,
        logs: Result<MessageLogs, String>,
    ) -> MessageView {
        MessageView {
            message_id: "m-1".into(),
            lives,
            found_by,
            reads: Reads::default(),
            logs,
            window_ms: (T - 60_000, T + 1_000),
        }
    }

    #[test]
    fn a_failed_message_shows_its_times_error_dead_letter_and_both_trace_ids() {
        let text = render_lives(&[life()], "ORDER#42", T + 1_000);
        assert!(
            text.contains("message m-1 (ORDER#42 / MESSAGE#X#1), topic nowhere"),
            "{text}"
        );
        assert!(
            text.contains("committed   2025-12-04T14:54:28Z (1.0 s ago)"),
            "{text}"
        );
        assert!(
            text.contains("FAILED at 2025-12-04T14:54:28.25Z (250 ms after commit)"),
            "{text}"
        );
        assert!(
            text.contains("last error  no route for topic nowhere"),
            "{text}"
        );
        assert!(
            text.contains("dead letter copied to the deployment's dead-letter queue"),
            "{text}"
        );
        assert!(
            text.contains("trace       0af7651916cd43dd8448eb211c80319c (X-Ray 1-0af76519-16cd43dd8448eb211c80319c)"),
            "{text}"
        );
    }

    #[test]
    fn a_sent_message_has_no_dead_letter_line_and_a_moved_payload_says_where() {
        let mut sent = life();
        (sent.status, sent.failed_at_ms, sent.sent_at_ms) =
            (Some(Status::Sent), None, Some(T + 40));
        sent.trace = None;
        let text = render_lives(&[sent], "ORDER#42", T);
        assert!(
            text.contains("SENT at") && !text.contains("dead letter"),
            "{text}"
        );
        assert!(text.contains("none (committed outside a trace)"), "{text}");
        let mut moved = life();
        moved.payload_on = Some("dead-letter queue".into());
        assert!(render_lives(&[moved], "A", T).contains("on the dead-letter queue (PayloadOn)"));
    }

    #[test]
    fn the_log_lines_show_time_function_level_and_message_then_the_notes() {
        let logs = MessageLogs {
            lines: vec![FunctionLogLine {
                timestamp_ms: T + 200,
                function: "publisher".into(),
                line: parse(" WARN invoke{requestId=\"r\"}: message is poison message_id=\"m-1\""),
            }],
            notes: vec!["no log group /aws/lambda/p-recovery: the function has not run".into()],
            requests: 4,
            groups: vec!["a".into(), "b".into(), "c".into()],
        };
        let text = render_message(&view(vec![life()], FoundBy::Logs, Ok(logs)), T + 1_000);
        assert!(
            text.contains("found by    a log line naming its aggregate"),
            "{text}"
        );
        assert!(
            text.contains("(3 group(s), 4 FilterLogEvents request(s)): 1 line(s)"),
            "{text}"
        );
        assert!(
            text.contains(
                "  2025-12-04T14:54:28.2Z  publisher  WARN  message is poison message_id=\"m-1\""
            ),
            "{text}"
        );
        assert!(
            text.contains("  note: no log group /aws/lambda/p-recovery"),
            "{text}"
        );
    }

    #[test]
    fn a_message_not_found_says_how_to_find_it_and_unread_logs_say_why() {
        let text = render_message(
            &view(vec![], FoundBy::Nowhere, Err("no deployment named".into())),
            T,
        );
        assert!(
            text.contains("message m-1 not found in the table"),
            "{text}"
        );
        assert!(text.contains("give the aggregate"), "{text}");
        assert!(
            text.contains("logs: not read: no deployment named"),
            "{text}"
        );
    }
}
