//! Tests of the outbox item type and its decoding.

use super::*;
use serde_dynamo::AttributeValue as Av;
use std::collections::HashMap;

fn item(pairs: &[(&str, Av)]) -> serde_dynamo::Item {
    let map: HashMap<String, Av> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    map.into()
}

fn s(v: &str) -> Av {
    Av::S(v.to_owned())
}

#[test]
fn minimal_boto3_item_decodes_with_a_derived_message_id() {
    let it = item(&[
        ("PK", s("USER#123")),
        ("SK", s("MESSAGE#PROFILE_UPDATED#1698765432")),
        ("ItemType", s("PENDING_MESSAGE")),
        ("Topic", s("user-profile-updated")),
        ("Payload", s("{\"user_id\":\"123\"}")),
        ("Status", s("PENDING")),
        ("RetryCount", Av::N("0".into())),
    ]);
    let msg = decode_message(it.clone(), None).expect("decodes");
    assert_eq!(msg.topic, "user-profile-updated");
    assert_eq!(msg.created_at, 0);
    assert_eq!(msg.message_id, derive_message_id(&msg.key));
    // Deterministic: the same item decodes to the same id.
    assert_eq!(
        decode_message(it, None).expect("decodes").message_id,
        msg.message_id
    );
}

#[test]
fn wrong_attribute_type_names_the_attribute() {
    let it = item(&[
        ("PK", s("A")),
        ("SK", s("B")),
        ("Topic", s("t")),
        ("Payload", Av::M(HashMap::new())),
    ]);
    let err = decode_message(it, None).expect_err("payload map is malformed");
    let text = err.to_string();
    assert!(text.contains("Payload"), "{text}");
}

#[test]
fn missing_topic_is_reported_by_name() {
    let it = item(&[("PK", s("A")), ("SK", s("B")), ("Payload", s("{}"))]);
    assert_eq!(
        decode_message(it, None).expect_err("no topic"),
        DecodeError::Missing("Topic")
    );
}

#[test]
fn fractional_metadata_numbers_are_read_leniently() {
    let it = item(&[
        ("PK", s("A")),
        ("SK", s("B")),
        ("Topic", s("t")),
        ("Payload", s("{}")),
        ("CreatedAt", Av::N("1698765432123.456".into())),
        ("Sequence", Av::N("7.0".into())),
        ("RetryCount", Av::N("-2".into())),
    ]);
    let msg = decode_message(it, None).expect("a good message, not poison");
    assert_eq!(msg.created_at, 1_698_765_432_123);
    assert_eq!(msg.sequence, Some(7));
    assert_eq!(msg.retry_count, 0);
    assert!(!msg.indexed(&crate::schema::SweepShards::default()));
}

#[test]
fn a_sequence_above_two_to_the_fifty_three_is_read_exactly_in_any_notation() {
    // Through f64, 2^53 + 1 reads as 2^53: consumers would see two messages with
    // one sequence number and lose one in their ordering.
    for text in [
        "9007199254740993",
        "9007199254740993.0",
        "9.007199254740993E15",
    ] {
        let it = item(&[
            ("PK", s("A")),
            ("SK", s("B")),
            ("Topic", s("t")),
            ("Payload", s("{}")),
            ("Sequence", Av::N(text.into())),
        ]);
        let msg = decode_message(it, None).expect("decodes");
        assert_eq!(msg.sequence, Some(9_007_199_254_740_993), "{text}");
    }
    let fraction = item(&[
        ("PK", s("A")),
        ("SK", s("B")),
        ("Topic", s("t")),
        ("Payload", s("{}")),
        ("Sequence", Av::N("7.5".into())),
    ]);
    assert_eq!(
        decode_message(fraction, None).expect("decodes").sequence,
        None
    );
}

#[test]
fn foreign_index_attributes_leave_a_message_unindexed_with_the_values_as_read() {
    let with = |shard: &str, due: &str| {
        item(&[
            ("PK", s("A")),
            ("SK", s("B")),
            ("Topic", s("t")),
            ("Payload", s("{}")),
            ("SweepShard", s(shard)),
            ("SweepDueAt", Av::N(due.into())),
        ])
    };
    let ours = crate::schema::SweepShards::default().shard_of("A");
    assert!(
        decode_message(with(&ours, "1700000000000"), None)
            .expect("ok")
            .indexed(&crate::schema::SweepShards::default())
    );
    let fractional = decode_message(with(&ours, "1700000000000.5"), None).expect("ok");
    assert!(!fractional.indexed(&crate::schema::SweepShards::default()));
    assert_eq!(fractional.index.due.as_deref(), Some("1700000000000.5"));
    let foreign = decode_message(with("99", "1"), None).expect("ok");
    assert!(!foreign.indexed(&crate::schema::SweepShards::default()));
    assert_eq!(foreign.index.shard.as_deref(), Some("99"));
}

#[test]
fn keys_fall_back_to_the_stream_record_keys() {
    let it = item(&[("Topic", s("t")), ("Payload", s("{}"))]);
    let key = ItemKey {
        pk: "A".into(),
        sk: "B".into(),
    };
    let msg = decode_message(it, Some(&key)).expect("decodes");
    assert_eq!(msg.key, key);
}

#[test]
fn an_undecodable_item_keeps_its_raw_content_key_and_topic() {
    let it = item(&[("PK", s("A")), ("SK", s("B")), ("Topic", s("t"))]);
    let bad = decode(&it, None).expect_err("no payload");
    assert_eq!(bad.error, DecodeError::Missing("Payload"));
    assert_eq!(bad.topic.as_deref(), Some("t"));
    assert_eq!(bad.key.map(|k| k.pk), Some("A".to_owned()));
    assert!(bad.raw.contains("\"Topic\""), "{}", bad.raw);
}

#[test]
fn an_item_written_and_read_back_is_the_same() {
    let written = OutboxItem {
        pk: Some("A".into()),
        sk: Some("MESSAGE#X#1".into()),
        status: Some(Status::Pending.as_str().into()),
        retry_count: Some(0),
        created_at: Some(1_700_000_000_000),
        sequence: Some(3),
        ..OutboxItem::default()
    };
    let stored: serde_dynamo::Item = serde_dynamo::to_item(&written).expect("serialises");
    assert_eq!(
        stored.inner().get("CreatedAt"),
        Some(&Av::N("1700000000000".into()))
    );
    assert!(!stored.inner().contains_key("Topic"), "absent stays absent");
    let read = OutboxItem::from_item(stored).expect("reads");
    assert_eq!(read, written);
    assert_eq!(read.status(), Some(Status::Pending));
}

#[test]
fn a_minimal_producers_trace_attributes_are_read_and_malformed_ones_are_no_trace_not_poison() {
    let base = [
        ("PK", s("USER#123")),
        ("SK", s("MESSAGE#X#1")),
        ("ItemType", s("PENDING_MESSAGE")),
        ("Topic", s("orders")),
        ("Payload", s("{}")),
        ("Status", s("PENDING")),
    ];
    let with = |extra: &[(&str, Av)]| {
        let mut pairs = base.to_vec();
        pairs.extend_from_slice(extra);
        decode_message(item(&pairs), None)
    };
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let traced = with(&[("TraceParent", s(tp)), ("TraceState", s("k=v"))]).expect("decodes");
    assert_eq!(traced.trace_id(), "0af7651916cd43dd8448eb211c80319c");
    let trace = traced.trace.expect("a trace");
    assert_eq!((trace.traceparent(), trace.tracestate()), (tp, Some("k=v")));
    let xray = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
    let from_xray = with(&[("AwsTraceHeader", s(xray))]).expect("decodes");
    assert_eq!(from_xray.trace.expect("a trace").traceparent(), tp);
    for malformed in [
        vec![("TraceParent", s("not a traceparent"))],
        vec![("TraceParent", Av::N("1".into()))],
        vec![("AwsTraceHeader", Av::M(HashMap::new()))],
        vec![("TraceParent", Av::B(vec![1, 2])), ("TraceState", Av::Bool(true))],
    ] {
        let msg = with(&malformed).expect("a malformed trace never makes poison");
        assert_eq!(msg.trace, None, "{malformed:?}");
        assert_eq!(msg.trace_id(), "-", "logged as no trace");
    }
}

#[test]
fn every_attribute_is_written_under_its_schema_name_and_only_when_set() {
    let some = |v: &str| Some(v.to_owned());
    let full = OutboxItem {
        pk: some("A"),
        sk: some("MESSAGE#E#1"),
        item_type: some("PENDING_MESSAGE"),
        topic: some("t"),
        payload: some("{}"),
        status: some("PENDING"),
        retry_count: Some(1),
        message_id: some("1"),
        created_at: Some(2),
        sequence: Some(3),
        sweep_shard: some("07"),
        sweep_due_at: Some(4),
        sent_at: Some(5),
        expires_at: Some(6),
        failed_at: Some(7),
        last_error: some("e"),
        payload_size: Some(8),
        payload_on: some("dead-letter queue"),
        trace_parent: some("tp"),
        trace_state: some("ts"),
        aws_trace_header: some("Root=1"),
        home_region: some("eu-west-1"),
        follows: some("MESSAGE#E#0"),
    };
    let written: serde_dynamo::Item = serde_dynamo::to_item(&full).expect("an item");
    let mut names: Vec<&str> = written.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut schema = vec![
        "PK", "SK", "ItemType", "Topic", "Payload", "Status", "RetryCount", "MessageId",
        "CreatedAt", "Sequence", "SweepShard", "SweepDueAt", "SentAt", "ExpiresAt", "FailedAt",
        "LastError", "PayloadSize", "PayloadOn", "TraceParent", "TraceState", "AwsTraceHeader",
        "HomeRegion", "Follows",
    ];
    schema.sort_unstable();
    assert_eq!(names, schema);
    let empty: serde_dynamo::Item = serde_dynamo::to_item(OutboxItem::default()).expect("an item");
    assert!(empty.is_empty(), "nothing unset is written (no NULLs): {empty:?}");
}
