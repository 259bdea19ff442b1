//! The sweeper against the emulator: stuck messages recovered through the same publish
//! path, retries with growing delays, FAILED + dead-letter queue at the limit, races
//! with the stream publisher, minimal producers in scan mode, redrive, and the cost of
//! a sweep when nothing is stuck.
//!
//! Time is the sweep's own notion of now ([`Budget::for_window`]), so retries that
//! would be minutes apart run back to back.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dynamodb_outbox::clock::now_ms;
use dynamodb_outbox::message::{ATTR_ERROR, ATTR_MESSAGE_ID, OutboundMessage};
use dynamodb_outbox::ports::{MarkOutcome, MessageSink, OutboxStore};
use dynamodb_outbox::schema::{ItemKey, decode_message, derive_message_id, sweep_shard};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::{AwsSweeper, Budget, ScanMode, SweepSummary, SweeperConfig};
use dynamodb_outbox::{Destination, FromSdkConfig, NewMessage, PublisherConfig, Routes};
use outbox_devkit::aws::Clients;
use outbox_ops::{self as ops, Selection};
use outbox_tests::{Item, Outbox, attr, bulk_put, clients, drain, endpoint, n, nv, s, sv, unique};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Retry policy short enough to follow in a test; the index only (the backstop scan,
/// on by default, has tests of its own).
fn config(publisher: PublisherConfig) -> SweeperConfig {
    let mut c = SweeperConfig::new(publisher);
    c.scan_mode = ScanMode::Off;
    c.max_attempts = 3;
    c.grace = Duration::ZERO;
    c.base_backoff = Duration::from_secs(2);
    c.max_backoff = Duration::from_secs(60);
    c
}

fn sweeper(clients: &Clients, config: SweeperConfig) -> AwsSweeper {
    AwsSweeper::with_sink(config, clients.dynamodb.clone(), clients.sink())
}

/// The sweeper as the Lambda binary builds it at a cold start: every SQS
/// destination's size limit learned from the queue.
async fn sweeper_learning(clients: &Clients, mut config: SweeperConfig) -> AwsSweeper {
    config.publisher = clients.sink().learn_limits(config.publisher).await;
    sweeper(clients, config)
}

/// A sweep at (virtual) time `now_ms` with 30 s of budget.
async fn sweep_at(sweeper: &AwsSweeper, now_ms: i64) -> SweepSummary {
    sweeper
        .sweep(Budget::for_window(now_ms, Duration::from_secs(30)))
        .await
}

/// An outbox item as the minimal boto3 producer writes it: no MessageId, no
/// CreatedAt, no index attributes.
fn boto3_item(pk: &str, sk: &str, topic: &str, payload: &str, status: &str) -> Item {
    HashMap::from([
        ("PK".to_owned(), sv(pk)),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv(topic)),
        ("Payload".to_owned(), sv(payload)),
        ("Status".to_owned(), sv(status)),
        ("RetryCount".to_owned(), nv(0)),
    ])
}

#[tokio::test]
async fn a_message_published_before_a_crash_but_never_marked_is_swept_and_marked_sent() {
    // Given a committed message, due for the sweeper, that the publisher sent to the
    // queue and then crashed before marking it
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .sweep_grace(Duration::ZERO)
        .commit(
            vec![],
            &[NewMessage::new("USER#1", "orders", r#"{"order":1}"#)],
        )
        .await
        .expect("commit");
    let sk = &committed.sort_keys[0];
    let stored = ob.item("USER#1", sk).await.expect("item");
    let msg = decode_message(stored.into(), None).expect("decodes");
    let dest = Destination::sqs(&ob.queue.url);
    let out = OutboundMessage::for_destination(&msg, &dest);
    ob.clients
        .sink()
        .send_batch(&dest, &[&out])
        .await
        .expect("publish before the crash");
    // And another message, written with the default one-minute grace: not stuck yet
    let fresh = ob
        .writer()
        .commit(vec![], &[NewMessage::new("USER#2", "orders", "{}")])
        .await
        .expect("commit");

    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;

    // Then it found and republished only the stuck one, and marked it SENT
    assert_eq!(
        (
            summary.found,
            summary.claimed,
            summary.published,
            summary.marked
        ),
        (1, 1, 1, 1),
        "{summary:?}"
    );
    assert_eq!(
        summary.index_items_read, 1,
        "the query reads only the due key"
    );
    let item = ob.item("USER#1", sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    assert_eq!(n(&item, "RetryCount"), Some(1));
    assert!(n(&item, "SentAt").is_some() && n(&item, "ExpiresAt").is_some());
    assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
    // And consumers see the same message id twice (at-least-once; they deduplicate)
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    let ids: Vec<Option<String>> = msgs.iter().map(|m| attr(m, ATTR_MESSAGE_ID)).collect();
    assert_eq!(ids, vec![Some(msg.message_id.clone()); 2]);
    // And the message still in its grace period was not touched
    let untouched = ob.item("USER#2", &fresh.sort_keys[0]).await.expect("item");
    assert_eq!(s(&untouched, "Status").as_deref(), Some("PENDING"));
    assert_eq!(n(&untouched, "RetryCount"), Some(0));
}

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
    assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
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
async fn the_sweeper_and_the_publisher_racing_on_the_same_items_finish_each_exactly_once() {
    // Given 30 messages over 6 aggregates and both destinations, already due
    let mut ob = Outbox::new().await;
    let messages: Vec<NewMessage> = (0..30)
        .map(|i| {
            NewMessage::new(
                format!("ACCOUNT#{}", i % 6),
                if i % 2 == 0 { "orders" } else { "ledger" },
                format!(r#"{{"n":{i}}}"#),
            )
        })
        .collect();
    let mut keys = Vec::new();
    for chunk in messages.chunks(10) {
        let c = ob
            .writer()
            .sweep_grace(Duration::ZERO)
            .commit(vec![], chunk)
            .await
            .expect("commit");
        keys.extend(
            chunk
                .iter()
                .zip(c.sort_keys)
                .map(|(m, sk)| (m.aggregate.clone(), sk)),
        );
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 30);

    // When the stream publisher and the sweeper work on them at the same time
    let publisher = ob.publisher();
    let sweeper = sweeper(&ob.clients, config(ob.config()));
    let ((response, published), swept) = tokio::join!(
        handle_stream_event(&publisher, &event),
        sweep_at(&sweeper, now_ms())
    );

    // Then every item is SENT, out of the index, and exactly one of them marked it
    assert!(response.batch_item_failures.is_empty());
    for (pk, sk) in &keys {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{pk} {sk}");
        assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
        assert!(!item.contains_key("LastError"), "{item:?}");
    }
    let marked_by_publisher = published.sent - published.unmarked;
    assert_eq!(
        marked_by_publisher + swept.marked,
        30,
        "publisher {published:?}, sweeper {swept:?}"
    );
    assert_eq!(swept.failed + published.dead_lettered, 0);
    // And every message reached its queue (duplicates allowed, nothing lost, nothing
    // dead-lettered)
    let mut ids = HashSet::new();
    for url in [&ob.queue.url, &ob.fifo.url] {
        for m in drain(&ob.clients.sqs, url).await {
            ids.insert(attr(&m, ATTR_MESSAGE_ID).expect("id"));
        }
    }
    assert_eq!(ids.len(), 30);
    assert!(drain(&ob.clients.sqs, &ob.dlq_url).await.is_empty());
}

#[tokio::test]
async fn items_of_a_minimal_producer_are_recovered_only_in_scan_mode() {
    // Given two pending items written like the boto3 producer (no index attributes)
    // and one it wrote already SENT
    let ob = Outbox::new().await;
    let pending = [
        ("USER#123", "MESSAGE#PROFILE_UPDATED#1698765432"),
        ("USER#456", "MESSAGE#PROFILE_UPDATED#1698765433"),
    ];
    for (pk, sk) in pending {
        ob.put_raw(boto3_item(pk, sk, "orders", r#"{"user":1}"#, "PENDING"))
            .await;
    }
    ob.put_raw(boto3_item(
        "USER#789",
        "MESSAGE#PROFILE_UPDATED#1",
        "orders",
        "{}",
        "SENT",
    ))
    .await;

    // When the sweeper runs with scan mode off
    let off = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    // Then it does not see them: they are not in the sparse index
    assert_eq!((off.found, off.adopted, off.scan_items_read), (0, 0, 0));
    for (pk, sk) in pending {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    }

    // When it runs with scan mode on
    let mut cfg = config(ob.config());
    cfg.scan_mode = ScanMode::On;
    let on_sweeper = sweeper(&ob.clients, cfg);
    let on = sweep_at(&on_sweeper, now_ms()).await;
    // Then it adopts both into the index and publishes them in the same run
    assert_eq!(on.adopted, 2, "{on:?}");
    assert_eq!((on.found, on.published, on.marked), (2, 2, 2), "{on:?}");
    assert!(on.scan_items_read >= 3, "{on:?}");
    for (pk, sk) in pending {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
        assert!(!item.contains_key("SweepShard"));
    }
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    let ids: HashSet<String> = msgs
        .iter()
        .filter_map(|m| attr(m, ATTR_MESSAGE_ID))
        .collect();
    let expected: HashSet<String> = pending
        .iter()
        .map(|(pk, sk)| {
            derive_message_id(&ItemKey {
                pk: (*pk).into(),
                sk: (*sk).into(),
            })
        })
        .collect();
    assert_eq!(ids, expected);
    // And the already-SENT item was left as it was
    let sent = ob
        .item("USER#789", "MESSAGE#PROFILE_UPDATED#1")
        .await
        .expect("item");
    assert!(!sent.contains_key("SweepShard"));
    // And the next run has nothing left to adopt
    let again = sweep_at(&on_sweeper, now_ms()).await;
    assert_eq!((again.adopted, again.found), (0, 0), "{again:?}");
}

#[tokio::test]
async fn redriven_failed_messages_are_republished_once_and_end_sent() {
    // Given two messages on a topic with no route: the sweeper gives up on them
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .sweep_grace(Duration::ZERO)
        .commit(
            vec![],
            &[
                NewMessage::new("REFUND#1", "refunds", r#"{"refund":1}"#),
                NewMessage::new("REFUND#2", "refunds", r#"{"refund":2}"#),
            ],
        )
        .await
        .expect("commit");
    let first = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    assert_eq!(first.failed, 2, "{first:?}");
    drain(&ob.clients.sqs, &ob.dlq_url).await;
    let db = &ob.clients.dynamodb;

    // Then the operator sees them with their reason
    let failed = ops::failed(db, &ob.table, Some("refunds"))
        .await
        .expect("failed");
    assert_eq!(failed.len(), 2);
    assert!(
        failed.iter().all(|f| f
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("no route for topic `refunds`"))),
        "{failed:?}"
    );
    let status = ops::status(db, &ob.table, now_ms()).await.expect("status");
    assert_eq!(status.counts.get("FAILED"), Some(&2));

    // When the route is fixed and one message is redriven by key, the other by topic
    let mut fixed = ob.config();
    fixed.routes = Routes::new(
        [("refunds".to_owned(), Destination::sqs(&ob.queue.url))],
        None,
    );
    let fixed_sweeper = sweeper(&ob.clients, config(fixed));
    let by_key = ops::redrive(
        db,
        &ob.table,
        Selection::Keys(vec![ItemKey {
            pk: "REFUND#1".into(),
            sk: committed.sort_keys[0].clone(),
        }]),
        now_ms(),
    )
    .await
    .expect("redrive");
    assert_eq!(by_key.redriven.len(), 1);
    let by_topic = ops::redrive(db, &ob.table, Selection::Topic("refunds".into()), now_ms())
        .await
        .expect("redrive");
    assert_eq!(by_topic.redriven.len(), 1, "only the one still FAILED");
    // Then they are PENDING with a fresh budget, back in the index, without the old reason
    for (pk, sk) in [("REFUND#1", 0), ("REFUND#2", 1)] {
        let item = ob.item(pk, &committed.sort_keys[sk]).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
        assert_eq!(n(&item, "RetryCount"), Some(0));
        assert_eq!(s(&item, "SweepShard"), Some(sweep_shard(pk)));
        assert!(!item.contains_key("LastError") && !item.contains_key("FailedAt"));
    }
    // And a second redrive of the same key changes nothing
    let again = ops::redrive(db, &ob.table, Selection::All, now_ms())
        .await
        .expect("redrive");
    assert!(again.redriven.is_empty());

    // When the sweeper runs
    let summary = sweep_at(&fixed_sweeper, now_ms()).await;
    // Then both are published once and SENT
    assert_eq!((summary.published, summary.marked), (2, 2), "{summary:?}");
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    let mut ids: Vec<String> = msgs
        .iter()
        .filter_map(|m| attr(m, ATTR_MESSAGE_ID))
        .collect();
    ids.sort();
    let mut expected = committed.message_ids.clone();
    expected.sort();
    assert_eq!(ids, expected, "each consumed once");
    for (pk, sk) in [("REFUND#1", 0), ("REFUND#2", 1)] {
        let item = ob.item(pk, &committed.sort_keys[sk]).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    }
    let status = ops::status(db, &ob.table, now_ms()).await.expect("status");
    assert_eq!(status.counts.get("SENT"), Some(&2));
    assert_eq!(status.counts.get("FAILED"), None);
}

/// Items in the sweeper index, counted shard by shard.
async fn index_size(ob: &Outbox) -> i32 {
    let mut total = 0;
    for shard in dynamodb_outbox::schema::all_sweep_shards() {
        let mut start = None;
        loop {
            let out = ob
                .clients
                .dynamodb
                .query()
                .table_name(&ob.table)
                .index_name(dynamodb_outbox::schema::SWEEP_INDEX)
                .key_condition_expression("SweepShard = :s")
                .expression_attribute_values(":s", sv(&shard))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("query");
            total += out.count();
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
    }
    total
}

#[tokio::test]
async fn a_sweep_over_ten_thousand_sent_items_with_nothing_stuck_reads_no_table_item() {
    // Given 10,000 messages as the library writes them (its own item builder, so
    // with the index attributes), due at once; written in bulk, as 10,000 of the
    // writer's transactions take moto's server minutes...
    let ob = Outbox::new().await;
    let now = now_ms();
    let (mut keys, mut items) = (Vec::new(), Vec::new());
    for i in 0..10_000 {
        let message = NewMessage::new(format!("ORDER#{i}"), "orders", r#"{"order":"placed"}"#);
        let item = message.outbox_item(&uuid::Uuid::now_v7().to_string(), now, Duration::ZERO);
        keys.push(item.key().expect("key"));
        items.push(serde_dynamo::to_item(&item).expect("item"));
    }
    bulk_put(&ob.clients.dynamodb, &ob.table, items).await;
    // ... and 40 not due for an hour (in the index, not stuck)
    let later = ob.writer().sweep_grace(Duration::from_secs(3_600));
    let messages: Vec<NewMessage> = (0..40)
        .map(|i| NewMessage::new(format!("LATER#{i}"), "orders", "{}"))
        .collect();
    later.commit(vec![], &messages).await.expect("commit");
    assert_eq!(
        index_size(&ob).await,
        10_040,
        "the library puts every message in the index"
    );

    // When the publisher marks the 10,000 SENT, as it does after publishing them
    let store = dynamodb_outbox::dynamo::DynamoStore::new(ob.clients.dynamodb.clone(), &ob.table);
    let marks = keys.iter().map(|key| {
        let store = &store;
        async move {
            let marked = store.mark_sent(key, now, now / 1000 + 86_400).await;
            assert_eq!(marked, Ok(MarkOutcome::Marked), "{key}");
        }
    });
    futures_join(marks, 16).await;
    // Then only the 40 are left in the index: the SENT mark takes an item out of it
    assert_eq!(index_size(&ob).await, 40);

    // When the sweeper runs on its own clients, counting every request
    let own = clients().await;
    let summary = sweep_at(&sweeper(&own, config(ob.config())), now_ms()).await;

    // Then it made 16 index queries that read nothing, and no other request: no scan,
    // no read of the 10,000 items, no claim
    assert_eq!(summary.index_queries, 16, "{summary:?}");
    assert_eq!(summary.index_items_read, 0, "{summary:?}");
    assert_eq!((summary.scan_items_read, summary.found), (0, 0));
    let requests = own.counter.by_operation();
    assert_eq!(own.counter.of(&["Query"]), 16, "{requests:?}");
    assert_eq!(
        own.counter.of(&["Scan", "GetItem", "UpdateItem"]),
        0,
        "{requests:?}"
    );
    assert_eq!(own.counter.total(), 16, "{requests:?}");
}

/// Runs `futures`, `limit` at a time, and collects their outputs.
async fn futures_join<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
    limit: usize,
) -> Vec<F::Output> {
    use futures::StreamExt;
    futures::stream::iter(futures)
        .buffer_unordered(limit)
        .collect()
        .await
}

/// An item as a minimal producer writes it, in the sweeper index and due at `due`.
fn indexed_item(pk: &str, sk: &str, topic: &str, payload: &str, due: i64) -> Item {
    let mut item = boto3_item(pk, sk, topic, payload, "PENDING");
    item.insert("SweepShard".into(), sv(&sweep_shard(pk)));
    item.insert("SweepDueAt".into(), nv(due));
    item
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
    assert!(!item.contains_key("Payload") && !item.contains_key("SweepShard"));
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
    let redrive = ops::redrive(db, &ob.table, Selection::Keys(vec![key.clone()]), now)
        .await
        .expect("redrive");
    assert_eq!(redrive.payload_elsewhere, vec![key]);
    assert!(redrive.redriven.is_empty());
}

#[tokio::test]
async fn an_item_with_a_fractional_due_time_is_claimed_and_published() {
    // Given a due item whose producer wrote its due time with a fraction
    let ob = Outbox::new().await;
    let now = now_ms();
    let mut item = indexed_item("USER#1", "MESSAGE#X#1", "orders", "{}", 0);
    item.insert(
        "SweepDueAt".into(),
        aws_sdk_dynamodb::types::AttributeValue::N(format!("{}.5", now - 10_000)),
    );
    ob.put_raw(item).await;

    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, config(ob.config())), now).await;

    // Then it is claimed, published and SENT
    assert_eq!(
        (summary.found, summary.claimed, summary.marked),
        (1, 1, 1),
        "{summary:?}"
    );
    let item = ob.item("USER#1", "MESSAGE#X#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 1);
}

#[tokio::test]
async fn an_item_in_a_shard_no_sweep_queries_is_adopted_in_scan_mode_and_published() {
    // Given a pending item whose producer put it in a shard outside the sixteen
    let ob = Outbox::new().await;
    let mut item = indexed_item("USER#1", "MESSAGE#X#1", "orders", "{}", 1);
    item.insert("SweepShard".into(), sv("99"));
    ob.put_raw(item).await;

    // When the sweeper runs in scan mode
    let mut cfg = config(ob.config());
    cfg.scan_mode = ScanMode::On;
    let summary = sweep_at(&sweeper(&ob.clients, cfg), now_ms()).await;

    // Then it is adopted into a shard of ours and published
    assert_eq!((summary.adopted, summary.marked), (1, 1), "{summary:?}");
    let item = ob.item("USER#1", "MESSAGE#X#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_sweep_whose_index_queries_fail_reports_errors_instead_of_an_oldest_age_of_zero() {
    // Given a due message and a sweeper whose every index query fails
    let ob = Outbox::new().await;
    let now = now_ms();
    ob.put_raw(indexed_item(
        "USER#1",
        "MESSAGE#X#1",
        "orders",
        "{}",
        now - 60_000,
    ))
    .await;
    let plan = "Query:server_error:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(1));
    let broken = AwsSweeper::with_sink(
        config(ob.config()),
        aws_sdk_dynamodb::Client::new(&faulty),
        ob.clients.sink(),
    );

    // When it sweeps
    let summary = sweep_at(&broken, now).await;

    // Then its metrics say the sweep failed, and do not say nothing is pending
    let metrics = dynamodb_outbox::metrics::sweeper_metrics(&summary);
    let value = |name: &str| metrics.iter().find(|m| m.name == name).map(|m| m.value);
    assert_eq!(value("SweepErrors"), Some(16.0), "{metrics:?}");
    assert_eq!(value("OldestPendingAgeSeconds"), None, "{metrics:?}");
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

#[tokio::test]
async fn a_cold_started_sweeper_continues_the_adoption_scan_where_the_last_one_stopped() {
    // Given three items of a minimal producer, and sweepers that read one item a run
    let ob = Outbox::new().await;
    let keys = [
        ("A#1", "MESSAGE#X#1"),
        ("B#1", "MESSAGE#X#1"),
        ("C#1", "MESSAGE#X#1"),
    ];
    for (pk, sk) in keys {
        ob.put_raw(boto3_item(pk, sk, "orders", "{}", "PENDING"))
            .await;
    }
    let mut cfg = config(ob.config());
    cfg.scan_mode = ScanMode::On;
    cfg.limits.scan_segments = 1;
    cfg.limits.scan_page_size = 1;
    cfg.limits.scan_pages_per_segment = 1;

    // When each run is a cold start (a new sweeper), five times
    let mut adopted = 0;
    for _ in 0..5 {
        adopted += sweep_at(&sweeper(&ob.clients, cfg.clone()), now_ms())
            .await
            .adopted;
    }

    // Then every run went on from the last one's position, and all three were adopted
    assert_eq!(adopted, 3);
    for (pk, sk) in keys {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{pk}");
    }
}

#[tokio::test]
async fn a_later_message_waits_behind_a_failed_earlier_one_in_another_chunk() {
    // Given two due messages of one aggregate, the earlier to a failing queue, and a
    // sweeper that claims one item per chunk
    let ob = Outbox::new().await;
    let missing = format!("{}/123456789012/{}", endpoint(), unique("no-such-queue"));
    let mut publisher = ob.config();
    publisher.routes = Routes::new(
        [
            ("orders".to_owned(), Destination::sqs(&ob.queue.url)),
            ("broken".to_owned(), Destination::sqs(&missing)),
        ],
        None,
    );
    let mut cfg = config(publisher);
    cfg.limits.chunk = 1;
    let w = ob.writer().sweep_grace(Duration::ZERO);
    let first = w
        .commit(vec![], &[NewMessage::new("ACCOUNT#1", "broken", "first")])
        .await
        .expect("commit");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = w
        .commit(vec![], &[NewMessage::new("ACCOUNT#1", "orders", "second")])
        .await
        .expect("commit");

    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, cfg), now_ms() + 1_000).await;

    // Then the later message was not published, and is due after the earlier one
    assert_eq!(summary.published, 0, "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
    let a1 = ob
        .item("ACCOUNT#1", &first.sort_keys[0])
        .await
        .expect("item");
    let a2 = ob
        .item("ACCOUNT#1", &second.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&a2, "Status").as_deref(), Some("PENDING"));
    assert!(
        n(&a2, "SweepDueAt") > n(&a1, "SweepDueAt"),
        "{:?} {:?}",
        n(&a1, "SweepDueAt"),
        n(&a2, "SweepDueAt")
    );
}

#[tokio::test]
async fn an_item_no_index_knows_is_found_by_the_default_backstop_scan() {
    // Given a pending item written like the boto3 producer (no index attributes) whose
    // stream records nobody will ever read again (a mapping disabled for a day)
    let ob = Outbox::new().await;
    ob.put_raw(boto3_item(
        "USER#42",
        "MESSAGE#LOST#1",
        "orders",
        r#"{"lost":1}"#,
        "PENDING",
    ))
    .await;
    // When a sweeper with the default configuration runs (grace 0 to see it at once)
    let mut cfg = SweeperConfig::new(ob.config());
    assert_eq!(cfg.scan_mode, ScanMode::Backstop, "the default");
    cfg.grace = Duration::ZERO;
    let sw = sweeper(&ob.clients, cfg);
    let first = sweep_at(&sw, now_ms()).await;
    // Then its bounded scan (one page) adopted the item into the index, and the same
    // sweep published it
    assert_eq!(first.adopted, 1, "{first:?}");
    assert!(first.scan_items_read <= 100, "{first:?}");
    assert_eq!(first.published, 1, "{first:?}");
    let item = ob.item("USER#42", "MESSAGE#LOST#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_later_fifo_message_waits_behind_an_earlier_one_whose_claim_answer_was_lost() {
    // Given two FIFO messages of one account, the earlier due now, the later in 30 s
    let ob = Outbox::new().await;
    let w = ob.writer();
    let first = w
        .clone()
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("ACCOUNT#5", "ledger", "first")])
        .await
        .expect("commit");
    let second = w
        .sweep_grace(Duration::from_secs(30))
        .commit(vec![], &[NewMessage::new("ACCOUNT#5", "ledger", "second")])
        .await
        .expect("commit");
    let t0 = now_ms() + 1_000;
    // And a sweep whose claim of the earlier one takes effect while its answer is lost
    // (it leases the message for the sweep's time, and cannot publish it)
    let plan = "UpdateItem:lost_response:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(3));
    let lost = AwsSweeper::with_sink(
        config(ob.config()),
        aws_sdk_dynamodb::Client::new(&faulty),
        ob.clients.sink(),
    );
    let summary = sweep_at(&lost, t0).await;
    assert_eq!((summary.found, summary.published), (1, 0), "{summary:?}");
    let leased = ob
        .item("ACCOUNT#5", &first.sort_keys[0])
        .await
        .expect("item");
    let lease = n(&leased, "SweepDueAt").expect("leased");
    assert!(lease > t0 + 60_000, "{lease}");

    // When a healthy sweep runs a minute later: the later message is due, the earlier
    // one is still leased
    let sweeper = sweeper(&ob.clients, config(ob.config()));
    let summary = sweep_at(&sweeper, t0 + 60_000).await;

    // Then the later message is not published before the earlier one, and waits until
    // after the lease
    assert_eq!((summary.claimed, summary.published), (1, 0), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let held = ob
        .item("ACCOUNT#5", &second.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&held, "Status").as_deref(), Some("PENDING"));
    assert!(n(&held, "SweepDueAt") > Some(lease), "{held:?}");
    assert_eq!(n(&held, "RetryCount"), Some(0), "its attempt given back");

    // And once the lease is over, one sweep publishes both in order
    let summary = sweep_at(&sweeper, n(&held, "SweepDueAt").expect("due")).await;
    assert_eq!(summary.published, 2, "{summary:?}");
    let bodies: Vec<String> = drain(&ob.clients.sqs, &ob.fifo.url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    assert_eq!(bodies, ["first", "second"]);
}
