//! What a deployed function printed, read from CloudWatch Logs page by page, and
//! the structured lines and metrics in it.

use crate::aws::Clients;
use aws_smithy_types::error::display::DisplayErrorContext;
use serde_json::Value;
use std::collections::HashMap;

/// One line a function printed, with its time (epoch ms).
#[derive(Debug, Clone)]
pub struct LogLine {
    /// When CloudWatch Logs received it.
    pub timestamp_ms: i64,
    /// The line.
    pub message: String,
}

/// Everything `function` printed since `since_ms` (epoch ms), oldest first: every page,
/// also past the local AWS's cap on one answer.
pub async fn function_logs(
    clients: &Clients,
    function: &str,
    since_ms: i64,
) -> Result<Vec<LogLine>, String> {
    let group = format!("/aws/lambda/{function}");
    let mut lines = Vec::new();
    let mut boundary = Boundary::default();
    let (mut start, mut token) = (since_ms, None);
    loop {
        let page = clients
            .logs
            .filter_log_events()
            .log_group_name(&group)
            .start_time(start)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| format!("reading {group}: {}", DisplayErrorContext(&e)))?;
        let events: Vec<PageEvent> = page
            .events()
            .iter()
            .map(|e| PageEvent {
                timestamp_ms: e.timestamp().unwrap_or_default(),
                stream: e.log_stream_name().unwrap_or_default().to_owned(),
                message: e.message().unwrap_or_default().to_owned(),
            })
            .collect();
        let fresh = boundary.admit(&events);
        let new_lines = !fresh.is_empty();
        lines.extend(fresh);
        let last = events.last().map(|e| e.timestamp_ms);
        let next = next_logs_page(events.len(), new_lines, last, page.next_token());
        if let NextLogs::Token(_) = next {
            boundary = Boundary::default();
        }
        match next {
            NextLogs::Token(t) => (start, token) = (since_ms, Some(t)),
            NextLogs::From(ms) => (start, token) = (ms, None),
            NextLogs::Done => return Ok(lines),
            NextLogs::Cut(ms) => {
                return Err(format!(
                    "reading {group}: more than {LOCAL_LOGS_PAGE_CAP} lines at {ms} ms, which the local AWS cannot page through: the log would be cut"
                ));
            }
        }
    }
}

/// One event of a page, as the reader compares them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PageEvent {
    timestamp_ms: i64,
    stream: String,
    message: String,
}

/// The events of the last millisecond read: a page read on from that millisecond
/// returns them again. The local AWS gives a function's own lines no event id, so
/// they are told apart by stream and text, counted (a function may print the same
/// line twice in one millisecond).
#[derive(Debug, Default)]
struct Boundary {
    ms: Option<i64>,
    seen: HashMap<(String, String), usize>,
}

impl Boundary {
    /// The lines of `events` not read before; remembers the page's last millisecond.
    fn admit(&mut self, events: &[PageEvent]) -> Vec<LogLine> {
        let mut fresh = Vec::new();
        for e in events {
            if Some(e.timestamp_ms) == self.ms {
                let key = (e.stream.clone(), e.message.clone());
                if let Some(n) = self.seen.get_mut(&key).filter(|n| **n > 0) {
                    *n -= 1;
                    continue;
                }
            }
            fresh.push(LogLine {
                timestamp_ms: e.timestamp_ms,
                message: e.message.clone(),
            });
        }
        if let Some(last) = events.last().map(|e| e.timestamp_ms) {
            self.ms = Some(last);
            self.seen.clear();
            for e in events.iter().filter(|e| e.timestamp_ms == last) {
                *self
                    .seen
                    .entry((e.stream.clone(), e.message.clone()))
                    .or_default() += 1;
            }
        }
        fresh
    }
}

/// Most events the local AWS returns from one `FilterLogEvents`, with no token to go
/// on: a bigger log group was silently cut at this many lines (the chaos run counts
/// each consumer's effects from its log, so a cut log would hide an effect applied
/// twice).
const LOCAL_LOGS_PAGE_CAP: usize = 10_000;

/// Where the next page of a log read starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NextLogs {
    /// Where the service's token says.
    Token(String),
    /// Again from this time: the page was cut at the local AWS's cap, without a token
    /// (events of that millisecond come again; [`Boundary`] tells them apart).
    From(i64),
    /// Everything was read.
    Done,
    /// The page was cut at the cap within one millisecond: it cannot be read on.
    Cut(i64),
}

fn next_logs_page(
    events: usize,
    new_lines: bool,
    last_ms: Option<i64>,
    token: Option<&str>,
) -> NextLogs {
    match (token, last_ms) {
        (Some(t), _) => NextLogs::Token(t.to_owned()),
        (None, Some(ms)) if events >= LOCAL_LOGS_PAGE_CAP && new_lines => NextLogs::From(ms),
        (None, Some(ms)) if events >= LOCAL_LOGS_PAGE_CAP => NextLogs::Cut(ms),
        _ => NextLogs::Done,
    }
}

/// The sum of one Embedded Metric Format metric over the lines that carry it.
pub fn emf_sum(lines: &[LogLine], metric: &str) -> f64 {
    lines
        .iter()
        .filter(|l| l.message.contains("\"_aws\""))
        .filter_map(|l| serde_json::from_str::<Value>(&l.message).ok())
        .filter_map(|doc| doc.get(metric).and_then(Value::as_f64))
        .sum()
}

/// The environment that makes a function log JSON. Lambda sets it from the
/// function's `LoggingConfig`; the local AWS does not, so the tools set it.
pub const JSON_LOGS: (&str, Option<&str>) = ("AWS_LAMBDA_LOG_FORMAT", Some("JSON"));

/// The structured (JSON) log lines whose `message` field is `message`, as their
/// `fields` objects.
pub fn log_records(lines: &[LogLine], message: &str) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l.message.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(&l.message).ok())
        .filter_map(|doc| doc.get("fields").cloned())
        .filter(|f| f.get("message").and_then(Value::as_str) == Some(message))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ms: i64, stream: &str, message: &str) -> PageEvent {
        PageEvent {
            timestamp_ms: ms,
            stream: stream.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_page_read_on_from_its_last_millisecond_gives_each_line_once_without_event_ids() {
        // A page cut inside millisecond 2: its lines of that millisecond come again
        // in the next page, among others of the same millisecond (one repeated on
        // purpose by the function, one in another stream).
        let mut b = Boundary::default();
        let first = [
            ev(1, "s", "a"),
            ev(2, "s", "RESULT x"),
            ev(2, "t", "RESULT y"),
        ];
        assert_eq!(b.admit(&first).len(), 3);
        let next = [
            ev(2, "s", "RESULT x"),
            ev(2, "t", "RESULT y"),
            ev(2, "s", "RESULT x"),
            ev(2, "u", "RESULT y"),
            ev(3, "s", "b"),
        ];
        let fresh: Vec<(i64, String)> = b
            .admit(&next)
            .into_iter()
            .map(|l| (l.timestamp_ms, l.message))
            .collect();
        assert_eq!(
            fresh,
            [
                (2, "RESULT x".to_owned()),
                (2, "RESULT y".to_owned()),
                (3, "b".to_owned())
            ]
        );
    }

    #[test]
    fn a_page_cut_at_the_local_cap_is_read_on_from_its_last_millisecond() {
        assert_eq!(
            next_logs_page(10_000, true, Some(42), None),
            NextLogs::From(42)
        );
        assert_eq!(
            next_logs_page(10_000, true, Some(42), Some("t")),
            NextLogs::Token("t".into())
        );
        assert_eq!(next_logs_page(9_999, true, Some(42), None), NextLogs::Done);
        // A millisecond holding more than the cap cannot be read further: say so
        // rather than ask for the same page forever, or hand back a cut log.
        assert_eq!(
            next_logs_page(10_000, false, Some(42), None),
            NextLogs::Cut(42)
        );
    }
}
