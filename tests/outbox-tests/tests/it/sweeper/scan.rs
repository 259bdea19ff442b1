//! Scan mode and the backstop scan: items no index knows (minimal producers, shards no
//! sweep queries) are adopted and published, a cold start continuing the scan.

use super::{config, sweep_at, sweeper};
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox::sweep::{ScanMode, SweeperConfig, adopt_pass};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use dynamodb_outbox_core::schema::{ItemKey, derive_message_id};
use outbox_tests::{Outbox, attr, drain, s, sv};
use outbox_tests::{indexed_item, minimal_item};
use std::collections::HashSet;
use std::time::Duration;

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
        ob.put_raw(minimal_item(pk, sk, "orders", r#"{"user":1}"#))
            .await;
    }
    let mut sent = minimal_item("USER#789", "MESSAGE#PROFILE_UPDATED#1", "orders", "{}");
    sent.insert("Status".to_owned(), sv("SENT"));
    ob.put_raw(sent).await;

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
async fn a_cold_started_sweeper_continues_the_adoption_scan_where_the_last_one_stopped() {
    // Given three items of a minimal producer, and sweepers that read one item a run
    let ob = Outbox::new().await;
    let keys = [
        ("A#1", "MESSAGE#X#1"),
        ("B#1", "MESSAGE#X#1"),
        ("C#1", "MESSAGE#X#1"),
    ];
    for (pk, sk) in keys {
        ob.put_raw(minimal_item(pk, sk, "orders", "{}")).await;
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
async fn an_item_no_index_knows_waits_for_reconcile_under_the_default_and_is_published_after() {
    // Given a pending item written like the boto3 producer (no index attributes) whose
    // stream records nobody will ever read again
    let ob = Outbox::new().await;
    ob.put_raw(minimal_item(
        "USER#43",
        "MESSAGE#LOST#1",
        "orders",
        r#"{"lost":1}"#,
    ))
    .await;
    // When a sweeper with the default configuration runs
    let cfg = SweeperConfig::new(ob.config());
    assert_eq!(
        cfg.scan_mode,
        ScanMode::Off,
        "the default: no scan of the table"
    );
    let sw = sweeper(&ob.clients, cfg.clone());
    let first = sweep_at(&sw, now_ms()).await;
    // Then it read no table item and the item is still PENDING
    assert_eq!((first.adopted, first.scan_items_read), (0, 0), "{first:?}");
    let item = ob.item("USER#43", "MESSAGE#LOST#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));

    // When an operator runs outbox-ops reconcile's pass (grace 0 to see it at once)
    let store = DynamoStore::new(
        ob.clients.dynamodb.clone(),
        cfg.publisher.table_name.clone(),
    )
    .with_key_names(cfg.publisher.key_names.clone());
    let shards = cfg.publisher.key_names.sweep_shards;
    let pass = adopt_pass(&store, &shards, Duration::ZERO, now_ms(), (4, 1000)).await;
    // Then it indexed the item, and the next sweep published it
    assert_eq!((pass.adopted, pass.failed_segments), (1, 0), "{pass:?}");
    let next = sweep_at(&sw, now_ms()).await;
    assert_eq!(next.published, 1, "{next:?}");
    let item = ob.item("USER#43", "MESSAGE#LOST#1").await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test]
async fn an_item_no_index_knows_is_found_by_the_backstop_scan() {
    // Given a pending item written like the boto3 producer (no index attributes) whose
    // stream records nobody will ever read again (a mapping disabled for a day)
    let ob = Outbox::new().await;
    ob.put_raw(minimal_item(
        "USER#42",
        "MESSAGE#LOST#1",
        "orders",
        r#"{"lost":1}"#,
    ))
    .await;
    // When a sweeper with the backstop scan runs (grace 0 to see it at once)
    let mut cfg = SweeperConfig::new(ob.config());
    cfg.scan_mode = ScanMode::Backstop;
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
