//! A sweep walks a backlog in waves, against the in-memory fakes: what a sweep that
//! dies charges, and a backlog drained in order in one sweep though the index lags.

use super::fence::{NOW, fifo_sweeper as sweeper};
use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults, library_item, library_key};
use crate::schema::{ItemKey, Status};
use crate::sweep::*;
use futures::FutureExt;
use std::time::Duration;

/// The bodies the FIFO queue received, in order.
fn delivered(sw: &Sweeper<RecordingSink, MemoryStore>) -> Vec<String> {
    sw.publisher
        .sink
        .delivered("ledger")
        .into_iter()
        .map(|m| m.body)
        .collect()
}

/// The payloads of the first `n` messages of [`backlog`], in write order.
fn payloads(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("payload-{}", 1_000 + i)).collect()
}

/// `n` pending messages of aggregate `A` to the FIFO queue, all due, oldest first.
fn backlog(sw: &Sweeper<RecordingSink, MemoryStore>, n: usize) -> Vec<ItemKey> {
    (0..n)
        .map(|i| {
            let created = 1_000 + i as i64;
            let key = library_key("A", created as u64, 0);
            let item = library_item(&key, "ledger", NOW - 60_000 + i as i64, created);
            sw.publisher.store.put(key.clone(), item);
            key
        })
        .collect()
}

fn budget() -> Budget {
    Budget::for_window(NOW, Duration::from_secs(30))
}

#[tokio::test]
async fn a_sweep_that_dies_charges_an_attempt_to_one_wave_of_a_backlog_at_most() {
    // Given a FIFO backlog of 40 messages of one aggregate (one message per call),
    // and a sweeper that dies after its third call
    let sw = sweeper(Refusals {
        dies_after_calls: Some(3),
        ..Refusals::default()
    });
    let keys = backlog(&sw, 40);

    // When a sweep runs until it dies (the fakes answer at once: polled once, the
    // sweep runs up to the call that never answers)
    let died = sw.sweep(budget()).now_or_never();
    assert!(died.is_none(), "the sweep was meant to die");

    // Then the three sent are still pending (the sweep died before marking them),
    // and only the first wave carries an attempt: a message deeper in the backlog was
    // never claimed, so a sweeper that keeps dying cannot use up its attempts
    let charged: Vec<usize> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| {
            let item = sw.publisher.store.get(k).expect("stored");
            assert_eq!(item.status(), Some(Status::Pending));
            item.retry_count.unwrap_or(0) > 0
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(charged, (0..WAVE).collect::<Vec<_>>());
}

const WAVE: usize = crate::policy::WAVE_PER_AGGREGATE;

#[tokio::test]
async fn one_sweep_drains_a_fifo_backlog_in_order_though_the_index_still_lists_what_it_sent() {
    // Given a FIFO backlog of 35 messages of one aggregate, and an index that still
    // lists the messages finished since (a global secondary index lags)
    let sw = sweeper(Refusals::default());
    let keys = backlog(&sw, 35);
    sw.publisher.store.fail(StoreFaults {
        stale_index: true,
        ..StoreFaults::default()
    });

    // When one sweep runs
    let summary = sw.sweep(budget()).await;

    // Then it published them all, in order, wave after wave: a later wave does not
    // wait behind the messages an earlier one finished
    assert_eq!((summary.published, summary.retried), (35, 0), "{summary:?}");
    assert_eq!(delivered(&sw), payloads(35));
    assert!(
        keys.iter()
            .all(|k| { sw.publisher.store.get(k).and_then(|i| i.status()) == Some(Status::Sent) })
    );
}

#[tokio::test]
async fn an_aggregate_stops_at_its_first_failure_and_leaves_the_rest_unclaimed() {
    // Given a FIFO backlog of 25 whose fourth message the queue throttles
    let sw = sweeper(Refusals {
        transient: vec!["payload-1003".to_owned()],
        ..Refusals::default()
    });
    let keys = backlog(&sw, 25);

    // When one sweep runs
    let summary = sw.sweep(budget()).await;

    // Then three went, the fourth failed (an attempt), the rest of its wave waited
    // (attempt given back), and the next waves were never claimed
    assert_eq!(summary.published, 3, "{summary:?}");
    assert_eq!(summary.claimed, WAVE, "{summary:?}");
    assert_eq!(summary.skipped, 25 - WAVE, "{summary:?}");
    let counts: Vec<u32> = keys
        .iter()
        .map(|k| {
            sw.publisher
                .store
                .get(k)
                .and_then(|i| i.retry_count)
                .unwrap_or(0)
        })
        .collect();
    assert_eq!(counts[3], 1);
    assert!(counts[4..].iter().all(|&c| c == 0), "{counts:?}");
}

#[tokio::test]
async fn a_waiting_message_gets_its_attempt_back_though_the_first_write_fails() {
    // Given A2 due behind A1, which backs off for ten more minutes, and a table
    // whose next write fails for a passing reason
    let sw = sweeper(Refusals::default());
    let store = &sw.publisher.store;
    let (a1, a2) = (library_key("A", 1_000, 0), library_key("A", 2_000, 0));
    store.put(
        a1.clone(),
        library_item(&a1, "ledger", NOW + 600_000, 1_000),
    );
    store.put(a2.clone(), library_item(&a2, "ledger", NOW - 1, 2_000));
    store.fail(StoreFaults {
        flaky_reschedules: 1,
        ..StoreFaults::default()
    });

    // When a sweep claims A2 and must leave it waiting
    let summary = sw.sweep(budget()).await;

    // Then A2 is rescheduled with its attempt given back, by the second try
    assert_eq!(
        (summary.claimed, summary.retried, summary.errors),
        (1, 1, 0),
        "{summary:?}"
    );
    let held = store.get(&a2).expect("stored");
    assert_eq!(held.retry_count, Some(0));
    assert_eq!(held.sweep_due_at, Some(NOW + 600_001));
}

#[tokio::test]
async fn the_head_of_a_backlog_goes_first_though_it_came_due_after_the_rest() {
    // Given a FIFO backlog of 30 whose first three failed once and were rescheduled:
    // they come due after the 27 messages written behind them
    let sw = sweeper(Refusals::default());
    let keys = backlog(&sw, 30);
    for k in &keys[..3] {
        let mut item = sw.publisher.store.get(k).expect("stored");
        item.sweep_due_at = Some(NOW - 1_000);
        sw.publisher.store.put(k.clone(), item);
    }

    // When one sweep runs
    let summary = sw.sweep(budget()).await;

    // Then it claimed the head first and published the whole backlog, in order,
    // rather than claiming ten that had to wait behind it
    assert_eq!((summary.published, summary.retried), (30, 0), "{summary:?}");
    assert_eq!(delivered(&sw), payloads(30));
}
