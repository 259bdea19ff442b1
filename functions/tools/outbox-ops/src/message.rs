//! One message's whole life: its item in the table, and the functions' log lines
//! about it — found by its id, with or without its aggregate.
//!
//! The table is keyed by aggregate and never scanned, so a message asked for by its id
//! alone is found through what names its aggregate: the functions' log lines about it
//! (the publisher's name `aggregate` beside `message_id`), else the failed messages
//! (the sweeper index's `FAILED#NN` partitions, as `failed` reads them).

use crate::logs::{LogGroups, LogSearch, MessageLogs, message_logs};
use crate::{MessageLife, OpsError, Reads, Table, failed_read, show};
use std::collections::BTreeSet;

/// The window searched when nothing narrows it: the message's commit unknown and no
/// `--since` given.
pub const DEFAULT_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// How long before the commit a search starts: the clocks of the producer and of
/// CloudWatch Logs differ a little.
const BEFORE_COMMIT_MS: i64 = 60_000;

/// Aggregates named by log lines that are queried at most.
const MAX_AGGREGATES: usize = 5;

/// Where the logs are and how far back to read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    /// The groups to search; `Err`: logs are not read, and why.
    pub groups: Result<LogGroups, String>,
    /// How far back from now, milliseconds; `None`: from the message's commit when
    /// known, else [`DEFAULT_WINDOW_MS`].
    pub since_ms: Option<i64>,
}

/// How the message was found in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// Its aggregate was given.
    Aggregate,
    /// A log line named its aggregate.
    Logs,
    /// It is among the failed messages.
    FailedIndex,
    /// Not found in the table.
    Nowhere,
}

/// A message's life from the table and the logs.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageView {
    /// The id asked for.
    pub message_id: String,
    /// Its item (none when not found; more than one only if aggregates share the id).
    pub lives: Vec<MessageLife>,
    /// How it was found.
    pub found_by: FoundBy,
    /// What the table reads cost.
    pub reads: Reads,
    /// The log lines about it, or why the logs were not read.
    pub logs: Result<MessageLogs, String>,
    /// The window searched, epoch milliseconds.
    pub window_ms: (i64, i64),
}

/// The window to search: `--since` when given, else from a minute before the commit,
/// else the last [`DEFAULT_WINDOW_MS`].
pub fn window(now_ms: i64, since_ms: Option<i64>, committed_ms: Option<i64>) -> (i64, i64) {
    let start = match (since_ms, committed_ms) {
        (Some(since), _) => now_ms - since,
        (None, Some(committed)) => committed - BEFORE_COMMIT_MS,
        (None, None) => now_ms - DEFAULT_WINDOW_MS,
    };
    (start.min(now_ms), now_ms)
}

/// A duration as an operator types it: `90s`, `30m`, `2h`, `7d` (a bare number is
/// seconds), in milliseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: i64 = match unit {
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "`{text}`: a duration is a number and s, m, h or d (30m, 2h, 7d)"
            ));
        }
    };
    number
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|ms| *ms > 0)
        .ok_or_else(|| format!("`{text}`: a duration is a positive number and s, m, h or d"))
}

/// The aggregates the log lines name, in the order they first appear.
pub fn named_aggregates(logs: &MessageLogs) -> Vec<String> {
    let mut seen = BTreeSet::new();
    logs.lines
        .iter()
        .filter_map(|l| l.line.aggregate.clone())
        .filter(|a| !a.is_empty() && a != "-" && seen.insert(a.clone()))
        .take(MAX_AGGREGATES)
        .collect()
}

/// Shows the message `message_id`: from its aggregate's partition when `aggregate` is
/// given, else found as the module says; then the logs about it.
pub async fn show_message(
    dynamodb: &aws_sdk_dynamodb::Client,
    logs: Option<&aws_sdk_cloudwatchlogs::Client>,
    table: &Table,
    aggregate: Option<&str>,
    message_id: &str,
    options: &LogOptions,
    now_ms: i64,
) -> Result<MessageView, OpsError> {
    let mut reads = Reads::default();
    let groups = match (&options.groups, logs) {
        (Ok(groups), Some(client)) => Ok((groups, client)),
        (Err(why), _) => Err(why.clone()),
        (Ok(_), None) => Err("no CloudWatch Logs client".to_owned()),
    };
    let mut found_by = FoundBy::Aggregate;
    let mut lives = Vec::new();
    let mut by_id = None;
    if let Some(aggregate) = aggregate {
        lives = lives_of(dynamodb, table, aggregate, message_id, &mut reads).await?;
    } else {
        // The id alone: the logs first, for the aggregate they name.
        if let Ok((groups, client)) = &groups {
            let (start_ms, end_ms) = window(now_ms, options.since_ms, None);
            let search = LogSearch {
                message_id: message_id.to_owned(),
                key: None,
                start_ms,
                end_ms,
            };
            let found = message_logs(client, groups, &search).await;
            for aggregate in named_aggregates(&found) {
                lives.extend(lives_of(dynamodb, table, &aggregate, message_id, &mut reads).await?);
            }
            found_by = FoundBy::Logs;
            by_id = Some(found);
        }
        if lives.is_empty() {
            found_by = FoundBy::FailedIndex;
            lives = failed_lives(dynamodb, table, message_id, &mut reads).await?;
        }
    }
    if lives.is_empty() {
        found_by = FoundBy::Nowhere;
    }
    let committed = lives.iter().filter_map(|l| l.created_at_ms).min();
    let window_ms = window(now_ms, options.since_ms, committed);
    let logs = match groups {
        Err(why) => Err(why),
        // Searched again now that the key (and the commit) are known: the sweeper's
        // and the recovery function's lines name the key, not the id.
        Ok((groups, client)) if by_id.is_none() || lives.len() == 1 => {
            let search = LogSearch {
                message_id: message_id.to_owned(),
                key: lives.first().map(|l| (l.key.pk.clone(), l.key.sk.clone())),
                start_ms: window_ms.0,
                end_ms: window_ms.1,
            };
            let mut logs = message_logs(client, groups, &search).await;
            logs.requests += by_id.map_or(0, |first| first.requests);
            Ok(logs)
        }
        Ok(_) => Ok(by_id.unwrap_or_default()),
    };
    Ok(MessageView {
        message_id: message_id.to_owned(),
        lives,
        found_by,
        reads,
        logs,
        window_ms,
    })
}

/// The message among its aggregate's.
async fn lives_of(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &Table,
    aggregate: &str,
    message_id: &str,
    reads: &mut Reads,
) -> Result<Vec<MessageLife>, OpsError> {
    let (lives, read) = show(dynamodb, table, aggregate, Some(message_id)).await?;
    reads.merge(&read);
    Ok(lives)
}

/// The message among the failed ones, read whole from its aggregate's partition.
async fn failed_lives(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &Table,
    message_id: &str,
    reads: &mut Reads,
) -> Result<Vec<MessageLife>, OpsError> {
    let (failed, read) = failed_read(dynamodb, table, None).await?;
    reads.merge(&read);
    let mut lives = Vec::new();
    for f in failed.iter().filter(|f| f.message_id == message_id) {
        lives.extend(lives_of(dynamodb, table, &f.key.pk, message_id, reads).await?);
    }
    Ok(lives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logline::parse;
    use crate::logs::FunctionLogLine;

    #[test]
    fn the_window_is_since_else_from_the_commit_else_a_day() {
        assert_eq!(window(100_000, Some(30_000), Some(1)), (70_000, 100_000));
        assert_eq!(window(100_000, None, Some(90_000)), (30_000, 100_000));
        assert_eq!(
            window(100_000_000, None, None),
            (100_000_000 - DEFAULT_WINDOW_MS, 100_000_000)
        );
        // A commit "in the future" (a producer's clock ahead) still reads up to now.
        assert_eq!(window(100_000, None, Some(500_000)).1, 100_000);
    }

    #[test]
    fn durations_read_with_their_unit_and_refuse_the_rest() {
        assert_eq!(parse_duration("90"), Ok(90_000));
        assert_eq!(parse_duration("30m"), Ok(1_800_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("7d"), Ok(604_800_000));
        for bad in ["", "0m", "h", "2w", "-1h", "1.5h", "99999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_aggregates_named_are_distinct_in_order_and_bounded() {
        let line = |text: &str| FunctionLogLine {
            timestamp_ms: 0,
            function: "publisher".into(),
            line: parse(text),
        };
        let mut logs = MessageLogs {
            lines: vec![
                line("WARN poison aggregate=ORDER#2"),
                line("WARN poison aggregate=ORDER#1"),
                line("WARN again aggregate=ORDER#2"),
                line("WARN none aggregate=-"),
                line("INFO no aggregate"),
            ],
            ..MessageLogs::default()
        };
        assert_eq!(named_aggregates(&logs), ["ORDER#2", "ORDER#1"]);
        logs.lines = (0..9)
            .map(|i| line(&format!("WARN x aggregate=A{i}")))
            .collect();
        assert_eq!(named_aggregates(&logs).len(), MAX_AGGREGATES);
    }
}
