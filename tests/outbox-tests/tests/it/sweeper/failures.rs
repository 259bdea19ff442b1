//! Retries with growing delays, then FAILED and dead-lettered; items the sweeper gives
//! up on at the size limit or when no claim can succeed; queue limits learned.

use super::{config, sweep_at, sweeper, sweeper_learning};
use dynamodb_outbox::{Destination, NewMessage, Routes};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::message::{ATTR_ERROR, ATTR_MESSAGE_ID};
use dynamodb_outbox_core::schema::ItemKey;
use outbox_ops::{self as ops, Selection};
use outbox_tests::indexed_item;
use outbox_tests::{Outbox, attr, drain, endpoint, n, s, sv, unique};
use std::time::Duration;

#[tokio::test]
async fn a_failing_destination_is_retried_with_growing_delays_then_failed_and_dead_lettered() {
    // Given `orders` routed to a queue that does not exist
    let ob = Outbox::new().await;
    let missing = format!("{}/123456789012/{}", endpoint(), unique("no-such-queue"));
    let mut publisher = ob.config();
    publisher.routes = Routes::new([("orders".to_owned(), Destination::sqs(&missing))], None);
    let sweeper = sweeper(&ob.clients, config(publisher));
    let payload = r#"{"order":42,"note":"intact"}"#;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("ORDER#42", "orders", payload)])
        .await
        .expect("commit");
    let sk = committed.sort_keys[0].clone();

    // When the sweeper runs each time the message comes due, three times (the limit)
    let mut now = now_ms();
    let mut delays = Vec::new();
    for attempt in 1..=3 {
        let summary = sweep_at(&sweeper, now).await;
        assert_eq!(
            (summary.claimed, summary.retried, summary.published),
            (1, 1, 0),
            "attempt {attempt}: {summary:?}"
        );
        let item = ob.item("ORDER#42", &sk).await.expect("item");
        // Then each attempt is counted, its reason recorded, the next one scheduled
        assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
        assert_eq!(n(&item, "RetryCount"), Some(attempt));
        let reason = s(&item, "LastError").expect("LastError");
        assert!(reason.contains("sending to sqs:"), "{reason}");
        let due = n(&item, "SweepDueAt").expect("still in the index");
        let delay = due - now;
        let full = 2_000 * (1 << (attempt - 1));
        assert!(
            (full / 2..=full).contains(&delay),
            "attempt {attempt}: delay {delay} ms outside [{}, {full}]",
            full / 2
        );
        // And nothing happens before it is due
        let early = sweep_at(&sweeper, due - 1).await;
        assert_eq!(early.found, 0, "{early:?}");
        delays.push(delay);
        now = due;
    }
    assert!(delays.windows(2).all(|w| w[0] < w[1]), "{delays:?}");

    // When it comes due once more, past the limit
    let summary = sweep_at(&sweeper, now).await;
    // Then it is FAILED with the reason, out of the index, and its payload is on the
    // dead-letter queue with the reason attached
    assert_eq!((summary.claimed, summary.failed), (1, 1), "{summary:?}");
    let item = ob.item("ORDER#42", &sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(
        reason.starts_with("gave up after 3 attempts: sending to sqs:"),
        "{reason}"
    );
    // Out of the partitions a sweep queries: in its FAILED partition, due at the failure
    assert_eq!(
        s(&item, "SweepShard"),
        Some(dynamodb_outbox_core::schema::failed_sweep_shard("ORDER#42"))
    );
    assert_eq!(n(&item, "SweepDueAt"), n(&item, "FailedAt"));
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body(), Some(payload));
    assert_eq!(
        attr(&dead[0], ATTR_ERROR).as_deref(),
        Some(reason.chars().take(1000).collect::<String>().as_str())
    );
    assert_eq!(
        attr(&dead[0], ATTR_MESSAGE_ID).as_deref(),
        Some(committed.message_ids[0].as_str())
    );
    // And later sweeps leave it alone
    assert_eq!(sweep_at(&sweeper, now + 3_600_000).await.found, 0);
}

#[tokio::test]
async fn the_sweeper_learns_its_queues_limits_and_sends_nothing_a_queue_would_refuse() {
    // Given a due 300 KiB message routed (without `max_message_bytes`) to a queue
    // created at 256 KiB, and a dead-letter queue at 1 MiB
    let ob = Outbox::new().await;
    let small = ob.sized_queue("small", 262_144).await;
    let dlq = ob.sized_queue("outbox-dlq", 1_048_576).await;
    let mut publisher = ob.config();
    publisher.routes = Routes::parse(&format!(r#"{{"small":"{small}"}}"#), None).expect("routes");
    publisher.dead_letter = Destination::parse(&dlq, None).expect("dlq");
    let payload = "p".repeat(300 * 1024);
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("BIG#1", "small", payload)])
        .await
        .expect("commit");
    let sweeper = sweeper_learning(&ob.clients, config(publisher)).await;

    // When it sweeps
    ob.clients.counter.reset();
    let summary = sweep_at(&sweeper, now_ms() + 1_000).await;

    // Then the message is poison at once, with the queue's limit as the reason, and
    // the only send is its dead-letter copy (no call the queue refuses)
    assert_eq!((summary.claimed, summary.failed), (1, 1), "{summary:?}");
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        1,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    let item = ob
        .item("BIG#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("MaximumMessageSize"), "{reason}");
    let dead = drain(&ob.clients.sqs, &dlq).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body().map(str::len), Some(300 * 1024));
    assert!(drain(&ob.clients.sqs, &small).await.is_empty());
}

#[tokio::test]
async fn an_item_at_the_size_limit_the_sweeper_gives_up_on_is_failed_with_one_dead_letter_copy() {
    // Given a due item as large as the table accepts, on a topic with no route
    let ob = Outbox::new().await;
    let now = now_ms();
    let (pk, sk) = ("BIG#1", "MESSAGE#X#1");
    let payload_len = ob
        .put_largest(indexed_item(pk, sk, "nowhere", "", now - 1_000))
        .await;
    let sweeper = sweeper(&ob.clients, config(ob.config()));

    // When the sweeper runs
    let summary = sweep_at(&sweeper, now).await;

    // Then the item is FAILED with its reason, its payload on the dead-letter queue
    // (once) and no longer on the item
    assert_eq!(summary.failed, 1, "{summary:?}");
    let item = ob.item(pk, sk).await.expect("item");
    assert_eq!(
        s(&item, "Status").as_deref(),
        Some("FAILED"),
        "{:?}",
        s(&item, "LastError")
    );
    // Poison for its topic, or — where the emulator counts a claim's new numbers as
    // growing the item — because not even a claim fits: the reason says which.
    let reason = s(&item, "LastError").expect("LastError");
    assert!(
        reason.contains("no route for topic `nowhere`")
            || reason.contains("cannot claim the item") && reason.contains("size"),
        "{reason}"
    );
    assert!(!item.contains_key("Payload"));
    // Out of the partitions a sweep queries (in a FAILED one, or out of the index)
    assert!(
        !s(&item, "SweepShard")
            .is_some_and(|shard| dynamodb_outbox_core::SweepShards::default().is_shard(&shard))
    );
    assert_eq!(s(&item, "PayloadOn").as_deref(), Some("dead-letter queue"));
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body().map(str::len), Some(payload_len));

    // And later sweeps neither find it nor copy it again
    let later = sweep_at(&sweeper, now + 3_600_000).await;
    assert_eq!((later.found, later.failed), (0, 0), "{later:?}");
    assert!(drain(&ob.clients.sqs, &ob.dlq_url).await.is_empty());
    // And a redrive leaves it alone until its payload is back: it would fail again
    let key = ItemKey {
        pk: pk.into(),
        sk: sk.into(),
    };
    let db = &ob.clients.dynamodb;
    let redrive = ops::redrive(db, &ob.ops_table(), Selection::Keys(vec![key.clone()]), now)
        .await
        .expect("redrive");
    assert_eq!(redrive.payload_elsewhere, vec![key]);
    assert!(redrive.redriven.is_empty());
}

#[tokio::test]
async fn an_item_whose_claim_is_refused_for_good_becomes_failed_with_one_dead_letter_copy() {
    // Given a due item whose producer wrote `RetryCount` as a string: no claim can
    // increment it
    let ob = Outbox::new().await;
    let now = now_ms();
    let mut item = indexed_item("USER#1", "MESSAGE#X#1", "orders", r#"{"n":1}"#, now - 1_000);
    item.insert("RetryCount".into(), sv("0"));
    ob.put_raw(item).await;
    let sweeper = sweeper(&ob.clients, config(ob.config()));

    // When the sweeper runs
    let summary = sweep_at(&sweeper, now).await;

    // Then the item is poison: FAILED with the reason, and a copy on the dead-letter queue
    assert_eq!(summary.failed, 1, "{summary:?}");
    let item = ob.item("USER#1", "MESSAGE#X#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    // DynamoDB (and moto) refuse the claim's increment; MiniStack leaves the string as
    // it is, and the claimed item does not decode. Poison either way, with the reason.
    let reason = s(&item, "LastError").expect("LastError");
    assert!(
        reason.contains("cannot claim the item") || reason.contains("RetryCount"),
        "{reason}"
    );
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0]
            .body()
            .is_some_and(|b| b.contains(r#"{\"n\":1}"#) || b.contains(r#"{"n":1}"#))
    );
    // And it no longer heads the due order of later sweeps
    let later = sweep_at(&sweeper, now + 3_600_000).await;
    assert_eq!(later.found, 0, "{later:?}");
}
