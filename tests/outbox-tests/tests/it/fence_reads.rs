//! The order fence's read against the emulator: the pending keys of every index
//! shard a batch touches, in one PartiQL select on the sweep index (`IN` on its
//! partition key, which DynamoDB serves as a query of each shard). moto does not
//! serve PartiQL on an index: there the store falls back to one query per shard, and
//! must find the same keys.

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::policy::{FenceRead, Scope};
use dynamodb_outbox_core::ports::OutboxStore;
use outbox_tests::{Outbox, s};
use std::collections::BTreeSet;

#[tokio::test]
async fn one_request_reads_the_pending_keys_of_every_shard_a_batch_touches() {
    // Given forty pending messages of forty aggregates in the sweeper index (indexed
    // at commit), spread over the shards
    let ob = Outbox::new().await;
    let writer = ob.writer().index_at_commit(true);
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

#[tokio::test]
async fn a_sequenced_aggregates_read_stops_one_item_below_its_members_whatever_the_partition_holds()
{
    // Given an aggregate with a long history: thirty commits, each with a business
    // item and a sequenced message; the first twenty-eight are SENT, 29 is pending
    let ob = Outbox::new().await;
    let writer = ob.writer();
    let db = &ob.clients.dynamodb;
    let mut keys = Vec::new();
    for version in 1..=30u64 {
        let business = aws_sdk_dynamodb::types::Put::builder()
            .table_name(&ob.table)
            .item("PK", AttributeValue::S("ORDER#7".into()))
            .item("SK", AttributeValue::S(format!("LINE#{version:03}")))
            .build()
            .expect("a put");
        let message = NewMessage::new("ORDER#7", "ledger", "{}").sequence(version);
        let business = TransactWriteItem::builder().put(business).build();
        let committed = writer
            .commit(vec![business], &[message])
            .await
            .expect("commit");
        keys.push(committed.sort_keys[0].clone());
    }
    for sk in &keys[..28] {
        set_status(&ob, sk, "SENT").await;
    }

    // When the fence reads for message 30 alone in its batch
    let store = DynamoStore::new(db.clone(), &ob.table);
    let read = |members: usize| FenceRead {
        scope: Scope::Sequence {
            aggregate: "ORDER#7".into(),
            lowest: keys[29].clone(),
            highest: keys[29].clone(),
            members,
        },
        aggregates: BTreeSet::from(["ORDER#7".to_owned()]),
    };
    let page = store.pending(&read(1), 8).await.expect("the fence read");

    // Then one request read message 30 and the one before it, pending, and nothing
    // of the history or the business items
    assert!(page.complete);
    assert_eq!(page.requests, 1);
    assert_eq!(page.scanned, 2, "the member and the one below it");
    // (the member is pending too: the core leaves the batch's own members out)
    let found: Vec<&str> = page.siblings.iter().map(|x| x.key.sk.as_str()).collect();
    assert_eq!(found, [keys[29].as_str(), keys[28].as_str()]);
    assert!(!page.no_earlier_sequence, "29 is below it");

    // And once 29 is SENT too, nothing fences 30, still from two items
    set_status(&ob, &keys[28], "SENT").await;
    let page = store.pending(&read(1), 8).await.expect("the fence read");
    let found: Vec<&str> = page.siblings.iter().map(|x| x.key.sk.as_str()).collect();
    assert!(page.complete && found == [keys[29].as_str()], "{page:?}");
    assert_eq!(page.scanned, 2);

    // And a batch of 25, 26, 28, 29, 30 while 27 (in another batch) is pending again:
    // the read covers the range and the one item below it, 27 among what it returns,
    // even when the batch's budget gives it one page
    for sk in &keys[24..] {
        set_status(&ob, sk, "PENDING").await;
    }
    let mut gap = read(5);
    if let Scope::Sequence { lowest, .. } = &mut gap.scope {
        lowest.clone_from(&keys[24]);
    }
    let page = store.pending(&gap, 1).await.expect("the fence read");
    assert!(page.complete, "{page:?}");
    let found: BTreeSet<&str> = page.siblings.iter().map(|x| x.key.sk.as_str()).collect();
    assert!(
        found.contains(keys[26].as_str()),
        "27 is pending: {found:?}"
    );
    assert!(!found.contains(keys[23].as_str()), "24 is SENT: {found:?}");
    // (six items on the first page, 30 down to 25; one more, 24, on the second)
    assert_eq!((page.requests, page.scanned), (2, 7), "{page:?}");

    // And the read for message 1, the first given a sequence, reaches the start of
    // the range with nothing below: the core reads the aggregate's other messages too
    let mut first = read(1);
    if let Scope::Sequence {
        lowest, highest, ..
    } = &mut first.scope
    {
        lowest.clone_from(&keys[0]);
        highest.clone_from(&keys[0]);
    }
    let page = store.pending(&first, 8).await.expect("the fence read");
    assert!(page.complete && page.no_earlier_sequence, "{page:?}");
}

/// Sets the `Status` of `ORDER#7`'s item `sk`, as a mark (or a redrive) would.
async fn set_status(ob: &Outbox, sk: &str, status: &str) {
    ob.clients
        .dynamodb
        .update_item()
        .table_name(&ob.table)
        .key("PK", AttributeValue::S("ORDER#7".into()))
        .key("SK", AttributeValue::S(sk.to_owned()))
        .update_expression("SET #s = :status")
        .expression_attribute_names("#s", "Status")
        .expression_attribute_values(":status", AttributeValue::S(status.to_owned()))
        .send()
        .await
        .expect("the status set");
}
