//! A table keyed `pk`/`sk` whose TTL attribute is `expires_at` (an application's own
//! single-table design): the writer, the stream path and its marks use its names.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{KeyNames, NewMessage};
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use outbox_tests::{Outbox, attr, drain, n, s, sv};

pub(crate) fn own_names() -> KeyNames {
    KeyNames::new("pk", "sk").ttl_attribute("expires_at")
}

#[tokio::test]
async fn messages_committed_to_a_table_keyed_otherwise_are_published_and_marked_sent_under_its_names()
 {
    // Given a business write and two messages committed together on a table keyed pk/sk
    let mut ob = Outbox::keyed(own_names()).await;
    let business = Put::builder()
        .table_name(&ob.table)
        .item("pk", sv("USER#1"))
        .item("sk", sv("PROFILE"))
        .item("Name", sv("Zhang San"))
        .build()
        .expect("put");
    let committed = ob
        .writer()
        .commit(
            vec![TransactWriteItem::builder().put(business).build()],
            &[
                NewMessage::new("USER#1", "orders", r#"{"order":1}"#),
                NewMessage::new("USER#2", "orders", r#"{"order":2}"#),
            ],
        )
        .await
        .expect("commit");
    // When the publisher handles the stream records, filtered as deployed
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 2, "the two outbox inserts");
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    // Then both messages are on the queue with their ids
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.sent, summary.unmarked), (2, 0), "{summary:?}");
    let mut ids: Vec<String> = drain(&ob.clients.sqs, &ob.queue.url)
        .await
        .iter()
        .filter_map(|m| attr(m, ATTR_MESSAGE_ID))
        .collect();
    ids.sort();
    let mut expected = committed.message_ids.clone();
    expected.sort();
    assert_eq!(ids, expected);
    // And each item is SENT under the table's key names, its TTL in `expires_at`
    for (pk, sk) in ["USER#1", "USER#2"].iter().zip(&committed.sort_keys) {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{item:?}");
        let sent_at = n(&item, "SentAt").expect("SentAt");
        assert_eq!(n(&item, "expires_at"), Some(sent_at / 1000 + 7 * 86_400));
        for engine_name in ["PK", "SK", "ExpiresAt"] {
            assert!(!item.contains_key(engine_name), "{engine_name}: {item:?}");
        }
        assert!(!item.contains_key("SweepShard") && !item.contains_key("SweepDueAt"));
    }
    // And the business item landed too
    assert!(ob.item("USER#1", "PROFILE").await.is_some());
}
