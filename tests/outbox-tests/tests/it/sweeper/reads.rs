//! What a sweep reads: nothing from the table when nothing is stuck, errors rather
//! than an oldest age of zero when its index queries fail.

use super::{config, futures_join, index_size, sweep_at, sweeper};
use dynamodb_outbox::sweep::AwsSweeper;
use dynamodb_outbox::{FromSdkConfig, NewMessage};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::ports::{MarkOutcome, OutboxStore};
use outbox_tests::indexed_item;
use outbox_tests::{Item, Outbox, bulk_put, clients};
use std::time::Duration;

#[tokio::test]
async fn a_sweep_over_ten_thousand_sent_items_with_nothing_stuck_reads_no_table_item() {
    // Given 40 messages not due for an hour (in the index, not stuck), committed
    // first: moto's server copies a whole table for each transaction (to roll it
    // back), and a transaction on 10,000 items took it 100 s...
    let ob = Outbox::new().await;
    let now = now_ms();
    let later = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::from_secs(3_600));
    let messages: Vec<NewMessage> = (0..40)
        .map(|i| NewMessage::new(format!("LATER#{i}"), "orders", "{}"))
        .collect();
    later.commit(vec![], &messages).await.expect("commit");
    // ... and 10,000 messages as the library writes them indexed at commit (its own
    // item builder, with the index attributes), due at once; written in bulk, as
    // 10,000 of the writer's transactions take moto's server minutes
    let (mut keys, mut items) = (Vec::new(), Vec::new());
    for i in 0..10_000 {
        let message = NewMessage::new(format!("ORDER#{i}"), "orders", r#"{"order":"placed"}"#);
        let item = message
            .outbox_item(&uuid::Uuid::now_v7().to_string(), now)
            .indexed_at_commit(&Default::default(), Duration::ZERO);
        keys.push(item.key().expect("key"));
        items.push(serde_dynamo::to_item(&item).expect("item"));
    }
    bulk_put(&ob.clients.dynamodb, &ob.table, items.clone()).await;
    assert_eq!(
        index_size(&ob).await,
        10_040,
        "indexed at commit, every message is in the index"
    );

    // When the publisher marks the 10,000 SENT, as it does after publishing them: the
    // first 500 through the store's own mark, the others rewritten in bulk exactly as
    // that mark left the first (10,000 single updates take moto's server minutes)
    let store = dynamodb_outbox::dynamo::DynamoStore::new(ob.clients.dynamodb.clone(), &ob.table);
    let (marked_keys, _) = keys.split_at(500);
    let marks = marked_keys.iter().map(|key| {
        let store = &store;
        async move {
            let marked = store.mark_sent(key, now, now / 1000 + 86_400).await;
            assert_eq!(marked, Ok(MarkOutcome::Marked), "{key}");
        }
    });
    futures_join(marks, 16).await;
    let first = ob
        .item(&keys[0].pk, &keys[0].sk)
        .await
        .expect("the first message");
    let as_marked = marked_like(&items[0], &first);
    bulk_put(
        &ob.clients.dynamodb,
        &ob.table,
        items[500..].iter().map(as_marked).collect(),
    )
    .await;
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

/// A function that changes an item as the mark changed `before` into `after`: the
/// attributes it removed are removed, the ones it set are set to the same values.
fn marked_like(before: &Item, after: &Item) -> impl Fn(&Item) -> Item {
    let removed: Vec<String> = before
        .keys()
        .filter(|name| !after.contains_key(*name))
        .cloned()
        .collect();
    let set: Item = after
        .iter()
        .filter(|(name, value)| before.get(*name) != Some(value))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    assert!(
        removed.iter().any(|name| name == "SweepShard") && set.contains_key("Status"),
        "the mark takes the item out of the index and sets its status: {removed:?} {set:?}"
    );
    move |item| {
        let mut item = item.clone();
        item.retain(|name, _| !removed.contains(name));
        item.extend(set.clone());
        item
    }
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
    let metrics = dynamodb_outbox_core::metrics::sweeper_metrics(&summary);
    let value = |name: &str| metrics.iter().find(|m| m.name == name).map(|m| m.value);
    assert_eq!(value("SweepErrors"), Some(16.0), "{metrics:?}");
    assert_eq!(value("OldestPendingAgeSeconds"), None, "{metrics:?}");
}
