//! The functions' log lines about one message, from CloudWatch Logs.
//!
//! The outbox's functions log to `/aws/lambda/<function>` (both stacks name the group
//! so, and name each function `<prefix>-publisher`, `-sweeper`, `-recovery`). A line
//! about one message names its id (`message_id`), or its key (`aggregate` and `sk`:
//! the sweeper's and the recovery function's lines). So each group is searched with
//! `FilterLogEvents` for the id, and for the sort key once the message's key is known,
//! over a bounded window and a bounded number of pages. A group that cannot be read is
//! a note, never a failure: the table's part of the answer stands on its own.

use crate::logline::{self, ParsedLine};
use aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata;
use aws_smithy_types::error::display::DisplayErrorContext;
use std::collections::HashSet;

/// The outbox's functions, as the stacks name them after the deployment's prefix.
pub const FUNCTIONS: [&str; 3] = ["publisher", "sweeper", "recovery"];

/// Pages read per group and term at most: CloudWatch Logs may answer a search of a
/// large group with many near-empty pages, and a terminal command must end.
pub const MAX_PAGES: usize = 20;

/// Lines kept at most over all groups: past this the window is too wide to read.
pub const MAX_LINES: usize = 500;

/// Where to look: each log group with the name its lines are shown under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogGroups {
    /// `(shown as, log group name)`.
    pub groups: Vec<(String, String)>,
}

impl LogGroups {
    /// The groups of a deployment's three functions: `/aws/lambda/<prefix>-publisher`, …
    ///
    /// ```
    /// let groups = outbox_ops::LogGroups::of_deployment("shop");
    /// assert_eq!(groups.groups[0], ("publisher".to_owned(), "/aws/lambda/shop-publisher".to_owned()));
    /// ```
    pub fn of_deployment(prefix: &str) -> Self {
        LogGroups {
            groups: FUNCTIONS
                .iter()
                .map(|f| ((*f).to_owned(), format!("/aws/lambda/{prefix}-{f}")))
                .collect(),
        }
    }

    /// These groups and `group` (shown under its last path segment).
    pub fn and_group(mut self, group: &str) -> Self {
        let shown = group.rsplit('/').next().unwrap_or(group).to_owned();
        self.groups.push((shown, group.to_owned()));
        self
    }
}

/// What to look for, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSearch {
    /// The message's id.
    pub message_id: String,
    /// Its key `(aggregate, sort key)`, when known: lines naming the key count too.
    pub key: Option<(String, String)>,
    /// From, epoch milliseconds.
    pub start_ms: i64,
    /// To, epoch milliseconds.
    pub end_ms: i64,
}

/// One line of a function's log about the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionLogLine {
    /// When the function wrote it, epoch milliseconds.
    pub timestamp_ms: i64,
    /// Which function (as [`LogGroups`] shows it).
    pub function: String,
    /// The line read.
    pub line: ParsedLine,
}

/// The lines found, oldest first, and what could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageLogs {
    /// The lines about the message.
    pub lines: Vec<FunctionLogLine>,
    /// Groups not read and why, searches cut short: each a sentence.
    pub notes: Vec<String>,
    /// `FilterLogEvents` requests made.
    pub requests: u64,
    /// The groups searched.
    pub groups: Vec<String>,
}

/// Searches `groups` for the lines about one message. Never fails: what cannot be
/// read is in [`MessageLogs::notes`].
pub async fn message_logs(
    client: &aws_sdk_cloudwatchlogs::Client,
    groups: &LogGroups,
    search: &LogSearch,
) -> MessageLogs {
    let mut logs = MessageLogs::default();
    let mut terms = vec![search.message_id.as_str()];
    if let Some((_, sk)) = &search.key {
        terms.push(sk);
    }
    let mut seen = HashSet::new();
    for (function, group) in &groups.groups {
        logs.groups.push(group.clone());
        for term in &terms {
            let Some(pattern) = logline::filter_pattern(term) else {
                logs.notes.push(format!(
                    "`{term}` cannot be searched for (a quote or a control character)"
                ));
                continue;
            };
            let found = search_group(client, group, &pattern, search, &mut logs).await;
            let Ok(events) = found else { break };
            for (id, timestamp_ms, raw) in events {
                let key = search
                    .key
                    .as_ref()
                    .map(|(pk, sk)| (pk.as_str(), sk.as_str()));
                if !logline::is_about(&raw, &search.message_id, key) || !seen.insert(id) {
                    continue;
                }
                logs.lines.push(FunctionLogLine {
                    timestamp_ms,
                    function: function.clone(),
                    line: logline::parse(&raw),
                });
            }
        }
    }
    logs.lines.sort_by_key(|l| l.timestamp_ms);
    if logs.lines.len() > MAX_LINES {
        logs.lines.truncate(MAX_LINES);
        logs.notes.push(format!(
            "more than {MAX_LINES} lines: the first {MAX_LINES} are shown; narrow --since"
        ));
    }
    logs
}

/// An event found: an identity to read it once by, its time, its text.
type Event = (String, i64, String);

/// Every page of one search of one group, within [`MAX_PAGES`]. `Err` when the group
/// cannot be read (the note is added).
async fn search_group(
    client: &aws_sdk_cloudwatchlogs::Client,
    group: &str,
    pattern: &str,
    search: &LogSearch,
    logs: &mut MessageLogs,
) -> Result<Vec<Event>, ()> {
    let (mut events, mut token) = (Vec::new(), None);
    for _ in 0..MAX_PAGES {
        logs.requests += 1;
        let page = client
            .filter_log_events()
            .log_group_name(group)
            .filter_pattern(pattern)
            .start_time(search.start_ms)
            .end_time(search.end_ms)
            .set_next_token(token)
            .send()
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                let detail = e
                    .message()
                    .map_or_else(|| DisplayErrorContext(&e).to_string(), str::to_owned);
                logs.notes
                    .push(logline::unreadable(group, e.code(), &detail));
                return Err(());
            }
        };
        for e in page.events() {
            let (ts, text) = (
                e.timestamp().unwrap_or_default(),
                e.message().unwrap_or_default(),
            );
            // The local AWS gives no event id: a line is then its stream, time and text.
            let id = e.event_id().map_or_else(
                || format!("{}|{ts}|{text}", e.log_stream_name().unwrap_or_default()),
                str::to_owned,
            );
            events.push((format!("{group}|{id}"), ts, text.to_owned()));
        }
        token = page
            .next_token()
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        if token.is_none() || events.len() > MAX_LINES {
            return Ok(events);
        }
    }
    logs.notes.push(format!(
        "{group}: stopped after {MAX_PAGES} pages of search; the window may hold more lines: narrow --since"
    ));
    Ok(events)
}
