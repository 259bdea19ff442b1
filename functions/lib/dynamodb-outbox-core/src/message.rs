//! Turning an outbox message into what a destination receives: body, attributes,
//! FIFO group and deduplication ids, and its size as SQS counts it.

use crate::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer};
use crate::route::Destination;
use crate::schema::{OutboxMessage, stable_hash};
use crate::trace::{ATTR_TRACEPARENT, ATTR_TRACESTATE, TraceContext};

/// Message attribute carrying the outbox `MessageId` (the consumer's dedup key).
pub const ATTR_MESSAGE_ID: &str = "outbox-message-id";
/// Message attribute carrying the topic.
pub const ATTR_TOPIC: &str = "outbox-topic";
/// Message attribute carrying the aggregate (`PK`).
pub const ATTR_AGGREGATE: &str = "outbox-aggregate";
/// Message attribute carrying the producer's write time (epoch ms).
pub const ATTR_CREATED_AT: &str = "outbox-created-at";
/// Message attribute carrying the per-aggregate sequence, when the producer set one.
pub const ATTR_SEQUENCE: &str = "outbox-sequence";
/// Dead-letter attribute: why the outbox gave up.
pub const ATTR_ERROR: &str = "outbox-error";
/// Dead-letter attribute: the item's sort key, to find it again.
pub const ATTR_SK: &str = "outbox-sk";
/// Dead-letter attribute of a record that carries no payload: where the payload is
/// ([`PAYLOAD_ON_OUTBOX_ITEM`]).
pub const ATTR_PAYLOAD_ON: &str = "outbox-payload-on";
/// The value of [`ATTR_PAYLOAD_ON`]: the payload stayed on the outbox item.
pub const PAYLOAD_ON_OUTBOX_ITEM: &str = "outbox item";

/// One message attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    /// `String` data type.
    String(String),
    /// `Number` data type (decimal text).
    Number(String),
}

impl AttrValue {
    /// SQS data type name.
    pub fn data_type(&self) -> &'static str {
        match self {
            AttrValue::String(_) => "String",
            AttrValue::Number(_) => "Number",
        }
    }

    /// The value text.
    pub fn text(&self) -> &str {
        match self {
            AttrValue::String(s) | AttrValue::Number(s) => s,
        }
    }
}

/// A message ready for a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundMessage {
    /// Body: the outbox payload.
    pub body: String,
    /// Message attributes, in a stable order.
    pub attributes: Vec<(&'static str, AttrValue)>,
    /// FIFO `MessageGroupId` (the aggregate), `None` for standard destinations.
    pub group_id: Option<String>,
    /// FIFO `MessageDeduplicationId` (the message id), `None` for standard destinations.
    pub dedup_id: Option<String>,
    /// The X-Ray trace header of the trace the message continues: SQS's
    /// `AWSTraceHeader` system attribute, EventBridge's `TraceHeader`. (Its W3C form
    /// travels in `attributes`, [`crate::trace::ATTR_TRACEPARENT`].) Not counted in
    /// [`OutboundMessage::size`]: SQS does not count system attributes.
    pub trace_header: Option<String>,
}

impl OutboundMessage {
    /// Builds the message for `dest`.
    pub fn for_destination(msg: &OutboxMessage, dest: &Destination) -> Self {
        let mut attributes = vec![
            (ATTR_MESSAGE_ID, AttrValue::String(msg.message_id.clone())),
            (ATTR_TOPIC, AttrValue::String(msg.topic.clone())),
            (ATTR_AGGREGATE, AttrValue::String(msg.key.pk.clone())),
        ];
        if msg.created_at > 0 {
            attributes.push((
                ATTR_CREATED_AT,
                AttrValue::Number(msg.created_at.to_string()),
            ));
        }
        if let Some(seq) = msg.sequence {
            attributes.push((ATTR_SEQUENCE, AttrValue::Number(seq.to_string())));
        }
        // A producer's pointer goes out as it is, with the size it recorded: the
        // extended clients resolve a body only when the attribute is there.
        if let Some(size) = msg.payload_size
            && PayloadPointer::decode(&msg.payload).is_some()
        {
            attributes.push((
                ATTR_EXTENDED_PAYLOAD_SIZE,
                AttrValue::Number(size.to_string()),
            ));
        }
        let fifo = dest.is_fifo();
        OutboundMessage {
            body: msg.payload.clone(),
            attributes,
            group_id: fifo.then(|| fifo_id(&msg.key.pk)),
            dedup_id: fifo.then(|| fifo_id(&msg.message_id)),
            trace_header: None,
        }
        .traced(msg.trace.as_ref())
    }

    /// The same message continuing `trace`, when there is one: the W3C
    /// `traceparent`/`tracestate` attributes that OpenTelemetry's propagators read,
    /// and the X-Ray header for the destinations that carry one.
    pub fn traced(mut self, trace: Option<&TraceContext>) -> Self {
        let Some(trace) = trace else {
            return self;
        };
        self.attributes.push((
            ATTR_TRACEPARENT,
            AttrValue::String(trace.traceparent().to_owned()),
        ));
        if let Some(state) = trace.tracestate() {
            self.attributes
                .push((ATTR_TRACESTATE, AttrValue::String(state.to_owned())));
        }
        self.trace_header = Some(trace.xray_header());
        self
    }

    /// The same message carrying `pointer` instead of its payload of
    /// `payload_bytes`, with the extended clients' `ExtendedPayloadSize` attribute
    /// (see [`crate::large_payload`]).
    pub fn offloaded(mut self, pointer: &PayloadPointer, payload_bytes: usize) -> Self {
        self.body = pointer.encode();
        self.attributes.push((
            ATTR_EXTENDED_PAYLOAD_SIZE,
            AttrValue::Number(payload_bytes.to_string()),
        ));
        self
    }

    /// The same message without its `traceparent`/`tracestate` attributes (they count
    /// against the size; the X-Ray header does not and stays).
    pub fn without_trace_attributes(mut self) -> Self {
        self.attributes
            .retain(|(name, _)| *name != ATTR_TRACEPARENT && *name != ATTR_TRACESTATE);
        self
    }

    /// Adds an attribute (dead-letter copies carry the reason).
    pub fn with_attribute(mut self, name: &'static str, value: AttrValue) -> Self {
        self.attributes.push((name, value));
        self
    }

    /// Size as SQS counts it against its limits: body plus each attribute's name,
    /// data type and value.
    pub fn size(&self) -> usize {
        self.body.len()
            + self
                .attributes
                .iter()
                .map(|(n, v)| n.len() + v.data_type().len() + v.text().len())
                .sum::<usize>()
    }
}

/// The `Detail` of the EventBridge event for `m`: the outbox metadata (message id,
/// topic, aggregate, created-at, sequence) under `outbox`, and the payload under
/// `payload` — as JSON when it is JSON, else as a string, so nothing is refused.
pub fn event_detail(m: &OutboundMessage) -> String {
    let mut meta = serde_json::Map::new();
    for (name, value) in &m.attributes {
        let key = match *name {
            ATTR_MESSAGE_ID => "messageId",
            ATTR_TOPIC => "topic",
            ATTR_AGGREGATE => "aggregate",
            ATTR_CREATED_AT => "createdAt",
            ATTR_SEQUENCE => "sequence",
            ATTR_ERROR => "error",
            ATTR_SK => "sk",
            ATTR_EXTENDED_PAYLOAD_SIZE => "extendedPayloadSize",
            other => other,
        };
        let v = match value {
            AttrValue::Number(n) => n
                .parse::<i64>()
                .map(serde_json::Value::from)
                .or_else(|_| n.parse::<u64>().map(serde_json::Value::from))
                .unwrap_or_else(|_| serde_json::Value::String(n.clone())),
            AttrValue::String(s) => serde_json::Value::String(s.clone()),
        };
        meta.insert(key.to_owned(), v);
    }
    let payload = serde_json::from_str::<serde_json::Value>(&m.body)
        .unwrap_or_else(|_| serde_json::Value::String(m.body.clone()));
    serde_json::json!({ "outbox": meta, "payload": payload }).to_string()
}

/// Characters SQS allows in a FIFO group or deduplication id.
fn fifo_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || c.is_ascii_punctuation()
}

/// A FIFO group or deduplication id: the value itself when SQS accepts it (1–128
/// alphanumeric or punctuation characters), else a stable hash of it, so that one
/// aggregate still maps to one group and one message to one dedup id.
pub fn fifo_id(value: &str) -> String {
    if !value.is_empty() && value.len() <= 128 && value.chars().all(fifo_char_ok) {
        value.to_owned()
    } else {
        format!("h-{:016x}-{}", stable_hash(value.as_bytes()), value.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ItemKey;

    fn msg(pk: &str) -> OutboxMessage {
        OutboxMessage {
            key: ItemKey {
                pk: pk.into(),
                sk: "MESSAGE#X#1".into(),
            },
            message_id: "0190-abc".into(),
            topic: "orders".into(),
            payload: "{\"a\":1}".into(),
            created_at: 1_700_000_000_000,
            retry_count: 0,
            sequence: Some(3),
            payload_size: None,
            index: crate::schema::SeenIndex::ours("00", 1),
            trace: None,
            home_region: None,
            follows: None,
        }
    }

    #[test]
    fn fifo_messages_group_by_aggregate_and_dedup_by_message_id() {
        let out =
            OutboundMessage::for_destination(&msg("USER#1"), &Destination::sqs("https://q/x.fifo"));
        assert_eq!(out.group_id.as_deref(), Some("USER#1"));
        assert_eq!(out.dedup_id.as_deref(), Some("0190-abc"));
        let std =
            OutboundMessage::for_destination(&msg("USER#1"), &Destination::sqs("https://q/x"));
        assert_eq!(std.group_id, None);
        assert_eq!(std.dedup_id, None);
    }

    #[test]
    fn every_message_carries_id_topic_aggregate_created_at_and_sequence() {
        let out =
            OutboundMessage::for_destination(&msg("USER#1"), &Destination::sqs("https://q/x"));
        let names: Vec<&str> = out.attributes.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                ATTR_MESSAGE_ID,
                ATTR_TOPIC,
                ATTR_AGGREGATE,
                ATTR_CREATED_AT,
                ATTR_SEQUENCE
            ]
        );
        let expected = out.body.len()
            + out
                .attributes
                .iter()
                .map(|(n, v)| n.len() + v.data_type().len() + v.text().len())
                .sum::<usize>();
        assert_eq!(out.size(), expected);
    }

    #[test]
    fn event_details_carry_metadata_and_the_payload_as_json_or_text() {
        let out =
            OutboundMessage::for_destination(&msg("USER#1"), &Destination::sqs("https://q/x"));
        let detail: serde_json::Value = serde_json::from_str(&event_detail(&out)).expect("json");
        assert_eq!(detail["outbox"]["messageId"], "0190-abc");
        assert_eq!(detail["outbox"]["aggregate"], "USER#1");
        assert_eq!(detail["outbox"]["createdAt"], 1_700_000_000_000i64);
        assert_eq!(detail["outbox"]["sequence"], 3);
        assert_eq!(detail["payload"], serde_json::json!({"a": 1}));
        let text = OutboundMessage {
            body: "not json".into(),
            ..out
        };
        let detail: serde_json::Value = serde_json::from_str(&event_detail(&text)).expect("json");
        assert_eq!(detail["payload"], "not json");
    }

    #[test]
    fn an_offloaded_message_carries_the_pointer_and_the_payloads_size() {
        let pointer = PayloadPointer::for_message("large", "0190-abc");
        let out =
            OutboundMessage::for_destination(&msg("USER#1"), &Destination::sqs("https://q/x"))
                .offloaded(&pointer, 300_000);
        assert_eq!(PayloadPointer::decode(&out.body), Some(pointer));
        assert_eq!(
            out.attributes.last(),
            Some(&(
                ATTR_EXTENDED_PAYLOAD_SIZE,
                AttrValue::Number("300000".into())
            ))
        );
        // An event carries the pointer where the payload goes.
        let detail: serde_json::Value = serde_json::from_str(&event_detail(&out)).expect("json");
        assert_eq!(
            detail["payload"][0],
            "software.amazon.payloadoffloading.PayloadS3Pointer"
        );
        assert_eq!(detail["outbox"]["extendedPayloadSize"], 300_000);
        assert_eq!(detail["outbox"]["messageId"], "0190-abc");
    }

    #[test]
    fn a_producers_pointer_carries_the_size_it_recorded_and_a_payload_never_does() {
        let mut m = msg("USER#1");
        m.payload_size = Some(1_048_576);
        let plain = OutboundMessage::for_destination(&m, &Destination::sqs("https://q/x"));
        assert!(
            plain
                .attributes
                .iter()
                .all(|(n, _)| *n != ATTR_EXTENDED_PAYLOAD_SIZE)
        );
        m.payload = PayloadPointer::for_message("large", "0190-abc").encode();
        let pointer = OutboundMessage::for_destination(&m, &Destination::sqs("https://q/x"));
        assert_eq!(
            pointer.attributes.last(),
            Some(&(
                ATTR_EXTENDED_PAYLOAD_SIZE,
                AttrValue::Number("1048576".into())
            ))
        );
    }

    #[test]
    fn ids_sqs_would_refuse_are_hashed_stably() {
        assert_eq!(fifo_id("USER#1"), "USER#1");
        let spaced = fifo_id("user 1 with spaces");
        assert!(spaced.starts_with("h-"));
        assert_eq!(spaced, fifo_id("user 1 with spaces"));
        assert_ne!(spaced, fifo_id("user 2 with spaces"));
        assert!(fifo_id(&"x".repeat(200)).len() <= 128);
        assert!(fifo_id("Ünïcode").starts_with("h-"));
    }

    #[test]
    fn a_traced_message_carries_its_trace_in_both_forms_and_an_untraced_one_none() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let mut traced = msg("USER#1");
        traced.trace = Some(TraceContext::from_w3c(tp, Some("k=v")).expect("context"));
        let dest = Destination::sqs("https://q/x");
        let out = OutboundMessage::for_destination(&traced, &dest);
        let attr = |m: &OutboundMessage, name: &str| {
            m.attributes
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.text().to_owned())
        };
        assert_eq!(attr(&out, ATTR_TRACEPARENT).as_deref(), Some(tp));
        assert_eq!(attr(&out, ATTR_TRACESTATE).as_deref(), Some("k=v"));
        assert_eq!(
            out.trace_header.as_deref(),
            Some("Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1")
        );
        let detail: serde_json::Value = serde_json::from_str(&event_detail(&out)).expect("json");
        assert_eq!(detail["outbox"]["traceparent"], tp);
        // The system attribute is not counted; the W3C attributes are.
        let untraced = OutboundMessage::for_destination(&msg("USER#1"), &dest);
        assert_eq!(
            out.size() - untraced.size(),
            ATTR_TRACEPARENT.len()
                + "String".len()
                + tp.len()
                + ATTR_TRACESTATE.len()
                + "String".len()
                + 3
        );
        assert_eq!(
            (attr(&untraced, ATTR_TRACEPARENT), untraced.trace_header),
            (None, None)
        );
    }
}
