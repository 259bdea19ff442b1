//! The publish path against the in-memory fakes: the logic only (the conditional
//! writes themselves are tested against the emulator).

mod dead_letter;
mod fence;
mod sequence;
mod large_payload;
mod limit;
mod mark;
mod redelivery;
mod retention;

use super::*;
use crate::fakes::{MemoryStore, RecordingSink, Refusals};
use crate::route::{Destination, Routes};
use crate::schema::OutboxMessage;

fn config() -> PublisherConfig {
    PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                ("std".to_owned(), Destination::sqs("https://q/std")),
                ("fifo".to_owned(), Destination::sqs("https://q/f.fifo")),
                ("other".to_owned(), Destination::sqs("https://q/other")),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    }
}

fn work(pk: &str, topic: &str, body: &str) -> WorkItem {
    let key = ItemKey {
        pk: pk.into(),
        sk: format!("MESSAGE#{body}"),
    };
    publish_work(body, key, format!("id-{body}"), topic, body.into())
}

/// A library message to publish, written at 1 and indexed at commit: the work
/// item `id` every test file of the publish path builds its own way.
fn publish_work(
    id: &str,
    key: ItemKey,
    message_id: String,
    topic: &str,
    payload: String,
) -> WorkItem {
    WorkItem {
        id: id.to_owned(),
        work: Work::Publish(OutboxMessage {
            index: crate::schema::SeenIndex::ours(crate::schema::SweepShards::default().shard_of(&key.pk), 1),
            key,
            message_id,
            topic: topic.into(),
            payload,
            created_at: 1,
            retry_count: 0,
            sequence: None,
            payload_size: None,
            trace: None,
            home_region: None,
            follows: None,
        }),
    }
}

fn publisher(sink: RecordingSink) -> Publisher<RecordingSink, MemoryStore> {
    Publisher::new(sink, MemoryStore::default(), config())
        .with_clock(crate::clock::ManualClock::at(1_700_000_000_000))
}

#[tokio::test]
async fn a_transient_entry_failure_holds_back_only_later_messages_of_its_aggregate() {
    // Given A1 fails transiently in the first call, and A2, A3 follow in later calls
    let items: Vec<WorkItem> = vec![
        work("A", "fifo", "a1"),
        work("B", "fifo", "b1"),
        work("A", "fifo", "a2"),
        work("B", "fifo", "b2"),
        work("A", "other", "a3"),
    ];
    let p = publisher(RecordingSink::new(Refusals {
        transient: vec!["a1".into()],
        ..Refusals::default()
    }));
    let outcomes = p.process(&items).await;
    assert_eq!(
        outcomes[0],
        Outcome::Retry {
            reason: "Throttled".into()
        }
    );
    assert_eq!(outcomes[1], Outcome::Sent { marked: true });
    assert_eq!(outcomes[2], Outcome::Blocked);
    assert_eq!(outcomes[3], Outcome::Sent { marked: true });
    assert_eq!(
        outcomes[4],
        Outcome::Blocked,
        "another destination, same aggregate: held back too"
    );
    // And A2 / A3 were never sent
    let sent: Vec<String> = p.sink.calls().into_iter().flat_map(|(_, b)| b).collect();
    assert!(
        !sent.contains(&"a2".to_owned()) && !sent.contains(&"a3".to_owned()),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_fifo_call_never_holds_two_messages_of_one_group() {
    let items: Vec<WorkItem> = (0..4)
        .map(|i| work("A", "fifo", &format!("a{i}")))
        .chain([work("B", "fifo", "b0")])
        .collect();
    let p = publisher(RecordingSink::default());
    p.process(&items).await;
    let calls = p.sink.calls();
    assert_eq!(
        calls.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(),
        vec![vec!["a0", "b0"], vec!["a1"], vec!["a2"], vec!["a3"]],
        "one call per round, in order, B packed with A's first"
    );
}

#[tokio::test]
async fn a_standard_queue_packs_one_aggregate_into_full_calls_in_order() {
    let items: Vec<WorkItem> = (0..23)
        .map(|i| work("A", "std", &format!("m{i:02}")))
        .collect();
    let p = publisher(RecordingSink::default());
    let outcomes = p.process(&items).await;
    assert!(
        outcomes
            .iter()
            .all(|o| *o == Outcome::Sent { marked: true })
    );
    let calls = p.sink.calls();
    assert_eq!(
        calls.iter().map(|(_, b)| b.len()).collect::<Vec<_>>(),
        vec![10, 10, 3]
    );
    let flat: Vec<String> = calls.into_iter().flat_map(|(_, b)| b).collect();
    let mut sorted = flat.clone();
    sorted.sort();
    assert_eq!(flat, sorted);
}

#[tokio::test]
async fn an_entry_the_destination_refuses_for_good_becomes_poison_without_blocking() {
    let items = vec![work("A", "std", "bad"), work("A", "std", "good")];
    let p = publisher(RecordingSink::new(Refusals {
        refused: vec!["bad".into()],
        ..Refusals::default()
    }));
    let outcomes = p.process(&items).await;
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { reason, marked: true } if reason.contains("InvalidMessageContents"))
    );
    assert_eq!(outcomes[1], Outcome::Sent { marked: true });
    let failed = p.store.failed();
    assert_eq!(failed.len(), 1);
    let calls = p.sink.calls();
    assert!(
        calls
            .iter()
            .any(|(d, b)| d.contains("dlq") && b == &vec!["bad".to_owned()])
    );
}

#[tokio::test]
async fn a_call_refused_for_one_message_s_content_is_retried_one_by_one() {
    let items = vec![
        work("A", "std", "ok1"),
        work("B", "std", "huge"),
        work("C", "std", "ok2"),
    ];
    let p = publisher(RecordingSink::new(Refusals {
        refuse_call: vec!["huge".into()],
        ..Refusals::default()
    }));
    let outcomes = p.process(&items).await;
    assert_eq!(outcomes[0], Outcome::Sent { marked: true });
    assert_eq!(outcomes[2], Outcome::Sent { marked: true });
    // The culprit becomes poison; the dead-letter queue refuses it too, so it ends
    // FAILED with its payload kept on the item.
    assert!(
        matches!(&outcomes[1], Outcome::DeadLettered { reason, marked: true } if reason.contains("BatchRequestTooLong")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn content_the_dead_letter_queue_refuses_too_still_ends_failed_not_retried_forever() {
    let items = vec![work("A", "std", "bad everywhere")];
    let p = publisher(RecordingSink::new(Refusals {
        refused_everywhere: vec!["bad everywhere".into()],
        ..Refusals::default()
    }));
    let outcomes = p.process(&items).await;
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { reason, marked: true } if reason.contains("only on this item")),
        "{outcomes:?}"
    );
    assert_eq!(p.store.failed().len(), 1);
}

#[tokio::test]
async fn poison_someone_already_failed_is_neither_copied_again_nor_counted() {
    // A replay of a stream record after a checkpoint: the item is FAILED by now.
    let p = publisher(RecordingSink::default());
    let item = work("A", "nowhere", "gone");
    let key = match &item.work {
        Work::Publish(m) => m.key.clone(),
        Work::Poison(_) => unreachable!(),
    };
    p.store.put(
        key,
        crate::schema::OutboxItem {
            status: Some("FAILED".into()),
            ..crate::schema::OutboxItem::default()
        },
    );
    let outcomes = p.process(&[item]).await;
    assert_eq!(outcomes, vec![Outcome::AlreadyFinished]);
    assert!(p.sink.calls().is_empty(), "{:?}", p.sink.calls());
    assert_eq!(Summary::of(&outcomes), Summary::default());
}

#[tokio::test]
async fn an_item_at_its_size_limit_whose_copy_was_refused_keeps_its_payload_and_is_failed() {
    // The dead-letter queue refused the copy: the payload must stay on the item, which
    // has no room for a reason or a time. Only the bare mark fits: FAILED all the same,
    // with a record on the dead-letter queue saying why.
    let p = publisher(RecordingSink::new(Refusals {
        refused_everywhere: vec!["big".into()],
        ..Refusals::default()
    }));
    let item = work("A", "std", "big");
    let key = match &item.work {
        Work::Publish(m) => m.key.clone(),
        Work::Poison(_) => unreachable!(),
    };
    p.store.fail(crate::fakes::StoreFaults {
        full: vec![key.clone()],
        ..crate::fakes::StoreFaults::default()
    });
    let outcomes = p.process(&[item]).await;
    assert!(
        matches!(&outcomes[0], Outcome::DeadLettered { marked: true, .. }),
        "{outcomes:?}"
    );
    let stored = p.store.get(&key).expect("stored");
    assert_eq!(stored.status.as_deref(), Some("FAILED"));
    assert_eq!(stored.payload_on, None, "the payload was not moved");
    // And the dead-letter queue holds a record of it without the payload
    let dead = p.sink.delivered("dlq");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].body.contains("kept on the outbox item"), "{}", dead[0].body);
}

/// The in-memory store whose `FAILED` marks, `SENT` marks or adoptions fail, as a
/// throttled table would.
#[derive(Debug, Default)]
struct FlakyStore {
    inner: MemoryStore,
    fail_marks: bool,
    fail_adoptions: bool,
}

impl OutboxStore for FlakyStore {
    async fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> Result<crate::ports::MarkOutcome, crate::failure::Failure> {
        if self.fail_marks {
            return Err(crate::failure::Failure::transient("Throttled"));
        }
        self.inner.mark_sent(key, sent_at_ms, expires_at_s).await
    }

    async fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &crate::schema::SeenIndex,
    ) -> Result<crate::ports::MarkOutcome, crate::failure::Failure> {
        if self.fail_adoptions {
            return Err(crate::failure::Failure::transient("Throttled"));
        }
        self.inner.adopt_unindexed(key, shard, due_ms, seen).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        mark: &crate::policy::FailedMark,
        failed_at_ms: i64,
        condition: &crate::ports::MarkCondition,
    ) -> Result<crate::ports::MarkOutcome, crate::failure::Failure> {
        if self.fail_marks {
            return Err(crate::failure::Failure::transient("Throttled"));
        }
        self.inner
            .mark_failed(key, mark, failed_at_ms, condition)
            .await
    }

    async fn load(
        &self,
        key: &ItemKey,
    ) -> Result<Option<serde_dynamo::Item>, crate::failure::Failure> {
        self.inner.load(key).await
    }

    async fn pending(
        &self,
        read: &crate::policy::FenceRead,
        max_pages: u32,
    ) -> Result<crate::ports::PendingPage, crate::failure::Failure> {
        self.inner.pending(read, max_pages).await
    }

    async fn statuses(
        &self,
        keys: &[ItemKey],
    ) -> Result<crate::ports::StatusRead, crate::failure::Failure> {
        self.inner.statuses(keys).await
    }
}

fn unindexed(mut item: WorkItem) -> WorkItem {
    if let Work::Publish(m) = &mut item.work {
        m.index = crate::schema::SeenIndex::default();
    }
    item
}

// Found by the model (tests/outbox-model, `Mutation::StrandUnindexed`): a minimal producer's
// poison whose FAILED mark failed was reported as dead-lettered, so the stream moved on
// and the item stayed PENDING outside the sweeper index, forever.
#[tokio::test]
async fn poison_neither_marked_failed_nor_adopted_is_reported_for_retry() {
    // Given poison from a minimal producer, and a table that refuses the FAILED mark
    // and the adoption into the index
    let p = Publisher::new(
        RecordingSink::new(Refusals {
            refused: vec!["bad".into()],
            ..Refusals::default()
        }),
        FlakyStore {
            fail_marks: true,
            fail_adoptions: true,
            ..FlakyStore::default()
        },
        config(),
    );
    // When it is published
    let outcomes = p.process(&[unindexed(work("A", "std", "bad"))]).await;
    // Then its copy is on the dead-letter queue, and the record is reported for retry
    assert_eq!(p.sink.delivered("dlq").len(), 1);
    assert!(outcomes[0].needs_retry(), "{:?}", outcomes[0]);
}

// Found by the model (`Mutation::StrandUnindexed`): a minimal producer's message that
// was published, whose SENT mark failed and whose adoption into the index failed too,
// was reported as sent, so nothing ever came back to it.
#[tokio::test]
async fn a_published_item_neither_marked_nor_adopted_is_reported_for_retry() {
    // Given a minimal producer's message, and a table that refuses marks and adoptions
    let p = Publisher::new(
        RecordingSink::default(),
        FlakyStore {
            fail_marks: true,
            fail_adoptions: true,
            ..FlakyStore::default()
        },
        config(),
    );
    // When it is published
    let outcomes = p.process(&[unindexed(work("A", "std", "a1"))]).await;
    // Then it went out, and the record is reported for retry
    assert_eq!(p.sink.delivered("std").len(), 1);
    assert!(outcomes[0].needs_retry(), "{:?}", outcomes[0]);
    // (With the adoption working, it is left to the sweeper: not reported.)
    let p = Publisher::new(
        RecordingSink::default(),
        FlakyStore {
            fail_marks: true,
            ..FlakyStore::default()
        },
        config(),
    );
    let outcomes = p.process(&[unindexed(work("A", "std", "a1"))]).await;
    assert_eq!(outcomes[0], Outcome::Sent { marked: false });
}
