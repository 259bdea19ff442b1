//! A transaction that can be sent again: the answer to "did my commit happen?".
//!
//! A timeout after the request was sent is ambiguous: the transaction may have
//! committed. Calling [`OutboxWriter::commit`] again would mint new message ids, and
//! if the first attempt did commit there would be two messages for one write. A
//! [`PreparedCommit`] fixes the ids, the items and a `ClientRequestToken` derived from
//! the ids, so [`OutboxWriter::commit_prepared`] can be called again safely:
//!
//! - within DynamoDB's idempotency window (10 minutes) the token makes a repeat of a
//!   committed transaction succeed without writing again;
//! - after it, the repeat is cancelled by the outbox items' `attribute_not_exists`
//!   conditions — and when the items that exist are ours (a strongly consistent read
//!   of their `MessageId`), the transaction had committed: the repeat succeeds too.

use super::error::{self, ProducerError};
use super::offload::Upload;
use super::{Committed, OutboxWriter};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use dynamodb_outbox_core::__private::schema::MESSAGE_ID;
use dynamodb_outbox_core::large_payload::PayloadPointer;

/// Namespace of the transaction tokens (UUID v5 of the message ids).
const TOKEN_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6f75_7462_6f78_5458_8b1e_2a44_c0de_7011);

/// A transaction built and checked, with its message ids and idempotency token fixed:
/// send it with [`OutboxWriter::commit_prepared`], as often as its outcome is unknown.
#[derive(Debug, Clone)]
pub struct PreparedCommit {
    actions: Vec<TransactWriteItem>,
    described: Vec<String>,
    first_message: usize,
    aggregates: Vec<String>,
    committed: Committed,
    token: String,
    uploads: Vec<Upload>,
}

impl PreparedCommit {
    pub(super) fn new(
        actions: Vec<TransactWriteItem>,
        described: Vec<String>,
        first_message: usize,
        aggregates: Vec<String>,
        committed: Committed,
        uploads: Vec<Upload>,
    ) -> Self {
        let token = client_request_token(&committed.message_ids);
        PreparedCommit {
            actions,
            described,
            first_message,
            aggregates,
            committed,
            token,
            uploads,
        }
    }

    /// Where the payloads of the messages that go through S3 (the large-payload offload) are
    /// written before the transaction, in message order.
    pub fn offloaded(&self) -> Vec<&PayloadPointer> {
        self.uploads.iter().map(|u| &u.pointer).collect()
    }

    /// The message ids and sort keys this transaction writes.
    pub fn committed(&self) -> &Committed {
        &self.committed
    }

    /// The actions, the application's first, then one `Put` per message.
    pub fn actions(&self) -> &[TransactWriteItem] {
        &self.actions
    }

    /// The `ClientRequestToken` every attempt sends.
    pub fn client_request_token(&self) -> &str {
        &self.token
    }
}

/// The token of a transaction writing `message_ids`: a UUID v5 of them (36
/// characters, DynamoDB's limit), the same on every attempt, different for any other
/// transaction.
fn client_request_token(message_ids: &[String]) -> String {
    uuid::Uuid::new_v5(&TOKEN_NAMESPACE, message_ids.join("\n").as_bytes()).to_string()
}

impl OutboxWriter {
    /// Sends a prepared transaction. Safe to call again with the same `prepared`
    /// after any error — a timeout whose request may have committed, a throttle —
    /// within DynamoDB's 10-minute idempotency window and after it: the outbox holds
    /// its messages once, under the prepared ids, and a repeat of a transaction that
    /// committed returns `Ok`.
    pub async fn commit_prepared(
        &self,
        prepared: &PreparedCommit,
    ) -> Result<Committed, ProducerError> {
        // The objects first: an item never points to one that is not there. Written
        // again on a repeat (the same bytes, under the same key).
        if let Some(offloader) = &self.large {
            offloader.upload(&prepared.uploads).await?;
        } else if !prepared.uploads.is_empty() {
            return Err(ProducerError::PayloadNotStored {
                pointer: prepared.uploads[0].pointer.to_string(),
                message: "this writer has no S3 client: prepare and commit with the same writer"
                    .to_owned(),
                kind: dynamodb_outbox_core::FailureKind::Permanent,
            });
        }
        // Boxed: see "Future depth" in the crate docs.
        let request = self
            .client
            .transact_write_items()
            .set_transact_items(Some(prepared.actions.clone()))
            .client_request_token(&prepared.token)
            .send();
        let err = match Box::pin(request).await {
            Ok(_) => return Ok(prepared.committed.clone()),
            Err(e) => error::cancellation(e, &prepared.described),
        };
        let ProducerError::Cancelled { failures } = &err else {
            return Err(err);
        };
        let a_message_exists = failures
            .iter()
            .any(|f| f.index >= prepared.first_message && f.code == "ConditionalCheckFailed");
        if a_message_exists && self.already_committed(prepared).await? {
            tracing::info!(token = %prepared.token, "the transaction had already committed");
            return Ok(prepared.committed.clone());
        }
        Err(err)
    }

    /// Whether every outbox item of `prepared` is in the table with its `MessageId`:
    /// they are written only by this transaction, so then it committed.
    async fn already_committed(&self, prepared: &PreparedCommit) -> Result<bool, ProducerError> {
        let keys = prepared
            .aggregates
            .iter()
            .zip(&prepared.committed.sort_keys);
        for ((pk, sk), id) in keys.zip(&prepared.committed.message_ids) {
            let read = self
                .client
                .get_item()
                .table_name(&self.table)
                .key(&self.keys.partition_key, AttributeValue::S(pk.clone()))
                .key(&self.keys.sort_key, AttributeValue::S(sk.clone()))
                .consistent_read(true)
                .projection_expression("#id")
                .expression_attribute_names("#id", MESSAGE_ID)
                .send();
            let out = Box::pin(read).await.map_err(|e| {
                crate::sdk_error::report_denial(&e);
                ProducerError::Unverified {
                    message: crate::sdk_error::describe(&e),
                }
            })?;
            let ours = matches!(
                out.item().and_then(|i| i.get(MESSAGE_ID)),
                Some(AttributeValue::S(stored)) if stored == id
            );
            if !ours {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_fixed_by_the_message_ids_and_fits_dynamodbs_limit() {
        let ids = vec!["0190-a".to_owned(), "0190-b".to_owned()];
        let token = client_request_token(&ids);
        assert_eq!(token.len(), 36);
        assert_eq!(token, client_request_token(&ids));
        assert_ne!(token, client_request_token(&ids[..1]));
    }
}
