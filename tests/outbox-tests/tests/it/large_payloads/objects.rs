//! The offloaded objects: a republish overwrites the same one, a deleted one fails
//! its message only, no bucket fails an oversized payload saying how to enable it, a
//! `FAILED` message's payload is kept where no lifecycle rule expires it.

use super::{consume, keys, notified, payload, publish, received, routes};
use crate::publisher::redelivery::read_before_the_mark;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox_core::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer, object_key};
use dynamodb_outbox_idempotency::MessageFailure;
use outbox_tests::subscribers::Subscriber;
use outbox_tests::{Outbox, drain, s};

#[tokio::test]
async fn a_failed_messages_offloaded_payload_is_kept_under_failed_and_its_copy_and_item_point_there()
 {
    // Given a producer that offloads a payload larger than an item holds, on a topic
    // without a route: the item holds only the pointer to outbox/<MessageId>, which
    // the bucket's lifecycle rule expires (30 days by default)
    let mut ob = Outbox::new().await;
    let bucket = ob.bucket().await;
    let writer = ob.writer().large_payloads(ob.clients.s3.clone(), &bucket);
    let big = payload(500 * 1024);
    let committed = writer
        .commit(
            vec![],
            &[NewMessage::new("ORDER#1", "nowhere", big.clone())],
        )
        .await
        .expect("commit");
    let id = &committed.message_ids[0];
    // When the publisher dead-letters it
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    // Then the payload is also at failed/<MessageId>, which no rule expires
    let retained = PayloadPointer::for_failed(&bucket, id);
    let object = ob
        .clients
        .s3
        .get_object()
        .bucket(&bucket)
        .key(&retained.key)
        .send()
        .await
        .expect("the retained object");
    let bytes = object.body.collect().await.expect("read").into_bytes();
    assert!(bytes.as_ref() == big.as_bytes(), "the payload, intact");
    // And the dead-letter copy and the FAILED item point there
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body(), Some(retained.encode().as_str()));
    let item = ob
        .item("ORDER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    assert_eq!(s(&item, "Payload"), Some(retained.encode()));
    assert!(!item.contains_key("ExpiresAt"), "a FAILED item has no TTL");
}

#[tokio::test]
async fn a_republish_overwrites_the_same_object() {
    // Given a queue route whose threshold sends every payload over 1 KiB to the bucket
    let mut ob = Outbox::new().await;
    let bucket = ob.bucket().await;
    let mut config = ob.config();
    config.routes = config
        .routes
        .with_large_payloads(Some(bucket.clone()), Some(1024));
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("ORDER#1", "orders", payload(4096))],
        )
        .await
        .expect("commit");
    // When the same stream record is published twice (two deliveries at once, each
    // reading it PENDING before the other marked it)
    let event = ob.filtered_event().await;
    for _ in 0..2 {
        let publisher = read_before_the_mark(ob.publisher_with(config.clone()));
        let (response, _) = handle_stream_event(&publisher, &event).await;
        assert!(response.batch_item_failures.is_empty());
    }
    // Then two messages carry the same pointer, and the bucket holds one object
    let messages = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(messages.len(), 2);
    let pointer = PayloadPointer::for_message(&bucket, &committed.message_ids[0]);
    for m in &messages {
        assert_eq!(m.body(), Some(pointer.encode().as_str()));
        let size = m
            .message_attributes()
            .and_then(|a| a.get(ATTR_EXTENDED_PAYLOAD_SIZE))
            .map(|v| (v.data_type(), v.string_value()));
        assert_eq!(size, Some(("Number", Some("4096"))));
    }
    assert_eq!(
        keys(&ob, &bucket).await,
        [object_key(&committed.message_ids[0])]
    );
}

#[tokio::test]
async fn a_deleted_object_fails_its_message_only_with_a_retryable_reason() {
    // Given two offloaded messages on a queue, one of whose objects is deleted
    let mut ob = Outbox::new().await;
    let bucket = ob.bucket().await;
    let mut config = ob.config();
    config.routes = config
        .routes
        .with_large_payloads(Some(bucket.clone()), Some(1024));
    let ids = publish(&mut ob, config, "orders", &[payload(2048), payload(3072)]).await;
    ob.clients
        .s3
        .delete_object()
        .bucket(&bucket)
        .key(object_key(&ids[1]))
        .send()
        .await
        .expect("delete");
    let sub = Subscriber::of(&ob.clients, &ob.queue.url).await;
    // When the consumer processes the batch
    let messages = received(&ob, &sub).await;
    assert_eq!(messages.len(), 2);
    let report = consume(&ob, &messages).await;
    // Then only the message whose object is gone fails, retryably, naming the pointer
    let failed: Vec<&str> = report
        .outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .filter_map(|o| o.outbox_message_id.as_deref())
        .collect();
    assert_eq!(failed, [ids[1].as_str()]);
    let outcome = report
        .outcomes
        .iter()
        .find(|o| o.outbox_message_id.as_deref() == Some(&ids[1]))
        .expect("outcome");
    match &outcome.result {
        Err(MessageFailure::PayloadUnavailable(e)) => {
            assert!(e.is_retryable(), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("s3://{bucket}/outbox/{}", ids[1])),
                "{text}"
            );
            assert!(text.contains("does not exist"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(report.response().batch_item_failures.len(), 1);
}

#[tokio::test]
async fn without_a_bucket_an_oversized_payload_is_failed_saying_how_to_enable_the_claim_check() {
    // Given an SNS route without a bucket
    let mut ob = Outbox::new().await;
    let (sub, topic_arn) = notified(&ob, "large-none-sub").await;
    let config = routes(&ob, "notify", &topic_arn, None);
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("ORDER#1", "notify", payload(300 * 1024))],
        )
        .await
        .expect("commit");
    // When it is published
    let event = ob.filtered_event().await;
    let (_, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then it is FAILED with the reason, copied to the dead-letter queue, and not sent
    assert_eq!(summary.dead_lettered, 1);
    let item = ob
        .item("ORDER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("accepts at most 262144 bytes"), "{reason}");
    assert!(reason.contains("OUTBOX_LARGE_PAYLOAD_BUCKET"), "{reason}");
    assert_eq!(drain(&ob.clients.sqs, &ob.dlq_url).await.len(), 1);
    assert!(drain(&ob.clients.sqs, &sub.url).await.is_empty());
}
