//! The stream publisher against the emulator: real stream records, read back from the
//! emulator's stream and shaped as Lambda delivers them, through the same handler the
//! Lambda binary calls.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_sdk_dynamodb::types::{ConditionCheck, Put, TransactWriteItem};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use dynamodb_outbox::message::{
    ATTR_AGGREGATE, ATTR_CREATED_AT, ATTR_ERROR, ATTR_MESSAGE_ID, ATTR_TOPIC,
};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{Destination, FromSdkConfig, NewMessage, ProducerError, Routes};
use outbox_tests::{Outbox, attr, drain, n, nv, s, sv, system_attr};
use std::collections::HashMap;

fn business_put(table: &str, pk: &str, name: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .item("PK", sv(pk))
        .item("SK", sv("PROFILE"))
        .item("ItemType", sv("USER_PROFILE"))
        .item("Name", sv(name))
        .build()
        .expect("put");
    TransactWriteItem::builder().put(put).build()
}

#[tokio::test]
async fn a_committed_message_is_published_with_its_attributes_and_marked_sent() {
    // Given a business write and its message committed together
    let mut ob = Outbox::new().await;
    let committed = ob
        .writer()
        .commit(
            vec![business_put(&ob.table, "USER#1", "Zhang San")],
            &[NewMessage::new("USER#1", "orders", r#"{"order":1}"#).event_type("ORDER_PLACED")],
        )
        .await
        .expect("commit");
    // When the publisher handles the stream records, filtered as deployed
    let event = ob.filtered_event().await;
    assert_eq!(
        event.records.len(),
        1,
        "the filter keeps only the outbox insert"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    // Then the message is on the queue with its attributes
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 1);
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!(m.body(), Some(r#"{"order":1}"#));
    assert_eq!(
        attr(m, ATTR_MESSAGE_ID).as_deref(),
        Some(committed.message_ids[0].as_str())
    );
    assert_eq!(attr(m, ATTR_TOPIC).as_deref(), Some("orders"));
    assert_eq!(attr(m, ATTR_AGGREGATE).as_deref(), Some("USER#1"));
    assert!(attr(m, ATTR_CREATED_AT).is_some_and(|v| v.parse::<i64>().is_ok()));
    // And the item is SENT, with SentAt and a TTL, out of the sweeper index
    let item = ob
        .item("USER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    let sent_at = n(&item, "SentAt").expect("SentAt");
    let expires = n(&item, "ExpiresAt").expect("ExpiresAt");
    assert_eq!(expires, sent_at / 1000 + 7 * 86_400);
    assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
    // And the business item landed too
    assert!(ob.item("USER#1", "PROFILE").await.is_some());
}

#[tokio::test]
async fn an_item_written_like_the_boto3_producer_is_published_with_a_derived_id() {
    // Given the minimal item of the hand-written boto3 producer (no MessageId, no index keys)
    let mut ob = Outbox::new().await;
    let sk = "MESSAGE#PROFILE_UPDATED#1698765432";
    ob.put_raw(HashMap::from([
        ("PK".to_owned(), sv("USER#123")),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv("orders")),
        ("Payload".to_owned(), sv(r#"{"user_id":"123"}"#)),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ]))
    .await;
    // When it is published
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher(), &event).await;
    // Then it arrives with the id derived from PK+SK, and is SENT
    assert!(response.batch_item_failures.is_empty());
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    let expected = dynamodb_outbox::schema::derive_message_id(&dynamodb_outbox::schema::ItemKey {
        pk: "USER#123".into(),
        sk: sk.into(),
    });
    assert_eq!(attr(&msgs[0], ATTR_MESSAGE_ID), Some(expected));
    let item = ob.item("USER#123", sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_rolled_back_transaction_publishes_nothing_and_names_the_failed_action() {
    // Given a transaction whose business condition fails
    let mut ob = Outbox::new().await;
    let check = ConditionCheck::builder()
        .table_name(&ob.table)
        .key("PK", sv("USER#9"))
        .key("SK", sv("PROFILE"))
        .condition_expression("attribute_exists(PK)")
        .build()
        .expect("check");
    let err = ob
        .writer()
        .commit(
            vec![TransactWriteItem::builder().condition_check(check).build()],
            &[NewMessage::new("USER#9", "orders", "{}")],
        )
        .await
        .expect_err("condition fails");
    // Then the error names the action and the reason
    match &err {
        ProducerError::Cancelled { failures } => {
            assert_eq!(failures.len(), 1, "{err}");
            assert_eq!(failures[0].index, 0);
            assert_eq!(failures[0].code, "ConditionalCheckFailed");
            assert!(failures[0].action.contains("ConditionCheck"), "{err}");
        }
        other => panic!("expected a cancellation, got {other}"),
    }
    // And nothing reaches the stream, the table or the queue
    let event = ob.stream_event().await;
    assert!(
        event.records.is_empty(),
        "no stream record for a rolled-back transaction"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 0);
    assert!(ob.all_items().await.is_empty());
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
}

#[tokio::test]
async fn the_same_event_delivered_twice_is_not_an_error_and_keeps_one_message_id() {
    // Given one committed message for each queue kind
    let mut ob = Outbox::new().await;
    ob.writer()
        .commit(
            vec![],
            &[
                NewMessage::new("A#1", "orders", "{}"),
                NewMessage::new("A#1", "ledger", "{}"),
            ],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let publisher = ob.publisher();
    // When the same event is handled twice (Lambda retries, or a second instance)
    let (first, s1) = handle_stream_event(&publisher, &event).await;
    let (second, s2) = handle_stream_event(&publisher, &event).await;
    // Then neither reports a failure; only the first marks the items
    assert!(first.batch_item_failures.is_empty() && second.batch_item_failures.is_empty());
    assert_eq!((s1.sent, s1.unmarked), (2, 0));
    assert_eq!(
        (s2.sent, s2.unmarked),
        (2, 2),
        "the second run finds the items already SENT"
    );
    // And the standard queue holds two copies with the same MessageId (consumers dedup on it)
    let std = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(std.len(), 2);
    assert_eq!(
        attr(&std[0], ATTR_MESSAGE_ID),
        attr(&std[1], ATTR_MESSAGE_ID)
    );
    // And the FIFO queue deduplicated the copy by MessageId
    let fifo = drain(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(fifo.len(), 1);
}

#[tokio::test]
async fn a_failed_send_is_reported_with_later_messages_of_its_aggregate_only() {
    // Given messages of two aggregates, where A's first message goes to a queue that
    // does not exist (the send fails)
    let mut ob = Outbox::new().await;
    let missing = ob.queue.url.replace("orders-", "missing-");
    let mut config = ob.config();
    config.routes = Routes::new(
        [
            ("orders".to_owned(), Destination::sqs(&ob.queue.url)),
            ("broken".to_owned(), Destination::sqs(&missing)),
        ],
        None,
    );
    let w = ob.writer();
    w.commit(vec![], &[NewMessage::new("A", "broken", "a1")])
        .await
        .expect("a1");
    w.commit(vec![], &[NewMessage::new("B", "orders", "b1")])
        .await
        .expect("b1");
    w.commit(vec![], &[NewMessage::new("A", "orders", "a2")])
        .await
        .expect("a2");
    w.commit(vec![], &[NewMessage::new("B", "orders", "b2")])
        .await
        .expect("b2");
    let event = ob.filtered_event().await;
    let seq: Vec<String> = event
        .records
        .iter()
        .map(|r| r.change.sequence_number.clone().expect("sequence"))
        .collect();
    // When the batch is handled
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then exactly A1 (failed) and A2 (held back behind it) are reported
    let mut failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    let mut expected = vec![seq[0].clone(), seq[2].clone()];
    expected.sort();
    assert_eq!(failed, expected);
    assert_eq!(summary.sent, 2);
    // And B's messages went out, A2 did not overtake A1
    let bodies: Vec<String> = drain(&ob.clients.sqs, &ob.queue.url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    let mut sorted = bodies.clone();
    sorted.sort();
    assert_eq!(sorted, ["b1", "b2"]);
    // And the failed messages are still PENDING, for the retry or the sweeper
    let pending = ob
        .all_items()
        .await
        .into_iter()
        .filter(|i| s(i, "Status").as_deref() == Some("PENDING"))
        .count();
    assert_eq!(pending, 2);
}

#[tokio::test]
async fn poison_items_become_failed_with_a_reason_and_a_dead_letter_copy() {
    // Given an undecodable item, an unrouted topic, a payload over the destination's
    // limit, and one good message in between
    let mut ob = Outbox::new().await;
    let base = |pk: &str, sk: &str, topic: &str| {
        HashMap::from([
            ("PK".to_owned(), sv(pk)),
            ("SK".to_owned(), sv(sk)),
            ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
            ("Status".to_owned(), sv("PENDING")),
            ("Topic".to_owned(), sv(topic)),
        ])
    };
    let mut malformed = base("P#1", "MESSAGE#X#1", "orders");
    malformed.insert(
        "Payload".into(),
        aws_sdk_dynamodb::types::AttributeValue::Bool(true),
    );
    ob.put_raw(malformed).await;
    let mut unrouted = base("P#2", "MESSAGE#X#2", "nowhere");
    unrouted.insert("Payload".into(), sv("{\"n\":2}"));
    ob.put_raw(unrouted).await;
    let mut good = base("P#3", "MESSAGE#X#3", "orders");
    good.insert("Payload".into(), sv("{\"n\":3}"));
    ob.put_raw(good).await;
    let mut big = base("P#4", "MESSAGE#X#4", "small");
    big.insert("Payload".into(), sv(&"x".repeat(5000)));
    ob.put_raw(big).await;
    let mut config = ob.config();
    config.routes = Routes::parse(
        &format!(
            r#"{{"orders":"{}","small":{{"destination":"{}","max_message_bytes":4096}}}}"#,
            ob.queue.url, ob.queue.url
        ),
        None,
    )
    .expect("routes");
    // When the batch is handled
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 4);
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then nothing is reported for retry: poison never blocks the shard
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.sent, summary.dead_lettered), (1, 3));
    // And each poison item is FAILED with a reason an operator understands
    let reason = |pk: &str, sk: &str| {
        let ob = &ob;
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        async move {
            let item = ob.item(&pk, &sk).await.expect("item");
            assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"), "{pk}");
            assert!(!item.contains_key("SweepShard"));
            s(&item, "LastError").expect("LastError")
        }
    };
    assert!(reason("P#1", "MESSAGE#X#1").await.contains("Payload"));
    assert!(
        reason("P#2", "MESSAGE#X#2")
            .await
            .contains("no route for topic `nowhere`")
    );
    assert!(reason("P#4", "MESSAGE#X#4").await.contains("at most 4096"));
    assert_eq!(
        s(
            &ob.item("P#3", "MESSAGE#X#3").await.expect("good"),
            "Status"
        )
        .as_deref(),
        Some("SENT")
    );
    // And the dead-letter queue holds a copy of each, payload intact, reason attached
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 3);
    let by_pk: HashMap<String, &aws_sdk_sqs::types::Message> = dead
        .iter()
        .map(|m| (attr(m, ATTR_AGGREGATE).expect("aggregate"), m))
        .collect();
    assert_eq!(by_pk["P#2"].body(), Some("{\"n\":2}"));
    assert_eq!(by_pk["P#4"].body().map(str::len), Some(5000));
    assert!(
        by_pk["P#1"].body().is_some_and(|b| b.contains("BOOL")),
        "raw item kept"
    );
    assert!(dead.iter().all(|m| attr(m, ATTR_ERROR).is_some()));
}

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
async fn a_copy_over_the_dead_letter_queues_limit_is_not_sent_and_the_item_keeps_its_payload() {
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

    // Then no call is made at all: neither queue would take it
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        0,
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
    assert!(drain(&ob.clients.sqs, &dlq).await.is_empty());
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

#[tokio::test]
async fn fifo_messages_carry_the_aggregate_as_group_and_message_id_as_dedup_id_in_order() {
    let mut ob = Outbox::new().await;
    let w = ob.writer();
    let mut ids = Vec::new();
    for i in 0..5 {
        let c = w
            .commit(
                vec![],
                &[NewMessage::new("ACCOUNT#7", "ledger", format!("{{\"n\":{i}}}")).sequence(i)],
            )
            .await
            .expect("commit");
        ids.push(c.message_ids[0].clone());
    }
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    let msgs = drain(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(msgs.len(), 5);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageGroupId).as_deref(),
            Some("ACCOUNT#7")
        );
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageDeduplicationId).as_deref(),
            Some(ids[i].as_str())
        );
        assert_eq!(
            m.body(),
            Some(format!("{{\"n\":{i}}}").as_str()),
            "order kept"
        );
    }
}

#[tokio::test]
async fn batches_split_at_ten_entries() {
    let mut ob = Outbox::new().await;
    let msgs: Vec<NewMessage> = (0..25)
        .map(|i| NewMessage::new(format!("A#{i}"), "orders", "{}"))
        .collect();
    for chunk in msgs.chunks(25) {
        ob.writer().commit(vec![], chunk).await.expect("commit");
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 25);
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 25);
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        3,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    // (The marks are batched: tests/outbox-tests/tests/marks.rs counts them.)
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 25);
}

#[tokio::test]
async fn batches_split_by_size_under_one_mebibyte() {
    let mut ob = Outbox::new().await;
    // 12 messages of 200 KiB: five fit in 1 MiB, so 3 calls (the count limit alone would give 2)
    let payload = "p".repeat(200 * 1024);
    for i in 0..12 {
        ob.writer()
            .commit(
                vec![],
                &[NewMessage::new(
                    format!("BIG#{i}"),
                    "orders",
                    payload.clone(),
                )],
            )
            .await
            .expect("commit");
    }
    let event = ob.filtered_event().await;
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.sent, 12);
    assert_eq!(ob.clients.counter.of(&["SendMessageBatch"]), 3);
    let got = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(got.len(), 12);
    assert!(
        got.iter()
            .all(|m| m.body().map(str::len) == Some(200 * 1024))
    );
}

#[tokio::test]
async fn modify_and_remove_records_are_ignored_even_without_the_filter() {
    // Given a message published once, then changed (its SENT mark is a MODIFY record
    // too, where the emulator records one: MiniStack's PartiQL UPDATE writes none)
    let mut ob = Outbox::new().await;
    let c = ob
        .writer()
        .commit(vec![], &[NewMessage::new("A", "orders", "{}")])
        .await
        .expect("commit");
    let first = ob.stream_event().await;
    handle_stream_event(&ob.publisher(), &first).await;
    drain(&ob.clients.sqs, &ob.queue.url).await;
    ob.clients
        .dynamodb
        .update_item()
        .table_name(&ob.table)
        .key("PK", sv("A"))
        .key("SK", sv(&c.sort_keys[0]))
        .update_expression("SET Note = :n")
        .expression_attribute_values(":n", sv("looked at"))
        .send()
        .await
        .expect("modify");
    // and then deleted (as TTL would)
    ob.clients
        .dynamodb
        .delete_item()
        .table_name(&ob.table)
        .key("PK", sv("A"))
        .key("SK", sv(&c.sort_keys[0]))
        .send()
        .await
        .expect("delete");
    // When the unfiltered MODIFY and REMOVE records reach the handler
    let later = ob.stream_event().await;
    let names: Vec<&str> = later
        .records
        .iter()
        .map(|r| r.event_name.as_str())
        .collect();
    let (last, before) = names.split_last().expect("records");
    assert_eq!(*last, "REMOVE", "{names:?}");
    assert!(
        !before.is_empty() && before.iter().all(|n| *n == "MODIFY"),
        "{names:?}"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;
    // Then nothing is published and nothing reported
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary, dynamodb_outbox::publish::Summary::default());
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
}

#[tokio::test]
async fn a_minimal_item_the_stream_path_cannot_finish_is_put_in_the_sweeper_index() {
    // Given a boto3-style item (no index keys) whose destination is failing
    let mut ob = Outbox::new().await;
    let sk = "MESSAGE#PROFILE_UPDATED#1698765432";
    ob.put_raw(HashMap::from([
        ("PK".to_owned(), sv("USER#77")),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv("orders")),
        ("Payload".to_owned(), sv("{}")),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ]))
    .await;
    let mut config = ob.config();
    config.routes = Routes::new(
        [(
            "orders".to_owned(),
            Destination::sqs(ob.queue.url.replace("orders-", "missing-")),
        )],
        None,
    );
    // When the publisher cannot send it
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert_eq!(response.batch_item_failures.len(), 1, "reported for retry");
    // Then it is in the sweeper index, so it is not lost when the stream gives up
    let item = ob.item("USER#77", sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert_eq!(
        s(&item, "SweepShard"),
        Some(dynamodb_outbox::schema::sweep_shard("USER#77"))
    );
    assert!(n(&item, "SweepDueAt").is_some());
}

/// A pending outbox item as a minimal producer writes it (no index attributes).
fn minimal_item(pk: &str, sk: &str, topic: &str, payload: &str) -> outbox_tests::Item {
    HashMap::from([
        ("PK".to_owned(), sv(pk)),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv(topic)),
        ("Payload".to_owned(), sv(payload)),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ])
}

#[tokio::test]
async fn an_item_at_the_size_limit_that_cannot_be_published_ends_failed_with_one_dead_letter_copy()
{
    // Given a pending item as large as the table accepts, outside the sweeper index,
    // on a topic with no route: poison, and too large to take a `LastError` as it is
    let mut ob = Outbox::new().await;
    let (pk, sk) = ("BIG#1", "MESSAGE#X#1");
    let payload_len = ob.put_largest(minimal_item(pk, sk, "nowhere", "")).await;
    assert!(payload_len > 390 * 1024, "{payload_len}");

    // When the publisher handles its record
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 1);
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;

    // Then the item is FAILED with its reason, and its payload, copied once to the
    // dead-letter queue, is no longer on the item, which says where it went
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    let item = ob.item(pk, sk).await.expect("item");
    assert_eq!(
        s(&item, "Status").as_deref(),
        Some("FAILED"),
        "{:?}",
        s(&item, "LastError")
    );
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("no route for topic `nowhere`"), "{reason}");
    assert!(n(&item, "FailedAt").is_some());
    assert!(!item.contains_key("Payload"));
    assert_eq!(s(&item, "PayloadOn").as_deref(), Some("dead-letter queue"));
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body().map(str::len), Some(payload_len));

    // When the same record is delivered again (a replay after a checkpoint)
    let (again, _) = handle_stream_event(&ob.publisher(), &event).await;
    // Then nothing is reported and no second copy is sent
    assert!(again.batch_item_failures.is_empty());
    assert!(drain(&ob.clients.sqs, &ob.dlq_url).await.is_empty());
}

#[tokio::test]
async fn poison_delivered_again_after_it_is_failed_is_not_dead_lettered_twice() {
    // Given a message on a topic with no route, dead-lettered and FAILED
    let mut ob = Outbox::new().await;
    ob.put_raw(minimal_item("P#1", "MESSAGE#X#1", "nowhere", "{}"))
        .await;
    let event = ob.filtered_event().await;
    let (first, _) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(first.batch_item_failures.is_empty());
    let item = ob.item("P#1", "MESSAGE#X#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    assert_eq!(drain(&ob.clients.sqs, &ob.dlq_url).await.len(), 1);

    // When Lambda delivers the record again (a checkpoint before it)
    let (second, summary) = handle_stream_event(&ob.publisher(), &event).await;

    // Then it is neither copied again nor counted as a new failure
    assert!(second.batch_item_failures.is_empty());
    assert_eq!(summary.dead_lettered, 0, "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.dlq_url).await.is_empty());
}

#[tokio::test]
async fn an_item_with_foreign_index_attributes_the_stream_path_cannot_finish_is_reindexed() {
    // Given items whose index attributes no sweep would ever claim — a shard outside
    // the sixteen, a due time with a fraction — on a destination that is failing
    let mut ob = Outbox::new().await;
    let mut foreign_shard = minimal_item("USER#1", "MESSAGE#X#1", "orders", "{}");
    foreign_shard.insert("SweepShard".into(), sv("99"));
    foreign_shard.insert("SweepDueAt".into(), nv(1));
    ob.put_raw(foreign_shard).await;
    let mut fractional = minimal_item("USER#2", "MESSAGE#X#2", "orders", "{}");
    fractional.insert(
        "SweepShard".into(),
        sv(&dynamodb_outbox::schema::sweep_shard("USER#2")),
    );
    fractional.insert(
        "SweepDueAt".into(),
        aws_sdk_dynamodb::types::AttributeValue::N("1700000000000.5".into()),
    );
    ob.put_raw(fractional).await;
    let mut config = ob.config();
    config.routes = Routes::new(
        [(
            "orders".to_owned(),
            Destination::sqs(ob.queue.url.replace("orders-", "missing-")),
        )],
        None,
    );

    // When the publisher cannot send them
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert_eq!(response.batch_item_failures.len(), 2);

    // Then both are in the sweeper index with values a sweep claims
    for pk in ["USER#1", "USER#2"] {
        let sk = if pk == "USER#1" {
            "MESSAGE#X#1"
        } else {
            "MESSAGE#X#2"
        };
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(
            s(&item, "SweepShard"),
            Some(dynamodb_outbox::schema::sweep_shard(pk)),
            "{pk}"
        );
        match item.get("SweepDueAt") {
            Some(aws_sdk_dynamodb::types::AttributeValue::N(due)) => {
                assert!(
                    due.parse::<i64>().is_ok_and(|d| d > 1_700_000_000_000),
                    "{pk}: {due}"
                );
            }
            other => panic!("{pk}: {other:?}"),
        }
    }
}

/// A business write that creates the order, once: a second write of it is cancelled.
fn create_order(table: &str, id: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .item("PK", sv(&format!("ORDER#{id}")))
        .item("SK", sv("ORDER"))
        .item("ItemType", sv("ORDER"))
        .condition_expression("attribute_not_exists(PK)")
        .build()
        .expect("put");
    TransactWriteItem::builder().put(put).build()
}

/// The outbox items in the table.
async fn outbox_items(ob: &Outbox) -> Vec<outbox_tests::Item> {
    ob.all_items()
        .await
        .into_iter()
        .filter(|i| s(i, "ItemType").as_deref() == Some("PENDING_MESSAGE"))
        .collect()
}

#[tokio::test]
async fn a_commit_whose_answer_was_lost_is_retried_safely_and_writes_its_message_once() {
    // Given a transaction prepared once, and a client whose every TransactWriteItems
    // takes effect while its caller sees a timeout
    let mut ob = Outbox::new().await;
    let prepared = ob
        .writer()
        .prepare(
            vec![create_order(&ob.table, "1")],
            &[NewMessage::new("ORDER#1", "orders", r#"{"order":1}"#)],
        )
        .expect("prepare");
    let plan = "TransactWriteItems:lost_response:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(3));
    let lossy =
        dynamodb_outbox::OutboxWriter::new(aws_sdk_dynamodb::Client::new(&faulty), &ob.table);

    // When the commit fails with a retryable error, and the caller retries it
    let err = lossy
        .commit_prepared(&prepared)
        .await
        .expect_err("answer lost");
    assert!(err.is_retryable(), "{err}");
    let committed = ob
        .writer()
        .commit_prepared(&prepared)
        .await
        .expect("the retry succeeds");

    // Then the outbox holds the message once, under the prepared id
    assert_eq!(&committed, prepared.committed());
    let items = outbox_items(&ob).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        s(&items[0], "MessageId"),
        Some(committed.message_ids[0].clone())
    );
    assert!(ob.item("ORDER#1", "ORDER").await.is_some());
    // And the publisher sees one new message
    assert_eq!(ob.filtered_event().await.records.len(), 1);
}

#[tokio::test]
async fn a_repeat_after_the_idempotency_window_is_recognised_by_its_messages() {
    // Given a prepared transaction that committed long ago: its token forgotten (sent
    // here without one, as DynamoDB forgets tokens after 10 minutes)
    let ob = Outbox::new().await;
    let prepared = ob
        .writer()
        .prepare(
            vec![create_order(&ob.table, "2")],
            &[
                NewMessage::new("ORDER#2", "orders", "{}"),
                NewMessage::new("ORDER#2", "ledger", "{}"),
            ],
        )
        .expect("prepare");
    ob.clients
        .dynamodb
        .transact_write_items()
        .set_transact_items(Some(prepared.actions().to_vec()))
        .send()
        .await
        .expect("the first attempt commits");

    // When it is sent again
    let committed = ob
        .writer()
        .commit_prepared(&prepared)
        .await
        .expect("recognised as committed");

    // Then nothing new is written and the caller learns it committed
    assert_eq!(&committed, prepared.committed());
    assert_eq!(outbox_items(&ob).await.len(), 2);
}

/// The sort keys of an event's records.
fn record_sks(event: &aws_lambda_events::event::dynamodb::Event) -> Vec<String> {
    event
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox::schema::item_key(&r.change.keys).map(|k| k.sk))
        .collect()
}

#[tokio::test]
async fn a_fifo_message_whose_earlier_one_is_still_pending_is_left_for_the_sweeper_in_order() {
    // Given two FIFO messages of one account, and a batch holding only the later one:
    // the mapping discarded the earlier one's records (it is still PENDING)
    let mut ob = Outbox::new().await;
    let w = ob.writer().sweep_grace(std::time::Duration::ZERO);
    let mut sks = Vec::new();
    for n in 0..2 {
        let c = w
            .commit(
                vec![],
                &[NewMessage::new("ACCOUNT#9", "ledger", format!("m{n}"))],
            )
            .await
            .expect("commit");
        sks.push(c.sort_keys[0].clone());
    }
    let event = ob.filtered_event().await;
    assert_eq!(record_sks(&event), sks);
    let later = outbox_tests::stream::event_of(event.records[1..].to_vec());

    // When the stream publisher handles it
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;

    // Then it is neither published (it would overtake) nor reported for retry (which
    // would stall the shard): it waits, PENDING, in the sweeper index
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.sent, summary.deferred), (0, 1), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let item = ob.item("ACCOUNT#9", &sks[1]).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert!(n(&item, "SweepDueAt").is_some());

    // And the sweeper publishes both, in order
    let sweeper = dynamodb_outbox::sweep::AwsSweeper::with_sink(
        dynamodb_outbox::sweep::SweeperConfig::new(ob.config()),
        ob.clients.dynamodb.clone(),
        ob.clients.sink(),
    );
    let budget = dynamodb_outbox::sweep::Budget::for_window(
        dynamodb_outbox::clock::now_ms() + 1_000,
        std::time::Duration::from_secs(30),
    );
    let swept = sweeper.sweep(budget).await;
    assert_eq!(swept.published, 2, "{swept:?}");
    let bodies: Vec<String> = drain(&ob.clients.sqs, &ob.fifo.url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    assert_eq!(bodies, ["m0", "m1"]);
}

#[tokio::test]
async fn a_minimal_producers_fifo_message_behind_a_pending_one_waits_in_the_sweeper_index() {
    // Given two FIFO items of a minimal producer (no index attributes), and a batch
    // holding only the later one
    let mut ob = Outbox::new().await;
    let (first, second) = ("MESSAGE#POSTED#0001", "MESSAGE#POSTED#0002");
    for sk in [first, second] {
        ob.put_raw(minimal_item("LEDGER#3", sk, "ledger", sk)).await;
    }
    let event = ob.filtered_event().await;
    assert_eq!(record_sks(&event), [first, second]);
    let later = outbox_tests::stream::event_of(event.records[1..].to_vec());

    // When the stream publisher handles it
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;

    // Then it waits, not retried, and is put in the sweeper index so that it is found
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.deferred, 1, "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let item = ob.item("LEDGER#3", second).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert_eq!(
        s(&item, "SweepShard"),
        Some(dynamodb_outbox::schema::sweep_shard("LEDGER#3"))
    );
}
