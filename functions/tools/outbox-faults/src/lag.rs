//! The index-lag fault's pure part: which requests read an index with eventual
//! consistency, what part of the index each reads, and the earlier view a lagging
//! read is answered with.
//!
//! A global secondary index follows its table asynchronously: a read may still list
//! an item the table has since changed so that it left the index (a message marked
//! `SENT` leaves the sparse sweep index). The fault layer serves that view: it
//! remembers every item the index listed, with when and for which partition values,
//! and a lagging read gets, beside its fresh items, those listed at most
//! [`crate::INDEX_LAG_MAX_MS`] before, for partition values the read covers, that the
//! index no longer lists. (An exact replay of an earlier answer to the same request
//! hardly ever fires: the order fence's reads name a different set of shards almost
//! every time.) Consistent reads, table reads and continuation pages never lag.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What part of which index a read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRead {
    /// The index and the shape of the read (table, index, projection, condition):
    /// items remembered from one shape are only added to reads of the same shape.
    pub index: String,
    /// The partition key values it reads (a remembered item belongs to one of the
    /// values of the read that listed it).
    pub scope: BTreeSet<String>,
}

/// The index read a DynamoDB request (its operation and JSON body) is, if it is an
/// eventually consistent first page: a `Query` with an `IndexName` (its scope the
/// string values of its expression), or a PartiQL `ExecuteStatement` selecting from
/// `"table"."index"` (its scope the string parameters). Never one with
/// `"ConsistentRead": true`, an `ExclusiveStartKey` or a `NextToken`.
pub fn index_read(operation: &str, body: &[u8]) -> Option<IndexRead> {
    let request = serde_json::from_slice::<Value>(body).ok()?;
    let flag = |name: &str| request.get(name).is_some_and(|v| !v.is_null());
    if request.get("ConsistentRead").and_then(Value::as_bool) == Some(true)
        || flag("ExclusiveStartKey")
        || flag("NextToken")
    {
        return None;
    }
    let text = |name: &str| request.get(name).and_then(Value::as_str).unwrap_or("");
    let (index, values) = match operation {
        "Query" if !text("IndexName").is_empty() => {
            let shape = ["TableName", "IndexName", "KeyConditionExpression"]
                .map(text)
                .join("|");
            let shape = format!("{shape}|{}", text("ProjectionExpression"));
            let values = request
                .get("ExpressionAttributeValues")
                .and_then(Value::as_object)
                .map(|m| m.values().cloned().collect())
                .unwrap_or_default();
            (shape, values)
        }
        "ExecuteStatement" => {
            let source = index_source(text("Statement"))?;
            let values = request
                .get("Parameters")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            (source, values)
        }
        _ => return None,
    };
    let scope: BTreeSet<String> = values
        .iter()
        .filter_map(|v| v.get("S")?.as_str().map(str::to_owned))
        .collect();
    (!scope.is_empty()).then_some(IndexRead { index, scope })
}

/// For `SELECT … FROM "table"."index" WHERE …`, the statement up to its `WHERE` (the
/// projection and the source); `None` for any other statement.
fn index_source(statement: &str) -> Option<String> {
    let trimmed = statement.trim_start();
    if !trimmed.get(..6)?.eq_ignore_ascii_case("select") {
        return None;
    }
    let upper = trimmed.to_ascii_uppercase();
    let at = upper.find(" FROM ")?;
    let source = trimmed[at + 6..].trim_start();
    let rest = quoted(source)?;
    let rest = quoted(rest.strip_prefix('.')?)?;
    let end = trimmed.len() - rest.len();
    Some(trimmed[..end].to_owned())
}

/// The text after a leading `"name"`, if `text` starts with one.
fn quoted(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('"')?;
    let end = inner.find('"')?;
    (end > 0).then(|| &inner[end + 1..])
}

/// The items an index listed lately, by index: each with when it was last listed and
/// the partition values it may have (those every read that listed it covered). Kept between processes as JSON (see `remembered`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    by_index: BTreeMap<String, BTreeMap<String, (i64, BTreeSet<String>)>>,
}

impl Listed {
    /// Records the `fresh` items of `read` at `now_ms`, forgets what is older than
    /// `max_age_ms`, and returns the items a lagging index would still list: listed
    /// at most `max_age_ms` ago for values `read` covers, and missing from `fresh`.
    pub fn read(
        &mut self,
        read: &IndexRead,
        fresh: &[Value],
        now_ms: i64,
        max_age_ms: i64,
    ) -> Vec<Value> {
        let listed = self.by_index.entry(read.index.clone()).or_default();
        listed.retain(|_, (at, _)| now_ms.saturating_sub(*at) <= max_age_ms && *at <= now_ms);
        let fresh_keys: BTreeSet<String> = fresh.iter().map(Value::to_string).collect();
        let stale = listed
            .iter()
            .filter(|(item, (_, scope))| {
                !fresh_keys.contains(*item) && scope.is_subset(&read.scope)
            })
            .filter_map(|(item, _)| serde_json::from_str(item).ok())
            .collect();
        for item in fresh_keys {
            // Listed by every read that listed it: its partition value is in each.
            let scope = match listed.get(&item) {
                Some((_, known)) if !known.is_disjoint(&read.scope) => {
                    known.intersection(&read.scope).cloned().collect()
                }
                _ => read.scope.clone(),
            };
            listed.insert(item, (now_ms, scope));
        }
        stale
    }

    /// As kept on disk.
    pub fn encode(&self) -> String {
        let by_index: BTreeMap<_, BTreeMap<_, _>> = self
            .by_index
            .iter()
            .map(|(index, items)| {
                let items = items
                    .iter()
                    .map(|(item, (at, scope))| (item.clone(), (*at, scope.clone())))
                    .collect();
                (index.clone(), items)
            })
            .collect();
        serde_json::to_string(&by_index).unwrap_or_default()
    }

    /// Reads what [`Listed::encode`] wrote; anything else (a file cut short) is empty.
    pub fn decode(text: &str) -> Self {
        Listed {
            by_index: serde_json::from_str(text).unwrap_or_default(),
        }
    }
}

/// `body` (a `Query` or `ExecuteStatement` answer) with `extra` items added to its
/// `Items` and its `Count`; `None` if it is not such an answer.
pub fn with_items(body: &[u8], extra: Vec<Value>) -> Option<Vec<u8>> {
    let mut answer: Value = serde_json::from_slice(body).ok()?;
    let added = extra.len() as u64;
    answer.get_mut("Items")?.as_array_mut()?.extend(extra);
    if let Some(count) = answer.get_mut("Count") {
        *count = Value::from(count.as_u64().unwrap_or(0) + added);
    }
    serde_json::to_vec(&answer).ok()
}

/// The items of an answer.
pub fn items_of(body: &[u8]) -> Option<Vec<Value>> {
    let answer: Value = serde_json::from_slice(body).ok()?;
    answer.get("Items")?.as_array().cloned()
}

#[cfg(test)]
mod tests;
