//! What the operator's `status` and `failed` read on an application's own table: the
//! sweeper index and the failed items, never a business item. The figures are
//! printed (`--no-capture` shows them); the assertions are on what was read.

use crate::publisher::keyed::own_names;
use aws_sdk_dynamodb::types::{PutRequest, ReturnConsumedCapacity, Select, WriteRequest};
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox_core::SweepShards;
use outbox_tests::{Outbox, sv};
use std::collections::BTreeSet;

/// Business items in the table beside the outbox's.
const BUSINESS_ITEMS: usize = 10_000;

/// Writes `BUSINESS_ITEMS` customer profiles keyed `pk`/`sk`, 25 a request, a few
/// requests at a time.
async fn business_items(ob: &Outbox) {
    let requests: Vec<Vec<WriteRequest>> = (0..BUSINESS_ITEMS)
        .map(|i| {
            let put = PutRequest::builder()
                .item("pk", sv(&format!("CUSTOMER#{i:05}")))
                .item("sk", sv("PROFILE"))
                .item(
                    "Name",
                    sv(&format!("Customer {i} with a name long enough to weigh")),
                )
                .build()
                .expect("put");
            WriteRequest::builder().put_request(put).build()
        })
        .collect::<Vec<_>>()
        .chunks(25)
        .map(<[WriteRequest]>::to_vec)
        .collect();
    for wave in requests.chunks(8) {
        let writes = wave.iter().map(|batch| async {
            let mut pending = batch.clone();
            while !pending.is_empty() {
                let out = ob
                    .clients
                    .dynamodb
                    .batch_write_item()
                    .request_items(&ob.table, pending)
                    .send()
                    .await
                    .expect("batch write");
                pending = out
                    .unprocessed_items()
                    .and_then(|u| u.get(&ob.table))
                    .cloned()
                    .unwrap_or_default();
            }
        });
        futures::future::join_all(writes).await;
    }
}

/// What a scan of the whole table would read: its items and read units.
async fn scan_cost(ob: &Outbox) -> (i64, f64) {
    let (mut items, mut units) = (0i64, 0.0);
    let mut start = None;
    loop {
        let out = ob
            .clients
            .dynamodb
            .scan()
            .table_name(&ob.table)
            .select(Select::Count)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        items += i64::from(out.scanned_count());
        units += out
            .consumed_capacity()
            .and_then(|c| c.capacity_units())
            .unwrap_or(0.0);
        start = out.last_evaluated_key.filter(|k| !k.is_empty());
        if start.is_none() {
            return (items, units);
        }
    }
}

#[tokio::test]
async fn status_and_failed_on_a_table_of_ten_thousand_business_items_read_no_business_item() {
    // Given an application's table keyed pk/sk with two failed messages
    let mut ob = Outbox::keyed(own_names()).await;
    let poison = [
        NewMessage::new("REFUND#1", "refunds", "{}"),
        NewMessage::new("REFUND#2", "refunds", "{}"),
    ];
    ob.writer().commit(vec![], &poison).await.expect("commit");
    let event = ob.filtered_event().await;
    let (_, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert_eq!(summary.dead_lettered, 2, "{summary:?}");
    // And 10,000 business items, three pending messages in the sweeper's hands
    // (indexed at commit, as an adoption leaves those the stream path could not
    // finish) and one the stream path has yet to publish (outside the index)
    business_items(&ob).await;
    let pending = ["ORDER#1", "ORDER#2", "ORDER#3"];
    let messages: Vec<NewMessage> = pending
        .iter()
        .map(|pk| NewMessage::new(*pk, "orders", "{}"))
        .collect();
    let writer = ob.writer();
    let indexing = writer.clone().index_at_commit(true);
    indexing.commit(vec![], &messages).await.expect("commit");
    let in_flight = [NewMessage::new("ORDER#4", "orders", "{}")];
    writer.commit(vec![], &in_flight).await.expect("commit");

    // When the operator asks for the status
    let db = &ob.clients.dynamodb;
    let status = outbox_ops::status(db, &ob.ops_table())
        .await
        .expect("status");
    // Then the counts are the sweeper's: the message in flight is not one of them
    assert_eq!(status.counts.get("PENDING"), Some(&3), "{status:?}");
    assert_eq!(status.counts.get("FAILED"), Some(&2), "{status:?}");
    // And it read index entries only: each counted once, and each pending shard's
    // earliest once more; no table item. Its requests: a count of each of the 32
    // index partitions, the earliest entry of each pending shard, and DescribeTable
    let pending_shards: BTreeSet<String> = pending
        .iter()
        .map(|pk| SweepShards::default().shard_of(pk))
        .collect();
    let shards = pending_shards.len() as u64;
    let reads = &status.reads;
    assert_eq!(reads.index_entries, 3 + 2 + shards, "{reads:?}");
    assert_eq!(reads.table_items, 0, "{reads:?}");
    assert_eq!(reads.requests, 32 + shards + 1, "{reads:?}");

    // When the operator lists the failed messages
    let (failed, listing) = outbox_ops::failed_read(db, &ob.ops_table(), None)
        .await
        .expect("failed");
    // Then it read their two index entries and the two items, nothing else
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(
        (listing.index_entries, listing.table_items),
        (2, 2),
        "{listing:?}"
    );

    let (scanned, scan_units) = scan_cost(&ob).await;
    println!(
        "outbox-ops on a table of {BUSINESS_ITEMS} business items, 3 pending and 2 failed messages: \
         status {} requests, {} index entries, {} table items, {:.1} read units \
         (approximate table items {:?}); failed {} requests, {} index entries, {} table items, \
         {:.1} read units; a scan of the table instead: {scanned} items, {scan_units:.1} read units",
        reads.requests,
        reads.index_entries,
        reads.table_items,
        reads.read_units,
        status.approximate_table_items,
        listing.requests,
        listing.index_entries,
        listing.table_items,
        listing.read_units,
    );
}
