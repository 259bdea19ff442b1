//! Items the stream path cannot finish are left in the sweeper's index, also those
//! of a minimal producer or with foreign index attributes.

use dynamodb_outbox::stream::handle_stream_event;
use outbox_tests::minimal_item;
use outbox_tests::{Outbox, n, nv, s, sv};
use std::collections::HashMap;

#[tokio::test]
async fn a_minimal_item_the_stream_path_cannot_finish_is_put_in_the_sweeper_index() {
    // Given a boto3-style item (no index keys) whose destination is failing
    let mut ob = Outbox::new().await;
    let sk = "MESSAGE#PROFILE_UPDATED#1698765432";
    ob.put_raw(HashMap::from([
        ("PK".to_owned(), sv("USER#77")),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv("orders")),
        ("Payload".to_owned(), sv("{}")),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ]))
    .await;
    let config = ob.config_with_orders_unreachable();
    // When the publisher cannot send it
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert_eq!(response.batch_item_failures.len(), 1, "reported for retry");
    // Then it is in the sweeper index, so it is not lost when the stream gives up
    let item = ob.item("USER#77", sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert_eq!(
        s(&item, "SweepShard"),
        Some(dynamodb_outbox_core::SweepShards::default().shard_of("USER#77"))
    );
    assert!(n(&item, "SweepDueAt").is_some());
}

#[tokio::test]
async fn an_item_with_foreign_index_attributes_the_stream_path_cannot_finish_is_reindexed() {
    // Given items whose index attributes no sweep would ever claim — a shard outside
    // the sixteen, a due time with a fraction — on a destination that is failing
    let mut ob = Outbox::new().await;
    let mut foreign_shard = minimal_item("USER#1", "MESSAGE#X#1", "orders", "{}");
    foreign_shard.insert("SweepShard".into(), sv("99"));
    foreign_shard.insert("SweepDueAt".into(), nv(1));
    ob.put_raw(foreign_shard).await;
    let mut fractional = minimal_item("USER#2", "MESSAGE#X#2", "orders", "{}");
    fractional.insert(
        "SweepShard".into(),
        sv(&dynamodb_outbox_core::SweepShards::default().shard_of("USER#2")),
    );
    fractional.insert(
        "SweepDueAt".into(),
        aws_sdk_dynamodb::types::AttributeValue::N("1700000000000.5".into()),
    );
    ob.put_raw(fractional).await;
    let config = ob.config_with_orders_unreachable();

    // When the publisher cannot send them
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert_eq!(response.batch_item_failures.len(), 2);

    // Then both are in the sweeper index with values a sweep claims
    for pk in ["USER#1", "USER#2"] {
        let sk = if pk == "USER#1" {
            "MESSAGE#X#1"
        } else {
            "MESSAGE#X#2"
        };
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(
            s(&item, "SweepShard"),
            Some(dynamodb_outbox_core::SweepShards::default().shard_of(pk)),
            "{pk}"
        );
        match item.get("SweepDueAt") {
            Some(aws_sdk_dynamodb::types::AttributeValue::N(due)) => {
                assert!(
                    due.parse::<i64>().is_ok_and(|d| d > 1_700_000_000_000),
                    "{pk}: {due}"
                );
            }
            other => panic!("{pk}: {other:?}"),
        }
    }
}
