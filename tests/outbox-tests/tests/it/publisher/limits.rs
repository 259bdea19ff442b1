//! Queue size limits: read from each queue once, a message over its queue's real
//! limit is poison before any send, a dead-letter copy over its queue's limit is not
//! sent (a record of it without the payload is).

use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{Destination, NewMessage, Routes};
use dynamodb_outbox_core::message::{ATTR_ERROR, ATTR_PAYLOAD_ON};
use outbox_tests::{Outbox, attr, drain, s};

/// A queue's `MaximumMessageSize` at the old default (and hashicorp/aws 5.x's).
const KIB_256: u32 = 262_144;
/// SQS's largest `MaximumMessageSize`.
const MIB_1: u32 = 1_048_576;
/// Over a 256 KiB queue's limit, well under 1 MiB.
const PAYLOAD_300_KIB: usize = 300 * 1024;

#[tokio::test]
async fn a_message_over_its_queues_real_limit_is_poison_before_any_send_and_fits_a_larger_queue() {
    // Given a queue created at 256 KiB and one at 1 MiB, routed without
    // `max_message_bytes`, a dead-letter queue at 1 MiB, and a 300 KiB message to each
    let mut ob = Outbox::new().await;
    let small = ob.sized_queue("small", KIB_256).await;
    let large = ob.sized_queue("large", MIB_1).await;
    let dlq = ob.sized_queue("outbox-dlq", MIB_1).await;
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"small":"{small}","large":"{large}"}}"#), None)
        .expect("routes");
    config.dead_letter = Destination::parse(&dlq, None).expect("dlq");
    let payload = "p".repeat(PAYLOAD_300_KIB);
    let c = ob
        .writer()
        .commit(
            vec![],
            &[
                NewMessage::new("A", "small", payload.clone()),
                NewMessage::new("B", "large", payload.clone()),
            ],
        )
        .await
        .expect("commit");
    // When a publisher started as the Lambda binary starts handles them
    let publisher = ob.publisher_learning(config).await;
    let event = ob.filtered_event().await;
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&publisher, &event).await;

    // Then nothing is reported for retry: one message is delivered, the other is poison
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!((summary.sent, summary.dead_lettered), (1, 1), "{summary:?}");
    // And no call was refused: one send to the 1 MiB queue and one dead-letter copy,
    // nothing to the 256 KiB queue
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        2,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    // And the poison's reason names the queue's own limit
    let a = ob.item("A", &c.sort_keys[0]).await.expect("A");
    assert_eq!(s(&a, "Status").as_deref(), Some("FAILED"));
    let reason = s(&a, "LastError").expect("LastError");
    assert!(
        reason.contains("at most 262144 bytes") && reason.contains("MaximumMessageSize"),
        "{reason}"
    );
    assert!(drain(&ob.clients.sqs, &small).await.is_empty());
    // And its copy, payload intact, is on the 1 MiB dead-letter queue
    let dead = drain(&ob.clients.sqs, &dlq).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body().map(str::len), Some(PAYLOAD_300_KIB));
    assert!(attr(&dead[0], ATTR_ERROR).is_some_and(|e| e.contains("MaximumMessageSize")));
    // And the same message to the 1 MiB queue is delivered and SENT
    let got = drain(&ob.clients.sqs, &large).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body().map(str::len), Some(PAYLOAD_300_KIB));
    let b = ob.item("B", &c.sort_keys[1]).await.expect("B");
    assert_eq!(s(&b, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_copy_over_the_dead_letter_queues_limit_is_not_sent_its_record_is_and_the_item_keeps_its_payload()
 {
    // Given a 300 KiB message to a queue at 256 KiB, and a dead-letter queue at 256 KiB
    let mut ob = Outbox::new().await;
    let small = ob.sized_queue("small", KIB_256).await;
    let dlq = ob.sized_queue("outbox-dlq", KIB_256).await;
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"small":"{small}"}}"#), None).expect("routes");
    config.dead_letter = Destination::parse(&dlq, None).expect("dlq");
    let c = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("A", "small", "p".repeat(PAYLOAD_300_KIB))],
        )
        .await
        .expect("commit");
    // When a publisher started as the Lambda binary starts handles it
    let publisher = ob.publisher_learning(config).await;
    let event = ob.filtered_event().await;
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&publisher, &event).await;

    // Then one call only: neither queue would take the message, so the dead-letter
    // queue gets a record of it without the payload
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        1,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    // And the item is FAILED, its payload kept on it, and its reason says both limits
    // and where the payload is
    let item = ob.item("A", &c.sort_keys[0]).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    assert_eq!(s(&item, "Payload").map(|p| p.len()), Some(PAYLOAD_300_KIB));
    assert!(!item.contains_key("PayloadOn"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(
        reason.contains("at most 262144 bytes") && reason.contains("dead-letter queue"),
        "{reason}"
    );
    assert!(reason.contains("only on this item"), "{reason}");
    assert!(drain(&ob.clients.sqs, &small).await.is_empty());
    let dead = drain(&ob.clients.sqs, &dlq).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(
        attr(&dead[0], ATTR_PAYLOAD_ON).as_deref(),
        Some("outbox item")
    );
}

#[tokio::test]
async fn limits_are_read_once_per_queue_a_routes_own_wins_and_an_unreadable_queue_gets_the_default()
{
    // Given two routes to a queue at 256 KiB, a third with its own
    // `max_message_bytes`, and a dead-letter queue at 1 MiB
    let ob = Outbox::new().await;
    let small = ob.sized_queue("small", KIB_256).await;
    let dlq = ob.sized_queue("outbox-dlq", MIB_1).await;
    let mut config = ob.config();
    config.routes = Routes::parse(
        &format!(
            r#"{{"a":"{small}","b":"{small}","c":{{"destination":"{small}","max_message_bytes":100000}}}}"#
        ),
        None,
    )
    .expect("routes");
    config.dead_letter = Destination::parse(&dlq, None).expect("dlq");
    let max = |c: &dynamodb_outbox::PublisherConfig, topic: &str| {
        c.routes
            .resolve(topic)
            .map(|d| (d.max_message_bytes(), d.limit_source()))
    };

    // When the limits are learned
    ob.clients.counter.reset();
    let learned = ob.clients.sink().learn_limits(config.clone()).await;
    // Then each queue is read once, the one whose route sets a limit not at all
    assert_eq!(ob.clients.counter.of(&["GetQueueAttributes"]), 2);
    let queue = "the queue's MaximumMessageSize";
    assert_eq!(max(&learned, "a"), Some((262_144, queue)));
    assert_eq!(max(&learned, "b"), Some((262_144, queue)));
    assert_eq!(
        max(&learned, "c"),
        Some((100_000, "the route's max_message_bytes"))
    );
    assert_eq!(learned.dead_letter.max_message_bytes(), 1_048_576);
    assert_eq!(learned.dead_letter.limit_source(), queue);

    // When every lookup is throttled
    let plan = "GetQueueAttributes:throttle:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(1));
    let unread = dynamodb_outbox::sink::AwsSink::from_conf(&faulty)
        .learn_limits(config)
        .await;
    // Then the queues get SQS's default, the route's own limit still applies
    let default = "SQS's largest message";
    assert_eq!(max(&unread, "a"), Some((1_048_576, default)));
    assert_eq!(
        max(&unread, "c"),
        Some((100_000, "the route's max_message_bytes"))
    );
    assert_eq!(unread.dead_letter.limit_source(), default);
}
