//! What a sweep reads: nothing from the table when nothing is stuck, errors rather
//! than an oldest age of zero when its index queries fail.

use super::{config, futures_join, index_size, sweep_at, sweeper};
use dynamodb_outbox::clock::now_ms;
use dynamodb_outbox::ports::{MarkOutcome, OutboxStore};
use dynamodb_outbox::sweep::AwsSweeper;
use dynamodb_outbox::{FromSdkConfig, NewMessage};
use outbox_tests::indexed_item;
use outbox_tests::{Outbox, bulk_put, clients};
use std::time::Duration;

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
