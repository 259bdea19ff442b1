//! A stream batch delivered again, on the publish path against the in-memory fakes:
//! what an earlier delivery finished is skipped, a failed status read publishes
//! nothing, and a skipped message fences nothing.

use super::fence::{library as pending, publisher};
use crate::fakes::{MemoryStore, RecordingSink, StoreFaults};
use crate::publish::*;
use crate::schema::Status;

fn delivered(p: &Publisher<RecordingSink, MemoryStore>, dest: &str) -> usize {
    p.sink.delivered(dest).len()
}

#[tokio::test]
async fn a_batch_delivered_again_publishes_only_what_is_still_pending() {
    // Given a batch of three published by its first delivery but for B1 (whose send
    // failed and was reported)
    let p = publisher();
    let (_, a1) = pending(&p, "A", "orders", 1_000);
    let (b1_key, b1) = pending(&p, "B", "orders", 2_000);
    let (_, c1) = pending(&p, "C", "orders", 3_000);
    let batch = [a1, b1, c1];
    let first = p.process(&batch).await;
    assert!(first.iter().all(|o| o.finished_here()), "{first:?}");
    let mut b1_pending = p.store.get(&b1_key).expect("stored");
    b1_pending.status = Some(Status::Pending.as_str().to_owned());
    p.store.put(b1_key.clone(), b1_pending);
    // When Lambda delivers the whole batch again
    let (outcomes, summary) = p.process_delivery(&batch).await;
    // Then only B1 is published again, the others are skipped and counted
    assert_eq!(
        outcomes,
        vec![
            Outcome::AlreadyFinished,
            Outcome::Sent { marked: true },
            Outcome::AlreadyFinished
        ]
    );
    assert_eq!(delivered(&p, "orders"), 3 + 1);
    assert_eq!((summary.sent, summary.already_settled), (1, 2), "{summary:?}");
    assert_eq!(summary.status_unread, 0);
}

#[tokio::test]
async fn a_failed_status_read_reports_every_record_for_retry_and_publishes_nothing() {
    // Given a batch whose items' status cannot be read (throttled, or no grant)
    let p = publisher();
    let (_, a1) = pending(&p, "A", "orders", 1_000);
    let (_, b1) = pending(&p, "B", "ledger", 2_000);
    p.store.fail(StoreFaults {
        status_reads: true,
        ..StoreFaults::default()
    });
    // When the stream path handles it
    let (outcomes, summary) = p.process_delivery(&[a1, b1]).await;
    // Then nothing is sent, and every record is reported, saying why
    assert!(outcomes.iter().all(Outcome::needs_retry), "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| matches!(o,
            Outcome::Retry { reason } if reason.contains("current status")
                && reason.contains("ProvisionedThroughputExceeded"))),
        "{outcomes:?}"
    );
    assert!(p.sink.calls().is_empty(), "{:?}", p.sink.calls());
    assert_eq!((summary.retried, summary.status_unread), (2, 2));
    assert_eq!(summary.already_settled, 0);
}

#[tokio::test]
async fn a_skipped_fifo_message_does_not_fence_its_successor_behind_a_lagging_index() {
    // Given A1 and A2 (FIFO) of one batch, A1 SENT by the first delivery while A2's
    // send failed, and a sweeper index that still lists A1 as pending (a GSI lags)
    let p = publisher();
    let (_, a1) = pending(&p, "A", "ledger", 1_000);
    let (a2_key, a2) = pending(&p, "A", "ledger", 2_000);
    let first = p.process(std::slice::from_ref(&a1)).await;
    assert_eq!(first, vec![Outcome::Sent { marked: true }]);
    p.store.fail(StoreFaults {
        stale_index: true,
        ..StoreFaults::default()
    });
    // When Lambda delivers both again
    let (outcomes, summary) = p.process_delivery(&[a1, a2]).await;
    // Then A1 is skipped and A2 goes out, as when A1 was published in the batch: the
    // fence does not wait behind a message the status read found finished
    assert_eq!(
        outcomes,
        vec![Outcome::AlreadyFinished, Outcome::Sent { marked: true }]
    );
    assert_eq!(delivered(&p, "ledger"), 2);
    assert_eq!(summary.deferred, 0, "{summary:?}");
    assert_eq!(
        p.store.get(&a2_key).and_then(|i| i.status()),
        Some(Status::Sent)
    );
}

#[tokio::test]
async fn a_first_delivery_reads_the_statuses_and_publishes_all() {
    let p = publisher();
    let batch: Vec<WorkItem> = (0..5)
        .map(|i| pending(&p, &format!("A{i}"), "orders", 1_000 + i).1)
        .collect();
    let (outcomes, summary) = p.process_delivery(&batch).await;
    assert!(outcomes.iter().all(Outcome::finished_here), "{outcomes:?}");
    assert_eq!((summary.sent, summary.already_settled), (5, 0));
}
