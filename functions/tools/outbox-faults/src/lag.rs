//! The index-lag fault's pure part: which requests read an index with eventual
//! consistency, and the memory of their answers that a lagging read is served from.
//!
//! A global secondary index follows its table asynchronously, so an index read may
//! still list an item the table has changed since, or miss one written since. The
//! fault layer cannot rewrite answers to match the table's history; it serves what the
//! index really answered a little earlier to the same request, which is exactly such
//! a view. Consistent reads and table reads never lag: they are left alone.

use serde_json::Value;

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

/// Whether an answer given at `answered_at_ms` may still be served at `now_ms` as
/// a lagging index's (both on the wall clock: the answers are shared between
/// processes, see `remembered`).
pub fn young_enough(answered_at_ms: i64, now_ms: i64, max_age_ms: u64) -> bool {
    let age = now_ms.saturating_sub(answered_at_ms);
    (0..=i64::try_from(max_age_ms).unwrap_or(i64::MAX)).contains(&age)
}

/// One remembered answer, as it is kept: the request it answered (to tell a hash
/// collision), when, and the answer whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    /// The request's key (endpoint, operation and body).
    pub request: Vec<u8>,
    /// When it was answered (wall clock, epoch ms).
    pub at_ms: i64,
    /// The answer's HTTP status.
    pub status: u16,
    /// Its headers (the checksum DynamoDB's client verifies among them).
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl Remembered {
    /// The bytes it is kept as: a JSON line of everything but the body, then the body.
    pub fn encode(&self) -> Vec<u8> {
        let head = serde_json::json!({
            "request": String::from_utf8_lossy(&self.request),
            "at_ms": self.at_ms,
            "status": self.status,
            "headers": self.headers,
        });
        let mut out = head.to_string().into_bytes();
        out.push(b'\n');
        out.extend_from_slice(&self.body);
        out
    }

    /// Reads what [`Remembered::encode`] wrote; `None` for anything else (a file cut
    /// short by a crash, another version's).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let split = bytes.iter().position(|b| *b == b'\n')?;
        let head: Value = serde_json::from_slice(&bytes[..split]).ok()?;
        let headers = head
            .get("headers")?
            .as_array()?
            .iter()
            .map(|h| {
                Some((
                    h.get(0)?.as_str()?.to_owned(),
                    h.get(1)?.as_str()?.to_owned(),
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Remembered {
            request: head.get("request")?.as_str()?.as_bytes().to_vec(),
            at_ms: head.get("at_ms")?.as_i64()?,
            status: u16::try_from(head.get("status")?.as_u64()?).ok()?,
            headers,
            body: bytes[split + 1..].to_vec(),
        })
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
    fn an_answer_passes_for_a_lagging_index_only_while_it_is_young() {
        assert!(young_enough(1_000, 1_000, 2_000));
        assert!(young_enough(1_000, 3_000, 2_000));
        assert!(!young_enough(1_000, 3_001, 2_000), "too old");
        assert!(
            !young_enough(5_000, 1_000, 2_000),
            "from the future: a clock step"
        );
    }

    #[test]
    fn a_remembered_answer_reads_back_whole_and_a_cut_one_does_not() {
        let answer = Remembered {
            request: br#"https://127.0.0.1:1/ Query {"IndexName":"i"}"#.to_vec(),
            at_ms: 1_700_000_000_000,
            status: 200,
            headers: vec![("x-amz-crc32".into(), "123".into())],
            body: b"{\"Items\":[]}\n".to_vec(),
        };
        let bytes = answer.encode();
        assert_eq!(Remembered::decode(&bytes), Some(answer));
        assert_eq!(Remembered::decode(&bytes[..10]), None);
        assert_eq!(Remembered::decode(b""), None);
    }
}
