//! Idempotent side effects: effects outside DynamoDB (calling a payment API, sending
//! an email) that no transaction can include.
//!
//! A guard record per idempotency key goes through two states:
//!
//! - `IN_PROGRESS`, written with a conditional `PutItem` before the effect runs, with
//!   a token of this attempt and a lock until the invocation's deadline (Lambda's
//!   `context.deadline`). A duplicate arriving while the lock holds is refused as
//!   [`IdempotencyError::InProgress`] (retryable: it comes back after the visibility
//!   timeout).
//! - `COMPLETED`, with the effect's result (JSON), returned to every later duplicate
//!   without running the effect again. A result over [`MAX_RESULT_BYTES`] (or one that
//!   does not serialise) is not kept: the record says so, with its size and SHA-256,
//!   and duplicates get [`Effect::ReplayedWithoutResult`] — the effect is never run
//!   again because its result was large.
//!
//! The record also stores a SHA-256 hash of the payload fields the caller chose
//! ([`PayloadHash`]): the same key with different content is refused
//! ([`IdempotencyError::KeyReused`]) instead of being answered with another request's
//! result.
//!
//! # An effect that ran is never run again by a redelivery
//!
//! The effect and its record cannot be written atomically, so something must be
//! decided for the moment between them. This module decides: **at most once**.
//!
//! - After the effect, the `COMPLETED` write is retried with exponential backoff for
//!   as long as the invocation has time (until half a second before its deadline).
//!   Retrying is safe: each write is conditional on this attempt's own `IN_PROGRESS`
//!   token, so it can never overwrite another attempt's record, and a retry that finds
//!   its own `COMPLETED` (the first try landed but its answer was lost) is a success.
//! - If the record still cannot be written, the effect has run: [`Effect::Ran`] is
//!   returned (the message is done and is acknowledged) and an error is logged. The
//!   record stays `IN_PROGRESS`.
//! - A record still `IN_PROGRESS` after its lock expired means an attempt ended
//!   without recording an outcome — crashed or timed out during the effect, or could
//!   not write `COMPLETED`. The effect may have been applied, so a duplicate is refused
//!   with [`IdempotencyError::OutcomeUnknown`], which is not retryable: the message
//!   ends on the dead-letter queue, where a person checks the downstream system and
//!   either deletes the message (the effect happened) or calls
//!   [`IdempotentEffects::forget`] and redrives it (it did not). The lock's expiry
//!   never silently turns into a second run.
//!
//! Why this design and not a longer lock: a lock that outlives the queue's redelivery
//! only postpones the second run to a later delivery (or a redrive), and it would also
//! hold back the messages whose attempt crashed *before* the effect. Why not a shrunken
//! record: when DynamoDB refuses the `COMPLETED` write it would refuse the smaller one
//! too. Refusing the unknown case is the only choice that never runs an effect twice.
//!
//! What remains: an attempt that dies during the effect leaves an unknown outcome that
//! a person resolves, and a downstream call that succeeded while the attempt saw an
//! error (a timeout) is released and run again, as the effect's error asked. An
//! external side effect cannot be made exactly-once in general; each effect is
//! therefore handed its idempotency key: pass it to downstream APIs that accept one
//! (payment providers do), and they close that window themselves. When the downstream
//! deduplicates by the key, [`IdempotentEffects::rerun_unknown_outcomes`] lets an
//! expired attempt be run again automatically instead of waiting for a person.
//!
//! Records are kept for the [`Retention`] (14 days by default), and a record whose TTL
//! has passed but that DynamoDB has not deleted yet still answers: only deletion frees
//! a key.

pub use crate::hash::{PayloadHash, canonical_json};
use crate::retention::Retention;
use crate::{IdempotencyError, Item, render_key};
use aws_sdk_dynamodb::config::AsyncSleep;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use dynamodb_outbox_core::clock::{self, SharedClock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Default guard record key prefix.
pub const EFFECT_PREFIX: &str = "IDEM#";
/// Largest result stored: DynamoDB items are at most 400 KB, and the rest of the
/// record (key of at most 2 KB, status, token, hashes, TTL) fits in what is left.
pub const MAX_RESULT_BYTES: usize = 350 * 1024;
/// Time kept before the invocation's deadline when retrying a record write: for the
/// last write itself and for answering Lambda.
pub const DEADLINE_RESERVE: Duration = Duration::from_millis(500);
/// First wait before retrying a record write; it doubles up to [`RETRY_MAX_DELAY`].
pub const RETRY_BASE_DELAY: Duration = Duration::from_millis(50);
/// Longest wait between two tries of a record write.
pub const RETRY_MAX_DELAY: Duration = Duration::from_secs(1);
/// Most retries of one record write, whatever the time left.
pub const MAX_RETRIES: u32 = 12;

const STATUS: &str = "Status";
const IN_PROGRESS: &str = "IN_PROGRESS";
const COMPLETED: &str = "COMPLETED";
const TOKEN: &str = "Token";
const LOCKED_UNTIL: &str = "LockedUntil";
const PAYLOAD_HASH: &str = "PayloadHash";
const RESULT: &str = "Result";
const RESULT_NOT_KEPT: &str = "ResultNotKept";
const RESULT_BYTES: &str = "ResultBytes";
const RESULT_HASH: &str = "ResultHash";

/// What a call to [`IdempotentEffects::run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<T> {
    /// The effect ran now; this is its result.
    Ran(T),
    /// The effect had already completed; this is the result stored then.
    Replayed(T),
    /// The effect had already completed, but its result was not kept (too large for a
    /// record, or not serialisable). It was not run again. Return a reference (an id,
    /// a URL) rather than a large result to get it back on duplicates.
    ReplayedWithoutResult {
        /// Why the result was not kept, with its size.
        reason: String,
    },
}

impl<T> Effect<T> {
    /// The result, whichever way it was obtained; `None` when it was not kept.
    pub fn into_value(self) -> Option<T> {
        match self {
            Effect::Ran(t) | Effect::Replayed(t) => Some(t),
            Effect::ReplayedWithoutResult { .. } => None,
        }
    }

    /// Whether this was a duplicate (the effect did not run now).
    pub fn is_replay(&self) -> bool {
        !matches!(self, Effect::Ran(_))
    }
}

/// Until when a new `IN_PROGRESS` record locks its key: the invocation's deadline.
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
    retention: Retention,
    ttl_attribute: String,
    rerun_unknown: bool,
    clock: SharedClock,
}

/// What the guard record said when we tried to take the key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Existing {
    /// Our own `IN_PROGRESS` record (our first write landed, its answer was lost).
    Ours,
    /// Another attempt's `IN_PROGRESS` record, locked until this epoch-ms instant.
    InProgress { locked_until_ms: i64 },
    /// Completed.
    Completed(Stored),
}

/// The result as a `COMPLETED` record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stored {
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
    fn of<T: Serialize>(value: &T) -> Stored {
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
    fn bounded(&self) -> Stored {
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
enum Written {
    /// Written (now, or by an earlier try whose answer was lost).
    Done,
    /// The record is no longer ours: another attempt took the key, or it is gone.
    NotOurs,
}

impl IdempotentEffects {
    /// Guard records in `table` (hash key `id`) under `id = "IDEM#<key>"`, with TTL
    /// attribute `ExpiresAt`, kept for the default [`Retention`] (14 days).
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        IdempotentEffects {
            client,
            table: table.into(),
            key_attribute: "id".to_owned(),
            prefix: EFFECT_PREFIX.to_owned(),
            retention: Retention::default(),
            ttl_attribute: crate::marker::TTL_ATTRIBUTE.to_owned(),
            rerun_unknown: false,
            clock: clock::system(),
        }
    }

    /// The clock that says whether a lock has expired and when records expire (the
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

    /// How long records are kept (default 14 days); use the same value for the
    /// [`MessageMarker`](crate::MessageMarker)s of the same consumer.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Runs the effect again for a key whose earlier attempt never recorded an outcome
    /// (its lock expired), instead of refusing it as
    /// [`IdempotencyError::OutcomeUnknown`]. Only when the downstream system
    /// deduplicates by the idempotency key the effect is given — then a second call is
    /// answered with the first one's outcome, and no person needs to look.
    pub fn rerun_unknown_outcomes(mut self) -> Self {
        self.rerun_unknown = true;
        self
    }

    fn record_key(&self, key: &str) -> AttributeValue {
        AttributeValue::S(format!("{}{key}", self.prefix))
    }

    fn rendered_key(&self, key: &str) -> String {
        render_key(&self.key_attribute, &self.record_key(key))
    }

    /// Runs `effect` unless `key` already completed (its stored result is returned),
    /// is in progress elsewhere ([`IdempotencyError::InProgress`], retryable), or an
    /// earlier attempt ended without an outcome ([`IdempotencyError::OutcomeUnknown`],
    /// not retryable). `hash` identifies the request's content; `lock_until` is the
    /// invocation's deadline.
    ///
    /// `effect` is given `key`: pass it to the downstream API as its idempotency key
    /// when it accepts one. When the effect fails, the key is released so that a retry
    /// runs it; when it succeeds, its result is recorded (retried until the deadline)
    /// and returned as [`Effect::Ran`] — also when it could not be recorded, because
    /// the effect has happened (an error is logged, and later duplicates are refused as
    /// an unknown outcome rather than run again).
    pub async fn run<'k, T, E, F, Fut>(
        &self,
        key: &'k str,
        hash: &PayloadHash,
        lock_until: Deadline,
        effect: F,
    ) -> Result<Effect<T>, IdempotencyError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
        F: FnOnce(&'k str) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if key.is_empty() {
            return Err(IdempotencyError::Invalid(
                "the idempotency key is empty".into(),
            ));
        }
        let token = new_token();
        match self.acquire(key, hash, lock_until, &token).await? {
            None | Some(Existing::Ours) => {}
            Some(Existing::InProgress { locked_until_ms }) => {
                return Err(if locked_until_ms < self.clock.now_ms() {
                    IdempotencyError::OutcomeUnknown {
                        key: key.to_owned(),
                        locked_until_ms,
                    }
                } else {
                    IdempotencyError::InProgress {
                        key: key.to_owned(),
                        locked_until_ms,
                    }
                });
            }
            Some(Existing::Completed(Stored::Json(result))) => {
                return serde_json::from_str(&result)
                    .map(Effect::Replayed)
                    .map_err(|e| IdempotencyError::Corrupt {
                        key: self.rendered_key(key),
                        reason: format!("the stored result does not deserialise: {e}"),
                    });
            }
            Some(Existing::Completed(Stored::NotKept { reason, .. })) => {
                return Ok(Effect::ReplayedWithoutResult { reason });
            }
        }
        let value = match effect(key).await {
            Ok(value) => value,
            Err(e) => {
                self.release(key, &token, lock_until).await;
                return Err(IdempotencyError::Effect {
                    key: key.to_owned(),
                    source: e.into(),
                });
            }
        };
        self.record(key, hash, &token, lock_until, Stored::of(&value))
            .await;
        Ok(Effect::Ran(value))
    }

    /// Deletes the record of `key` if it is an `IN_PROGRESS` lock that expired — an
    /// attempt that ended without recording an outcome — so that the next delivery
    /// runs the effect. For a person who checked that the effect did not happen.
    /// `Ok(false)` when there was no such record (none, still locked, or completed).
    pub async fn forget(&self, key: &str) -> Result<bool, IdempotencyError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(&self.key_attribute, self.record_key(key))
            .condition_expression("#status = :in_progress AND #locked < :now_ms")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#locked", LOCKED_UNTIL)
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
            .expression_attribute_values(
                ":now_ms",
                AttributeValue::N(self.clock.now_ms().to_string()),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(DeleteItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(IdempotencyError::aws("DeleteItem (idempotency record)", e)),
            },
        }
    }

    /// Takes the key with an `IN_PROGRESS` record, or says what holds it. `Ok(None)`:
    /// taken. The key is free only when no record exists — a record past its TTL but
    /// not yet deleted still holds it — or, with
    /// [`rerun_unknown_outcomes`](Self::rerun_unknown_outcomes), when the previous
    /// holder's lock expired.
    async fn acquire(
        &self,
        key: &str,
        hash: &PayloadHash,
        lock_until: Deadline,
        token: &str,
    ) -> Result<Option<Existing>, IdempotencyError> {
        let now = self.clock.now_ms();
        let item = Item::from([
            (self.key_attribute.clone(), self.record_key(key)),
            (STATUS.to_owned(), AttributeValue::S(IN_PROGRESS.to_owned())),
            (TOKEN.to_owned(), AttributeValue::S(token.to_owned())),
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
                AttributeValue::N(self.retention.expires_at(now).to_string()),
            ),
        ]);
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .expression_attribute_names("#key", &self.key_attribute)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        request = if self.rerun_unknown {
            request
                .condition_expression(
                    "attribute_not_exists(#key) OR (#status = :in_progress AND #locked < :now_ms AND #hash = :hash)",
                )
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#locked", LOCKED_UNTIL)
                .expression_attribute_names("#hash", PAYLOAD_HASH)
                .expression_attribute_values(":hash", AttributeValue::S(hash.as_str().to_owned()))
                .expression_attribute_values(
                    ":in_progress",
                    AttributeValue::S(IN_PROGRESS.to_owned()),
                )
                .expression_attribute_values(":now_ms", AttributeValue::N(now.to_string()))
        } else {
            request.condition_expression("attribute_not_exists(#key)")
        };
        let err = match request.send().await {
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
        read_existing(&self.rendered_key(key), &stored, hash, token).map(Some)
    }

    /// Records the outcome, retrying until the deadline; logs what it could not do.
    async fn record(
        &self,
        key: &str,
        hash: &PayloadHash,
        token: &str,
        deadline: Deadline,
        stored: Stored,
    ) {
        if let Stored::NotKept { reason, .. } = &stored {
            tracing::warn!(idempotency_key = key, %reason, "idempotent effect ran; its result is not kept, duplicates are acknowledged without it");
        }
        let mut result = self
            .retrying(deadline, || self.complete(key, hash, token, &stored))
            .await;
        if matches!(&result, Err(e) if !e.is_retryable()) && matches!(stored, Stored::Json(_)) {
            // Refused for good with the full result (too large after all, say): the
            // bounded form still records that the effect ran.
            let bounded = stored.bounded();
            result = self
                .retrying(deadline, || self.complete(key, hash, token, &bounded))
                .await;
        }
        match result {
            Ok(Written::Done) => {}
            Ok(Written::NotOurs) => tracing::error!(
                idempotency_key = key,
                "idempotent effect ran, but its record was taken over by another attempt before the outcome was written (this attempt outlived its deadline's lock): check the downstream system for a second effect"
            ),
            Err(e) => tracing::error!(
                idempotency_key = key,
                error = %e,
                "idempotent effect ran, but its outcome could not be recorded before the deadline: duplicates of this key will be refused as an unknown outcome for a person to resolve, never run again"
            ),
        }
    }

    /// One try of the `COMPLETED` write, conditional on our own `IN_PROGRESS` token.
    async fn complete(
        &self,
        key: &str,
        hash: &PayloadHash,
        token: &str,
        stored: &Stored,
    ) -> Result<Written, IdempotencyError> {
        let expires = self.retention.expires_at(self.clock.now_ms());
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(&self.key_attribute, self.record_key(key))
            .item(STATUS, AttributeValue::S(COMPLETED.to_owned()))
            .item(TOKEN, AttributeValue::S(token.to_owned()))
            .item(PAYLOAD_HASH, AttributeValue::S(hash.as_str().to_owned()))
            .item(&self.ttl_attribute, AttributeValue::N(expires.to_string()))
            .condition_expression("#status = :in_progress AND #token = :token")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#token", TOKEN)
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        request = match stored {
            Stored::Json(json) => request.item(RESULT, AttributeValue::S(json.clone())),
            Stored::NotKept {
                reason,
                bytes,
                sha256,
            } => request
                .item(RESULT_NOT_KEPT, AttributeValue::S(reason.clone()))
                .item(RESULT_BYTES, AttributeValue::N(bytes.to_string()))
                .item(RESULT_HASH, AttributeValue::S(sha256.clone())),
        };
        match request.send().await {
            Ok(_) => Ok(Written::Done),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(ccf)) => {
                    Ok(if completed_by(ccf.item.as_ref(), token) {
                        Written::Done
                    } else {
                        Written::NotOurs
                    })
                }
                _ => Err(IdempotencyError::aws(
                    "PutItem (completed idempotency record)",
                    e,
                )),
            },
        }
    }

    /// Deletes our `IN_PROGRESS` record after a failed effect, retrying until the
    /// deadline. If that fails, duplicates are refused as an unknown outcome once the
    /// lock expires.
    async fn release(&self, key: &str, token: &str, deadline: Deadline) {
        let once = || async {
            let result = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(&self.key_attribute, self.record_key(key))
                .condition_expression("#status = :in_progress AND #token = :token")
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#token", TOKEN)
                .expression_attribute_values(
                    ":in_progress",
                    AttributeValue::S(IN_PROGRESS.to_owned()),
                )
                .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
                .send()
                .await;
            match result {
                Ok(_) => Ok(()),
                // Not ours any more (or already deleted by an earlier try): nothing to do.
                Err(e)
                    if matches!(
                        e.as_service_error(),
                        Some(DeleteItemError::ConditionalCheckFailedException(_))
                    ) =>
                {
                    Ok(())
                }
                Err(e) => Err(IdempotencyError::aws("DeleteItem (idempotency record)", e)),
            }
        };
        if let Err(e) = self.retrying(deadline, once).await {
            tracing::error!(
                idempotency_key = key,
                error = %e,
                "the effect failed and its key could not be released: after the lock expires, duplicates are refused as an unknown outcome; call IdempotentEffects::forget once you have checked"
            );
        }
    }

    /// Calls `op` until it succeeds, fails for good, or the next wait would pass the
    /// deadline (less [`DEADLINE_RESERVE`]).
    async fn retrying<T, Op, Fut>(
        &self,
        deadline: Deadline,
        mut op: Op,
    ) -> Result<T, IdempotencyError>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, IdempotencyError>>,
    {
        let start = self.clock.now_ms();
        let mut waited: i64 = 0;
        let mut retry = 0u32;
        loop {
            let err = match op().await {
                Ok(v) => return Ok(v),
                Err(e) if !e.is_retryable() => return Err(e),
                Err(e) => e,
            };
            retry += 1;
            // The clock may stand still (a test's); time spent waiting still counts.
            let now = self.clock.now_ms().max(start.saturating_add(waited));
            let Some(delay) = retry_delay(retry, now, deadline.epoch_millis()) else {
                return Err(err);
            };
            tracing::warn!(retry, delay_ms = delay.as_millis() as u64, error = %err, "idempotency record write failed; retrying");
            if let Some(sleep) = self.client.config().sleep_impl() {
                sleep.sleep(delay).await;
            }
            waited = waited.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
        }
    }
}

/// The wait before retry number `retry` (1 for the first) of a record write, at
/// `now_ms`, for an invocation ending at `deadline_ms`: [`RETRY_BASE_DELAY`] doubling
/// up to [`RETRY_MAX_DELAY`]; `None` once [`MAX_RETRIES`] were made or the wait plus
/// [`DEADLINE_RESERVE`] would pass the deadline.
pub fn retry_delay(retry: u32, now_ms: i64, deadline_ms: i64) -> Option<Duration> {
    if retry == 0 || retry > MAX_RETRIES {
        return None;
    }
    let delay = RETRY_BASE_DELAY
        .saturating_mul(1u32.checked_shl(retry - 1).unwrap_or(u32::MAX))
        .min(RETRY_MAX_DELAY);
    let ends = now_ms
        .saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
        .saturating_add(i64::try_from(DEADLINE_RESERVE.as_millis()).unwrap_or(i64::MAX));
    (ends <= deadline_ms).then_some(delay)
}

/// Whether the record that refused a `COMPLETED` write is our own `COMPLETED` one:
/// an earlier try landed and only its answer was lost.
fn completed_by(record: Option<&Item>, token: &str) -> bool {
    record.is_some_and(|r| text(r, STATUS) == Some(COMPLETED) && text(r, TOKEN) == Some(token))
}

/// A token unique to one attempt: its writes are conditional on it.
fn new_token() -> String {
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
fn read_existing(
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(status: &str, hash: &str) -> Item {
        Item::from([
            ("Status".to_owned(), AttributeValue::S(status.into())),
            ("PayloadHash".to_owned(), AttributeValue::S(hash.into())),
            ("Token".to_owned(), AttributeValue::S("theirs".into())),
            ("LockedUntil".to_owned(), AttributeValue::N("42".into())),
            ("Result".to_owned(), AttributeValue::S("\"ok\"".into())),
        ])
    }

    #[test]
    fn an_existing_record_is_read_as_ours_in_progress_completed_or_another_payload() {
        let h = PayloadHash::of(&json!(1)).expect("hash");
        let other = PayloadHash::of(&json!(2)).expect("hash");
        let read = |item: &Item, hash: &PayloadHash| read_existing("k", item, hash, "mine");
        assert_eq!(
            read(&record(IN_PROGRESS, h.as_str()), &h).expect("read"),
            Existing::InProgress {
                locked_until_ms: 42
            }
        );
        let mut ours = record(IN_PROGRESS, h.as_str());
        ours.insert("Token".into(), AttributeValue::S("mine".into()));
        assert_eq!(read(&ours, &h).expect("read"), Existing::Ours);
        assert_eq!(
            read(&record(COMPLETED, h.as_str()), &h).expect("read"),
            Existing::Completed(Stored::Json("\"ok\"".into()))
        );
        assert!(matches!(
            read(&record(COMPLETED, h.as_str()), &other),
            Err(IdempotencyError::KeyReused { .. })
        ));
        assert!(matches!(
            read(&record("WEIRD", h.as_str()), &h),
            Err(IdempotencyError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_completed_record_without_its_result_says_why() {
        let h = PayloadHash::of(&json!(1)).expect("hash");
        let mut item = record(COMPLETED, h.as_str());
        item.remove("Result");
        item.insert(
            "ResultNotKept".into(),
            AttributeValue::S("result not kept: 409602 bytes".into()),
        );
        item.insert("ResultBytes".into(), AttributeValue::N("409602".into()));
        match read_existing("k", &item, &h, "mine").expect("read") {
            Existing::Completed(Stored::NotKept { reason, bytes, .. }) => {
                assert!(reason.contains("409602"));
                assert_eq!(bytes, 409_602);
            }
            other => panic!("expected a result not kept, got {other:?}"),
        }
    }

    #[test]
    fn a_result_too_large_for_a_record_is_stored_as_its_size_and_hash() {
        assert_eq!(Stored::of(&"small"), Stored::Json("\"small\"".into()));
        let big = "x".repeat(MAX_RESULT_BYTES);
        match Stored::of(&big) {
            Stored::NotKept {
                reason,
                bytes,
                sha256,
            } => {
                assert_eq!(bytes, MAX_RESULT_BYTES + 2, "the JSON string's quotes");
                assert!(reason.contains(&bytes.to_string()), "{reason}");
                assert_eq!(sha256.len(), 64);
            }
            other => panic!("expected the bounded form, got {other:?}"),
        }
        // A map with non-string keys does not serialise to JSON.
        let unserialisable = std::collections::HashMap::from([((1, 2), 3)]);
        assert!(matches!(
            Stored::of(&unserialisable),
            Stored::NotKept { reason, .. } if reason.contains("does not serialise")
        ));
        assert!(matches!(
            Stored::Json("\"x\"".into()).bounded(),
            Stored::NotKept { bytes: 3, .. }
        ));
    }

    #[test]
    fn record_writes_are_retried_with_doubling_waits_within_the_deadline() {
        let deadline = 100_000;
        let waits: Vec<u128> = (1..=6)
            .map(|r| retry_delay(r, 0, deadline).expect("time left").as_millis())
            .collect();
        assert_eq!(waits, [50, 100, 200, 400, 800, 1000]);
        assert_eq!(retry_delay(MAX_RETRIES + 1, 0, deadline), None);
        assert_eq!(retry_delay(0, 0, deadline), None);
        // A wait that would leave less than the reserve before the deadline is not made.
        assert_eq!(
            retry_delay(1, deadline - 550, deadline),
            Some(Duration::from_millis(50))
        );
        assert_eq!(retry_delay(1, deadline - 549, deadline), None);
        assert_eq!(retry_delay(1, deadline, deadline), None);
    }

    #[test]
    fn only_a_replay_without_a_result_has_no_value() {
        assert_eq!(Effect::Ran(1).into_value(), Some(1));
        assert_eq!(Effect::Replayed(1).into_value(), Some(1));
        let without: Effect<u32> = Effect::ReplayedWithoutResult {
            reason: "too large".into(),
        };
        assert!(without.is_replay());
        assert_eq!(without.into_value(), None);
        assert!(!Effect::Ran(1).is_replay());
    }

    #[test]
    fn a_refused_completion_is_ours_only_if_our_token_completed_the_record() {
        let h = PayloadHash::of(&json!(1)).expect("hash");
        let mut ours = record(COMPLETED, h.as_str());
        ours.insert("Token".into(), AttributeValue::S("mine".into()));
        assert!(completed_by(Some(&ours), "mine"), "our earlier try landed");
        assert!(!completed_by(Some(&record(COMPLETED, h.as_str())), "mine"));
        let mut taken = record(IN_PROGRESS, h.as_str());
        taken.insert("Token".into(), AttributeValue::S("mine".into()));
        assert!(!completed_by(Some(&taken), "mine"), "still in progress");
        assert!(!completed_by(None, "mine"), "the record is gone");
    }

    #[test]
    fn every_attempt_has_its_own_token() {
        assert_ne!(new_token(), new_token());
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
