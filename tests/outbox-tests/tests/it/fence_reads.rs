//! The order fence's read against the emulator: the pending keys of every index
//! shard a batch touches, in one PartiQL select on the sweep index (`IN` on its
//! partition key, which DynamoDB serves as a query of each shard). moto does not
//! serve PartiQL on an index: there the store falls back to one query per shard, and
//! must find the same keys.

use dynamodb_outbox::NewMessage;
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox::policy::{FenceRead, Scope};
use dynamodb_outbox::ports::OutboxStore;
use dynamodb_outbox::schema::SweepShards;
use outbox_tests::{Outbox, s};
use std::collections::BTreeSet;

#[tokio::test]
async fn one_request_reads_the_pending_keys_of_every_shard_a_batch_touches() {
    // Given forty pending messages of forty aggregates, spread over the shards
    let ob = Outbox::new().await;
    let writer = ob.writer();
    let aggregates: Vec<String> = (0..40).map(|i| format!("ACCOUNT#{i}")).collect();
    for chunk in aggregates.chunks(25) {
        let msgs: Vec<NewMessage> = chunk
            .iter()
            .map(|a| NewMessage::new(a.clone(), "ledger", "{}"))
            .collect();
        writer.commit(vec![], &msgs).await.expect("commit");
    }
    let shards: BTreeSet<String> = aggregates
        .iter()
        .map(|a| SweepShards::default().shard_of(a))
        .collect();
    assert!(shards.len() > 8, "spread over the shards: {shards:?}");

    // When the fence reads them
    let store = DynamoStore::new(ob.clients.dynamodb.clone(), &ob.table);
    let read = FenceRead {
        scope: Scope::Shards(shards.clone()),
        aggregates: aggregates.iter().cloned().collect(),
    };
    let page = store.pending(&read, 8).await.expect("the fence read");

    // Then it found every one of them, with its due time, and nothing else
    assert!(page.complete);
    let found: BTreeSet<String> = page.siblings.iter().map(|x| x.key.pk.clone()).collect();
    assert_eq!(found, aggregates.iter().cloned().collect::<BTreeSet<_>>());
    assert!(page.siblings.iter().all(|x| x.due_at_ms.is_some()));
    let stored: BTreeSet<String> = ob
        .all_items()
        .await
        .iter()
        .filter_map(|i| s(i, "SK"))
        .collect();
    assert!(page.siblings.iter().all(|x| stored.contains(&x.key.sk)));

    // And, where the emulator serves PartiQL on an index as DynamoDB does, in one
    // request; moto falls back to a query per shard
    let kind = std::env::var("OUTBOX_EMULATOR").unwrap_or_else(|_| "ministack".into());
    if kind == "moto" {
        eprintln!("moto serves no PartiQL select on an index: the store queried each shard");
        assert_eq!(page.requests, shards.len());
    } else {
        assert_eq!(page.requests, 1);
    }
}
