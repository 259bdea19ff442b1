//! The payload hash that tells a duplicate from a reused key: SHA-256 of the fields
//! the caller chose, in a canonical JSON form.
//!
//! SHA-256 rather than the FNV-1a of the outbox schema: idempotency keys often come
//! from clients, and FNV collisions can be constructed at will, which would turn a
//! conflict into a silent "duplicate".

use crate::IdempotencyError;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 (hex) of the payload fields that make two requests "the same".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadHash(String);

impl PayloadHash {
    /// The hash of a whole value, as canonical JSON (object keys sorted).
    pub fn of<T: Serialize>(value: &T) -> Result<Self, IdempotencyError> {
        let value = serde_json::to_value(value)
            .map_err(|e| IdempotencyError::Invalid(format!("payload is not serialisable: {e}")))?;
        Ok(Self::digest(&canonical_json(&value)))
    }

    /// The hash of the fields at `pointers` (JSON pointers such as `/amount` or
    /// `/customer/id`; a missing field counts as `null`). Name the fields that define
    /// the request and leave out those that legitimately vary (timestamps, trace ids).
    pub fn of_fields(value: &Value, pointers: &[&str]) -> Self {
        let mut text = String::new();
        for p in pointers {
            text.push_str(&canonical_json(&Value::String((*p).to_owned())));
            text.push(':');
            text.push_str(&canonical_json(value.pointer(p).unwrap_or(&Value::Null)));
            text.push(';');
        }
        Self::digest(&text)
    }

    fn digest(text: &str) -> Self {
        let bytes = Sha256::digest(text.as_bytes());
        PayloadHash(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// JSON with object keys sorted at every level, whatever serde_json's map order
/// (its `preserve_order` feature may be switched on by any crate in the build).
pub(crate) fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        canonical_json(&Value::String(k.clone())),
                        canonical_json(v)
                    )
                })
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", body.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_unchosen_fields() {
        let a = json!({"amount": 10, "currency": "EUR", "sent_at": 1});
        let b = json!({"sent_at": 2, "currency": "EUR", "amount": 10});
        let fields = ["/amount", "/currency"];
        assert_eq!(
            PayloadHash::of_fields(&a, &fields),
            PayloadHash::of_fields(&b, &fields)
        );
        let c = json!({"amount": 11, "currency": "EUR"});
        assert_ne!(
            PayloadHash::of_fields(&a, &fields),
            PayloadHash::of_fields(&c, &fields)
        );
        // Moving a value to another field changes the hash.
        let d = json!({"amount": "EUR", "currency": 10});
        assert_ne!(
            PayloadHash::of_fields(&a, &fields),
            PayloadHash::of_fields(&d, &fields)
        );
        assert_eq!(
            PayloadHash::of(&json!({"x": {"b": 1, "a": 2}})).expect("hash"),
            PayloadHash::of(&json!({"x": {"a": 2, "b": 1}})).expect("hash")
        );
    }

    #[test]
    fn the_hash_is_sha256_of_the_canonical_form() {
        // sha256("{}")
        assert_eq!(
            PayloadHash::of(&json!({})).expect("hash").as_str(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": null, "c": "x"}], "a": true})),
            r#"{"a":true,"b":[1,{"c":"x","d":null}]}"#
        );
    }
}
