//! A live change of the sweeper index's shard count on the emulator: messages
//! written under 64 shards, the functions changed to 16 (previous 64), the sweeps'
//! claims and `outbox-ops shards --move` bring every one into its new shard, and once
//! nothing is left outside, a sweeper of 16 alone publishes them all.

use super::{config, sweep_at, sweeper};
use dynamodb_outbox::{NewMessage, SweepShards};
use dynamodb_outbox_core::clock::now_ms;
use outbox_tests::{Outbox, drain, s};
use std::time::Duration;

/// Commits one stuck message (the stream path never runs here) for each of `n`
/// aggregates starting at `from`, under `layout`; returns their keys.
async fn commit_stuck(
    ob: &Outbox,
    layout: SweepShards,
    from: usize,
    n: usize,
) -> Vec<(String, String)> {
    let messages: Vec<NewMessage> = (from..from + n)
        .map(|i| {
            NewMessage::new(
                format!("ORDER#{i}"),
                "orders",
                format!(r#"{{"order":{i}}}"#),
            )
        })
        .collect();
    let committed = ob
        .writer()
        .sweep_shards(layout)
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &messages)
        .await
        .expect("commit");
    messages
        .iter()
        .map(|m| m.aggregate.clone())
        .zip(committed.sort_keys)
        .collect()
}

#[tokio::test]
async fn going_from_64_to_16_shards_on_a_live_table_strands_nothing() {
    let ob = Outbox::new().await;
    let old = SweepShards::new(64).expect("64");
    let changing = SweepShards::new(16)
        .and_then(|l| l.changing_from(64))
        .expect("16 from 64");
    let ops_table = |layout: SweepShards| {
        let table = ob.ops_table();
        let keys = table.keys.clone().sweep_shards(layout);
        table.key_names(keys)
    };
    let db = &ob.clients.dynamodb;

    // Given 20 messages written under 64 shards, none published yet
    let first = commit_stuck(&ob, old, 0, 20).await;
    let before = outbox_ops::shards(db, &ops_table(changing), false)
        .await
        .expect("shards");
    let outside = first
        .iter()
        .filter(|(pk, _)| changing.shard_of(pk) != old.shard_of(pk))
        .count() as u64;
    assert!(outside > 0);
    assert_eq!((before.misplaced, before.in_place), (outside, 20 - outside));

    // When the functions run with the change declared and a sweep's publish fails
    let mut failing = config(ob.config_with_orders_unreachable());
    failing.publisher.key_names.sweep_shards = changing;
    let now = now_ms();
    let summary = sweep_at(&sweeper(&ob.clients, failing), now).await;

    // Then the sweep found every one, also those in shards 16 does not have, and its
    // claims moved each into its shard under 16
    assert_eq!((summary.found, summary.published), (20, 0), "{summary:?}");
    for (pk, sk) in &first {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "SweepShard"), Some(changing.shard_of(pk)), "{pk}");
    }

    // And 20 more written under 64 by a producer not yet switched are moved by the
    // operator's command, after which nothing is left outside its shard
    let second = commit_stuck(&ob, old, 20, 20).await;
    let moved = outbox_ops::shards(db, &ops_table(changing), true)
        .await
        .expect("shards --move");
    assert_eq!(moved.misplaced, moved.moved, "{moved:?}");
    assert!(moved.moved > 0 && moved.done());
    let after = outbox_ops::shards(db, &ops_table(changing), false)
        .await
        .expect("shards");
    assert_eq!((after.misplaced, after.in_place), (0, 40), "{after:?}");

    // And a sweeper of 16 shards alone (the previous count dropped) publishes all 40
    let mut sixteen = config(ob.config());
    sixteen.publisher.key_names.sweep_shards = SweepShards::new(16).expect("16");
    let summary = sweep_at(&sweeper(&ob.clients, sixteen), now + 120_000).await;
    assert_eq!((summary.found, summary.published), (40, 40), "{summary:?}");
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 40);
    for (pk, sk) in first.iter().chain(&second) {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{pk}");
    }
}
