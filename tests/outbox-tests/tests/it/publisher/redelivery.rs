//! A stream batch delivered again, as Lambda redelivers it after a partial batch
//! response, an error or a timeout: from its lowest reported record, the whole batch
//! or its tail after a bisect. The emulators never redeliver (MiniStack ignores
//! partial batch responses), so the tests hand the same records to the handler again.
//! Each message is published once: what an earlier delivery finished is skipped.
//!
//! Two deliveries at once can still both publish (each read the items `PENDING`
//! before the other marked them): [`read_before_the_mark`] gives the tests of what
//! such duplicates do (one `MessageId`, one large-payload object, a refused mark) that
//! interleaving.

use super::keyed::own_names;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox_core::policy::{FailedMark, FenceRead};
use dynamodb_outbox_core::ports::{
    MarkChange, MarkCondition, MarkOutcome, OutboxStore, PendingPage, StatementAnswer, StatusRead,
};
use dynamodb_outbox_core::schema::{ItemKey, SeenIndex, Status};
use dynamodb_outbox_core::{Failure, Publisher};
use outbox_tests::stream::event_of;
use outbox_tests::{Outbox, drain, s};

/// A store whose status read answers as if it ran before another delivery marked the
/// items: every item `PENDING`. Everything else is the store's own.
#[derive(Debug)]
pub(crate) struct ReadBeforeTheMark<S>(S);

/// `publisher` as one of two deliveries at once: its status read finds the items
/// `PENDING` whatever the other delivery did, so it publishes them again.
pub(crate) fn read_before_the_mark<K, S>(
    publisher: Publisher<K, S>,
) -> Publisher<K, ReadBeforeTheMark<S>> {
    Publisher {
        sink: publisher.sink,
        store: ReadBeforeTheMark(publisher.store),
        config: publisher.config,
        clock: publisher.clock,
    }
}

impl<S: OutboxStore> OutboxStore for ReadBeforeTheMark<S> {
    async fn mark_batch(
        &self,
        changes: &[(ItemKey, MarkChange)],
    ) -> Result<Vec<StatementAnswer>, Failure> {
        self.0.mark_batch(changes).await
    }

    async fn pause(&self, pause: std::time::Duration) {
        self.0.pause(pause).await;
    }

    async fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> Result<MarkOutcome, Failure> {
        self.0.mark_sent(key, sent_at_ms, expires_at_s).await
    }

    async fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &SeenIndex,
    ) -> Result<MarkOutcome, Failure> {
        self.0.adopt_unindexed(key, shard, due_ms, seen).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        mark: &FailedMark,
        failed_at_ms: i64,
        condition: &MarkCondition,
    ) -> Result<MarkOutcome, Failure> {
        self.0.mark_failed(key, mark, failed_at_ms, condition).await
    }

    async fn load(&self, key: &ItemKey) -> Result<Option<serde_dynamo::Item>, Failure> {
        self.0.load(key).await
    }

    async fn pending(&self, read: &FenceRead, max_pages: u32) -> Result<PendingPage, Failure> {
        self.0.pending(read, max_pages).await
    }

    async fn statuses(&self, keys: &[ItemKey]) -> Result<StatusRead, Failure> {
        let pending = Some(Status::Pending.as_str().to_owned());
        Ok(StatusRead {
            statuses: keys.iter().map(|k| (k.clone(), pending.clone())).collect(),
            requests: 0,
        })
    }
}

/// The event of the last `n` records of `event`: what Lambda delivers again after a
/// partial batch response reports the first of them.
pub(crate) fn tail(
    event: &aws_lambda_events::event::dynamodb::Event,
    n: usize,
) -> aws_lambda_events::event::dynamodb::Event {
    let from = event.records.len().saturating_sub(n);
    event_of(event.records[from..].to_vec())
}

/// Commits `count` messages on `topic`, one aggregate each (`prefix#i`), one
/// transaction each; returns their keys.
pub(crate) async fn commit_each(
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

pub(crate) async fn statuses(ob: &Outbox, keys: &[(String, String)]) -> Vec<Option<String>> {
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
    // And the redeliveries report nothing for retry, send nothing and count the skips
    assert!(again.0.batch_item_failures.is_empty(), "{again:?}");
    assert!(tail.0.batch_item_failures.is_empty(), "{tail:?}");
    assert_eq!(
        (again.1.sent, again.1.already_settled),
        (0, 20),
        "{again:?}"
    );
    assert_eq!((tail.1.sent, tail.1.already_settled), (0, 15), "{tail:?}");
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

#[tokio::test]
async fn a_status_read_that_fails_reports_every_record_and_sends_nothing() {
    // Given pending messages, and a publisher whose status read fails (here: it reads
    // a table that is not there; on AWS a throttle or a missing dynamodb:BatchGetItem)
    let mut ob = Outbox::new().await;
    let keys = commit_each(&ob, "ORDER", "orders", 3).await;
    let event = ob.filtered_event().await;
    let mut config = ob.config();
    config.table_name = format!("{}-missing", ob.table);
    // When the batch is delivered
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    // Then every record is reported for retry, nothing is sent, the items stay PENDING
    assert_eq!(response.batch_item_failures.len(), 3, "{response:?}");
    assert_eq!((summary.sent, summary.status_unread), (0, 3), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
    let pending = Some("PENDING".to_owned());
    assert!(statuses(&ob, &keys).await.iter().all(|s| *s == pending));
}

#[tokio::test]
async fn the_status_read_costs_one_request_per_hundred_records() {
    // Given a batch of 101 pending messages
    let mut ob = Outbox::new().await;
    let msgs: Vec<NewMessage> = (0..101)
        .map(|i| NewMessage::new(format!("ORDER#{i}"), "orders", "{}"))
        .collect();
    for chunk in msgs.chunks(50) {
        ob.writer().commit(vec![], chunk).await.expect("commit");
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 101);
    let publisher = ob.publisher();
    // When its first 100 records are delivered, then all 101
    ob.clients.counter.reset();
    let hundred = handle_stream_event(&publisher, &event_of(event.records[..100].to_vec())).await;
    let one_call = ob.clients.counter.of(&["BatchGetItem"]);
    let all = handle_stream_event(&publisher, &event).await;
    // Then the first read is one BatchGetItem, the second two
    assert_eq!(hundred.1.sent, 100, "{hundred:?}");
    assert_eq!((all.1.sent, all.1.already_settled), (1, 100), "{all:?}");
    assert_eq!(one_call, 1, "{:?}", ob.clients.counter.by_operation());
    assert_eq!(
        ob.clients.counter.of(&["BatchGetItem"]),
        1 + 2,
        "{:?}",
        ob.clients.counter.by_operation()
    );
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 101);
}
