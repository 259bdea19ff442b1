//! S3 adapter for the large-payload offload ([`dynamodb_outbox_core::large_payload`]): the payload too large
//! for its destination (or for an outbox item) written where its pointer says,
//! before the pointer is sent or committed.

use crate::sdk_error::{AwsError, describe, is_retryable};
use aws_sdk_s3::primitives::ByteStream;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use aws_types::SdkConfig;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::large_payload::PayloadPointer;

/// Codes with which S3 refuses a write for what it is (the key, the body): the same
/// write never succeeds.
const REFUSED_FOR_GOOD: &[&str] = &["KeyTooLongError", "InvalidArgument", "EntityTooLarge"];

/// An S3 client from `config`, with path-style addressing whenever the endpoint is
/// overridden: the local AWS listens on loopback, where no DNS answers for
/// `<bucket>.127.0.0.1`, and real S3 behind an override (a VPC endpoint, a proxy)
/// accepts path style too. The client [`OutboxWriter::large_payloads`](crate::OutboxWriter::large_payloads) wants.
///
/// ```no_run
/// # async fn build() -> dynamodb_outbox::aws_sdk_s3::Client {
/// let aws = aws_config::load_from_env().await;
/// dynamodb_outbox::s3_client(&aws)
/// # }
/// ```
pub fn client(config: &SdkConfig) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::from(config)
        .force_path_style(path_style(config))
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// Whether [`client`] addresses buckets by path: when the endpoint is overridden.
pub fn path_style(config: &SdkConfig) -> bool {
    config.endpoint_url().is_some()
}

/// Writes `payload` as the object `pointer` names, overwriting what an earlier
/// attempt wrote (the same message: the same bytes). A failure is transient — a
/// missing bucket or permission is the operator's to fix, and the message waits
/// (the sweeper's attempt limit ends it) — unless S3 refuses the write itself.
pub async fn put_payload(
    client: &aws_sdk_s3::Client,
    pointer: &PayloadPointer,
    payload: &str,
) -> Result<(), Failure> {
    let request = client
        .put_object()
        .bucket(&pointer.bucket)
        .key(&pointer.key)
        .content_type("application/json")
        .body(ByteStream::from(payload.as_bytes().to_vec()))
        .send();
    // Boxed: see "Future depth" in the crate docs.
    match Box::pin(request).await {
        Ok(_) => Ok(()),
        Err(e) => Err(put_failure(&e, pointer)),
    }
}

/// Copies the object `from` names to `to` (`CopyObject`: `s3:GetObject` on `from`,
/// `s3:PutObject` on `to`), overwriting what an earlier attempt wrote: a `FAILED`
/// message's payload kept where no lifecycle rule expires it. Transient only when
/// retrying may succeed (throttling, 5xx, no answer); anything else — the object
/// already expired (`NoSuchKey`), a bucket the function may not read (a producer's
/// own) — is for good, and the message keeps its pointer, as before this copy.
pub async fn copy_payload(
    client: &aws_sdk_s3::Client,
    from: &PayloadPointer,
    to: &PayloadPointer,
) -> Result<(), Failure> {
    let request = client
        .copy_object()
        .copy_source(copy_source(from))
        .bucket(&to.bucket)
        .key(&to.key)
        .send();
    // Boxed: see "Future depth" in the crate docs.
    match Box::pin(request).await {
        Ok(_) => Ok(()),
        Err(e) => {
            crate::sdk_error::report_denial(&e);
            let reason = format!("CopyObject {from} to {to}: {}", describe(&e));
            Err(if is_retryable(&e) {
                Failure::transient(reason)
            } else {
                Failure::permanent(reason)
            })
        }
    }
}

/// `CopySource` for `pointer`: `<bucket>/<key>`, the key URL-encoded as S3 asks
/// (a message id may hold any character a sort key does).
fn copy_source(pointer: &PayloadPointer) -> String {
    let mut encoded = String::with_capacity(pointer.key.len());
    for byte in pointer.key.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                encoded.push(char::from(byte))
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    format!("{}/{encoded}", pointer.bucket)
}

fn put_failure<E>(err: &AwsError<E>, pointer: &PayloadPointer) -> Failure
where
    E: ProvideErrorMetadata + aws_smithy_types::retry::ProvideErrorKind,
    E: std::error::Error + 'static,
{
    crate::sdk_error::report_denial(err);
    let reason = format!("PutObject {pointer}: {}", describe(err));
    let refused = err
        .as_service_error()
        .and_then(|e| ProvideErrorMetadata::code(e))
        .is_some_and(|code| REFUSED_FOR_GOOD.contains(&code));
    if refused && !is_retryable(err) {
        Failure::permanent(reason)
    } else {
        Failure::transient(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};

    #[test]
    fn the_copy_source_is_the_bucket_and_the_url_encoded_key() {
        let pointer = PayloadPointer {
            bucket: "large".into(),
            key: "outbox/a b+c#é".into(),
        };
        assert_eq!(copy_source(&pointer), "large/outbox/a%20b%2Bc%23%C3%A9");
    }

    #[test]
    fn an_overridden_endpoint_gets_path_style_addressing() {
        let local = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:4566")
            .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
                Credentials::new("a", "b", None, None, "test"),
            ))
            .build();
        assert!(path_style(&local));
        let _ = client(&local);
        let aws = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .build();
        assert!(!path_style(&aws));
    }
}
