//! Reading a payload as JSON, with reasons that can be logged: bodies carry personal
//! data, so string values never reach the reason.

use crate::IdempotencyError;
use serde::de::DeserializeOwned;

/// Parses JSON text into `T`, with an error naming the path of the bad field. Quoted
/// strings are redacted from the reason, which is logged: bodies carry personal data.
/// ([`Delivery::parse`] is this on a message's payload.)
pub(crate) fn parse_json<T: DeserializeOwned>(body: &str) -> Result<T, IdempotencyError> {
    let mut de = serde_json::Deserializer::from_str(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = redact_quoted(&e.inner().to_string());
        let reason = if path == "." || path.is_empty() {
            inner
        } else {
            format!("{path}: {inner}")
        };
        IdempotencyError::MalformedBody { reason }
    })?;
    // One JSON value and nothing after it.
    de.end().map_err(|e| IdempotencyError::MalformedBody {
        reason: redact_quoted(&e.to_string()),
    })?;
    Ok(value)
}

/// Replaces the content of double-quoted strings with `…`: serde reports a wrong
/// string value verbatim (`invalid type: string "Zhang San"`), and reasons are logged.
fn redact_quoted(text: &str) -> String {
    // serde puts strings in `"` and numbers, variants and field names in backticks.
    // Strings and anything in backticks that is not a plain identifier (a number, a
    // variant with spaces) may be a payload's value; field names stay, to help.
    // An escaped quote does not end a quoted run.
    let mut out = String::with_capacity(text.len());
    let mut run: Option<(char, String)> = None;
    let mut escaped = false;
    for c in text.chars() {
        match &mut run {
            Some((q, inner)) => {
                if escaped {
                    escaped = false;
                    inner.push(c);
                } else if c == '\\' {
                    escaped = true;
                    inner.push(c);
                } else if c == *q {
                    let identifier = *q == '`'
                        && inner
                            .chars()
                            .next()
                            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                        && inner.chars().all(|x| x.is_ascii_alphanumeric() || x == '_');
                    if identifier {
                        out.push_str(inner);
                    } else {
                        out.push('…');
                    }
                    out.push(c);
                    run = None;
                } else {
                    inner.push(c);
                }
            }
            None => {
                if c == '"' || c == '`' {
                    run = Some((c, String::new()));
                }
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Job {
        id: String,
        n: i64,
    }

    #[test]
    fn malformed_bodies_get_a_clear_reason_without_string_values() {
        let reason = |body: &str| match parse_json::<Job>(body) {
            Err(IdempotencyError::MalformedBody { reason }) => reason,
            other => panic!("expected malformed, got {other:?}"),
        };
        assert!(reason(r#"{"id":"a","n":1,"x":2}"#).contains("unknown field `x`"));
        let r = reason(r#"{"id":"a","n":"Zhang San"}"#);
        assert!(r.starts_with("n: invalid type: string"), "{r}");
        assert!(!r.contains("Zhang"), "{r}");
        assert!(reason(r#"{"id":"a"}"#).contains("missing field `n`"));
        assert!(reason("not json").contains("expected"));
        assert!(reason(r#"{"id":"a","n":1} trailing"#).contains("trailing"));
        assert!(parse_json::<Job>(r#" {"id":"a","n":1} "#).is_ok());
    }

    #[test]
    fn redaction_keeps_structure_and_drops_string_content() {
        assert_eq!(
            redact_quoted(r#"invalid type: string "secret", expected i64"#),
            r#"invalid type: string "…", expected i64"#
        );
        assert_eq!(redact_quoted("unknown field `x`"), "unknown field `x`");
        assert_eq!(
            redact_quoted("invalid type: integer `4111111111111111`, expected a string"),
            "invalid type: integer `…`, expected a string"
        );
        assert_eq!(
            redact_quoted(r#"invalid value: string "a\"b secret", expected x"#),
            r#"invalid value: string "…", expected x"#
        );
    }
}
