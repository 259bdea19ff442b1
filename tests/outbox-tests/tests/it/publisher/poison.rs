//! Poison: items that can never be published become FAILED with a reason and one
//! dead-letter copy, even at the table's item size limit.

use dynamodb_outbox::Routes;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox_core::message::{ATTR_AGGREGATE, ATTR_ERROR};
use outbox_tests::minimal_item;
use outbox_tests::{Outbox, attr, drain, n, s, sv};
use std::collections::HashMap;

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
            let failed_shard = dynamodb_outbox_core::schema::failed_sweep_shard(&pk);
            assert_eq!(s(&item, "SweepShard"), Some(failed_shard), "{pk}");
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
