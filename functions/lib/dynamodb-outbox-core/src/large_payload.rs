//! The large-payload offload: a payload too large for its destination (or for an outbox item)
//! is written to S3, and the message carries a pointer to it instead.
//!
//! The pointer is the one the AWS extended clients (the SQS and SNS extended client
//! libraries, Java and Python) write and read, so their consumers can resolve our
//! messages and ours theirs:
//!
//! ```text
//! ["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"<bucket>","s3Key":"outbox/<MessageId>"}]
//! ```
//!
//! as the body, with the number attribute `ExtendedPayloadSize` (the payload's size
//! in bytes) where the destination has attributes. The object's key is derived from
//! the `MessageId`, so a republish (the sweeper's, a retried stream batch's)
//! overwrites the same object instead of leaving a second one, and the producer can
//! write it before its transaction commits.
//!
//! A `FAILED` message's payload whose only copy is in the bucket is kept under
//! `failed/<MessageId>` instead ([`retained`]): the lifecycle rule expires `outbox/`
//! only, and a `FAILED` item has no TTL, so its payload lasts as long as it does.
//!
//! Plain data and decisions only; the S3 calls are the adapters'.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// The class name the extended clients put first in a pointer.
pub const POINTER_CLASS: &str = "software.amazon.payloadoffloading.PayloadS3Pointer";

/// The message attribute giving an offloaded payload's size in bytes, as the
/// extended clients name it (they resolve a body only when it is there).
pub const ATTR_EXTENDED_PAYLOAD_SIZE: &str = "ExtendedPayloadSize";

/// Every payload the outbox writes on its way to a destination is under this prefix
/// (the grants and the lifecycle rule name it).
pub const KEY_PREFIX: &str = "outbox/";

/// The payloads of `FAILED` messages are kept under this prefix, which no lifecycle
/// rule expires: a `FAILED` item has no TTL, and its payload must outlive the
/// `outbox/` rule's days. Same length as [`KEY_PREFIX`], so that a pointer moved here
/// is as long as before and never makes its item larger.
pub const FAILED_KEY_PREFIX: &str = "failed/";

/// Where an offloaded payload is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PayloadPointer {
    /// The bucket.
    pub bucket: String,
    /// The object's key.
    pub key: String,
}

/// The pointer's second element, as the extended clients spell it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct S3Location {
    #[serde(rename = "s3BucketName")]
    bucket: String,
    #[serde(rename = "s3Key")]
    key: String,
}

/// The object key of a message's payload: `outbox/<MessageId>`.
pub fn object_key(message_id: &str) -> String {
    format!("{KEY_PREFIX}{message_id}")
}

/// The object key of a `FAILED` message's payload: `failed/<MessageId>`.
pub fn failed_key(message_id: &str) -> String {
    format!("{FAILED_KEY_PREFIX}{message_id}")
}

/// Where a `FAILED` message's payload whose only copy is an expiring object goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// The object the message points to now, under [`KEY_PREFIX`].
    pub from: PayloadPointer,
    /// Its copy under [`FAILED_KEY_PREFIX`] in the same bucket, which the dead-letter
    /// copy and the `FAILED` item point to instead.
    pub to: PayloadPointer,
}

/// The copy to make before message `message_id` (when known) with `body` is
/// dead-lettered and marked `FAILED`, or `None`: only when the body is a pointer to an
/// object the lifecycle rule expires (under [`KEY_PREFIX`]: a producer offloaded the
/// payload, so the item holds only the pointer). A pointer elsewhere (a foreign
/// client's key, or one already under [`FAILED_KEY_PREFIX`]) is not expired by the
/// outbox's rule and stays as it is; so does an inline payload, which the item holds.
pub fn retained(body: &str, message_id: Option<&str>) -> Option<Retention> {
    let from = PayloadPointer::decode(body)?;
    let id = message_id.filter(|id| !id.is_empty())?;
    from.key.starts_with(KEY_PREFIX).then(|| Retention {
        to: PayloadPointer {
            bucket: from.bucket.clone(),
            key: failed_key(id),
        },
        from,
    })
}

impl PayloadPointer {
    /// The pointer to message `message_id`'s payload in `bucket`.
    pub fn for_message(bucket: &str, message_id: &str) -> Self {
        PayloadPointer {
            bucket: bucket.to_owned(),
            key: object_key(message_id),
        }
    }

    /// The pointer to `FAILED` message `message_id`'s payload in `bucket`, under
    /// [`FAILED_KEY_PREFIX`].
    pub fn for_failed(bucket: &str, message_id: &str) -> Self {
        PayloadPointer {
            bucket: bucket.to_owned(),
            key: failed_key(message_id),
        }
    }

    /// The message body that carries this pointer.
    pub fn encode(&self) -> String {
        let location = S3Location {
            bucket: self.bucket.clone(),
            key: self.key.clone(),
        };
        serde_json::json!([POINTER_CLASS, location]).to_string()
    }

    /// The pointer a body carries, when it is exactly one (a two-element array, the
    /// class name first, then the bucket and the key, both non-empty). Anything else is
    /// a payload: a producer's JSON array is never mistaken for a pointer.
    pub fn decode(body: &str) -> Option<Self> {
        let body = body.trim();
        if !body.starts_with('[') || !body.contains(POINTER_CLASS) {
            return None;
        }
        let (class, location): (String, S3Location) = serde_json::from_str(body).ok()?;
        let usable = class == POINTER_CLASS && !location.bucket.is_empty();
        (usable && !location.key.is_empty()).then_some(PayloadPointer {
            bucket: location.bucket,
            key: location.key,
        })
    }
}

impl fmt::Display for PayloadPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// Where a route's large payloads may go: its bucket (its own, or the default) and
/// the size above which a payload goes there even when it fits the destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offload<'a> {
    /// The bucket, when the large-payload offload is enabled for the route.
    pub bucket: Option<&'a str>,
    /// Payloads larger than this (bytes) are offloaded even when they fit.
    pub threshold: Option<usize>,
}

/// The large-payload offload's configuration: each route's bucket (its own
/// `large_payload_bucket`, else `OUTBOX_LARGE_PAYLOAD_BUCKET`) and the threshold
/// (`OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LargePayloads {
    /// Buckets routes name for themselves, by topic.
    pub by_topic: HashMap<String, String>,
    /// The bucket of every other route.
    pub default_bucket: Option<String>,
    /// Payloads larger than this (bytes) are offloaded even when they fit.
    pub threshold: Option<usize>,
}

impl LargePayloads {
    /// The large-payload offload of `topic`'s route.
    pub fn check(&self, topic: &str) -> Offload<'_> {
        Offload {
            bucket: self
                .by_topic
                .get(topic)
                .or(self.default_bucket.as_ref())
                .map(String::as_str),
            threshold: self.threshold,
        }
    }

    /// Whether any route may offload.
    pub fn enabled(&self) -> bool {
        self.default_bucket.is_some() || !self.by_topic.is_empty()
    }
}

/// What becomes of a payload on its way to a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Sent in the message as it is (it fits, or it is a pointer already: a producer
    /// offloaded it, and it is forwarded without a second upload).
    Inline,
    /// Written to S3 first; the message carries this pointer.
    Offload(PayloadPointer),
    /// Too large, and no bucket to put it in: poison.
    TooLarge,
}

/// Decides where a payload of `payload_bytes` goes when its message is
/// `message_bytes` as the destination counts it, and the destination takes at most
/// `max_bytes`. A pointer (`is_pointer`) is never offloaded again.
pub fn place(
    payload_bytes: usize,
    message_bytes: usize,
    max_bytes: usize,
    is_pointer: bool,
    check: Offload<'_>,
    message_id: &str,
) -> Placement {
    let over = message_bytes > max_bytes;
    if is_pointer {
        return if over {
            Placement::TooLarge
        } else {
            Placement::Inline
        };
    }
    let above_threshold = check.threshold.is_some_and(|t| payload_bytes > t);
    match check.bucket {
        Some(bucket) if over || above_threshold => {
            Placement::Offload(PayloadPointer::for_message(bucket, message_id))
        }
        _ if over => Placement::TooLarge,
        _ => Placement::Inline,
    }
}

/// Why a bucket name cannot be one, or `None`. Lenient on purpose: S3's rules for
/// new buckets (3–63 lowercase letters, digits, dots, hyphens) did not always hold,
/// and an old bucket must stay usable; what is refused is what no bucket name has.
pub fn bucket_name_problem(name: &str) -> Option<String> {
    let ok = (3..=255).contains(&name.len())
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '/' || c == ':');
    (!ok).then(|| {
        format!(
            "`{name}` is not an S3 bucket name: give the bare name (3-63 characters, no `s3://`, no slash, no spaces)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    fn check(bucket: Option<&str>, threshold: Option<usize>) -> Offload<'_> {
        Offload { bucket, threshold }
    }

    #[test]
    fn the_key_is_derived_from_the_message_id_so_a_republish_overwrites_it() {
        assert_eq!(object_key(ID), format!("outbox/{ID}"));
        let first = PayloadPointer::for_message("large", ID);
        assert_eq!(first, PayloadPointer::for_message("large", ID));
        assert_eq!(first.to_string(), format!("s3://large/outbox/{ID}"));
    }

    #[test]
    fn a_failed_messages_pointer_to_an_expiring_object_is_retained_under_failed() {
        let ours = PayloadPointer::for_message("large", ID);
        let retention = retained(&ours.encode(), Some(ID)).expect("retained");
        assert_eq!(retention.from, ours);
        assert_eq!(retention.to, PayloadPointer::for_failed("large", ID));
        assert_eq!(retention.to.key, format!("failed/{ID}"));
        // The moved pointer is as long as the one it replaces: the item never grows.
        assert_eq!(retention.to.encode().len(), ours.encode().len());
        // An inline payload is on the item; a foreign key and a retained one do not
        // expire by the outbox's rule; without an id there is nothing to name the copy.
        for body in ["{\"big\":1}".to_owned(), retention.to.encode()] {
            assert_eq!(retained(&body, Some(ID)), None, "{body}");
        }
        let foreign = PayloadPointer {
            bucket: "large".into(),
            key: "7b0e-uuid".into(),
        };
        assert_eq!(retained(&foreign.encode(), Some(ID)), None);
        assert_eq!(retained(&ours.encode(), None), None);
        assert_eq!(retained(&ours.encode(), Some("")), None);
    }

    #[test]
    fn the_pointer_is_the_extended_clients_and_decodes_back() {
        let pointer = PayloadPointer::for_message("large", ID);
        assert_eq!(
            pointer.encode(),
            format!(
                r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{{"s3BucketName":"large","s3Key":"outbox/{ID}"}}]"#
            )
        );
        assert_eq!(PayloadPointer::decode(&pointer.encode()), Some(pointer));
        // As the Java client writes it, with spaces.
        let java = r#" [ "software.amazon.payloadoffloading.PayloadS3Pointer", { "s3Key": "k", "s3BucketName": "b" } ] "#;
        assert_eq!(
            PayloadPointer::decode(java),
            Some(PayloadPointer {
                bucket: "b".into(),
                key: "k".into()
            })
        );
    }

    #[test]
    fn payloads_that_only_resemble_a_pointer_are_payloads() {
        for body in [
            "",
            "{}",
            r#"["a","b"]"#,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer"]"#,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]"#,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"","s3Key":"k"}]"#,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k","x":1}]"#,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"},3]"#,
            r#"["other.Class",{"s3BucketName":"b","s3Key":"k"}]"#,
            r#"{"note":"software.amazon.payloadoffloading.PayloadS3Pointer"}"#,
        ] {
            assert_eq!(PayloadPointer::decode(body), None, "{body}");
        }
    }

    #[test]
    fn a_payload_over_the_destination_is_offloaded_with_a_bucket_and_poison_without() {
        let with = check(Some("large"), None);
        assert_eq!(
            place(300_000, 300_200, 262_144, false, with, ID),
            Placement::Offload(PayloadPointer::for_message("large", ID))
        );
        assert_eq!(
            place(300_000, 300_200, 262_144, false, check(None, None), ID),
            Placement::TooLarge
        );
        // Exactly at the limit fits.
        assert_eq!(
            place(262_000, 262_144, 262_144, false, with, ID),
            Placement::Inline
        );
    }

    #[test]
    fn the_threshold_offloads_what_fits_but_only_with_a_bucket() {
        let with = check(Some("large"), Some(1024));
        assert!(matches!(
            place(1025, 1200, 262_144, false, with, ID),
            Placement::Offload(_)
        ));
        assert_eq!(
            place(1024, 1200, 262_144, false, with, ID),
            Placement::Inline
        );
        assert_eq!(
            place(5000, 5200, 262_144, false, check(None, Some(1024)), ID),
            Placement::Inline
        );
    }

    #[test]
    fn a_pointer_is_forwarded_never_offloaded_again() {
        let with = check(Some("large"), Some(10));
        assert_eq!(place(150, 300, 262_144, true, with, ID), Placement::Inline);
        // A pointer over a (tiny) destination limit cannot shrink further.
        assert_eq!(place(150, 300, 200, true, with, ID), Placement::TooLarge);
    }

    #[test]
    fn what_no_bucket_name_has_is_refused() {
        for good in ["abc", "my-bucket.v2", "Legacy_Bucket", &"a".repeat(63)] {
            assert_eq!(bucket_name_problem(good), None, "{good}");
        }
        for bad in ["ab", "", "s3://bucket", "bucket/outbox", "my bucket"] {
            assert!(bucket_name_problem(bad).is_some(), "{bad}");
        }
    }
}
