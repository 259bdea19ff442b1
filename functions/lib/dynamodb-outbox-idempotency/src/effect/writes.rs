//! The guard record's writes: taking the key, recording the outcome, releasing the
//! key after a failed effect.

use super::record::{
    COMPLETED, Existing, IN_PROGRESS, LOCKED_UNTIL, PAYLOAD_HASH, RESULT, RESULT_BYTES,
    RESULT_HASH, RESULT_NOT_KEPT, STATUS, Stored, TOKEN, Written, completed_by, read_existing,
};
use super::{Deadline, IdempotentEffects};
use crate::hash::PayloadHash;
use crate::{IdempotencyError, Item};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

impl IdempotentEffects {
    /// The `IN_PROGRESS` record that takes `key` for the attempt `token` until
    /// `lock_until`, written at `now_ms`.
    pub(super) fn in_progress_item(
        &self,
        key: &str,
        hash: &PayloadHash,
        token: &str,
        lock_until: Deadline,
        now_ms: i64,
    ) -> Item {
        let mut item = self.record_key(key);
        item.extend([
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
                self.table.ttl_attribute_name().to_owned(),
                self.table.expires_at(now_ms),
            ),
        ]);
        item
    }

    /// The `COMPLETED` record of `key` with its `stored` result, written at `now_ms`.
    pub(super) fn completed_item(
        &self,
        key: &str,
        hash: &PayloadHash,
        token: &str,
        stored: &Stored,
        now_ms: i64,
    ) -> Item {
        let mut item = self.record_key(key);
        item.extend([
            (STATUS.to_owned(), AttributeValue::S(COMPLETED.to_owned())),
            (TOKEN.to_owned(), AttributeValue::S(token.to_owned())),
            (
                PAYLOAD_HASH.to_owned(),
                AttributeValue::S(hash.as_str().to_owned()),
            ),
            (
                self.table.ttl_attribute_name().to_owned(),
                self.table.expires_at(now_ms),
            ),
        ]);
        match stored {
            Stored::Json(json) => {
                item.insert(RESULT.to_owned(), AttributeValue::S(json.clone()));
            }
            Stored::NotKept {
                reason,
                bytes,
                sha256,
            } => item.extend([
                (
                    RESULT_NOT_KEPT.to_owned(),
                    AttributeValue::S(reason.clone()),
                ),
                (
                    RESULT_BYTES.to_owned(),
                    AttributeValue::N(bytes.to_string()),
                ),
                (RESULT_HASH.to_owned(), AttributeValue::S(sha256.clone())),
            ]),
        }
        item
    }

    /// Takes the key with an `IN_PROGRESS` record, or says what holds it. `Ok(None)`:
    /// taken. The key is free only when no record exists — a record past its TTL but
    /// not yet deleted still holds it — or, with
    /// [`rerun_unknown_outcomes`](Self::rerun_unknown_outcomes), when the previous
    /// holder's lock expired.
    pub(super) async fn acquire(
        &self,
        key: &str,
        hash: &PayloadHash,
        lock_until: Deadline,
        token: &str,
    ) -> Result<Option<Existing>, IdempotencyError> {
        let now = self.table.now_ms();
        let item = self.in_progress_item(key, hash, token, lock_until, now);
        let mut request = self
            .table
            .client()
            .put_item()
            .table_name(self.table.name())
            .set_item(Some(item))
            .expression_attribute_names("#key", self.table.partition_key_name())
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
    pub(super) async fn record(
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
        let item = self.completed_item(key, hash, token, stored, self.table.now_ms());
        let request = self
            .table
            .client()
            .put_item()
            .table_name(self.table.name())
            .set_item(Some(item))
            .condition_expression("#status = :in_progress AND #token = :token")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#token", TOKEN)
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
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

    /// A delete of `key`'s record, conditional on it being `IN_PROGRESS` and on
    /// `and` (whose names and values the caller adds).
    pub(super) fn delete_in_progress(&self, key: &str, and: &str) -> DeleteItemFluentBuilder {
        self.table
            .client()
            .delete_item()
            .table_name(self.table.name())
            .set_key(Some(self.record_key(key)))
            .condition_expression(format!("#status = :in_progress AND {and}"))
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_values(":in_progress", AttributeValue::S(IN_PROGRESS.to_owned()))
    }

    /// Deletes our `IN_PROGRESS` record after a failed effect, retrying until the
    /// deadline. If that fails, duplicates are refused as an unknown outcome once the
    /// lock expires.
    pub(super) async fn release(&self, key: &str, token: &str, deadline: Deadline) {
        let once = || async {
            let result = self
                .delete_in_progress(key, "#token = :token")
                .expression_attribute_names("#token", TOKEN)
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
}
