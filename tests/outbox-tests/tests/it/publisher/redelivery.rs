//! A stream batch delivered again, as Lambda redelivers it after a partial batch
//! response, an error or a timeout: from its lowest reported record, the whole batch
//! or its tail after a bisect. The emulators never redeliver (MiniStack ignores
//! partial batch responses), so the tests hand the same records to the handler again.
//! Each message is published once: what an earlier delivery finished is skipped.

use super::keyed::own_names;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use outbox_tests::stream::event_of;
use outbox_tests::{Outbox, drain, s};

/// The event of the last `n` records of `event`: what Lambda delivers again after a
/// partial batch response reports the first of them.
fn tail(
    event: &aws_lambda_events::event::dynamodb::Event,
    n: usize,
) -> aws_lambda_events::event::dynamodb::Event {
    let from = event.records.len().saturating_sub(n);
    event_of(event.records[from..].to_vec())
}

/// Commits `count` messages on `topic`, one aggregate each (`prefix#i`), one
/// transaction each; returns their keys.
async fn commit_each(
    ob: &Outbox,
    prefix: &str,
    topic: &str,
    count: usize,
) -> Vec<(String, String)> {
    let mut keys = Vec::with_capacity(count);
    for i in 0..count {
        let pk = format!("{prefix}#{i}");
        let c = ob
            .writer()
            .commit(
                vec![],
                &[NewMessage::new(&pk, topic, format!("{{\"n\":{i}}}"))],
            )
            .await
            .expect("commit");
        keys.push((pk, c.sort_keys[0].clone()));
    }
    keys
}

async fn statuses(ob: &Outbox, keys: &[(String, String)]) -> Vec<Option<String>> {
    let mut statuses = Vec::with_capacity(keys.len());
    for (pk, sk) in keys {
        let item = ob.item(pk, sk).await;
        statuses.push(item.and_then(|i| s(&i, "Status")));
    }
    statuses
}

#[tokio::test]
async fn a_batch_delivered_whole_again_and_then_its_tail_publishes_each_message_once() {
    // Given 20 pending messages, one aggregate each, and their 20 INSERT records
    let mut ob = Outbox::new().await;
    let keys = commit_each(&ob, "ORDER", "orders", 20).await;
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 20);
    let publisher = ob.publisher();
    // When Lambda delivers the batch, delivers it whole again (a partial batch response
    // reported its first record, or the invocation timed out), then its last 15
    let first = handle_stream_event(&publisher, &event).await;
    assert!(first.0.batch_item_failures.is_empty(), "{first:?}");
    ob.clients.counter.reset();
    let again = handle_stream_event(&publisher, &event).await;
    let status_reads = ob.clients.counter.of(&["BatchGetItem"]);
    let redelivered = ob.clients.counter.by_operation();
    let tail = handle_stream_event(&publisher, &tail(&event, 15)).await;
    // Then the queue holds each message once
    let on_queue = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(on_queue.len(), 20, "{again:?} {tail:?}");
    // And every item is SENT
    let sent = Some("SENT".to_owned());
    assert!(statuses(&ob, &keys).await.iter().all(|s| *s == sent));
    // And the redeliveries report nothing for retry and send nothing
    assert!(again.0.batch_item_failures.is_empty(), "{again:?}");
    assert!(tail.0.batch_item_failures.is_empty(), "{tail:?}");
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        0,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    // What the check costs: one consistent BatchGetItem per delivery of up to 100 records
    assert_eq!(status_reads, 1, "{redelivered:?}");
}

#[tokio::test]
async fn a_fifo_batch_delivered_again_sends_nothing_again() {
    // Given four aggregates of five FIFO messages each, their records in one batch
    // (FIFO deduplication would hide a second send from the queue for five minutes:
    // the sends are counted)
    let mut ob = Outbox::new().await;
    let mut keys = Vec::new();
    for i in 0..5 {
        for account in 0..4 {
            let pk = format!("ACCOUNT#{account}");
            let c = ob
                .writer()
                .commit(
                    vec![],
                    &[NewMessage::new(&pk, "ledger", format!("{{\"n\":{i}}}"))],
                )
                .await
                .expect("commit");
            keys.push((pk, c.sort_keys[0].clone()));
        }
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 20);
    let publisher = ob.publisher();
    let first = handle_stream_event(&publisher, &event).await;
    assert!(first.0.batch_item_failures.is_empty(), "{first:?}");
    assert_eq!(first.1.sent, 20, "{first:?}");
    // When the batch is delivered again, whole and then its last 15
    ob.clients.counter.reset();
    let again = handle_stream_event(&publisher, &event).await;
    let tail = handle_stream_event(&publisher, &tail(&event, 15)).await;
    // Then nothing is sent again, nothing reported, nothing deferred
    assert_eq!(
        ob.clients.counter.of(&["SendMessageBatch"]),
        0,
        "{again:?} {tail:?} {:?}",
        ob.clients.counter.by_operation()
    );
    for (response, summary) in [&again, &tail] {
        assert!(response.batch_item_failures.is_empty(), "{response:?}");
        assert_eq!((summary.sent, summary.deferred), (0, 0), "{summary:?}");
    }
    // And the queue holds the 20 messages, each group in order
    let on_queue = drain(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(on_queue.len(), 20);
    let sent = Some("SENT".to_owned());
    assert!(statuses(&ob, &keys).await.iter().all(|s| *s == sent));
}

#[tokio::test]
async fn a_batch_redelivered_on_a_table_keyed_otherwise_publishes_each_message_once() {
    // Given 12 pending messages on a table keyed pk/sk
    let mut ob = Outbox::keyed(own_names()).await;
    commit_each(&ob, "USER", "orders", 12).await;
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 12);
    let publisher = ob.publisher();
    // When the batch is delivered twice
    let first = handle_stream_event(&publisher, &event).await;
    let again = handle_stream_event(&publisher, &event).await;
    // Then each message is published once, and nothing is reported
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 12);
    assert_eq!(first.1.sent, 12, "{first:?}");
    assert_eq!(again.1.sent, 0, "{again:?}");
    assert!(again.0.batch_item_failures.is_empty(), "{again:?}");
}
