//! A claim the SDK sends again after its answer was lost is still the sweep's own.

use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::ports::{Claim, SweepStore};
use dynamodb_outbox_core::schema::ItemKey;
use outbox_tests::{Outbox, bulk_put, indexed_item, n};

/// Issue 38: the cost bench's backlog drain on MiniStack lost answers (HTTP/2 GOAWAY,
/// broken pipes); the SDK sent each claim again, the first had taken effect, and the
/// second was refused by the lease it wrote. Taken for another sweep's claim, the item
/// waited out the lease and held back every later message of its aggregate.
#[tokio::test]
async fn a_claim_sent_again_after_it_took_effect_is_ours() {
    // Given a message due in the index, claimed by a sweep
    let ob = Outbox::new().await;
    let due = now_ms() - 1_000;
    let key = ItemKey {
        pk: "LOST#1".into(),
        sk: format!("MESSAGE#ORDER_PLACED#{due}"),
    };
    let item = indexed_item(&key.pk, &key.sk, "orders", "{}", due);
    bulk_put(&ob.clients.dynamodb, &ob.table, vec![item]).await;
    let store = DynamoStore::new(ob.clients.dynamodb.clone(), &ob.table);
    let shard = SweepShards::default().shard_of(&key.pk);
    let (seen, lease) = (due.to_string(), now_ms() + 120_000);
    let first = store
        .claim(&key, &seen, lease, &shard)
        .await
        .expect("claim");
    assert!(matches!(first, Claim::Claimed(_)), "{first:?}");

    // When the same claim is sent again (its answer lost)
    let again = store
        .claim(&key, &seen, lease, &shard)
        .await
        .expect("claim");

    // Then it is claimed, as the item the first one wrote: one attempt, not two
    let Claim::Claimed(claimed) = again else {
        panic!("the sweep's own claim taken for another's: {again:?}");
    };
    let retry_count = claimed.message.as_ref().map(|m| m.retry_count);
    assert_eq!(retry_count, Ok(1), "{claimed:?}");
    let stored = ob.item(&key.pk, &key.sk).await.expect("item");
    assert_eq!(n(&stored, "RetryCount"), Some(1));
    assert_eq!(n(&stored, "SweepDueAt"), Some(lease));

    // And another sweep's claim, with a lease of its own, is still held off
    let other = store
        .claim(&key, &seen, lease + 1, &shard)
        .await
        .expect("claim");
    assert!(matches!(other, Claim::Held(_)), "{other:?}");
}
