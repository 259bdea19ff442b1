//! Idempotent side effects: effects outside DynamoDB (calling a payment API, sending
//! an email) that no transaction can include.
//!
//! A guard record per idempotency key goes through two states:
//!
//! - `IN_PROGRESS`, written with a conditional `PutItem` before the effect runs. Its
//!   lock expires at the invocation's deadline (Lambda's `context.deadline`): if the
//!   function crashes or times out mid-effect, the key is free again once that
//!   invocation can no longer be running, instead of locked until the record's TTL.
//! - `COMPLETED`, with the effect's result (JSON), returned to every later duplicate
//!   without running the effect again, until the record expires.
//!
//! The record also stores a SHA-256 hash of the payload fields the caller chose
//! ([`PayloadHash`]): the same key with different content is refused
//! ([`IdempotencyError::KeyReused`]) instead of being answered with another request's
//! result.
//!
//! What this cannot do: make the effect and the record atomic. If the function dies
//! after the effect and before `COMPLETED` is written, the effect runs again after the
//! lock expires; pass the idempotency key to the downstream API when it accepts one.
//! The `COMPLETED` write is unconditional: with the lock set to the Lambda deadline, the
//! holder cannot still be running when another invocation takes an expired key (Lambda
//! stops it at that deadline), so there is no lease to lose.

pub use crate::hash::{PayloadHash, canonical_json};
use crate::{IdempotencyError, Item, epoch_seconds, render_key};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use outbox_core::clock::{self, SharedClock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Default guard record key prefix.
pub const EFFECT_PREFIX: &str = "IDEM#";
/// Default time a `COMPLETED` record answers duplicates.
pub const DEFAULT_RESULT_TTL: Duration = Duration::from_secs(86_400);
/// Largest result stored (DynamoDB items are at most 400 KB; the rest is the record).
pub const MAX_RESULT_BYTES: usize = 350 * 1024;

const STATUS: &str = "Status";
const IN_PROGRESS: &str = "IN_PROGRESS";
const COMPLETED: &str = "COMPLETED";
const LOCKED_UNTIL: &str = "LockedUntil";
const PAYLOAD_HASH: &str = "PayloadHash";
const RESULT: &str = "Result";

/// What a call to [`IdempotentEffects::run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<T> {
    /// The effect ran now; this is its result.
    Ran(T),
    /// The effect had already completed; this is the result stored then.
    Replayed(T),
}

impl<T> Effect<T> {
    /// The result, whichever way it was obtained.
    pub fn into_inner(self) -> T {
        match self {
            Effect::Ran(t) | Effect::Replayed(t) => t,
        }
    }

    /// Whether this was a duplicate.
    pub fn is_replay(&self) -> bool {
        matches!(self, Effect::Replayed(_))
    }
}

/// Until when a new `IN_PROGRESS` record locks its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(i64);

impl Deadline {
    /// From Lambda's `context.deadline` (epoch milliseconds).
    pub fn from_epoch_millis(ms: u64) -> Self {
        Deadline(i64::try_from(ms).unwrap_or(i64::MAX))
    }

    /// `remaining` from now on the system clock (outside Lambda).
    pub fn after(remaining: Duration) -> Self {
        let remaining = i64::try_from(remaining.as_millis()).unwrap_or(i64::MAX);
        Deadline(clock::now_ms().saturating_add(remaining))
    }

    /// The instant, epoch milliseconds.
    pub fn epoch_millis(&self) -> i64 {
        self.0
    }

    /// The instant.
    pub fn at(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(self.0).unwrap_or(0))
    }
}

/// Runs side effects once per idempotency key.
#[derive(Debug, Clone)]
pub struct IdempotentEffects {
    client: aws_sdk_dynamodb::Client,
    table: String,
    key_attribute: String,
    prefix: String,
    result_ttl: Duration,
    ttl_attribute: String,
    clock: SharedClock,
}

/// What the guard record said when the key was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    /// Another invocation holds the key until this epoch-ms instant.
    InProgress {
        /// Lock expiry.
        locked_until_ms: i64,
    },
    /// Completed, with this result JSON.
    Completed {
        /// The stored result.
        result: String,
    },
}

impl IdempotentEffects {
    /// Guard records in `table` (hash key `id`) under `id = "IDEM#<key>"`, with TTL
    /// attribute `ExpiresAt`; completed results kept one day.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        IdempotentEffects {
            client,
            table: table.into(),
            key_attribute: "id".to_owned(),
            prefix: EFFECT_PREFIX.to_owned(),
            result_ttl: DEFAULT_RESULT_TTL,
            ttl_attribute: crate::marker::TTL_ATTRIBUTE.to_owned(),
            clock: clock::system(),
        }
    }

    /// The clock that says whether a lock has expired and when results expire (the
    /// system clock by default).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The table's hash key attribute (default `id`).
    pub fn key_attribute(mut self, name: impl Into<String>) -> Self {
        self.key_attribute = name.into();
        self
    }

    /// How long a completed result answers duplicates (default one day). Longer than
    /// any redelivery can arrive.
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.result_ttl = ttl;
        self
    }

    fn record_key(&self, key: &str) -> AttributeValue {
        AttributeValue::S(format!("{}{key}", self.prefix))
    }

    /// Runs `effect` unless `key` already completed (its stored result is returned) or
    /// is in progress elsewhere ([`IdempotencyError::InProgress`], retryable).
    /// `hash` identifies the request's content; `lock_until` is the invocation's
    /// deadline. When the effect fails, the key is released so that a retry runs it.
    pub async fn run<T, E, F, Fut>(
        &self,
        key: &str,
        hash: &PayloadHash,
        lock_until: Deadline,
        effect: F,
    ) -> Result<Effect<T>, IdempotencyError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if key.is_empty() {
            return Err(IdempotencyError::Invalid(
                "the idempotency key is empty".into(),
            ));
        }
        if let Some(existing) = self.acquire(key, hash, lock_until).await? {
            return match existing {
                Existing::InProgress { locked_until_ms } => Err(IdempotencyError::InProgress {
                    key: key.to_owned(),
                    locked_until_ms,
                }),
                Existing::Completed { result } => serde_json::from_str(&result)
                    .map(Effect::Replayed)
                    .map_err(|e| IdempotencyError::Corrupt {
                        key: key.to_owned(),
                        reason: format!("the stored result does not deserialise: {e}"),
                    }),
            };
        }
        let value = match effect().await {
            Ok(value) => value,
            Err(e) => {
                self.release(key).await;
                return Err(IdempotencyError::Effect {
                    key: key.to_owned(),
                    source: e.into(),
                });
            }
        };
        let not_recorded = |reason: String| IdempotencyError::NotRecorded {
            key: key.to_owned(),
            reason,
        };
        let json = serde_json::to_string(&value)
            .map_err(|e| not_recorded(format!("the result does not serialise: {e}")))?;
        if json.len() > MAX_RESULT_BYTES {
            return Err(not_recorded(format!(
                "the result is {} bytes, more than the {MAX_RESULT_BYTES} a record can hold: return a reference instead",
                json.len()
            )));
        }
        self.complete(key, hash, json)
            .await
            .map_err(|e| not_recorded(e.to_string()))?;
        Ok(Effect::Ran(value))
    }

    /// Takes the key with an `IN_PROGRESS` record, or says why not. `Ok(None)`: taken.
    /// The key is free when no record exists, when the previous holder's lock expired,
    /// or when a record outlived its TTL (TTL deletion lags by up to days).
    pub async fn acquire(
        &self,
        key: &str,
        hash: &PayloadHash,
        lock_until: Deadline,
    ) -> Result<Option<Existing>, IdempotencyError> {
        let now = self.clock.now_ms();
        let item = Item::from([
            (self.key_attribute.clone(), self.record_key(key)),
            (STATUS.to_owned(), AttributeValue::S(IN_PROGRESS.to_owned())),
            (
                LOCKED_UNTIL.to_owned(),
                AttributeValue::N(lock_until.epoch_millis().to_string()),
            ),
            (
                PAYLOAD_HASH.to_owned(),
                AttributeValue::S(hash.as_str().to_owned()),
            ),
            (
                self.ttl_attribute.clone(),
                AttributeValue::N((epoch_seconds(now) + self.result_ttl.as_secs()).to_string()),
            ),
        ]);
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(#key) OR #ttl < :now_s OR (#status = :in_progress AND #locked < :now_ms)",
            )
            .expression_attribute_names("#key", &self.key_attribute)
            .expression_attribute_names("#ttl", &self.ttl_attribute)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#locked", LOCKED_UNTIL)
            .expression_attribute_values(":now_s", AttributeValue::N(epoch_seconds(now).to_string()))
            .expression_attribute_values(":now_ms", AttributeValue::N(now.to_string()))
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let err = match result {
            Ok(_) => return Ok(None),
            Err(err) => err,
        };
        let stored = match err.as_service_error() {
            Some(PutItemError::ConditionalCheckFailedException(ccf)) => ccf.item.clone(),
            _ => return Err(IdempotencyError::aws("PutItem (idempotency record)", err)),
        };
        let Some(stored) = stored else {
            return Err(IdempotencyError::aws(
                "PutItem (idempotency record, no ALL_OLD item returned)",
                err,
            ));
        };
        read_existing(
            &render_key(&self.key_attribute, &self.record_key(key)),
            &stored,
            hash,
        )
        .map(Some)
    }

    async fn complete(
        &self,
        key: &str,
        hash: &PayloadHash,
        result: String,
    ) -> Result<(), IdempotencyError> {
        let expires = epoch_seconds(self.clock.now_ms()) + self.result_ttl.as_secs();
        self.client
            .put_item()
            .table_name(&self.table)
            .item(&self.key_attribute, self.record_key(key))
            .item(STATUS, AttributeValue::S(COMPLETED.to_owned()))
            .item(PAYLOAD_HASH, AttributeValue::S(hash.as_str().to_owned()))
            .item(RESULT, AttributeValue::S(result))
            .item(&self.ttl_attribute, AttributeValue::N(expires.to_string()))
            .send()
            .await
            .map_err(|e| IdempotencyError::aws("PutItem (completed idempotency record)", e))?;
        Ok(())
    }

    /// Deletes our `IN_PROGRESS` record after a failed effect. If that fails too, the
    /// lock still expires at the deadline.
    async fn release(&self, key: &str) {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(&self.key_attribute, self.record_key(key))
            .condition_expression("#status = :in_progress")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
            .send()
            .await;
        if let Err(e) = result {
            tracing::warn!(
                idempotency_key = key,
                error = %aws_smithy_types::error::display::DisplayErrorContext(&e),
                "could not release the idempotency key; it frees itself at the lock's expiry"
            );
        }
    }
}

/// Reads a guard record that refused us: another payload, in progress, or completed.
pub fn read_existing(
    key: &str,
    stored: &Item,
    hash: &PayloadHash,
) -> Result<Existing, IdempotencyError> {
    let corrupt = |reason: &str| IdempotencyError::Corrupt {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    let text = |name: &str| match stored.get(name) {
        Some(AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    };
    let stored_hash = text(PAYLOAD_HASH).ok_or_else(|| corrupt("no PayloadHash"))?;
    if stored_hash != hash.as_str() {
        return Err(IdempotencyError::KeyReused {
            key: key.to_owned(),
            stored_hash: stored_hash.to_owned(),
            requested_hash: hash.as_str().to_owned(),
        });
    }
    match text(STATUS) {
        Some(IN_PROGRESS) => {
            let locked_until_ms = match stored.get(LOCKED_UNTIL) {
                Some(AttributeValue::N(n)) => n.parse().map_err(|_| corrupt("bad LockedUntil"))?,
                _ => return Err(corrupt("IN_PROGRESS without LockedUntil")),
            };
            Ok(Existing::InProgress { locked_until_ms })
        }
        Some(COMPLETED) => Ok(Existing::Completed {
            result: text(RESULT)
                .ok_or_else(|| corrupt("COMPLETED without Result"))?
                .to_owned(),
        }),
        _ => Err(corrupt("unknown Status")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(status: &str, hash: &str) -> Item {
        Item::from([
            ("Status".to_owned(), AttributeValue::S(status.into())),
            ("PayloadHash".to_owned(), AttributeValue::S(hash.into())),
            ("LockedUntil".to_owned(), AttributeValue::N("42".into())),
            ("Result".to_owned(), AttributeValue::S("\"ok\"".into())),
        ])
    }

    #[test]
    fn an_existing_record_is_read_as_in_progress_completed_or_another_payload() {
        let h = PayloadHash::of(&json!(1)).expect("hash");
        let other = PayloadHash::of(&json!(2)).expect("hash");
        assert_eq!(
            read_existing("k", &record(IN_PROGRESS, h.as_str()), &h).expect("read"),
            Existing::InProgress {
                locked_until_ms: 42
            }
        );
        assert_eq!(
            read_existing("k", &record(COMPLETED, h.as_str()), &h).expect("read"),
            Existing::Completed {
                result: "\"ok\"".into()
            }
        );
        assert!(matches!(
            read_existing("k", &record(COMPLETED, h.as_str()), &other),
            Err(IdempotencyError::KeyReused { .. })
        ));
        assert!(matches!(
            read_existing("k", &record("WEIRD", h.as_str()), &h),
            Err(IdempotencyError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_lambda_deadline_is_epoch_milliseconds() {
        let d = Deadline::from_epoch_millis(1_700_000_000_123);
        assert_eq!(d.epoch_millis(), 1_700_000_000_123);
        assert_eq!(
            d.at(),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)
        );
    }
}
