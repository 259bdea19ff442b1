//! Event filtering as Lambda's event source mapping applies FilterCriteria: the
//! subset of EventBridge pattern syntax that stream filters use.
//!
//! A record passes when any filter's pattern matches it. A pattern is a JSON object
//! whose leaves are arrays of alternatives: literal values, or `{"exists": bool}`,
//! `{"prefix": "..."}`, `{"anything-but": [...]}`, `{"numeric": [op, n, ...]}`.

use serde::Deserialize;
use serde_json::Value;

/// A FilterCriteria document: `{"Filters": [{"Pattern": "<json text>"}]}`.
#[derive(Debug, Clone)]
pub struct FilterCriteria {
    patterns: Vec<Value>,
}

/// The FilterCriteria could not be read.
#[derive(Debug, thiserror::Error)]
#[error("invalid FilterCriteria: {0}")]
pub struct FilterError(String);

#[derive(Deserialize)]
struct Doc {
    #[serde(rename = "Filters")]
    filters: Vec<FilterDoc>,
}

#[derive(Deserialize)]
struct FilterDoc {
    #[serde(rename = "Pattern")]
    pattern: String,
}

impl FilterCriteria {
    /// Parses the document the infrastructure deploys.
    pub fn parse(json: &str) -> Result<Self, FilterError> {
        let doc: Doc = serde_json::from_str(json).map_err(|e| FilterError(e.to_string()))?;
        let patterns = doc
            .filters
            .iter()
            .map(|f| serde_json::from_str::<Value>(&f.pattern))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| FilterError(format!("a Pattern is not JSON: {e}")))?;
        if patterns.iter().any(|p| !p.is_object()) {
            return Err(FilterError("every Pattern must be a JSON object".into()));
        }
        Ok(FilterCriteria { patterns })
    }

    /// The outbox's own filter (`infra/stream-filter.json`).
    pub fn outbox() -> Self {
        // The file is part of this repository and covered by a test; a parse failure
        // here is a build defect, not bad input.
        Self::parse(outbox::STREAM_FILTER_JSON).unwrap_or(FilterCriteria { patterns: vec![] })
    }

    /// Whether the event (a stream record as Lambda receives it, as JSON) passes.
    /// No filters means everything passes.
    pub fn matches(&self, event: &Value) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|p| matches_object(p, Some(event)))
    }
}

fn matches_object(pattern: &Value, event: Option<&Value>) -> bool {
    let Some(fields) = pattern.as_object() else {
        return false;
    };
    fields.iter().all(|(name, sub)| {
        let value = event.and_then(|e| e.get(name));
        match sub {
            Value::Object(_) => matches_object(sub, value),
            Value::Array(alternatives) => alternatives.iter().any(|alt| matches_leaf(alt, value)),
            _ => false,
        }
    })
}

fn matches_leaf(alt: &Value, value: Option<&Value>) -> bool {
    match alt {
        Value::Object(op) => {
            if let Some(Value::Bool(want)) = op.get("exists") {
                return value.is_some() == *want;
            }
            let Some(value) = value else { return false };
            if let Some(Value::String(prefix)) = op.get("prefix") {
                return any_scalar(value, |v| {
                    v.as_str().is_some_and(|s| s.starts_with(prefix.as_str()))
                });
            }
            if let Some(but) = op.get("anything-but") {
                let excluded: Vec<&Value> = match but {
                    Value::Array(a) => a.iter().collect(),
                    other => vec![other],
                };
                return !any_scalar(value, |v| excluded.contains(&v));
            }
            if let Some(Value::Array(ops)) = op.get("numeric") {
                return any_scalar(value, |v| v.as_f64().is_some_and(|n| numeric(ops, n)));
            }
            false
        }
        literal => value.is_some_and(|v| any_scalar(v, |x| x == literal)),
    }
}

fn any_scalar(value: &Value, pred: impl Fn(&Value) -> bool) -> bool {
    match value {
        Value::Array(items) => items.iter().any(pred),
        v => pred(v),
    }
}

fn numeric(ops: &[Value], n: f64) -> bool {
    ops.chunks(2).all(|pair| match pair {
        [Value::String(op), bound] => bound.as_f64().is_some_and(|b| match op.as_str() {
            "<" => n < b,
            "<=" => n <= b,
            "=" => n == b,
            ">" => n > b,
            ">=" => n >= b,
            _ => false,
        }),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(event_name: &str, item_type: &str, status: &str) -> Value {
        json!({
            "eventName": event_name,
            "dynamodb": {"NewImage": {"ItemType": {"S": item_type}, "Status": {"S": status}}}
        })
    }

    #[test]
    fn the_outbox_filter_passes_only_new_pending_messages() {
        let f =
            FilterCriteria::parse(outbox::STREAM_FILTER_JSON).expect("the deployed filter parses");
        assert!(f.matches(&record("INSERT", "PENDING_MESSAGE", "PENDING")));
        assert!(!f.matches(&record("MODIFY", "PENDING_MESSAGE", "SENT")));
        assert!(!f.matches(&record("MODIFY", "PENDING_MESSAGE", "PENDING")));
        assert!(!f.matches(&record("INSERT", "USER_PROFILE", "PENDING")));
        assert!(!f.matches(&record("INSERT", "PENDING_MESSAGE", "FAILED")));
        assert!(!f.matches(&json!({"eventName": "REMOVE", "dynamodb": {"OldImage": {}}})));
    }

    #[test]
    fn operators_behave_like_event_patterns() {
        let f = FilterCriteria::parse(
            r#"{"Filters":[{"Pattern":"{\"a\":[{\"prefix\":\"x\"}],\"b\":[{\"exists\":false}],\"c\":[{\"anything-but\":[\"no\"]}],\"d\":[{\"numeric\":[\">\",1,\"<=\",5]}]}"}]}"#,
        )
        .expect("valid");
        assert!(f.matches(&json!({"a": "xy", "c": "yes", "d": 5})));
        assert!(!f.matches(&json!({"a": "xy", "b": 1, "c": "yes", "d": 5})));
        assert!(!f.matches(&json!({"a": "xy", "c": "no", "d": 5})));
        assert!(!f.matches(&json!({"a": "xy", "c": "yes", "d": 6})));
        assert!(!f.matches(&json!({"a": "zz", "c": "yes", "d": 2})));
    }

    #[test]
    fn rejects_patterns_that_are_not_json() {
        assert!(FilterCriteria::parse(r#"{"Filters":[{"Pattern":"{nope"}]}"#).is_err());
    }
}
