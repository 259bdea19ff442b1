//! The guard record as DynamoDB holds it: its attributes, the result it keeps, and
//! reading a record that refused us.

use crate::hash::PayloadHash;
use crate::{IdempotencyError, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Largest result stored: DynamoDB items are at most 400 KB, and the rest of the
/// record (key of at most 2 KB, status, token, hashes, TTL) fits in what is left.
pub(super) const MAX_RESULT_BYTES: usize = 350 * 1024;

pub(super) const STATUS: &str = "Status";
pub(super) const IN_PROGRESS: &str = "IN_PROGRESS";
pub(super) const COMPLETED: &str = "COMPLETED";
pub(super) const TOKEN: &str = "Token";
pub(super) const LOCKED_UNTIL: &str = "LockedUntil";
pub(super) const PAYLOAD_HASH: &str = "PayloadHash";
pub(super) const RESULT: &str = "Result";
pub(super) const RESULT_NOT_KEPT: &str = "ResultNotKept";
pub(super) const RESULT_BYTES: &str = "ResultBytes";
pub(super) const RESULT_HASH: &str = "ResultHash";

/// What the guard record said when we tried to take the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Existing {
    /// Our own `IN_PROGRESS` record (our first write landed, its answer was lost).
    Ours,
    /// Another attempt's `IN_PROGRESS` record, locked until this epoch-ms instant.
    InProgress { locked_until_ms: i64 },
    /// Completed.
    Completed(Stored),
}

/// The result as a `COMPLETED` record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stored {
    /// The result's JSON.
    Json(String),
    /// Why the result was not kept.
    NotKept {
        reason: String,
        bytes: usize,
        sha256: String,
    },
}

impl Stored {
    /// The result's JSON, or the bounded form when it is too large or does not
    /// serialise.
    pub(super) fn of<T: Serialize>(value: &T) -> Stored {
        match serde_json::to_string(value) {
            Ok(json) if json.len() <= MAX_RESULT_BYTES => Stored::Json(json),
            Ok(json) => Stored::not_kept(
                &json,
                format!(
                    "result not kept: {} bytes, over the {MAX_RESULT_BYTES} a record holds",
                    json.len()
                ),
            ),
            Err(e) => Stored::not_kept("", format!("result not kept: it does not serialise: {e}")),
        }
    }

    fn not_kept(json: &str, reason: String) -> Stored {
        Stored::NotKept {
            reason,
            bytes: json.len(),
            sha256: Sha256::digest(json.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        }
    }

    /// The bounded form of this result.
    pub(super) fn bounded(&self) -> Stored {
        match self {
            Stored::Json(json) => Stored::not_kept(
                json,
                format!(
                    "result not kept: DynamoDB refused the record with its {} bytes",
                    json.len()
                ),
            ),
            other => other.clone(),
        }
    }
}

/// What a conditional record write found.
pub(super) enum Written {
    /// Written (now, or by an earlier try whose answer was lost).
    Done,
    /// The record is no longer ours: another attempt took the key, or it is gone.
    NotOurs,
}

/// Whether the record that refused a `COMPLETED` write is our own `COMPLETED` one:
/// an earlier try landed and only its answer was lost.
pub(super) fn completed_by(record: Option<&Item>, token: &str) -> bool {
    record.is_some_and(|r| text(r, STATUS) == Some(COMPLETED) && text(r, TOKEN) == Some(token))
}

/// A token unique to one attempt: its writes are conditional on it.
pub(super) fn new_token() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

fn text<'i>(item: &'i Item, name: &str) -> Option<&'i str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// Reads a guard record that refused us: another payload, ours, in progress, or
/// completed.
pub(super) fn read_existing(
    key: &str,
    stored: &Item,
    hash: &PayloadHash,
    token: &str,
) -> Result<Existing, IdempotencyError> {
    let corrupt = |reason: &str| IdempotencyError::Corrupt {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    let stored_hash = text(stored, PAYLOAD_HASH).ok_or_else(|| corrupt("no PayloadHash"))?;
    if stored_hash != hash.as_str() {
        return Err(IdempotencyError::KeyReused {
            key: key.to_owned(),
            stored_hash: stored_hash.to_owned(),
            requested_hash: hash.as_str().to_owned(),
        });
    }
    match text(stored, STATUS) {
        Some(IN_PROGRESS) if text(stored, TOKEN) == Some(token) => Ok(Existing::Ours),
        Some(IN_PROGRESS) => {
            let locked_until_ms = match stored.get(LOCKED_UNTIL) {
                Some(AttributeValue::N(n)) => n.parse().map_err(|_| corrupt("bad LockedUntil"))?,
                _ => return Err(corrupt("IN_PROGRESS without LockedUntil")),
            };
            Ok(Existing::InProgress { locked_until_ms })
        }
        Some(COMPLETED) => match (text(stored, RESULT), text(stored, RESULT_NOT_KEPT)) {
            (Some(json), _) => Ok(Existing::Completed(Stored::Json(json.to_owned()))),
            (None, Some(reason)) => Ok(Existing::Completed(Stored::NotKept {
                reason: reason.to_owned(),
                bytes: match stored.get(RESULT_BYTES) {
                    Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
                    _ => 0,
                },
                sha256: text(stored, RESULT_HASH).unwrap_or_default().to_owned(),
            })),
            (None, None) => Err(corrupt("COMPLETED without Result or ResultNotKept")),
        },
        _ => Err(corrupt("unknown Status")),
    }
}
