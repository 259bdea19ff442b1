//! The index-lag fault's pure part: which requests read an index with eventual
//! consistency, and the memory of their answers that a lagging read is served from.
//!
//! A global secondary index follows its table asynchronously, so an index read may
//! still list an item the table has changed since, or miss one written since. The
//! fault layer cannot rewrite answers to match the table's history; it serves what the
//! index really answered a little earlier to the same request, which is exactly such
//! a view. Consistent reads and table reads never lag: they are left alone.

use serde_json::Value;
use std::collections::HashMap;

/// Whether a DynamoDB request (its operation and JSON body) is an eventually
/// consistent read of an index: a `Query` or `Scan` with an `IndexName`, or a PartiQL
/// `ExecuteStatement` whose statement selects from `"table"."index"`; never one with
/// `"ConsistentRead": true` (which DynamoDB serves from the table, or refuses on a
/// global index).
pub fn is_index_read(operation: &str, body: &[u8]) -> bool {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    if request.get("ConsistentRead").and_then(Value::as_bool) == Some(true) {
        return false;
    }
    match operation {
        "Query" | "Scan" => request
            .get("IndexName")
            .and_then(Value::as_str)
            .is_some_and(|i| !i.is_empty()),
        "ExecuteStatement" => request
            .get("Statement")
            .and_then(Value::as_str)
            .is_some_and(selects_from_an_index),
        _ => false,
    }
}

/// `SELECT … FROM "table"."index" …`: the source is a quoted table name, a dot and a
/// quoted index name.
fn selects_from_an_index(statement: &str) -> bool {
    let trimmed = statement.trim_start();
    if !trimmed
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("select"))
    {
        return false;
    }
    let upper = trimmed.to_ascii_uppercase();
    let Some(at) = upper.find(" FROM ") else {
        return false;
    };
    let source = trimmed[at + 6..].trim_start();
    let Some(rest) = quoted(source) else {
        return false;
    };
    rest.strip_prefix('.').and_then(quoted).is_some()
}

/// The text after a leading `"name"`, if `text` starts with one.
fn quoted(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('"')?;
    let end = inner.find('"')?;
    (end > 0).then(|| &inner[end + 1..])
}

/// The last answer to each index request, with when it came (ms on a monotonic clock).
/// Bounded: past `capacity` requests it forgets everything and starts again (the
/// requests that repeat — the order fence's reads of the same shards — come back soon).
#[derive(Debug)]
pub struct Answers<T> {
    by_request: HashMap<Vec<u8>, (u64, T)>,
    max_age_ms: u64,
    capacity: usize,
}

impl<T: Clone> Answers<T> {
    /// Serves answers at most `max_age_ms` old, remembering at most `capacity` requests.
    pub fn new(max_age_ms: u64, capacity: usize) -> Self {
        Answers {
            by_request: HashMap::new(),
            max_age_ms,
            capacity,
        }
    }

    /// Remembers `fresh` as the answer to `request` at `now_ms`, and returns the
    /// answer to give: when `lag`, the previous answer to the same request if it is
    /// young enough (`Some`); otherwise `None` (give the fresh one).
    pub fn answer(&mut self, request: &[u8], now_ms: u64, fresh: T, lag: bool) -> Option<T> {
        if self.by_request.len() >= self.capacity && !self.by_request.contains_key(request) {
            self.by_request.clear();
        }
        let previous = self.by_request.insert(request.to_vec(), (now_ms, fresh));
        previous
            .filter(|(at, _)| lag && now_ms.saturating_sub(*at) <= self.max_age_ms)
            .map(|(_, stale)| stale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_queries_and_selects_lag_table_reads_and_consistent_reads_do_not() {
        for (operation, body) in [
            (
                "Query",
                r#"{"TableName":"t","IndexName":"OutboxSweepIndex"}"#,
            ),
            (
                "Scan",
                r#"{"TableName":"t","IndexName":"i","ConsistentRead":false}"#,
            ),
            (
                "ExecuteStatement",
                r#"{"Statement":"SELECT \"PK\", \"SK\" FROM \"orders\".\"OutboxSweepIndex\" WHERE \"SweepShard\" IN [?, ?]"}"#,
            ),
            (
                "ExecuteStatement",
                r#"{"Statement":"select * from \"t\".\"i\""}"#,
            ),
        ] {
            assert!(
                is_index_read(operation, body.as_bytes()),
                "{operation} {body}"
            );
        }
        for (operation, body) in [
            (
                "Query",
                r#"{"TableName":"t","KeyConditionExpression":"PK = :pk"}"#,
            ),
            (
                "Query",
                r#"{"TableName":"t","IndexName":"i","ConsistentRead":true}"#,
            ),
            ("Query", r#"{"TableName":"t","IndexName":""}"#),
            ("GetItem", r#"{"TableName":"t","IndexName":"i"}"#),
            ("BatchGetItem", r#"{"RequestItems":{}}"#),
            (
                "ExecuteStatement",
                r#"{"Statement":"SELECT * FROM \"t\" WHERE PK = ?"}"#,
            ),
            (
                "ExecuteStatement",
                r#"{"Statement":"SELECT * FROM \"t\".\"i\"","ConsistentRead":true}"#,
            ),
            (
                "ExecuteStatement",
                r#"{"Statement":"UPDATE \"t\" SET a = 1 WHERE PK = 'x.y'"}"#,
            ),
            ("Query", "not json"),
        ] {
            assert!(
                !is_index_read(operation, body.as_bytes()),
                "{operation} {body}"
            );
        }
    }

    #[test]
    fn a_lagging_read_gets_the_previous_answer_to_the_same_request_while_it_is_young() {
        let mut answers = Answers::new(1_000, 8);
        assert_eq!(answers.answer(b"q1", 0, "a", true), None, "nothing before");
        assert_eq!(answers.answer(b"q1", 500, "b", true), Some("a"));
        assert_eq!(
            answers.answer(b"q2", 600, "x", true),
            None,
            "another request"
        );
        assert_eq!(
            answers.answer(b"q1", 700, "c", false),
            None,
            "not drawn: fresh"
        );
        assert_eq!(
            answers.answer(b"q1", 800, "d", true),
            Some("c"),
            "the latest"
        );
        assert_eq!(
            answers.answer(b"q1", 1_900, "e", true),
            None,
            "d is 1.1 s old: too stale to pass for a lagging index"
        );
    }

    #[test]
    fn past_its_capacity_the_memory_starts_again() {
        let mut answers = Answers::new(1_000, 2);
        answers.answer(b"q1", 0, 1, false);
        answers.answer(b"q2", 0, 2, false);
        assert_eq!(answers.answer(b"q2", 1, 3, true), Some(2), "known: kept");
        assert_eq!(answers.answer(b"q3", 1, 4, true), None);
        assert_eq!(answers.answer(b"q1", 2, 5, true), None, "forgotten");
    }
}
