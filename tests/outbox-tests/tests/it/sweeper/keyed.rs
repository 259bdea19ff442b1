//! The sweeper on a table keyed `pk`/`sk` with TTL `expires_at`: it recovers a stuck
//! message and gives up on a poison one under the table's names, and the operator
//! finds and redrives the failed one.

use super::{config, sweep_at, sweeper};
use crate::publisher::keyed::own_names;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::schema::failed_sweep_shard;
use outbox_ops::{self as ops, Selection};
use outbox_tests::{Outbox, drain, n, s};
use std::time::Duration;

#[tokio::test]
async fn on_a_table_keyed_otherwise_the_sweeper_recovers_one_message_and_fails_another() {
    // Given two messages the stream path never finished: one routed, one without route
    let ob = Outbox::keyed(own_names()).await;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(
            vec![],
            &[
                NewMessage::new("ORDER#1", "orders", r#"{"order":1}"#),
                NewMessage::new("REFUND#1", "refunds", r#"{"refund":1}"#),
            ],
        )
        .await
        .expect("commit");
    let (sent_sk, failed_sk) = (&committed.sort_keys[0], &committed.sort_keys[1]);
    let stuck = ob.item("ORDER#1", sent_sk).await.expect("item");
    assert_eq!(
        s(&stuck, "SweepShard"),
        Some(SweepShards::default().shard_of("ORDER#1"))
    );
    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    // Then the routed one is published and SENT with its TTL in `expires_at`
    assert_eq!((summary.published, summary.failed), (1, 1), "{summary:?}");
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 1);
    let sent = ob.item("ORDER#1", sent_sk).await.expect("item");
    assert_eq!(s(&sent, "Status").as_deref(), Some("SENT"));
    assert!(n(&sent, "expires_at").is_some() && !sent.contains_key("ExpiresAt"));
    assert!(!sent.contains_key("SweepShard"));
    // And the other is FAILED, dead-lettered, in its FAILED partition of the index
    assert_eq!(drain(&ob.clients.sqs, &ob.dlq_url).await.len(), 1);
    let failed = ob.item("REFUND#1", failed_sk).await.expect("item");
    assert_eq!(s(&failed, "Status").as_deref(), Some("FAILED"));
    assert_eq!(
        s(&failed, "SweepShard"),
        Some(failed_sweep_shard("REFUND#1"))
    );
    assert!(!failed.contains_key("PK") && !failed.contains_key("SK"));
    // And the operator finds it through the index and can redrive it by its key
    let db = &ob.clients.dynamodb;
    let listed = ops::failed(db, &ob.ops_table(), None)
        .await
        .expect("failed");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].key.pk.as_str(), listed[0].key.sk.as_str()),
        ("REFUND#1", failed_sk.as_str())
    );
    let dry = ops::redrive_dry_run(db, &ob.ops_table(), Selection::All)
        .await
        .expect("dry run");
    assert_eq!(dry.redriven, vec![listed[0].key.clone()]);
    let unchanged = ob.item("REFUND#1", failed_sk).await.expect("item");
    assert_eq!(
        s(&unchanged, "Status").as_deref(),
        Some("FAILED"),
        "a dry run changes nothing"
    );
    let redriven = ops::redrive(db, &ob.ops_table(), Selection::All, now_ms())
        .await
        .expect("redrive");
    assert_eq!(redriven.redriven.len(), 1, "{redriven:?}");
    let pending = ob.item("REFUND#1", failed_sk).await.expect("item");
    assert_eq!(s(&pending, "Status").as_deref(), Some("PENDING"));
    assert_eq!(
        s(&pending, "SweepShard"),
        Some(SweepShards::default().shard_of("REFUND#1"))
    );
}
