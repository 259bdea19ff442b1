//! large-payload offload pointers resolved before the handler sees a message.
//!
//! A payload too large for its destination (or for an outbox item) travels in S3,
//! and the message carries the AWS extended clients' pointer instead
//! (`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":…,"s3Key":…}]`,
//! see `dynamodb_outbox_core::large_payload`) — as the body of an SQS message or an SNS notification,
//! or as an EventBridge event's `detail.payload`. The [`BatchProcessor`] reads the
//! object and hands the handler the payload itself, so a handler never knows.
//!
//! A pointer whose object cannot be read (deleted, expired, not yet readable, no
//! permission) fails that message only, with [`IdempotencyError::PayloadUnavailable`]:
//! retryable, so SQS redelivers it and, after `maxReceiveCount`, moves it to the
//! queue's dead-letter queue — the pointer with it.
//!
//! [`BatchProcessor`]: crate::BatchProcessor

use crate::IdempotencyError;
use crate::delivery::Delivery;
use dynamodb_outbox_core::large_payload::PayloadPointer;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// What reading one payload returns.
pub type Fetched<'a> = Pin<Box<dyn Future<Output = Result<String, IdempotencyError>> + Send + 'a>>;

/// Where offloaded payloads are read from: S3 ([`S3Payloads`]), or memory in tests
/// ([`MemoryPayloads`]).
///
/// The [`BatchProcessor`](crate::BatchProcessor) calls it for each message whose payload is a pointer; a test
/// of a handler gives the processor a [`MemoryPayloads`] holding the objects:
///
/// ```
/// use dynamodb_outbox_idempotency::{BatchProcessor, MemoryPayloads, PayloadPointer, SqsEvent, SqsMessage};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let pointer = PayloadPointer::for_message("large-payloads", "m-1");
/// let payloads = MemoryPayloads::default();
/// payloads.put(&pointer, r#"{"lines": 5000}"#);
/// let mut message = SqsMessage::default();
/// message.message_id = Some("sqs-1".into());
/// message.body = Some(pointer.encode());
/// let mut event = SqsEvent::default();
/// event.records = vec![message];
///
/// let report = BatchProcessor::new()
///     .large_payloads(payloads)
///     .run(&event, |msg| async move {
///         Ok::<_, &str>(msg.body().unwrap_or_default().to_owned())
///     })
///     .await;
/// assert_eq!(report.outcomes[0].result.as_deref().ok(), Some(r#"{"lines": 5000}"#));
/// # }
/// ```
pub trait PayloadSource: Send + Sync + fmt::Debug {
    /// The payload `pointer` points to, as text.
    fn fetch<'a>(&'a self, pointer: &'a PayloadPointer) -> Fetched<'a>;
}

/// Payloads read from S3 (`s3:GetObject` on the bucket's `outbox/*`).
#[derive(Debug, Clone)]
pub struct S3Payloads {
    client: aws_sdk_s3::Client,
}

impl S3Payloads {
    /// Through a client built elsewhere (path-style addressing for a local AWS).
    pub fn new(client: aws_sdk_s3::Client) -> Self {
        S3Payloads { client }
    }

    /// A client from `config`, addressing buckets by path when the endpoint is
    /// overridden (a local AWS on loopback has no DNS for `<bucket>.127.0.0.1`).
    pub fn from_conf(config: &aws_types::SdkConfig) -> Self {
        let conf = aws_sdk_s3::config::Builder::from(config)
            .force_path_style(config.endpoint_url().is_some())
            .build();
        S3Payloads::new(aws_sdk_s3::Client::from_conf(conf))
    }

    async fn get(&self, pointer: &PayloadPointer) -> Result<String, IdempotencyError> {
        let unavailable = |reason: String| IdempotencyError::PayloadUnavailable {
            pointer: pointer.to_string(),
            reason,
        };
        let request = self
            .client
            .get_object()
            .bucket(&pointer.bucket)
            .key(&pointer.key)
            .send();
        let out = Box::pin(request).await.map_err(|e| {
            let missing = e.as_service_error().is_some_and(|e| e.is_no_such_key());
            unavailable(if missing {
                "the object does not exist (deleted, expired by the bucket's lifecycle rule, or never written)".to_owned()
            } else {
                aws_smithy_types::error::display::DisplayErrorContext(&e).to_string()
            })
        })?;
        let bytes = Box::pin(out.body.collect())
            .await
            .map_err(|e| unavailable(format!("reading the object failed: {e}")))?;
        String::from_utf8(bytes.into_bytes().to_vec())
            .map_err(|_| unavailable("the object is not UTF-8 text".to_owned()))
    }
}

impl PayloadSource for S3Payloads {
    fn fetch<'a>(&'a self, pointer: &'a PayloadPointer) -> Fetched<'a> {
        Box::pin(self.get(pointer))
    }
}

/// Payloads kept in memory, for tests of handlers and of the batch processor.
#[derive(Debug, Clone, Default)]
pub struct MemoryPayloads {
    objects: Arc<Mutex<HashMap<PayloadPointer, String>>>,
}

impl MemoryPayloads {
    /// Stores `payload` where `pointer` points.
    pub fn put(&self, pointer: &PayloadPointer, payload: impl Into<String>) {
        self.objects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pointer.clone(), payload.into());
    }
}

impl PayloadSource for MemoryPayloads {
    fn fetch<'a>(&'a self, pointer: &'a PayloadPointer) -> Fetched<'a> {
        let found = self
            .objects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(pointer)
            .cloned();
        Box::pin(std::future::ready(found.ok_or_else(|| {
            IdempotencyError::PayloadUnavailable {
                pointer: pointer.to_string(),
                reason: "the object does not exist".to_owned(),
            }
        })))
    }
}

/// `delivery` with its payload read from where its pointer says, when it carries
/// one; as it is otherwise. Without a `source`, a pointer is an error rather than a
/// payload the handler would misread.
pub(crate) async fn resolve<'a>(
    source: Option<&dyn PayloadSource>,
    delivery: Delivery<'a>,
) -> Result<Delivery<'a>, IdempotencyError> {
    let Some(pointer) = delivery.payload_pointer() else {
        return Ok(delivery);
    };
    let Some(source) = source else {
        return Err(IdempotencyError::PayloadUnavailable {
            pointer: pointer.to_string(),
            reason: "this BatchProcessor reads no offloaded payloads: configure it with BatchProcessor::large_payloads(S3Payloads::from_conf(&aws_config))".to_owned(),
        });
    };
    let payload = source.fetch(&pointer).await?;
    Ok(delivery.with_payload(payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};

    fn msg(body: &str) -> SqsMessage {
        let mut m = SqsMessage::default();
        m.message_id = Some("sqs-1".to_owned());
        m.body = Some(body.to_owned());
        m
    }

    #[tokio::test]
    async fn a_pointer_is_replaced_by_its_payload_and_anything_else_is_left_alone() {
        let pointer = PayloadPointer::for_message("large", "m-1");
        let payloads = MemoryPayloads::default();
        payloads.put(&pointer, r#"{"big":true}"#);
        let m = msg(&pointer.encode());
        let d = resolve(Some(&payloads), Delivery::open(&m))
            .await
            .expect("resolved");
        assert_eq!(d.body(), Some(r#"{"big":true}"#));
        let m = msg(r#"{"small":true}"#);
        let d = resolve(None, Delivery::open(&m)).await.expect("as it is");
        assert_eq!(d.body(), Some(r#"{"small":true}"#));
    }

    #[tokio::test]
    async fn a_missing_object_or_no_source_is_a_retryable_error_naming_the_pointer() {
        let pointer = PayloadPointer::for_message("large", "m-1");
        let m = msg(&pointer.encode());
        for source in [Some(&MemoryPayloads::default() as &dyn PayloadSource), None] {
            let err = resolve(source, Delivery::open(&m))
                .await
                .expect_err("unavailable");
            assert!(err.is_retryable(), "{err}");
            assert!(err.to_string().contains("s3://large/outbox/m-1"), "{err}");
        }
    }

    fn with_id(id: &str, body: &str) -> SqsMessage {
        let mut m = msg(body);
        m.message_id = Some(id.to_owned());
        m
    }

    #[tokio::test]
    async fn an_offloaded_payload_is_read_first_and_an_unreadable_one_fails_its_message_only() {
        let stored = PayloadPointer::for_message("large", "m-1");
        let deleted = PayloadPointer::for_message("large", "m-2");
        let payloads = MemoryPayloads::default();
        payloads.put(&stored, "big");
        let mut ev = SqsEvent::default();
        ev.records = vec![
            with_id("a", &stored.encode()),
            with_id("b", &deleted.encode()),
            with_id("c", "small"),
        ];
        let report = crate::BatchProcessor::new()
            .large_payloads(payloads)
            .run(&ev, |m| async move {
                Ok::<_, &str>(m.body().unwrap_or_default().to_owned())
            })
            .await;
        assert_eq!(report.failed_ids(), ["b"]);
        assert_eq!(
            report.outcomes[0].result.as_ref().ok().map(String::as_str),
            Some("big")
        );
        assert_eq!(
            report.outcomes[2].result.as_ref().ok().map(String::as_str),
            Some("small")
        );
        match &report.outcomes[1].result {
            Err(crate::MessageFailure::PayloadUnavailable(e)) => {
                assert!(e.is_retryable());
                assert!(e.to_string().contains("s3://large/outbox/m-2"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
