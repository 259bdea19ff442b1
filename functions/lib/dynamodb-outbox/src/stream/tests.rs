//! Each stream record decided as Lambda delivers it: JSON parsed into the owned event,
//! as `lambda_runtime` parses it for the publisher.

use super::*;
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

fn with(mut image: Value, name: &str, value: Value) -> Value {
    image[name] = value;
    image
}

fn without(mut image: Value, name: &str) -> Value {
    image.as_object_mut().map(|m| m.remove(name));
    image
}

/// Every record of an event made of `records`, decided for a table keyed `keys`.
fn decided(records: Vec<Value>, keys: &KeyNames) -> Vec<Result<WorkItem, Skip>> {
    let event: Event = serde_json::from_value(json!({ "Records": records })).expect("event");
    event
        .records
        .iter()
        .map(|r| classify_keyed(r, keys))
        .collect()
}

fn one(record: Value) -> Result<WorkItem, Skip> {
    let mut all = decided(vec![record], &KeyNames::default());
    all.pop().expect("one record")
}

#[test]
fn a_pending_message_is_published_under_its_sequence_number() {
    let item = one(record(Some("101"), "INSERT", image("1"))).expect("work");
    assert_eq!(item.id, "101");
    let Work::Publish(msg) = &item.work else {
        panic!("published: {item:?}")
    };
    assert_eq!(
        (msg.payload.as_str(), msg.topic.as_str(), msg.created_at),
        ("{\"n\":1}", "orders", 1_732_870_800_123)
    );
    assert!(msg.indexed(&Default::default()));
}

#[test]
fn updates_and_business_items_and_non_pending_inserts_are_skipped() {
    let skips: Vec<Option<Skip>> = decided(
        vec![
            record(Some("1"), "MODIFY", image("1")),
            record(Some("2"), "REMOVE", image("2")),
            record(
                Some("3"),
                "INSERT",
                json!({"PK": {"S": "USER#1"}, "SK": {"S": "PROFILE"}, "Name": {"S": "x"}}),
            ),
            record(Some("4"), "INSERT", with(image("4"), "ItemType", json!({"N": "1"}))),
            record(Some("5"), "INSERT", with(image("5"), "Status", json!({"S": "SENT"}))),
            record(Some("6"), "INSERT", image("6")),
        ],
        &KeyNames::default(),
    )
    .into_iter()
    .map(Result::err)
    .collect();
    assert_eq!(
        skips,
        [
            Some(Skip::Update),
            Some(Skip::Update),
            Some(Skip::BusinessItem),
            Some(Skip::BusinessItem),
            Some(Skip::NotPendingWhenInserted),
            None
        ]
    );
}

#[test]
fn a_malformed_image_is_poison_with_a_reason_never_a_panic() {
    let records = vec![
        record(Some("1"), "INSERT", with(image("1"), "Topic", json!({"N": "5"}))),
        record(Some("2"), "INSERT", without(image("2"), "Payload")),
        record(Some("3"), "INSERT", with(image("3"), "Topic", json!({"S": " "}))),
        record(Some("4"), "INSERT", with(image("4"), "LastError", json!({"BOOL": true}))),
        record(Some("5"), "INSERT", with(image("5"), "RetryCount", json!({"S": "x"}))),
    ];
    for (r, decision) in records.iter().zip(decided(records.clone(), &KeyNames::default())) {
        let item = decision.expect("poison is work: it is dead-lettered and marked FAILED");
        let Work::Poison(p) = &item.work else {
            panic!("{r} is poison: {item:?}")
        };
        assert!(!p.reason.is_empty(), "{p:?}");
    }
}

#[test]
fn a_record_without_a_sequence_number_is_identified_by_its_event_id() {
    let item = one(record(None, "INSERT", image("1"))).expect("work");
    assert_eq!(item.id, "event-none");
}

#[test]
fn null_images_are_read_as_empty_and_skipped() {
    let mut r = record(Some("1"), "INSERT", image("1"));
    r["dynamodb"]["NewImage"] = Value::Null;
    r["dynamodb"]["Keys"] = Value::Null;
    assert!(matches!(one(r), Err(Skip::BusinessItem)));
}

#[test]
fn malformed_trace_attributes_leave_a_message_untraced() {
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let xray = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
    let traced = with(
        with(image("1"), "TraceParent", json!({"S": tp})),
        "TraceState",
        json!({"S": "k=v"}),
    );
    let traces: Vec<Option<String>> = decided(
        vec![
            record(Some("1"), "INSERT", traced),
            record(Some("2"), "INSERT", with(image("2"), "AwsTraceHeader", json!({"S": xray}))),
            record(Some("3"), "INSERT", with(image("3"), "TraceParent", json!({"S": "garbage"}))),
            record(Some("4"), "INSERT", with(image("4"), "TraceParent", json!({"N": "7"}))),
        ],
        &KeyNames::default(),
    )
    .into_iter()
    .map(|d| match d {
        Ok(WorkItem {
            work: Work::Publish(m),
            ..
        }) => m.trace.as_ref().map(|t| t.traceparent().to_owned()),
        other => panic!("published: {other:?}"),
    })
    .collect();
    assert_eq!(traces, [Some(tp.to_owned()), Some(tp.to_owned()), None, None]);
}

/// On a global table every replica's stream carries every region's inserts: only this
/// region's messages (and, in the default home region, those that name no home) are
/// work — poison included.
#[test]
fn another_regions_messages_are_skipped_and_only_this_regions_published() {
    use dynamodb_outbox_core::HomeRegions;
    let homed = |seq: &str, home: Option<&str>| {
        let image = match home {
            Some(h) => with(image(seq), "HomeRegion", json!({"S": h})),
            None => image(seq),
        };
        record(Some(seq), "INSERT", image)
    };
    let poison_elsewhere = with(
        without(with(image("5"), "HomeRegion", json!({"S": "us-east-1"})), "Topic"),
        "Payload",
        json!({"S": "{}"}),
    );
    let records = vec![
        homed("1", Some("eu-west-1")),
        homed("2", Some("us-east-1")),
        homed("3", None),
        homed("4", Some("ap-south-1")),
        record(Some("5"), "INSERT", poison_elsewhere),
    ];
    for (home, published) in [
        (HomeRegions::in_region("eu-west-1").default_home("us-east-1"), vec!["m-1"]),
        (HomeRegions::in_region("us-east-1"), vec!["m-2", "m-3"]),
        (HomeRegions::default(), vec!["m-1", "m-2", "m-3", "m-4"]),
    ] {
        let keys = KeyNames::default().regions(home.clone());
        let all = decided(records.clone(), &keys);
        let ids: Vec<&str> = all
            .iter()
            .filter_map(|d| match d {
                Ok(WorkItem {
                    work: Work::Publish(m),
                    ..
                }) => Some(m.message_id.as_str()),
                _ => None,
            })
            .collect();
        let poison = all
            .iter()
            .filter(|d| matches!(d, Ok(WorkItem { work: Work::Poison(_), .. })))
            .count();
        assert_eq!(ids, published, "{home:?}");
        assert_eq!(poison, usize::from(home.owns(Some("us-east-1"))), "{home:?}");
        assert!(
            all.iter()
                .filter_map(|d| d.as_ref().err())
                .all(|s| *s == Skip::HomedElsewhere),
            "{home:?}"
        );
    }
}

#[test]
fn a_table_keyed_otherwise_than_the_deployment_is_poison_named_in_both_names() {
    // Issue 39: a table keyed tenant_id/entity_id, the deployment left at PK/SK.
    // Before, the reason read "the item has no `PK` attribute … see README.md".
    let image = json!({
        "tenant_id": {"S": "t-1"}, "entity_id": {"S": "MESSAGE#X#1"},
        "ItemType": {"S": "PENDING_MESSAGE"}, "Status": {"S": "PENDING"},
        "Topic": {"S": "orders"}, "Payload": {"S": "{}"}
    });
    let record: EventRecord = serde_json::from_value(json!({
        "eventID": "e-1", "eventName": "INSERT", "eventSource": "aws:dynamodb",
        "eventVersion": "1.1", "awsRegion": "eu-west-1",
        "dynamodb": {
            "Keys": {"tenant_id": image["tenant_id"].clone(), "entity_id": image["entity_id"].clone()},
            "NewImage": image, "SequenceNumber": "1", "SizeBytes": 100,
            "StreamViewType": "NEW_IMAGE"
        }
    }))
    .expect("a stream record");
    let work = classify(&record).expect("an outbox insert");
    let Work::Poison(poison) = work.work else {
        panic!("not poison: {work:?}");
    };
    for name in ["`entity_id` and `tenant_id`", "`PK` and `SK`", "OUTBOX_PARTITION_KEY", "partition_key_name"] {
        assert!(poison.reason.contains(name), "{name}: {}", poison.reason);
    }
    // And a deployment told the table's names reads it
    let keys = KeyNames {
        partition_key: "tenant_id".into(),
        sort_key: "entity_id".into(),
        ..KeyNames::default()
    };
    assert!(matches!(classify_keyed(&record, &keys).map(|w| w.work), Ok(Work::Publish(_))));
}
