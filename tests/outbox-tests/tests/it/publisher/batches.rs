//! What one stream event becomes: send batches split at ten entries and under one
//! mebibyte; MODIFY and REMOVE records ignored without the filter too.

use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use outbox_tests::{Outbox, drain, sv};

#[tokio::test]
async fn batches_split_at_ten_entries() {
    let mut ob = Outbox::new().await;
    let msgs: Vec<NewMessage> = (0..25)
        .map(|i| NewMessage::new(format!("A#{i}"), "orders", "{}"))
        .collect();
    for chunk in msgs.chunks(25) {
        ob.writer().commit(vec![], chunk).await.expect("commit");
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 25);
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 25);
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        3,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    // (The marks are batched: the `marks` tests count them.)
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 25);
}

#[tokio::test]
async fn batches_split_by_size_under_one_mebibyte() {
    let mut ob = Outbox::new().await;
    // 12 messages of 200 KiB: five fit in 1 MiB, so 3 calls (the count limit alone would give 2)
    let payload = "p".repeat(200 * 1024);
    for i in 0..12 {
        ob.writer()
            .commit(
                vec![],
                &[NewMessage::new(
                    format!("BIG#{i}"),
                    "orders",
                    payload.clone(),
                )],
            )
            .await
            .expect("commit");
    }
    let event = ob.filtered_event().await;
    ob.clients.counter.reset();
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.sent, 12);
    assert_eq!(ob.clients.counter.of(&["SendMessageBatch"]), 3);
    let got = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(got.len(), 12);
    assert!(
        got.iter()
            .all(|m| m.body().map(str::len) == Some(200 * 1024))
    );
}

#[tokio::test]
async fn modify_and_remove_records_are_ignored_even_without_the_filter() {
    // Given a message published once, then changed (its SENT mark is a MODIFY record
    // too, where the emulator records one: MiniStack's PartiQL UPDATE writes none)
    let mut ob = Outbox::new().await;
    let c = ob
        .writer()
        .commit(vec![], &[NewMessage::new("A", "orders", "{}")])
        .await
        .expect("commit");
    let first = ob.stream_event().await;
    handle_stream_event(&ob.publisher(), &first).await;
    drain(&ob.clients.sqs, &ob.queue.url).await;
    ob.clients
        .dynamodb
        .update_item()
        .table_name(&ob.table)
        .key("PK", sv("A"))
        .key("SK", sv(&c.sort_keys[0]))
        .update_expression("SET Note = :n")
        .expression_attribute_values(":n", sv("looked at"))
        .send()
        .await
        .expect("modify");
    // and then deleted (as TTL would)
    ob.clients
        .dynamodb
        .delete_item()
        .table_name(&ob.table)
        .key("PK", sv("A"))
        .key("SK", sv(&c.sort_keys[0]))
        .send()
        .await
        .expect("delete");
    // When the unfiltered MODIFY and REMOVE records reach the handler
    let later = ob.stream_event().await;
    let names: Vec<&str> = later
        .records
        .iter()
        .map(|r| r.event_name.as_str())
        .collect();
    let (last, before) = names.split_last().expect("records");
    assert_eq!(*last, "REMOVE", "{names:?}");
    assert!(
        !before.is_empty() && before.iter().all(|n| *n == "MODIFY"),
        "{names:?}"
    );
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;
    // Then nothing is published and nothing reported
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary, dynamodb_outbox_core::publish::Summary::default());
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
}
