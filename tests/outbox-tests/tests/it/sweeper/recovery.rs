//! Stuck messages recovered through the same publish path: published before a crash
//! but never marked, raced with the stream publisher, due times with fractions.

use super::{config, sweep_at, sweeper};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{Destination, NewMessage};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::message::{ATTR_MESSAGE_ID, OutboundMessage};
use dynamodb_outbox_core::ports::MessageSink;
use dynamodb_outbox_core::schema::decode_message;
use outbox_tests::indexed_item;
use outbox_tests::{Outbox, attr, drain, n, s};
use std::collections::HashSet;
use std::time::Duration;

#[tokio::test]
async fn a_message_published_before_a_crash_but_never_marked_is_swept_and_marked_sent() {
    // Given a committed message, due for the sweeper, that the publisher sent to the
    // queue and then crashed before marking it
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .index_at_commit(true)
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
    // And another message, indexed at commit with the default one-minute grace: not
    // stuck yet
    let fresh = ob
        .writer()
        .index_at_commit(true)
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
            .index_at_commit(true)
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
