//! Dead-letter copies the dead-letter queue cannot take as they are: through the
//! claim-check bucket when there is one, else as a record without the payload, so
//! that every FAILED message has a record on the queue operators watch. The queue is
//! 1 KiB (`MaximumMessageSize` 1024, the smallest SQS allows), so a modest message
//! shows what a 400 KB item shows on a 256 KiB queue; both emulators enforce it.

use dynamodb_outbox::Routes;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{Destination, PublisherConfig};
use dynamodb_outbox_core::large_payload::{ATTR_EXTENDED_PAYLOAD_SIZE, PayloadPointer};
use dynamodb_outbox_core::message::{ATTR_AGGREGATE, ATTR_ERROR, ATTR_PAYLOAD_ON};
use outbox_tests::{Outbox, attr, drain, minimal_item, n, s};

/// `orders` → the outbox's queue, the dead-letter queue 1 KiB, large payloads to
/// `bucket` when given.
async fn small_dead_letter_queue(ob: &Outbox, bucket: Option<&str>) -> (PublisherConfig, String) {
    let dlq = ob.sized_queue("outbox-dlq", 1024).await;
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"orders":"{}"}}"#, ob.queue.url), None)
        .expect("routes")
        .with_large_payloads(bucket.map(str::to_owned), None);
    config.dead_letter = Destination::sqs(&dlq);
    (config, dlq)
}

#[tokio::test]
async fn an_item_at_the_size_limit_whose_copy_is_too_large_goes_through_the_claim_check() {
    // Given an unpublishable item as large as the table accepts (no room for a
    // LastError while it keeps its payload), a 1 KiB dead-letter queue whose limit
    // the publisher learned at start, and a claim-check bucket
    let mut ob = Outbox::new().await;
    let bucket = ob.bucket().await;
    let (config, dlq) = small_dead_letter_queue(&ob, Some(&bucket)).await;
    let (pk, sk) = ("BIG#1", "MESSAGE#X#1");
    let payload_len = ob.put_largest(minimal_item(pk, sk, "nowhere", "")).await;
    let publisher = ob.publisher_learning(config).await;
    assert_eq!(publisher.config.dead_letter.max_message_bytes(), 1024);

    // When the publisher handles its record
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&publisher, &event).await;

    // Then the dead-letter queue holds a pointer to the payload, written to the bucket
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    let dead = drain(&ob.clients.sqs, &dlq).await;
    assert_eq!(dead.len(), 1, "one dead-letter record");
    let pointer = PayloadPointer::decode(dead[0].body().unwrap_or_default()).expect("a pointer");
    assert_eq!(pointer.bucket, bucket);
    // under failed/, which no lifecycle rule expires: the FAILED item gives its
    // payload up for it, and lives until it is redriven
    assert!(pointer.key.starts_with("failed/"), "{pointer}");
    assert_eq!(
        attr(&dead[0], ATTR_EXTENDED_PAYLOAD_SIZE),
        Some(payload_len.to_string())
    );
    assert_eq!(attr(&dead[0], ATTR_AGGREGATE).as_deref(), Some(pk));
    let object = ob
        .clients
        .s3
        .get_object()
        .bucket(&bucket)
        .key(&pointer.key)
        .send()
        .await
        .expect("the payload's object");
    let bytes = object.body.collect().await.expect("read").into_bytes();
    assert_eq!(bytes.len(), payload_len);
    // And the item, its payload given to the copy, is FAILED with its reason
    let item = ob.item(pk, sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("no route for topic `nowhere`"), "{reason}");
    assert!(reason.contains(&pointer.to_string()), "{reason}");
    assert!(n(&item, "FailedAt").is_some());
    assert!(!item.contains_key("Payload"));
}

#[tokio::test]
async fn without_a_bucket_a_copy_the_queue_refuses_becomes_a_record_without_the_payload() {
    // Given a 2 KB unpublishable message and a 1 KiB dead-letter queue whose limit
    // the publisher does not know (so the queue itself refuses the copy), no bucket
    let mut ob = Outbox::new().await;
    let (config, dlq) = small_dead_letter_queue(&ob, None).await;
    let (pk, sk) = ("P#1", "MESSAGE#X#1");
    ob.put_raw(minimal_item(pk, sk, "nowhere", &"p".repeat(2000)))
        .await;

    // When the publisher handles its record
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;

    // Then the dead-letter queue holds a record of it, without the payload
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.dead_lettered, 1, "{summary:?}");
    let dead = drain(&ob.clients.sqs, &dlq).await;
    assert_eq!(dead.len(), 1, "one dead-letter record");
    assert_eq!(
        attr(&dead[0], ATTR_PAYLOAD_ON).as_deref(),
        Some("outbox item")
    );
    assert!(attr(&dead[0], ATTR_ERROR).is_some_and(|e| e.contains("no route")));
    assert!(dead[0].body().is_some_and(|b| b.contains("2000 bytes")));
    // And the item keeps its payload, FAILED with the reason
    let item = ob.item(pk, sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    assert_eq!(s(&item, "Payload").map(|p| p.len()), Some(2000));
    let reason = s(&item, "LastError").expect("LastError");
    assert!(reason.contains("refused the copy"), "{reason}");
    assert!(
        reason.contains("the payload is only on this item"),
        "{reason}"
    );
}
