//! A redrive during a sweep's attempt (issue 22, defect 8, found by the model): the
//! sweep claims poison, someone else fails it and an operator redrives it while the
//! sweep copies it to the dead-letter queue; the sweep's `FAILED` mark, conditional
//! on its claim, is refused, and the redrive stands.

use super::{NOW, get, pending, put, run, sent_to, sweeper};
use crate::fakes::{StoreFaults, key};
use crate::schema::Status;
use std::time::Duration;

/// When the operator's redrive makes the item due again.
const REDRIVEN_AT: i64 = NOW + 5;

/// What the redrive left: `PENDING`, a fresh budget, due when the redrive said, no
/// reason — as `outbox-ops redrive` leaves it, and as no sweep changed it since.
fn assert_redriven(sw: &super::TestSweeper) {
    let item = get(sw, "A", "1");
    assert_eq!(item.status(), Some(Status::Pending), "{item:?}");
    assert_eq!(item.retry_count, Some(0), "{item:?}");
    assert_eq!(item.sweep_due_at, Some(REDRIVEN_AT), "{item:?}");
    assert_eq!((item.last_error, item.failed_at), (None, None));
}

#[tokio::test]
async fn a_redrive_during_the_attempt_is_not_undone_by_the_sweeps_failed_mark() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "nowhere", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        redriven_before_failed_mark: vec![(key("A", "1"), REDRIVEN_AT)],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_redriven(&sw);
    assert_eq!(
        (summary.claimed, summary.failed, summary.claims_lost, summary.retried),
        (1, 0, 1, 0),
        "{summary:?}"
    );
    // Its copy went out before the claim was found gone.
    assert_eq!(sent_to(&sw, "dlq").len(), 1);
}

#[tokio::test]
async fn a_redrive_seen_before_the_copy_sends_no_second_dead_letter_copy() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "nowhere", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        redriven_before_read: vec![(key("A", "1"), REDRIVEN_AT)],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_redriven(&sw);
    assert_eq!((summary.failed, summary.claims_lost), (0, 1), "{summary:?}");
    assert!(sent_to(&sw, "dlq").is_empty(), "whoever failed it copied it");
}

#[tokio::test]
async fn the_smaller_marks_at_the_size_limit_are_under_the_claim_too() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "nowhere", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        full: vec![key("A", "1")],
        redriven_before_failed_mark: vec![(key("A", "1"), REDRIVEN_AT)],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_redriven(&sw);
    let item = get(&sw, "A", "1");
    assert_eq!(item.payload.as_deref(), Some("payload-1"), "payload kept");
    assert_eq!((summary.failed, summary.claims_lost), (0, 1), "{summary:?}");
}

#[tokio::test]
async fn an_unclaimable_items_mark_is_conditional_on_its_due_time_as_read() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        unclaimable: vec![key("A", "1")],
        redriven_before_failed_mark: vec![(key("A", "1"), REDRIVEN_AT)],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_redriven(&sw);
    assert_eq!((summary.failed, summary.claims_lost), (0, 1), "{summary:?}");
}

#[tokio::test]
async fn a_later_sweep_publishes_the_redriven_message_once_its_route_works() {
    // The redrive stands, and the next sweep claims the item afresh: attempt 1.
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "nowhere", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        redriven_before_failed_mark: vec![(key("A", "1"), REDRIVEN_AT)],
        ..StoreFaults::default()
    });
    run(&sw, Duration::from_secs(5)).await;
    let mut fixed = get(&sw, "A", "1");
    fixed.topic = Some("up".into());
    put(&sw, "A", "1", fixed);
    let later = sw
        .sweep(crate::policy::Budget::for_window(REDRIVEN_AT, Duration::from_secs(5)))
        .await;
    assert_eq!((later.published, later.marked), (1, 1), "{later:?}");
    let item = get(&sw, "A", "1");
    assert_eq!((item.status(), item.retry_count), (Some(Status::Sent), Some(1)));
}
