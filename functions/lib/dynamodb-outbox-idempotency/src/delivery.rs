//! What an SQS message carries once its envelope is opened: the outbox message id
//! (the key duplicates share) and the payload the producer wrote.
//!
//! The outbox reaches a queue three ways, and each puts the id somewhere else:
//!
//! | route to the queue | SQS body | outbox message id |
//! |---|---|---|
//! | SQS directly, or SNS with raw message delivery | the payload | message attribute `outbox-message-id` |
//! | SNS without raw message delivery | an SNS notification: `{"Type": "Notification", "Message": <payload>, "MessageAttributes": {"outbox-message-id": {"Type": "String", "Value": ...}}, ...}` | in the notification's `MessageAttributes` |
//! | an EventBridge rule targeting the queue | the whole event: `{"detail-type": <topic>, "source": ..., "detail": {"outbox": {"messageId": ...}, "payload": <payload>}, ...}` | `detail.outbox.messageId` |
//!
//! [`Delivery::open`] reads all three and hands the handler the payload, not the
//! envelope. The SQS `MessageId` is never the key by default: a message republished
//! by the sweeper, re-sent after a lost answer, or published twice by a retried
//! stream batch is a new SQS message each time, so keying by it would apply the
//! effect once per copy. When no outbox id can be found, [`Delivery::message_id`]
//! refuses the message ([`IdempotencyError::NoMessageId`], not retryable) and says
//! what to configure — unless the consumer opted in to the SQS id
//! ([`BatchProcessor::sqs_message_id_fallback`](crate::BatchProcessor::sqs_message_id_fallback)),
//! which is right only for a queue nothing ever republishes to.
//!
//! An EventBridge payload that was not JSON travels as a JSON string and comes back
//! as that text; a payload that was JSON comes back as equivalent JSON (same values,
//! possibly other spacing).

use crate::IdempotencyError;
use crate::parse::parse_json;
use aws_lambda_events::event::sqs::SqsMessage;
use dynamodb_outbox_core::large_payload::PayloadPointer;
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use dynamodb_outbox_core::trace::{ATTR_TRACEPARENT, ATTR_TRACESTATE, TraceContext};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// How the message reached the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// No envelope: sent to the queue directly, or through SNS with raw message
    /// delivery.
    Sqs,
    /// An SNS notification (an SNS subscription without raw message delivery).
    Sns,
    /// An EventBridge event (a rule targeting the queue).
    EventBridge,
}

impl fmt::Display for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Envelope::Sqs => "an SQS message without the outbox-message-id attribute",
            Envelope::Sns => {
                "an SNS notification without outbox-message-id in its MessageAttributes"
            }
            Envelope::EventBridge => "an EventBridge event without detail.outbox.messageId",
        })
    }
}

/// One SQS message, its envelope opened.
///
/// ```
/// use dynamodb_outbox_idempotency::{Delivery, Envelope, SqsMessage};
///
/// // What an SNS subscription without raw message delivery puts on the queue.
/// let notification = serde_json::json!({
///     "Type": "Notification",
///     "TopicArn": "arn:aws:sns:eu-west-1:123456789012:orders",
///     "Message": r#"{"id":"o-1"}"#,
///     "MessageAttributes": {"outbox-message-id": {"Type": "String", "Value": "outbox-7"}},
/// });
/// let mut message = SqsMessage::default();
/// message.message_id = Some("sqs-1".into());
/// message.body = Some(notification.to_string());
///
/// let delivery = Delivery::open(&message);
/// assert_eq!(delivery.envelope(), Envelope::Sns);
/// assert_eq!(delivery.message_id().ok(), Some("outbox-7")); // the key copies share
/// assert_eq!(delivery.body(), Some(r#"{"id":"o-1"}"#)); // the payload, not the envelope
/// assert_eq!(delivery.sqs_message_id(), "sqs-1"); // what the batch response names
/// ```
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    message: &'a SqsMessage,
    envelope: Envelope,
    body: Option<Cow<'a, str>>,
    outbox_id: Option<Cow<'a, str>>,
    trace: Option<TraceContext>,
    sqs_id_fallback: bool,
}

/// SQS's system attribute carrying the X-Ray trace header.
const AWS_TRACE_HEADER: &str = "AWSTraceHeader";

impl<'a> Delivery<'a> {
    /// Opens `message`: reads the outbox message id and the payload from the
    /// `outbox-message-id` attribute, an SNS notification or an EventBridge event.
    /// A body that is none of these is the payload as it is.
    pub fn open(message: &'a SqsMessage) -> Self {
        let attribute = message
            .message_attributes
            .get(ATTR_MESSAGE_ID)
            .and_then(|a| a.string_value.as_deref())
            .filter(|s| !s.is_empty());
        let body = message.body.as_deref();
        let attribute_text = |name: &str| {
            message
                .message_attributes
                .get(name)
                .and_then(|a| a.string_value.clone())
        };
        let direct_trace = || {
            (
                attribute_text(ATTR_TRACEPARENT),
                attribute_text(ATTR_TRACESTATE),
            )
        };
        let (envelope, body, outbox_id, (traceparent, tracestate)) = match (attribute, body) {
            (Some(id), body) => (
                Envelope::Sqs,
                body.map(Cow::Borrowed),
                Some(Cow::Borrowed(id)),
                direct_trace(),
            ),
            (None, Some(text)) => match unwrap(text) {
                Some(Unwrapped {
                    envelope,
                    body,
                    outbox_id,
                    trace,
                }) => (
                    envelope,
                    body.map(Cow::Owned),
                    outbox_id.map(Cow::Owned),
                    trace,
                ),
                None => (
                    Envelope::Sqs,
                    Some(Cow::Borrowed(text)),
                    None,
                    direct_trace(),
                ),
            },
            (None, None) => (Envelope::Sqs, None, None, direct_trace()),
        };
        let xray = message.attributes.get(AWS_TRACE_HEADER).map(String::as_str);
        let trace =
            TraceContext::from_attributes(traceparent.as_deref(), tracestate.as_deref(), xray)
                .and_then(Result::ok);
        Delivery {
            message,
            envelope,
            body,
            outbox_id,
            trace,
            sqs_id_fallback: false,
        }
    }

    /// Uses the SQS `MessageId` as the key when the message carries no outbox id.
    /// Only for queues nothing ever republishes to: a copy sent again is a new SQS
    /// message, and its effect would be applied again.
    pub fn sqs_message_id_fallback(mut self) -> Self {
        self.sqs_id_fallback = true;
        self
    }

    /// The key duplicates share: the outbox message id, or — when opted in and the
    /// message carries none — the SQS `MessageId`. Otherwise
    /// [`IdempotencyError::NoMessageId`], which is not retryable.
    pub fn message_id(&self) -> Result<&str, IdempotencyError> {
        if let Some(id) = self.outbox_message_id() {
            return Ok(id);
        }
        match self.message.message_id.as_deref() {
            Some(id) if self.sqs_id_fallback && !id.is_empty() => Ok(id),
            _ => Err(IdempotencyError::NoMessageId {
                sqs_message_id: self.sqs_message_id().to_owned(),
                envelope: self.envelope,
            }),
        }
    }

    /// The outbox message id, if the message carries one.
    pub fn outbox_message_id(&self) -> Option<&str> {
        self.outbox_id.as_deref()
    }

    /// The trace the message continues, from whichever envelope carried it: the
    /// `traceparent`/`tracestate` message attributes (SQS, raw SNS), the SNS
    /// notification's `MessageAttributes`, the EventBridge event's
    /// `detail.outbox.traceparent`, else SQS's `AWSTraceHeader` system attribute (what
    /// EventBridge and X-Ray-traced senders set). `None` when there is none, or it is
    /// malformed: a consumer never invents a context.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The payload: the body without its envelope.
    pub fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }

    /// The large-payload offload pointer the payload is, when it is one (see
    /// [`PayloadSource`](crate::PayloadSource)): the [`BatchProcessor`](crate::BatchProcessor) reads the
    /// object before the handler sees the message.
    pub fn payload_pointer(&self) -> Option<PayloadPointer> {
        self.body().and_then(PayloadPointer::decode)
    }

    /// The same delivery with `payload` as its payload (an offloaded one, read).
    pub fn with_payload(mut self, payload: String) -> Self {
        self.body = Some(Cow::Owned(payload));
        self
    }

    /// The payload parsed as JSON into `T`, with an error naming the path of the bad
    /// field. Quoted strings are redacted from the reason, which is logged: payloads
    /// carry personal data.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, IdempotencyError> {
        let body = self.body().ok_or_else(|| IdempotencyError::MalformedBody {
            reason: "the message has no body".to_owned(),
        })?;
        parse_json(body)
    }

    /// How the message reached the queue.
    pub fn envelope(&self) -> Envelope {
        self.envelope
    }

    /// The SQS message as Lambda delivered it (envelope included).
    pub fn sqs(&self) -> &'a SqsMessage {
        self.message
    }

    /// The SQS `MessageId` (empty if the event had none): what the partial batch
    /// response names.
    pub fn sqs_message_id(&self) -> &'a str {
        self.message.message_id.as_deref().unwrap_or_default()
    }
}

struct Unwrapped {
    envelope: Envelope,
    body: Option<String>,
    outbox_id: Option<String>,
    /// The W3C `traceparent` and `tracestate` the envelope carried.
    trace: (Option<String>, Option<String>),
}

/// Reads `text` as an SNS notification or an EventBridge event; `None` when it is
/// neither (then it is the payload itself).
fn unwrap(text: &str) -> Option<Unwrapped> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    let sns_attribute = |name: &str| {
        object
            .get("MessageAttributes")
            .and_then(|a| a.get(name))
            .and_then(|a| a.get("Value"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let is_sns = object.get("Type").and_then(Value::as_str) == Some("Notification")
        && object.get("TopicArn").is_some_and(Value::is_string)
        && object.get("Message").is_some_and(Value::is_string);
    if is_sns {
        return Some(Unwrapped {
            envelope: Envelope::Sns,
            body: object
                .get("Message")
                .and_then(Value::as_str)
                .map(str::to_owned),
            outbox_id: object
                .get("MessageAttributes")
                .and_then(|a| a.get(ATTR_MESSAGE_ID))
                .and_then(|a| a.get("Value"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            trace: (
                sns_attribute(ATTR_TRACEPARENT),
                sns_attribute(ATTR_TRACESTATE),
            ),
        });
    }
    let is_event = object.get("detail-type").is_some_and(Value::is_string)
        && object.get("source").is_some_and(Value::is_string)
        && object.contains_key("detail");
    if is_event {
        let outbox = object.get("detail").and_then(|d| d.get("outbox"));
        let outbox_text = |name: &str| {
            outbox
                .and_then(|o| o.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        // Only the outbox's own events are opened: another producer's event stays
        // whole, as it was sent.
        let body = match outbox {
            Some(_) => match object.get("detail").and_then(|d| d.get("payload")) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
                None => None,
            },
            None => Some(text.to_owned()),
        };
        return Some(Unwrapped {
            envelope: Envelope::EventBridge,
            body,
            outbox_id: outbox
                .and_then(|o| o.get("messageId"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            trace: (outbox_text(ATTR_TRACEPARENT), outbox_text(ATTR_TRACESTATE)),
        });
    }
    None
}

mod span;

#[cfg(test)]
mod tests;
