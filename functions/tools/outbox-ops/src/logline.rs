//! One line of a function's log, read as an operator wants it: its level, its message
//! and the fields that name a message. Pure: no AWS here.
//!
//! The functions log through `lambda_runtime`'s subscriber, in one of two shapes:
//!
//! - JSON (the stacks deploy the functions with `LogFormat: JSON`, so on AWS):
//!   `{"level":"WARN","fields":{"message":"…","message_id":"…","trace_id":"…"},"spans":[…]}`;
//! - text (Lambda's `Text` format, and the local AWS, which never sets
//!   `AWS_LAMBDA_LOG_FORMAT`): `␣WARN Lambda runtime invoke{requestId="…"}: message is
//!   poison: … message_id="…" aggregate=ORDER#42`, coloured or not.
//!
//! Anything else (Lambda's own `START`/`REPORT` lines, a panic) is shown as it is.

use serde_json::Value;

/// The levels `tracing` writes, as a text line starts with one.
const LEVELS: [&str; 5] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];

/// A log line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine {
    /// `INFO`, `WARN`, …, when the line says.
    pub level: Option<String>,
    /// The message and its other fields, as one readable text.
    pub message: String,
    /// The `aggregate` field (the message's partition key), when the line has one.
    pub aggregate: Option<String>,
}

/// Reads one log event's text.
pub fn parse(raw: &str) -> ParsedLine {
    let clean = strip_ansi(raw.trim_end());
    let trimmed = clean.trim();
    if trimmed.starts_with('{')
        && let Ok(Value::Object(object)) = serde_json::from_str::<Value>(trimmed)
    {
        return parse_json(&object);
    }
    parse_text(trimmed)
}

/// A JSON line: `tracing`'s fields under `fields` (or, from another logger, at the top).
fn parse_json(object: &serde_json::Map<String, Value>) -> ParsedLine {
    let fields = object
        .get("fields")
        .and_then(Value::as_object)
        .unwrap_or(object);
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let level = object
        .get("level")
        .or_else(|| object.get("levelname"))
        .map(|l| text(l).to_uppercase());
    let mut message = fields
        .get("message")
        .or_else(|| fields.get("msg"))
        .map(text)
        .unwrap_or_default();
    for (key, value) in fields {
        if matches!(key.as_str(), "message" | "msg" | "level" | "levelname") {
            continue;
        }
        if !message.is_empty() {
            message.push(' ');
        }
        message.push_str(&format!("{key}={}", text(value)));
    }
    ParsedLine {
        level,
        aggregate: fields.get("aggregate").map(text),
        message,
    }
}

/// A text line of `tracing`'s formatter: `LEVEL spans: message key=value …`.
fn parse_text(line: &str) -> ParsedLine {
    let (level, rest) = match line.split_once(' ') {
        Some((first, rest)) if LEVELS.contains(&first) => (Some(first.to_owned()), rest),
        _ if LEVELS.contains(&line) => (Some(line.to_owned()), ""),
        _ => (None, line),
    };
    let message = if level.is_some() {
        after_spans(rest.trim_start())
    } else {
        rest
    };
    ParsedLine {
        level,
        aggregate: text_field(message, "aggregate"),
        message: message.to_owned(),
    }
}

/// The text after the span context (`name{field="…"}:other{…}: `), when there is one:
/// Lambda's invocation span repeats the request id on every line, which tells an
/// operator nothing the time does not.
fn after_spans(rest: &str) -> &str {
    let mut at = 0;
    loop {
        let Some(open) = rest[at..].find('{').map(|i| at + i) else {
            return rest;
        };
        // A span's name has no ':' and no '=' (a message's `key=value` does).
        if rest[at..open].contains([':', '=']) {
            return rest;
        }
        let Some(close) = closing_brace(rest, open) else {
            return rest;
        };
        let after = &rest[close + 1..];
        if let Some(message) = after.strip_prefix(": ") {
            return message;
        }
        match after.strip_prefix(':') {
            Some(_) => at = close + 2,
            None => return rest,
        }
    }
}

/// The index of the `}` closing the `{` at `open`, skipping quoted strings.
fn closing_brace(s: &str, open: usize) -> Option<usize> {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in s[open + 1..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(open + 1 + i),
            _ => {}
        }
    }
    None
}

/// The value of ` key=` in a text line: a quoted (Debug) string, or up to the next space.
fn text_field(message: &str, key: &str) -> Option<String> {
    let needle = format!(" {key}=");
    let start = message.find(&needle)? + needle.len();
    let value = &message[start..];
    match value.strip_prefix('"') {
        Some(quoted) => {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(out),
                    '\\' => out.extend(chars.next()),
                    c => out.push(c),
                }
            }
            None
        }
        None => Some(value.split(' ').next().unwrap_or_default().to_owned()),
    }
}

/// The text without terminal colour codes (`ESC [ … m`), which a formatter writes when
/// it believes it writes to a terminal.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a line found by a search for the message's id or sort key is about the
/// message: it names the id, or it names the sort key and the aggregate (a sort key
/// alone may repeat across aggregates).
pub fn is_about(raw: &str, message_id: &str, key: Option<(&str, &str)>) -> bool {
    raw.contains(message_id) || key.is_some_and(|(pk, sk)| raw.contains(sk) && raw.contains(pk))
}

/// Why a log group was not read, in words an operator acts on, from the error code
/// CloudWatch Logs answered with.
pub fn unreadable(group: &str, code: Option<&str>, detail: &str) -> String {
    match code {
        Some("ResourceNotFoundException") => format!(
            "no log group {group}: the function has not run (or logs elsewhere: --log-group NAME)"
        ),
        Some("AccessDeniedException" | "AccessDenied" | "UnauthorizedOperation") => format!(
            "not allowed to read {group}: the caller needs logs:FilterLogEvents on it ({detail})"
        ),
        _ => format!("could not read {group}: {detail}"),
    }
}

/// A term CloudWatch Logs can search for, quoted (`"…"`: an exact match, whatever the
/// characters), or `None` when it cannot be quoted.
pub fn filter_pattern(term: &str) -> Option<String> {
    let usable = !term.is_empty() && !term.contains('"') && !term.chars().any(char::is_control);
    usable.then(|| format!("\"{term}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_gives_its_level_message_fields_and_aggregate() {
        let line = parse(
            r#"{"level":"WARN","fields":{"message":"message is poison","message_id":"m-1","aggregate":"ORDER#42","copied":true},"spans":[]}"#,
        );
        assert_eq!(line.level.as_deref(), Some("WARN"));
        assert_eq!(
            line.message,
            "message is poison aggregate=ORDER#42 copied=true message_id=m-1"
        );
        assert_eq!(line.aggregate.as_deref(), Some("ORDER#42"));
    }

    #[test]
    fn a_text_line_loses_its_span_context_and_keeps_its_fields() {
        let line = parse(
            "\u{1b}[33m WARN\u{1b}[0m Lambda runtime invoke{requestId=\"a-b\" xrayTraceId=\"Root=1-x;Parent=y}\"}: message is poison: copied message_id=\"m-1\" aggregate=ORDER#42 reason=no route",
        );
        assert_eq!(line.level.as_deref(), Some("WARN"));
        assert_eq!(
            line.message,
            "message is poison: copied message_id=\"m-1\" aggregate=ORDER#42 reason=no route"
        );
        assert_eq!(line.aggregate.as_deref(), Some("ORDER#42"));
    }

    #[test]
    fn a_quoted_aggregate_is_unescaped_and_nested_spans_are_skipped() {
        let line =
            parse("INFO run{a=1}:invoke{b=\"x\"}: done aggregate=\"ORDER \\\"7\\\"\" left=0");
        assert_eq!(line.level.as_deref(), Some("INFO"));
        assert_eq!(line.message, "done aggregate=\"ORDER \\\"7\\\"\" left=0");
        assert_eq!(line.aggregate.as_deref(), Some("ORDER \"7\""));
    }

    #[test]
    fn a_line_without_spans_or_level_is_shown_as_it_is() {
        let line = parse("INFO done: 3 sent key={a}");
        assert_eq!(line.message, "done: 3 sent key={a}");
        let start = parse("START RequestId: 1 Version: $LATEST");
        assert_eq!(
            (start.level, start.message.as_str()),
            (None, "START RequestId: 1 Version: $LATEST")
        );
        assert_eq!(parse("{not json").message, "{not json");
    }

    #[test]
    fn a_line_is_about_the_message_by_its_id_or_by_its_key_both_parts() {
        let key = Some(("ORDER#42", "MESSAGE#X#1"));
        assert!(is_about("message_id=m-1", "m-1", None));
        assert!(is_about("aggregate=ORDER#42 sk=MESSAGE#X#1", "m-1", key));
        assert!(!is_about("aggregate=ORDER#43 sk=MESSAGE#X#1", "m-1", key));
        assert!(!is_about("message_id=m-2", "m-1", key));
    }

    #[test]
    fn an_unreadable_group_is_explained_by_its_error_code() {
        assert!(
            unreadable("/g", Some("ResourceNotFoundException"), "x").contains("no log group /g")
        );
        assert!(
            unreadable("/g", Some("AccessDeniedException"), "x").contains("logs:FilterLogEvents")
        );
        assert_eq!(
            unreadable("/g", None, "timeout"),
            "could not read /g: timeout"
        );
    }

    #[test]
    fn a_term_is_quoted_unless_it_cannot_be() {
        assert_eq!(
            filter_pattern("MESSAGE#A#1").as_deref(),
            Some("\"MESSAGE#A#1\"")
        );
        assert_eq!(filter_pattern("a\"b"), None);
        assert_eq!(filter_pattern(""), None);
    }
}
