use super::*;
use super::image::{NAMES, attribute_index};
use crate::stream::classify_keyed;
use aws_lambda_events::event::dynamodb::Event;
use serde_json::{Value, json};

fn image(seq: &str) -> Value {
    json!({
        "PK": {"S": "USER#1"}, "SK": {"S": format!("MESSAGE#X#{seq}")},
        "ItemType": {"S": "PENDING_MESSAGE"}, "Status": {"S": "PENDING"},
        "Topic": {"S": "orders"}, "Payload": {"S": "{\"n\":1}"}, "RetryCount": {"N": "0"},
        "MessageId": {"S": format!("m-{seq}")}, "CreatedAt": {"N": "1732870800123"},
        "SweepShard": {"S": "07"}, "SweepDueAt": {"N": "1732870860123"},
        "Tags": {"SS": ["a", "b"]}, "Nested": {"M": {"x": {"L": [{"N": "1"}]}}}
    })
}

fn record(seq: Option<&str>, event_name: &str, image: Value) -> Value {
    let mut change = json!({
        "ApproximateCreationDateTime": 1732870800, "SizeBytes": 400,
        "StreamViewType": "NEW_IMAGE",
        "Keys": {"PK": image["PK"].clone(), "SK": image["SK"].clone()}, "NewImage": image
    });
    if let Some(seq) = seq {
        change["SequenceNumber"] = json!(seq);
    }
    json!({
        "eventID": format!("event-{}", seq.unwrap_or("none")), "eventName": event_name,
        "eventSource": "aws:dynamodb", "eventVersion": "1.1", "awsRegion": "eu-west-1",
        "dynamodb": change
    })
}

/// A record whose image lacks its key, given by `Keys` alone.
fn keyed_apart(mut record: Value) -> Value {
    record["dynamodb"]["Keys"] = json!({"PK": {"S": "USER#2"}, "SK": {"S": "MESSAGE#X#8"}});
    record
}

fn with(mut image: Value, name: &str, value: Value) -> Value {
    image[name] = value;
    image
}

fn without(mut image: Value, name: &str) -> Value {
    image.as_object_mut().map(|m| m.remove(name));
    image
}

/// A work item as comparable: a poison's raw image as JSON (its attributes' order in
/// the text is a hash map's, different from one map to the next).
#[derive(Debug, PartialEq)]
enum Compared {
    Publish(String, String),
    Poison(String, String, Value),
}

fn compared(work: &[WorkItem]) -> Vec<Compared> {
    work.iter()
        .map(|w| match &w.work {
            Work::Publish(m) => Compared::Publish(w.id.clone(), format!("{m:?}")),
            Work::Poison(p) => Compared::Poison(
                w.id.clone(),
                format!("{:?} {:?} {:?} {}", p.key, p.message_id, p.topic, p.reason),
                serde_json::from_str(&p.body).unwrap_or(Value::String(p.body.clone())),
            ),
        })
        .collect()
}

/// Every record through the lean parse and through the owned one.
fn both(records: Vec<Value>) -> ((Vec<Compared>, usize), (Vec<Compared>, usize)) {
    let event = json!({ "Records": records }).to_string();
    let keys = KeyNames::default();
    let (work, skipped) = classify_json(&event, &keys).expect("a stream event");
    let parsed: Event = serde_json::from_str(&event).expect("event");
    let owned: Vec<Result<WorkItem, Skip>> = parsed
        .records
        .iter()
        .map(|r| classify_keyed(r, &keys))
        .collect();
    let owned_skipped = owned.iter().filter(|r| r.is_err()).count();
    let owned_work: Vec<WorkItem> = owned.into_iter().filter_map(Result::ok).collect();
    (
        (compared(&work), skipped),
        (compared(&owned_work), owned_skipped),
    )
}

/// The lean read's own decision of one record, without the owned path's help.
fn lean_only(record: &Value) -> Option<Result<WorkItem, Skip>> {
    let text = record.to_string();
    let parsed: Record<'_> = serde_json::from_str(&text).expect("record");
    lean(parsed).ok()
}

#[test]
fn a_good_record_is_decided_by_the_lean_read_alone_as_the_owned_parse_decides_it() {
    let r = record(Some("101"), "INSERT", image("1"));
    let Some(Ok(item)) = lean_only(&r) else {
        panic!("the lean read decides a well-formed pending message")
    };
    assert_eq!(item.id, "101");
    let Work::Publish(msg) = &item.work else {
        panic!("published")
    };
    assert_eq!(
        (msg.payload.as_str(), msg.topic.as_str(), msg.created_at),
        ("{\"n\":1}", "orders", 1_732_870_800_123)
    );
    assert!(msg.indexed(&Default::default()));
    let (lean, owned) = both(vec![r]);
    assert_eq!(lean, owned);
}

#[test]
fn updates_and_business_items_and_non_pending_inserts_are_skipped_alike() {
    let records = vec![
        record(Some("1"), "MODIFY", image("1")),
        record(Some("2"), "REMOVE", image("2")),
        record(
            Some("3"),
            "INSERT",
            json!({"PK": {"S": "USER#1"}, "SK": {"S": "PROFILE"}, "Name": {"S": "x"}}),
        ),
        record(
            Some("4"),
            "INSERT",
            with(image("4"), "ItemType", json!({"N": "1"})),
        ),
        record(Some("5"), "INSERT", with(image("5"), "Status", json!({"S": "SENT"}))),
        record(Some("6"), "INSERT", image("6")),
    ];
    assert!(matches!(lean_only(&records[0]), Some(Err(Skip::Update))));
    assert!(matches!(
        lean_only(&records[2]),
        Some(Err(Skip::BusinessItem))
    ));
    assert!(matches!(
        lean_only(&records[4]),
        Some(Err(Skip::NotPendingWhenInserted))
    ));
    let (lean, owned) = both(records);
    assert_eq!(lean.1, 5, "{lean:?}");
    assert_eq!(lean, owned);
}

#[test]
fn a_malformed_image_is_poison_with_the_owned_parse_s_reason() {
    let records = vec![
        record(Some("1"), "INSERT", with(image("1"), "Topic", json!({"N": "5"}))),
        record(Some("2"), "INSERT", without(image("2"), "Payload")),
        record(Some("3"), "INSERT", with(image("3"), "Topic", json!({"S": " "}))),
        record(
            Some("4"),
            "INSERT",
            with(image("4"), "LastError", json!({"BOOL": true})),
        ),
        record(
            Some("5"),
            "INSERT",
            with(image("5"), "RetryCount", json!({"S": "x"})),
        ),
    ];
    for r in &records {
        assert!(lean_only(r).is_none(), "left to the owned path: {r}");
    }
    let event = json!({ "Records": records }).to_string();
    let (work, skipped) = classify_json(&event, &KeyNames::default()).expect("event");
    assert_eq!((work.len(), skipped), (5, 0));
    for item in &work {
        let Work::Poison(p) = &item.work else {
            panic!("{item:?} is poison")
        };
        assert!(!p.reason.is_empty(), "{p:?}");
    }
    let (lean, owned) = both(records);
    assert_eq!(lean, owned);
}

#[test]
fn numbers_in_other_notations_and_escaped_strings_decode_alike() {
    let records = vec![
        record(Some("1"), "INSERT", with(image("1"), "Sequence", json!({"N": "1.5E3"}))),
        record(Some("2"), "INSERT", with(image("2"), "Sequence", json!({"N": "42"}))),
        record(Some("3"), "INSERT", with(image("3"), "CreatedAt", json!({"N": "17.9"}))),
        record(Some("4"), "INSERT", with(image("4"), "RetryCount", json!({"N": "-3"}))),
        record(
            Some("5"),
            "INSERT",
            with(image("5"), "SweepDueAt", json!({"N": "99999999999999999999"})),
        ),
        record(
            Some("6"),
            "INSERT",
            with(image("6"), "Payload", json!({"S": "line\nbreak \"quoted\" \u{e9}"})),
        ),
        record(Some("7"), "INSERT", without(image("7"), "MessageId")),
        keyed_apart(record(Some("8"), "INSERT", without(without(image("8"), "PK"), "SK"))),
        // A `NULL` the owned parse reads as absent: left to it, and published alike.
        record(Some("9"), "INSERT", with(image("9"), "SweepShard", json!({"NULL": true}))),
    ];
    assert!(lean_only(&records[8]).is_none());
    let (lean, owned) = both(records);
    assert_eq!(lean, owned);
}

#[test]
fn a_record_without_a_sequence_number_is_identified_by_its_event_id() {
    let records = vec![record(None, "INSERT", image("1"))];
    let event = json!({ "Records": records }).to_string();
    let (work, _) = classify_json(&event, &KeyNames::default()).expect("event");
    assert_eq!(work[0].id, "event-none");
    let (lean, owned) = both(records);
    assert_eq!(lean, owned);
}

#[test]
fn a_table_with_its_own_key_names_is_read_by_the_owned_path() {
    let keys = KeyNames::new("id", "sort");
    let image = json!({
        "id": {"S": "USER#1"}, "sort": {"S": "MESSAGE#X#1"},
        "ItemType": {"S": "PENDING_MESSAGE"}, "Status": {"S": "PENDING"},
        "Topic": {"S": "orders"}, "Payload": {"S": "p"}
    });
    let mut r = record(Some("1"), "INSERT", image.clone());
    r["dynamodb"]["Keys"] = json!({"id": image["id"], "sort": image["sort"]});
    let event = json!({ "Records": [r] }).to_string();
    let (work, _) = classify_json(&event, &keys).expect("event");
    let parsed: Event = serde_json::from_str(&event).expect("event");
    let owned = classify_keyed(&parsed.records[0], &keys).expect("work");
    assert_eq!(format!("{work:?}"), format!("{:?}", [owned]));
    assert!(matches!(&work[0].work, Work::Publish(m) if m.key.pk == "USER#1"));
}

#[test]
fn what_is_not_a_stream_event_is_an_error_not_a_panic() {
    let keys = KeyNames::default();
    for text in [
        "",
        "[]",
        "{}",
        r#"{"Records": [1]}"#,
        r#"{"Records": [{"eventName": "INSERT"}]}"#,
        r#"{"Records": [{"eventName": "INSERT", "eventID": "e", "awsRegion": "r", "dynamodb": {"SizeBytes": 1, "NewImage": {"Topic": {"S": 5}}}}]}"#,
    ] {
        assert!(classify_json(text, &keys).is_err(), "{text}");
        assert!(serde_json::from_str::<Event>(text).is_err(), "{text}");
    }
    let empty = classify_json(r#"{"Records": []}"#, &keys).expect("an empty batch");
    assert!(empty.0.is_empty());
}

#[test]
fn null_images_are_empty_as_in_the_owned_type() {
    let mut r = record(Some("1"), "INSERT", image("1"));
    r["dynamodb"]["NewImage"] = Value::Null;
    r["dynamodb"]["Keys"] = Value::Null;
    assert!(matches!(lean_only(&r), Some(Err(Skip::BusinessItem))));
    let (lean, owned) = both(vec![r]);
    assert_eq!(lean, owned);
}

#[test]
fn bytes_that_are_not_utf8_are_an_error_that_says_so() {
    let mut bytes = json!({"Records": [record(Some("1"), "INSERT", image("1"))]})
        .to_string()
        .into_bytes();
    let at = bytes.iter().position(|b| *b == b'x').expect("a payload byte");
    bytes[at] = 0xff;
    let error = classify_json(&bytes, &KeyNames::default()).expect_err("not UTF-8");
    assert!(error.to_string().contains("not UTF-8"), "{error}");
}

#[test]
fn every_attribute_the_lean_read_knows_is_found_at_its_index() {
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(attribute_index(name), Some(i), "{name}");
    }
    assert_eq!(attribute_index("Other"), None);
    assert_eq!(attribute_index("pk"), None);
}

#[test]
fn trace_attributes_are_read_alike_and_malformed_ones_leave_a_message_untraced() {
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let xray = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
    let traced = with(with(image("1"), "TraceParent", json!({"S": tp})), "TraceState", json!({"S": "k=v"}));
    let records = vec![
        record(Some("1"), "INSERT", traced),
        record(Some("2"), "INSERT", with(image("2"), "AwsTraceHeader", json!({"S": xray}))),
        record(Some("3"), "INSERT", with(image("3"), "TraceParent", json!({"S": "garbage"}))),
        record(Some("4"), "INSERT", with(image("4"), "TraceParent", json!({"N": "7"}))),
    ];
    let decided: Vec<_> = records.iter().map(lean_only).collect();
    let traces: Vec<Option<String>> = decided
        .iter()
        .map(|d| match d {
            Some(Ok(WorkItem { work: Work::Publish(m), .. })) => {
                m.trace.as_ref().map(|t| t.traceparent().to_owned())
            }
            other => panic!("published by the lean read alone: {other:?}"),
        })
        .collect();
    assert_eq!(traces, [Some(tp.to_owned()), Some(tp.to_owned()), None, None]);
    let (lean, owned) = both(records);
    assert_eq!(lean, owned);
}

/// On a global table every replica's stream carries every region's inserts: the
/// lean read and the owned parse keep only this region's messages (and, in the
/// default home region, those that name no home), and skip the rest alike — poison
/// included.
#[test]
fn another_regions_messages_are_skipped_by_both_reads_and_only_this_regions_published() {
    use dynamodb_outbox_core::HomeRegions;
    let homed = |seq: &str, home: Option<&str>| {
        let image = image(seq);
        let image = match home {
            Some(h) => with(image, "HomeRegion", json!({"S": h})),
            None => image,
        };
        record(Some(seq), "INSERT", image)
    };
    let poison_elsewhere = record(
        Some("5"),
        "INSERT",
        with(
            without(with(image("5"), "HomeRegion", json!({"S": "us-east-1"})), "Topic"),
            "Payload",
            json!({"S": "{}"}),
        ),
    );
    let records = vec![
        homed("1", Some("eu-west-1")),
        homed("2", Some("us-east-1")),
        homed("3", None),
        homed("4", Some("ap-south-1")),
        poison_elsewhere,
    ];
    let event = json!({ "Records": records }).to_string();
    let parsed: Event = serde_json::from_str(&event).expect("event");
    for (keys_home, published) in [
        (HomeRegions::in_region("eu-west-1").default_home("us-east-1"), vec!["m-1"]),
        (HomeRegions::in_region("us-east-1"), vec!["m-2", "m-3"]),
        (HomeRegions::default(), vec!["m-1", "m-2", "m-3", "m-4"]),
    ] {
        let keys = KeyNames::default().regions(keys_home.clone());
        let (work, skipped) = classify_json(&event, &keys).expect("a stream event");
        let ids: Vec<&str> = work
            .iter()
            .filter_map(|w| match &w.work {
                Work::Publish(m) => Some(m.message_id.as_str()),
                Work::Poison(_) => None,
            })
            .collect();
        let poison = work.iter().filter(|w| matches!(w.work, Work::Poison(_))).count();
        assert_eq!(ids, published, "{keys_home:?}");
        assert_eq!(skipped + ids.len() + poison, 5, "{keys_home:?}");
        assert_eq!(poison, usize::from(keys_home.owns(Some("us-east-1"))), "{keys_home:?}");
        let owned: Vec<Result<WorkItem, Skip>> = parsed
            .records
            .iter()
            .map(|r| classify_keyed(r, &keys))
            .collect();
        assert_eq!(
            owned.iter().filter(|r| r.is_err()).count(),
            skipped,
            "the owned parse skips the same: {keys_home:?}"
        );
        assert!(
            owned
                .iter()
                .filter_map(|r| r.as_ref().err())
                .all(|s| *s == Skip::HomedElsewhere),
            "{keys_home:?}"
        );
    }
}
