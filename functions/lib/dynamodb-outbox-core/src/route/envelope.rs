//! How large an SNS message is where it lands. SNS accepts 256 KiB (body plus
//! attributes), but a subscription without raw delivery hands its queue the message
//! inside a JSON notification: the body escaped, the attributes as JSON, and the
//! envelope's own fields (message id, topic ARN, timestamp, signature, certificate
//! and unsubscribe URLs). A queue at 256 KiB then refuses — SNS drops — a message SNS
//! accepted, after the outbox marked it `SENT`. So an SNS route is sized against its
//! subscribers: the enveloped size, unless the route says its subscriptions use raw
//! delivery (`raw_delivery`), where what SNS accepts is what arrives.
//!
//! The count is an upper bound, never an estimate below the real envelope: every
//! character JSON may escape is counted escaped (`"`, `\` and `/` as 2 bytes, a
//! control character as 6, `\u00XX`), and the envelope's fields at their largest.

use crate::message::OutboundMessage;

/// The envelope's fields besides the body, the attributes and the topic ARN, at their
/// largest: names and punctuation (about 200 bytes), `MessageId` (36), `Timestamp`
/// (24), `SignatureVersion`, `Signature` (684: base64 of a 4096-bit RSA signature;
/// 2048-bit ones are 344), `SigningCertURL` (about 110) and `UnsubscribeURL` without
/// its topic ARN (about 110), with room to spare.
pub const SNS_ENVELOPE_FIXED_BYTES: usize = 1536;

/// The JSON around one attribute in the envelope: `"name":{"Type":"…","Value":"…"},`
/// and its spacing.
const ATTRIBUTE_OVERHEAD_BYTES: usize = 40;

/// A FIFO topic's envelope also carries `SequenceNumber` (20 digits) and may carry
/// the group and deduplication ids.
const FIFO_OVERHEAD_BYTES: usize = 128;

/// The bytes `text` takes inside a JSON string, every character that may be
/// escaped counted escaped.
pub fn json_escaped_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'/' => 2,
            0x00..=0x1f | 0x7f => 6,
            _ => 1,
        })
        .sum()
}

/// The largest the SNS notification carrying `m` from topic `topic_arn` can be, as
/// the subscriber's queue counts it (the whole envelope is its body).
pub fn sns_envelope_bytes(topic_arn: &str, m: &OutboundMessage) -> usize {
    let attributes: usize = m
        .attributes
        .iter()
        .map(|(name, value)| {
            json_escaped_len(name)
                + value.data_type().len()
                + json_escaped_len(value.text())
                + ATTRIBUTE_OVERHEAD_BYTES
        })
        .sum();
    let fifo = match (&m.group_id, &m.dedup_id) {
        (None, None) => 0,
        (group, dedup) => {
            let len = |id: &Option<String>| id.as_deref().map_or(0, json_escaped_len);
            FIFO_OVERHEAD_BYTES + len(group) + len(dedup)
        }
    };
    // The topic ARN appears twice: `TopicArn` and inside `UnsubscribeURL`.
    SNS_ENVELOPE_FIXED_BYTES
        + 2 * json_escaped_len(topic_arn)
        + json_escaped_len(&m.body)
        + attributes
        + fifo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AttrValue;

    const ARN: &str = "arn:aws:sns:eu-west-1:123456789012:orders";

    fn message(body: &str) -> OutboundMessage {
        OutboundMessage {
            body: body.to_owned(),
            attributes: vec![("outbox-topic", AttrValue::String("orders".into()))],
            group_id: None,
            dedup_id: None,
            trace_header: None,
        }
    }

    #[test]
    fn escaping_counts_every_character_json_may_escape() {
        assert_eq!(json_escaped_len("plain"), 5);
        assert_eq!(json_escaped_len(r#"{"a":"b/c"}"#), 11 + 5);
        assert_eq!(json_escaped_len("\n\u{1}"), 12);
        assert_eq!(json_escaped_len("é"), 2, "UTF-8 is kept as it is");
    }

    #[test]
    fn the_envelope_is_at_least_a_real_notification_of_the_same_message() {
        // A notification as SNS delivers it without raw delivery (2048-bit signature).
        let body = r#"{"order":"1","note":"a \"quoted\" word"}"#;
        let real = serde_json::json!({
            "Type": "Notification",
            "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
            "TopicArn": ARN,
            "Message": body,
            "Timestamp": "2026-12-02T06:54:06.655Z",
            "SignatureVersion": "1",
            "Signature": "s".repeat(344),
            "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
            "UnsubscribeURL": format!("https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={ARN}:c9135db0-26c4-47ec-8998-413945fb5a96"),
            "MessageAttributes": {"outbox-topic": {"Type": "String", "Value": "orders"}},
        });
        let real = serde_json::to_string_pretty(&real).expect("json").len();
        let bound = sns_envelope_bytes(ARN, &message(body));
        assert!(bound >= real, "{bound} < {real}");
        assert!(
            bound < real + 1024,
            "a bound, not a guess: {bound} vs {real}"
        );
    }
}
