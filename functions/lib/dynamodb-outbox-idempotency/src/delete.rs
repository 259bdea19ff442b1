//! Deleting a finished message from its queue at once, ahead of Lambda.
//!
//! Lambda deletes a batch's successful messages only when the invocation answers.
//! If the process dies first (an abort, an out-of-memory kill, a timeout), every
//! message of the batch is received again and charged a receive, the finished ones
//! too. The [`BatchProcessor`](crate::BatchProcessor) given a [`MessageDeleter`]
//! deletes each message as soon as its function succeeded, so a later crash in the
//! same batch cannot charge it. Lambda's own delete of it afterwards is harmless.

use crate::IdempotencyError;
use aws_lambda_events::event::sqs::SqsMessage;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// What deleting one message returns.
pub type Deleted<'a> = Pin<Box<dyn Future<Output = Result<(), IdempotencyError>> + Send + 'a>>;

/// Where finished messages are deleted: SQS ([`SqsDeleter`]), or memory in tests
/// ([`MemoryDeleter`]).
pub trait MessageDeleter: Send + Sync + fmt::Debug {
    /// Deletes `message` (by its receipt handle) from the queue it came from (its
    /// `eventSourceARN`).
    fn delete<'a>(&'a self, message: &'a SqsMessage) -> Deleted<'a>;
}

/// Deletes messages with SQS `DeleteMessage`: the consumer's role needs
/// `sqs:DeleteMessage` on its queue (Lambda's event source mapping needs it too, so
/// the role has it already). The queue URL is derived from the record's
/// `eventSourceARN`: no `GetQueueUrl` call, no configuration.
#[derive(Debug, Clone)]
pub struct SqsDeleter {
    client: aws_sdk_sqs::Client,
}

impl SqsDeleter {
    /// Through a client built elsewhere.
    pub fn new(client: aws_sdk_sqs::Client) -> Self {
        SqsDeleter { client }
    }

    /// A client from `config`.
    pub fn from_conf(config: &aws_types::SdkConfig) -> Self {
        SqsDeleter::new(aws_sdk_sqs::Client::new(config))
    }

    async fn delete_message(&self, message: &SqsMessage) -> Result<(), IdempotencyError> {
        let (queue_url, receipt_handle) = delete_target(message)?;
        let request = self
            .client
            .delete_message()
            .queue_url(queue_url)
            .receipt_handle(receipt_handle)
            .send();
        Box::pin(request)
            .await
            .map(|_| ())
            .map_err(|e| IdempotencyError::aws("DeleteMessage", e))
    }
}

impl MessageDeleter for SqsDeleter {
    fn delete<'a>(&'a self, message: &'a SqsMessage) -> Deleted<'a> {
        Box::pin(self.delete_message(message))
    }
}

/// Records the SQS ids of the messages it was asked to delete: for tests of a
/// handler and of the batch processor.
#[derive(Debug, Clone, Default)]
pub struct MemoryDeleter {
    deleted: Arc<Mutex<Vec<String>>>,
}

impl MemoryDeleter {
    /// The SQS `MessageId`s deleted so far, in the order they were deleted.
    pub fn deleted(&self) -> Vec<String> {
        self.deleted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl MessageDeleter for MemoryDeleter {
    fn delete<'a>(&'a self, message: &'a SqsMessage) -> Deleted<'a> {
        let id = message.message_id.clone().unwrap_or_default();
        self.deleted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The queue URL and receipt handle that delete `message`.
fn delete_target(message: &SqsMessage) -> Result<(String, &str), IdempotencyError> {
    let arn = message.event_source_arn.as_deref().ok_or_else(|| {
        IdempotencyError::Invalid(
            "the SQS record has no eventSourceARN, so its queue is unknown and it cannot be deleted early (Lambda still deletes it when the invocation answers); hand the processor the records of Lambda's SQS event".to_owned(),
        )
    })?;
    let receipt_handle = message.receipt_handle.as_deref().ok_or_else(|| {
        IdempotencyError::Invalid(
            "the SQS record has no receiptHandle, so it cannot be deleted early (Lambda still deletes it when the invocation answers)".to_owned(),
        )
    })?;
    Ok((queue_url(arn)?, receipt_handle))
}

/// The URL of the queue `arn` names (`arn:<partition>:sqs:<region>:<account>:<name>`).
pub(crate) fn queue_url(arn: &str) -> Result<String, IdempotencyError> {
    let refused = |why: &str| {
        IdempotencyError::Invalid(format!(
            "eventSourceARN {arn:?} {why}, so the message cannot be deleted early (Lambda still deletes it when the invocation answers)"
        ))
    };
    let parts: Vec<&str> = arn.split(':').collect();
    let [_, partition, service, region, account, name] = parts.as_slice() else {
        return Err(refused("is not a queue ARN"));
    };
    if *service != "sqs" || region.is_empty() || account.is_empty() || name.is_empty() {
        return Err(refused("is not a queue ARN"));
    }
    let domain = match *partition {
        "aws" | "aws-us-gov" => "amazonaws.com",
        "aws-cn" => "amazonaws.com.cn",
        _ => {
            return Err(refused(
                "is in a partition whose SQS domain this crate does not know",
            ));
        }
    };
    Ok(format!("https://sqs.{region}.{domain}/{account}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_url_is_derived_from_the_queue_arn() {
        assert_eq!(
            queue_url("arn:aws:sqs:eu-west-1:123456789012:orders").ok(),
            Some("https://sqs.eu-west-1.amazonaws.com/123456789012/orders".to_owned())
        );
        assert_eq!(
            queue_url("arn:aws-cn:sqs:cn-north-1:123456789012:jobs.fifo").ok(),
            Some("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/jobs.fifo".to_owned())
        );
    }

    #[test]
    fn an_arn_that_names_no_queue_is_refused_saying_lambda_still_deletes_the_message() {
        for bad in [
            "",
            "orders",
            "arn:aws:sns:eu-west-1:123456789012:orders",
            "arn:aws:sqs:eu-west-1::orders",
            "arn:aws:sqs:eu-west-1:123456789012:",
            "arn:aws:sqs:eu-west-1:123456789012:orders:extra",
            "arn:aws-iso:sqs:us-iso-east-1:123456789012:orders",
        ] {
            let e = queue_url(bad).expect_err(bad);
            assert!(
                e.to_string().contains("Lambda still deletes it") && !e.is_retryable(),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_record_without_its_queue_or_receipt_handle_cannot_be_deleted() {
        let mut m = SqsMessage::default();
        m.receipt_handle = Some("rh".into());
        let e = delete_target(&m).expect_err("no arn");
        assert!(e.to_string().contains("eventSourceARN"), "{e}");
        m.event_source_arn = Some("arn:aws:sqs:us-east-1:123456789012:q".into());
        m.receipt_handle = None;
        let e = delete_target(&m).expect_err("no receipt handle");
        assert!(e.to_string().contains("receiptHandle"), "{e}");
        m.receipt_handle = Some("rh".into());
        let (url, rh) = delete_target(&m).expect("a target");
        assert_eq!(
            (url.as_str(), rh),
            ("https://sqs.us-east-1.amazonaws.com/123456789012/q", "rh")
        );
    }
}
