use super::*;
use aws_lambda_events::event::sqs::SqsMessageAttribute;
use serde_json::json;

fn msg(body: &str) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some("sqs-1".to_owned());
    m.body = Some(body.to_owned());
    m
}

fn with_attribute(mut m: SqsMessage, id: &str) -> SqsMessage {
    let mut attr = SqsMessageAttribute::default();
    attr.string_value = Some(id.to_owned());
    attr.data_type = Some("String".to_owned());
    m.message_attributes
        .insert(ATTR_MESSAGE_ID.to_owned(), attr);
    m
}

fn sns(message: &str, id: Option<&str>) -> String {
    let mut n = json!({
        "Type": "Notification",
        "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "TopicArn": "arn:aws:sns:eu-west-1:123456789012:orders",
        "Message": message,
        "Timestamp": "2024-09-22T10:13:20.000Z",
        "SignatureVersion": "1",
    });
    if let Some(id) = id {
        n["MessageAttributes"] = json!({
            "outbox-message-id": {"Type": "String", "Value": id},
            "outbox-topic": {"Type": "String", "Value": "orders"},
        });
    }
    n.to_string()
}

fn event(detail: Value) -> String {
    json!({
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "orders",
        "source": "dynamodb-outbox",
        "account": "123456789012",
        "time": "2024-09-22T10:13:20Z",
        "region": "eu-west-1",
        "resources": [],
        "detail": detail,
    })
    .to_string()
}

#[test]
fn the_attribute_gives_the_id_and_the_body_is_the_payload() {
    let m = with_attribute(msg(r#"{"id":"o-1"}"#), "outbox-7");
    let d = Delivery::open(&m);
    assert_eq!(d.message_id().expect("id"), "outbox-7");
    assert_eq!(d.body(), Some(r#"{"id":"o-1"}"#));
    assert_eq!(d.envelope(), Envelope::Sqs);
    assert_eq!(d.sqs_message_id(), "sqs-1");
}

#[test]
fn an_sns_notification_gives_the_id_from_its_attributes_and_its_message_as_payload() {
    let m = msg(&sns(r#"{"id":"o-1","quantity":2}"#, Some("outbox-7")));
    let d = Delivery::open(&m);
    assert_eq!(d.envelope(), Envelope::Sns);
    assert_eq!(d.message_id().expect("id"), "outbox-7");
    assert_eq!(d.body(), Some(r#"{"id":"o-1","quantity":2}"#));
    // A payload that is not JSON comes through as it was.
    let m = msg(&sns("plain text", Some("outbox-8")));
    assert_eq!(Delivery::open(&m).body(), Some("plain text"));
}

#[test]
fn an_eventbridge_event_gives_the_id_from_its_detail_and_the_payload_inside() {
    let m = msg(&event(json!({
        "outbox": {"messageId": "outbox-7", "topic": "orders", "aggregate": "ORDER#1"},
        "payload": {"id": "o-1", "quantity": 2},
    })));
    let d = Delivery::open(&m);
    assert_eq!(d.envelope(), Envelope::EventBridge);
    assert_eq!(d.message_id().expect("id"), "outbox-7");
    let payload: Value = d.parse().expect("json");
    assert_eq!(payload, json!({"id": "o-1", "quantity": 2}));
    // A payload that was not JSON travels as a string and comes back as its text.
    let m = msg(&event(
        json!({"outbox": {"messageId": "x"}, "payload": "plain text"}),
    ));
    assert_eq!(Delivery::open(&m).body(), Some("plain text"));
}

#[test]
fn without_an_outbox_id_the_key_is_refused_naming_what_to_configure() {
    let foreign_event = event(json!({"orderId": "o-1"}));
    for (body, envelope) in [
        (r#"{"id":"o-1"}"#.to_owned(), Envelope::Sqs),
        (sns(r#"{"id":"o-1"}"#, None), Envelope::Sns),
        (foreign_event.clone(), Envelope::EventBridge),
    ] {
        let m = msg(&body);
        let d = Delivery::open(&m);
        assert_eq!(d.envelope(), envelope);
        let err = d.message_id().expect_err("no outbox id");
        assert!(!err.is_retryable(), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("sqs-1") && text.contains("sqs_message_id_fallback"),
            "{text}"
        );
    }
    // Another producer's event is handed over whole.
    let m = msg(&foreign_event);
    assert_eq!(Delivery::open(&m).body(), Some(foreign_event.as_str()));
}

#[test]
fn the_sqs_id_is_the_key_only_when_opted_in() {
    let m = msg(r#"{"id":"o-1"}"#);
    let d = Delivery::open(&m).sqs_message_id_fallback();
    assert_eq!(d.message_id().expect("opted in"), "sqs-1");
    // The outbox id still wins when there is one.
    let m = with_attribute(msg("{}"), "outbox-7");
    let d = Delivery::open(&m).sqs_message_id_fallback();
    assert_eq!(d.message_id().expect("id"), "outbox-7");
}

#[test]
fn a_pointer_is_found_in_every_envelope() {
    let pointer = PayloadPointer::for_message("large", "outbox-7");
    let raw = with_attribute(msg(&pointer.encode()), "outbox-7");
    let via_sns = msg(&sns(&pointer.encode(), Some("outbox-7")));
    let detail: Value = serde_json::from_str(&pointer.encode()).expect("json");
    let via_events = msg(&event(
        json!({"outbox": {"messageId": "outbox-7", "extendedPayloadSize": 300000}, "payload": detail}),
    ));
    for m in [raw, via_sns, via_events] {
        let d = Delivery::open(&m);
        assert_eq!(d.payload_pointer().as_ref(), Some(&pointer), "{d:?}");
        assert_eq!(d.message_id().expect("id"), "outbox-7");
    }
    assert_eq!(Delivery::open(&msg("[1,2]")).payload_pointer(), None);
}

#[test]
fn bodies_that_only_look_like_envelopes_are_payloads() {
    for body in [
        "not json",
        "[1,2]",
        r#"{"Type":"Notification"}"#,
        r#"{"detail-type":"x"}"#,
        "{",
    ] {
        let m = msg(body);
        let d = Delivery::open(&m);
        assert_eq!(d.envelope(), Envelope::Sqs, "{body}");
        assert_eq!(d.body(), Some(body));
    }
    let mut m = SqsMessage::default();
    m.body = None;
    assert!(matches!(
        Delivery::open(&m).parse::<Value>(),
        Err(IdempotencyError::MalformedBody { .. })
    ));
}

const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const XRAY: &str = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";

fn with_named(mut m: SqsMessage, name: &str, value: &str) -> SqsMessage {
    let mut attr = SqsMessageAttribute::default();
    attr.string_value = Some(value.to_owned());
    attr.data_type = Some("String".to_owned());
    m.message_attributes.insert(name.to_owned(), attr);
    m
}

fn traceparent_of(m: &SqsMessage) -> Option<String> {
    Delivery::open(m)
        .trace()
        .map(|t| t.traceparent().to_owned())
}

#[test]
fn the_trace_is_read_from_every_envelope_and_none_is_invented() {
    // SQS directly (and raw SNS): the W3C attributes
    let direct = with_named(
        with_named(with_attribute(msg("{}"), "o-1"), ATTR_TRACEPARENT, TP),
        ATTR_TRACESTATE,
        "k=v",
    );
    let opened = Delivery::open(&direct);
    let trace = opened.trace().expect("a trace");
    assert_eq!((trace.traceparent(), trace.tracestate()), (TP, Some("k=v")));
    // An SNS notification: its MessageAttributes
    let mut n: Value = serde_json::from_str(&sns("{}", Some("o-2"))).unwrap();
    n["MessageAttributes"]["traceparent"] = json!({"Type": "String", "Value": TP});
    assert_eq!(traceparent_of(&msg(&n.to_string())).as_deref(), Some(TP));
    // An EventBridge event: detail.outbox.traceparent
    let ev = event(json!({"outbox": {"messageId": "o-3", "traceparent": TP}, "payload": {}}));
    assert_eq!(traceparent_of(&msg(&ev)).as_deref(), Some(TP));
    // Only the X-Ray system attribute (EventBridge to SQS, X-Ray-traced senders)
    let mut xray_only = with_attribute(msg("{}"), "o-4");
    xray_only
        .attributes
        .insert("AWSTraceHeader".into(), XRAY.into());
    assert_eq!(traceparent_of(&xray_only).as_deref(), Some(TP));
    // None, or a malformed one: no trace
    assert_eq!(traceparent_of(&with_attribute(msg("{}"), "o-5")), None);
    let malformed = with_named(with_attribute(msg("{}"), "o-6"), ATTR_TRACEPARENT, "00-zz");
    assert_eq!(traceparent_of(&malformed), None);
}
