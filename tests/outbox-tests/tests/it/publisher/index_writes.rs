//! On the happy path a message is written once by the producer and marked once by
//! the publisher: the library's items never enter the sparse sweeper index unless
//! the stream path could not finish them, or the writer indexes at commit.

use crate::sweeper::{config, index_size, sweep_at, sweeper};
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox_core::clock::now_ms;
use outbox_tests::{Outbox, drain, s};

const MESSAGES: usize = 100;

/// Commits MESSAGES messages to `orders` over 20 aggregates, 25 to a transaction,
/// with `writer`; returns their keys.
async fn commit_hundred(writer: &dynamodb_outbox::OutboxWriter) -> Vec<(String, String)> {
    let mut keys = Vec::new();
    let all: Vec<usize> = (0..MESSAGES).collect();
    for chunk in all.chunks(25) {
        let messages: Vec<NewMessage> = chunk
            .iter()
            .map(|i| NewMessage::new(format!("ORDER#{}", i % 20), "orders", format!("{i}")))
            .collect();
        let committed = writer.commit(vec![], &messages).await.expect("commit");
        keys.extend(
            messages
                .iter()
                .map(|m| m.aggregate.clone())
                .zip(committed.sort_keys),
        );
    }
    keys
}

async fn statuses(ob: &Outbox, keys: &[(String, String)]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for (pk, sk) in keys {
        let item = ob.item(pk, sk).await.expect("item");
        out.push(s(&item, "Status"));
    }
    out
}

#[tokio::test]
async fn a_hundred_library_messages_published_by_the_stream_path_never_enter_the_sweeper_index() {
    // Given a hundred messages committed with the library's writer as it comes
    let mut ob = Outbox::new().await;
    let keys = commit_hundred(&ob.writer()).await;
    // Then the sweeper index is empty after the commits
    assert_eq!(index_size(&ob).await, 0, "nothing indexed at commit");

    // When the stream publisher publishes them
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), MESSAGES);
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;

    // Then each is sent and marked SENT, and the index is still empty
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    assert_eq!(summary.sent, MESSAGES, "{summary:?}");
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), MESSAGES);
    assert!(
        statuses(&ob, &keys)
            .await
            .iter()
            .all(|s| s.as_deref() == Some("SENT"))
    );
    assert_eq!(index_size(&ob).await, 0, "the SENT mark indexes nothing");
    // And a sweep finds nothing to do
    let swept = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    assert_eq!((swept.found, swept.index_items_read), (0, 0), "{swept:?}");
}

#[tokio::test]
async fn messages_the_stream_path_cannot_send_enter_the_index_and_leave_it_when_swept() {
    // Given a hundred messages committed with the default writer, whose destination
    // is unreachable when the stream publisher handles them
    let mut ob = Outbox::new().await;
    let keys = commit_hundred(&ob.writer()).await;
    assert_eq!(index_size(&ob).await, 0);
    let event = ob.filtered_event().await;
    let failing = ob.publisher_with(ob.config_with_orders_unreachable());
    let (response, _) = handle_stream_event(&failing, &event).await;
    assert!(
        !response.batch_item_failures.is_empty(),
        "reported for retry"
    );

    // Then the publisher put each in the sweeper index (adopted, due after a minute)
    assert_eq!(index_size(&ob).await, MESSAGES as i32);

    // When the sweeper runs once they are due, the destination back
    let swept = sweep_at(
        &sweeper(&ob.clients, config(ob.config())),
        now_ms() + 61_000,
    )
    .await;

    // Then it sent every one and marked it SENT, and the index is empty again
    assert_eq!(
        (swept.found, swept.marked),
        (MESSAGES, MESSAGES),
        "{swept:?}"
    );
    assert!(
        statuses(&ob, &keys)
            .await
            .iter()
            .all(|s| s.as_deref() == Some("SENT"))
    );
    assert_eq!(index_size(&ob).await, 0);
}

#[tokio::test]
async fn a_writer_indexing_at_commit_puts_every_message_in_the_index_until_its_sent_mark() {
    // Given a hundred messages committed by a writer that indexes at commit
    let mut ob = Outbox::new().await;
    let keys = commit_hundred(&ob.writer().index_at_commit(true)).await;
    // Then every one is in the sweeper index from its commit
    assert_eq!(index_size(&ob).await, MESSAGES as i32);

    // When the stream publisher publishes them
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;

    // Then their SENT marks take them out of it
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    assert!(
        statuses(&ob, &keys)
            .await
            .iter()
            .all(|s| s.as_deref() == Some("SENT"))
    );
    assert_eq!(index_size(&ob).await, 0);
}

/// Index write units DynamoDB reports for the writer's transaction of `messages`,
/// sent as `commit_prepared` sends it, with `ReturnConsumedCapacity=INDEXES`.
async fn index_units_of_commit(
    ob: &Outbox,
    writer: &dynamodb_outbox::OutboxWriter,
    messages: &[NewMessage],
) -> f64 {
    let prepared = writer.prepare(vec![], messages).expect("valid messages");
    let out = ob
        .clients
        .dynamodb
        .transact_write_items()
        .set_transact_items(Some(prepared.actions().to_vec()))
        .client_request_token(prepared.client_request_token())
        .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Indexes)
        .send()
        .await
        .expect("commit");
    out.consumed_capacity()
        .iter()
        .flat_map(|c| c.global_secondary_indexes().into_iter().flatten())
        .filter_map(|(_, capacity)| capacity.capacity_units())
        .fold(0.0, |total, units| total + units)
}

#[tokio::test]
async fn the_producers_transaction_consumes_no_index_capacity_unless_it_indexes_at_commit() {
    if std::env::var("OUTBOX_EMULATOR").as_deref() == Ok("moto") {
        eprintln!("skipped on moto: it reports no index capacity; MiniStack does, as AWS");
        return;
    }
    // Given ten messages over ten aggregates
    let ob = Outbox::new().await;
    let messages: Vec<NewMessage> = (0..10)
        .map(|i| NewMessage::new(format!("ORDER#{i}"), "orders", "{}"))
        .collect();
    // When the default writer commits them, and a writer that indexes at commit
    let unindexed = index_units_of_commit(&ob, &ob.writer(), &messages).await;
    let indexed = index_units_of_commit(&ob, &ob.writer().index_at_commit(true), &messages).await;
    println!(
        "index write units of a transaction of 10 messages: {unindexed} by default, \
         {indexed} with index_at_commit(true)"
    );
    // Then the default's transaction writes no index entry, the opt-in's one per
    // message (MiniStack reports one unit each; AWS bills a transaction's twice)
    assert_eq!(unindexed, 0.0);
    assert!(indexed >= 10.0, "{indexed}");
}
