//! The producer's large-payload offload: a payload an outbox item cannot hold (DynamoDB's
//! 400 KB), or one above the configured threshold, is written to S3 before the
//! transaction, and the item carries the pointer ([`dynamodb_outbox_core::large_payload`]). The key is
//! the message's (`outbox/<MessageId>`), known before the commit; an object whose
//! transaction then fails is never referenced by a message and is left to the
//! bucket's lifecycle rule.

use super::ProducerError;
use super::check::item_size;
use aws_sdk_dynamodb::types::TransactWriteItem;
use dynamodb_outbox_core::large_payload::{self, Offload, PayloadPointer, Placement};
use dynamodb_outbox_core::producer::MAX_ITEM_BYTES;
use std::fmt;

/// Where an [`OutboxWriter`](super::OutboxWriter) puts payloads too large for an item.
#[derive(Debug, Clone)]
pub(super) struct Offloader {
    pub(super) client: aws_sdk_s3::Client,
    pub(super) bucket: String,
    pub(super) threshold: Option<usize>,
}

/// A payload to write before the transaction.
#[derive(Clone)]
pub(super) struct Upload {
    pub(super) pointer: PayloadPointer,
    pub(super) payload: String,
}

impl fmt::Debug for Upload {
    /// The pointer and the size: payloads carry personal data and are never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload")
            .field("pointer", &self.pointer.to_string())
            .field("bytes", &self.payload.len())
            .finish()
    }
}

impl Offloader {
    /// Where message `message_id`'s payload goes when `put` (its outbox item's `Put`)
    /// is as built: `Some` when it must go to S3 first.
    pub(super) fn decide(
        &self,
        put: &TransactWriteItem,
        payload: &str,
        message_id: &str,
    ) -> Option<PayloadPointer> {
        let size = put.put.as_ref().map_or(0, |p| item_size(p.item()));
        let check = Offload {
            bucket: Some(&self.bucket),
            threshold: self.threshold,
        };
        let is_pointer = PayloadPointer::decode(payload).is_some();
        match large_payload::place(
            payload.len(),
            size,
            MAX_ITEM_BYTES,
            is_pointer,
            check,
            message_id,
        ) {
            Placement::Offload(pointer) => Some(pointer),
            Placement::Inline | Placement::TooLarge => None,
        }
    }

    /// Writes every upload, concurrently; the first failure is the commit's error
    /// (the transaction is then not sent: no item points to a missing object).
    pub(super) async fn upload(&self, uploads: &[Upload]) -> Result<(), ProducerError> {
        let puts = uploads.iter().map(|u| async move {
            crate::s3::put_payload(&self.client, &u.pointer, &u.payload)
                .await
                .map_err(|failure| ProducerError::PayloadNotStored {
                    pointer: u.pointer.to_string(),
                    message: failure.reason,
                    kind: failure.kind,
                })
        });
        futures::future::join_all(puts)
            .await
            .into_iter()
            .collect::<Result<Vec<()>, _>>()
            .map(|_| ())
    }
}
