//! Real Lambda event JSON: parsed, round-tripped, classified as the publisher would,
//! and answered by our own stream handler; the library's copy of the stream filter
//! checked against the deployed one. No emulator needed.

use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox::stream::{Skip, classify, handle_stream_event};
use dynamodb_outbox_core::fakes::{MemoryStore, RecordingSink, Refusals};
use dynamodb_outbox_core::publish::Work;
use dynamodb_outbox_core::{Destination, ManualClock, Publisher, PublisherConfig, Routes};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_lambda_dynamodb_stream_event_round_trips_through_the_event_types() {
    let text = fixture("dynamodb-stream-outbox.json");
    let event: Event = serde_json::from_str(&text).expect("parses");
    assert_eq!(event.records.len(), 4);
    let again: Event = serde_json::from_value(serde_json::to_value(&event).expect("serialises"))
        .expect("re-parses");
    assert_eq!(again, event);
    // Every attribute of the original survives; an absent image comes back empty.
    let norm = |v: &Value| {
        if v.is_null() {
            serde_json::json!({})
        } else {
            v.clone()
        }
    };
    let original: Value = serde_json::from_str(&text).expect("json");
    let round: Value = serde_json::to_value(&again).expect("json");
    for (i, rec) in original["Records"]
        .as_array()
        .expect("records")
        .iter()
        .enumerate()
    {
        for field in ["Keys", "NewImage", "SequenceNumber", "StreamViewType"] {
            assert_eq!(
                norm(&rec["dynamodb"][field]),
                norm(&round["Records"][i]["dynamodb"][field]),
                "record {i} {field}"
            );
        }
        assert_eq!(rec["eventName"], round["Records"][i]["eventName"]);
    }
}

#[test]
fn only_the_pending_insert_in_the_fixture_is_work_for_the_publisher() {
    let event: Event =
        serde_json::from_str(&fixture("dynamodb-stream-outbox.json")).expect("parses");
    let verdicts: Vec<_> = event.records.iter().map(classify).collect();
    match &verdicts[0] {
        Ok(item) => {
            assert_eq!(item.id, "111100000000012345678901");
            match &item.work {
                Work::Publish(m) => {
                    assert_eq!(m.message_id, "01937a2b-4c5d-7e6f-8a9b-0c1d2e3f4a5b");
                    assert_eq!(m.topic, "user-profile-updated");
                    assert_eq!(m.created_at, 1_732_870_800_123);
                }
                other => panic!("expected a message, got {other:?}"),
            }
        }
        other => panic!("expected work, got {other:?}"),
    }
    assert_eq!(
        verdicts[1].as_ref().err(),
        Some(&Skip::Update),
        "the SENT update"
    );
    assert_eq!(
        verdicts[2].as_ref().err(),
        Some(&Skip::Update),
        "the TTL delete"
    );
    assert_eq!(
        verdicts[3].as_ref().err(),
        Some(&Skip::BusinessItem),
        "the business item"
    );
}

/// Our publisher over in-memory fakes, the fixture's topic routed to a queue that
/// works, or to one whose every call fails when `down`.
fn publisher(down: bool) -> Publisher<RecordingSink, MemoryStore> {
    let queue = if down {
        "https://sqs.eu-west-1.amazonaws.com/123456789012/profiles-down"
    } else {
        "https://sqs.eu-west-1.amazonaws.com/123456789012/profiles"
    };
    let config = PublisherConfig {
        table_name: "AppCoreTable".into(),
        routes: Routes::new(
            [("user-profile-updated".to_owned(), Destination::sqs(queue))],
            None,
        ),
        dead_letter: Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    };
    let sink = RecordingSink::new(Refusals {
        down: vec!["profiles-down".into()],
        ..Refusals::default()
    });
    Publisher::new(sink, MemoryStore::default(), config)
        .with_clock(ManualClock::at(1_732_870_900_000))
}

#[tokio::test]
async fn our_handler_answers_the_fixture_event_with_lambdas_partial_batch_response() {
    let event: Event =
        serde_json::from_str(&fixture("dynamodb-stream-outbox.json")).expect("parses");

    // When the destination fails, the one pending insert is reported by its sequence
    // number, in the shape Lambda reads
    let down = publisher(true);
    let (response, summary) = handle_stream_event(&down, &event).await;
    assert_eq!(summary.retried, 1, "{summary:?}");
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        serde_json::json!({"batchItemFailures": [{"itemIdentifier": "111100000000012345678901"}]})
    );

    // When it works, the message is published once and nothing is reported
    let up = publisher(false);
    let (response, summary) = handle_stream_event(&up, &event).await;
    assert_eq!((summary.sent, summary.retried), (1, 0), "{summary:?}");
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        serde_json::json!({"batchItemFailures": []})
    );
    assert_eq!(up.sink.delivered("profiles").len(), 1);
}
