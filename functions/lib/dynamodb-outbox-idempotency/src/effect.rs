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
//!   without running the effect again. A result over [`IdempotentEffects::MAX_RESULT_BYTES`] (or one that
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

mod record;
mod retry;
#[cfg(test)]
mod tests;
mod writes;

use crate::hash::PayloadHash;
use crate::table::IdempotencyTable;
use crate::{IdempotencyError, Item};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::clock;
use record::{Existing, LOCKED_UNTIL, Stored, new_token};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Guard record key prefix: `id = "IDEM#<key>"`.
const EFFECT_PREFIX: &str = "IDEM#";

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
///
/// ```no_run
/// use dynamodb_outbox_idempotency::{Deadline, Delivery, Effect, IdempotentEffects, PayloadHash};
///
/// /// The payment API: it takes an idempotency key and answers a repeated call with
/// /// the first one's outcome.
/// async fn charge(amount: u64, idempotency_key: &str) -> Result<String, std::io::Error> {
///     # let _ = (amount, idempotency_key);
///     Ok("receipt-1".to_owned())
/// }
///
/// # async fn example(client: aws_sdk_dynamodb::Client, msg: Delivery<'_>, deadline_ms: u64)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// let effects = IdempotentEffects::new(client, "orders"); // records under id = "IDEM#<key>"
/// let body: serde_json::Value = msg.parse()?;
/// let hash = PayloadHash::of_fields(&body, &["/amount", "/currency"]);
/// let amount = body["amount"].as_u64().unwrap_or_default();
/// let receipt = effects
///     .run(msg.message_id()?, &hash, Deadline::from_epoch_millis(deadline_ms), |key| {
///         charge(amount, key)
///     })
///     .await?;
/// match receipt {
///     Effect::Ran(r) | Effect::Replayed(r) => println!("receipt {r}"),
///     Effect::ReplayedWithoutResult { reason } => println!("done before; {reason}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct IdempotentEffects {
    table: IdempotencyTable,
    prefix: String,
    rerun_unknown: bool,
}

impl IdempotentEffects {
    /// Largest result stored: DynamoDB items are at most 400 KB, and the rest of the
    /// record (key of at most 2 KB, status, token, hashes, TTL) fits in what is left.
    pub const MAX_RESULT_BYTES: usize = record::MAX_RESULT_BYTES;

    /// Guard records in `table` (hash key `id`) under `id = "IDEM#<key>"`, with TTL
    /// attribute `ExpiresAt`, kept for the default [`Retention`](crate::Retention)
    /// (14 days); shorthand for [`in_table`](Self::in_table) with
    /// [`IdempotencyTable::new`].
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self::in_table(IdempotencyTable::new(client, table))
    }

    /// Guard records in `table`, keyed `"IDEM#<key>"` in its key attributes, kept for
    /// its retention.
    pub fn in_table(table: IdempotencyTable) -> Self {
        IdempotentEffects {
            table,
            prefix: EFFECT_PREFIX.to_owned(),
            rerun_unknown: false,
        }
    }

    /// The clock that says whether a lock has expired and when records expire. Kept
    /// for the workspace's tests: set it with [`IdempotencyTable::clock`].
    #[cfg(feature = "unstable-internals")]
    pub fn clock(mut self, clock: dynamodb_outbox_core::SharedClock) -> Self {
        self.table = self.table.clock(clock);
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

    fn record_key(&self, key: &str) -> Item {
        self.table.record_key(&format!("{}{key}", self.prefix))
    }

    fn rendered_key(&self, key: &str) -> String {
        self.table
            .rendered_record_key(&format!("{}{key}", self.prefix))
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
                return Err(if locked_until_ms < self.table.now_ms() {
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
            .delete_in_progress(key, "#locked < :now_ms")
            .expression_attribute_names("#locked", LOCKED_UNTIL)
            .expression_attribute_values(
                ":now_ms",
                AttributeValue::N(self.table.now_ms().to_string()),
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
}
