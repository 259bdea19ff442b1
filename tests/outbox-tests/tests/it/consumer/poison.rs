//! A message that kills or hangs the consumer, among good ones: only it may reach the
//! dead-letter queue, and every other order is applied exactly once. The queue's own
//! `ApproximateReceiveCount` and redrive policy do the counting; what Lambda does
//! around the handler is played here: a crashed invocation answers nothing (nothing
//! is deleted but what the handler deleted itself), a timed-out one likewise, and an
//! answered one has its successes deleted.

use super::Orders;
use dynamodb_outbox_idempotency::{Deadline, IdempotencyError, SqsDeleter, SqsEvent};
use futures::channel::oneshot;
use futures::future::{self, Either};
use orders_consumer::{Deps, OrderResult, process_message};
use outbox_tests::{drain, unique};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// The poison order's id: the test's stand-in for a bug that kills the process.
const POISON: &str = "poison";
/// Good orders sent beside it, in one batch.
const GOOD: usize = 6;
/// The queue's `maxReceiveCount`.
const MAX_RECEIVES: u32 = 3;

/// What each order's deliveries did: how many times it was written (applied).
type Applied = Mutex<BTreeMap<String, u32>>;

/// Sends the good orders and the poison one in the middle; the poison's SQS id.
async fn send_batch(orders: &Orders) -> String {
    let mut poison = String::new();
    for i in 0..GOOD {
        if i == GOOD / 2 {
            poison = orders
                .send(&format!(r#"{{"id":"{POISON}","quantity":1}}"#))
                .await;
        }
        orders
            .send(&format!(r#"{{"id":"o-{i}","quantity":2}}"#))
            .await;
    }
    poison
}

/// The reference consumer's per-message work, counting the writes it applied.
async fn apply(
    msg: dynamodb_outbox_idempotency::Delivery<'_>,
    deps: &Deps,
    applied: &Applied,
) -> Result<OrderResult, IdempotencyError> {
    let result = process_message(&msg, deps).await?;
    if result.processed {
        *applied
            .lock()
            .unwrap()
            .entry(result.id.clone())
            .or_default() += 1;
    }
    Ok(result)
}

/// What Lambda does with an answer: deletes the messages it does not name. Those the
/// handler deleted already are gone: SQS accepts deleting them again, MiniStack
/// refuses the receipt handle (its own event source mapping deletes without asking),
/// so that refusal is no failure here.
async fn lambda_deletes_successes(orders: &Orders, event: &SqsEvent, report: &super::Report) {
    let failed = report.failed_ids();
    for m in &event.records {
        let (Some(id), Some(handle)) = (m.message_id.as_deref(), m.receipt_handle.as_deref())
        else {
            continue;
        };
        if failed.contains(&id) {
            continue;
        }
        let deleted = orders
            .clients
            .sqs
            .delete_message()
            .queue_url(&orders.queue.url)
            .receipt_handle(handle)
            .send()
            .await;
        if let Err(e) = deleted {
            let gone = e
                .as_service_error()
                .is_some_and(|e| e.is_receipt_handle_is_invalid());
            assert!(gone, "delete {id}: {e:?}");
        }
    }
}

/// The consumer as the binary builds it: finished messages deleted at once.
fn consumer(orders: &Orders) -> Deps {
    orders
        .deps
        .clone()
        .deleting_finished(SqsDeleter::new(orders.clients.sqs.clone()))
}

/// Receives until the queue is empty, waiting out the visibility timeout after each
/// delivery, and hands each batch to `invoke`; the number of deliveries.
async fn redeliver_until_empty(
    orders: &Orders,
    visibility: Duration,
    mut invoke: impl AsyncFnMut(&SqsEvent),
) -> usize {
    let mut deliveries = 0;
    for _ in 0..(MAX_RECEIVES + 3) {
        let event = orders.receive().await;
        if event.records.is_empty() && orders.queue_counts().await == (0, 0) {
            return deliveries;
        }
        if !event.records.is_empty() {
            deliveries += 1;
            invoke(&event).await;
        }
        tokio::time::sleep(visibility + Duration::from_millis(300)).await;
    }
    panic!("the queue was not empty after {deliveries} deliveries");
}

/// Only the poison message is on the dead-letter queue, and every good order is
/// stored, written by one delivery at most (a write whose answer a crash cut off is
/// seen by the next delivery as a duplicate), the poison never.
async fn assert_only_the_poison_is_dead_lettered(orders: &Orders, poison: &str, applied: Applied) {
    let dead: Vec<String> = drain(&orders.clients.sqs, &orders.queue.dlq_url)
        .await
        .iter()
        .filter_map(|m| m.message_id().map(str::to_owned))
        .collect();
    assert_eq!(dead, [poison], "only the poison message is dead-lettered");
    let applied = applied.into_inner().unwrap();
    assert!(
        applied.values().all(|&n| n == 1),
        "applied once: {applied:?}"
    );
    let mut stored: Vec<String> = orders
        .items()
        .await
        .iter()
        .map(|item| super::order_of(item).0)
        .collect();
    stored.sort();
    let expected: Vec<String> = (0..GOOD).map(|i| format!("o-{i}")).collect();
    assert_eq!(
        stored, expected,
        "every good order stored, the poison never"
    );
}

#[tokio::test]
async fn a_message_that_crashes_the_consumer_sends_only_itself_to_the_dead_letter_queue() {
    // Given good orders and one whose processing kills the process, on a queue with a
    // 2 s visibility timeout and 3 receives
    let orders = Orders::with_queue(&unique("jobs"), 2, MAX_RECEIVES).await;
    let poison = send_batch(&orders).await;
    let deps = consumer(&orders);
    let applied = Applied::default();
    // When each delivery runs until the poison message kills the invocation: no
    // answer, so Lambda deletes nothing and SQS gives the whole batch back
    let deliveries = redeliver_until_empty(&orders, Duration::from_secs(2), async |event| {
        let (crash, crashed) = oneshot::channel::<()>();
        let crash = Mutex::new(Some(crash));
        let (deps, applied, crash) = (&deps, &applied, &crash);
        let run = deps.batch.run(event, |m| async move {
            if m.body().is_some_and(|b| b.contains(POISON)) {
                if let Some(crash) = crash.lock().unwrap().take() {
                    let _ = crash.send(());
                }
                future::pending::<()>().await;
            }
            apply(m, deps, applied).await
        });
        match future::select(Box::pin(run), crashed).await {
            Either::Left((report, _)) => lambda_deletes_successes(&orders, event, &report).await,
            Either::Right(_) => {} // the process died: the run is dropped unanswered
        }
    })
    .await;
    // Then only the poison message reached the dead-letter queue, after its receives
    assert!(
        deliveries >= MAX_RECEIVES as usize,
        "{deliveries} deliveries"
    );
    assert_only_the_poison_is_dead_lettered(&orders, &poison, applied).await;
}

#[tokio::test]
async fn a_message_that_hangs_is_handed_back_before_the_deadline_and_only_it_is_dead_lettered() {
    // Given good orders and one whose processing never ends, on a queue with a 4 s
    // visibility timeout, for a function with a 3 s timeout
    let orders = Orders::with_queue(&unique("jobs"), 4, MAX_RECEIVES).await;
    let poison = send_batch(&orders).await;
    let deps = consumer(&orders);
    let applied = Applied::default();
    let timeout = Duration::from_secs(3);
    // When each delivery runs as Lambda runs it: stopped at the timeout, answered
    // only if the handler answered before
    let deliveries = redeliver_until_empty(&orders, Duration::from_secs(4), async |event| {
        let deadline = Deadline::after(timeout);
        let (deps, applied) = (&deps, &applied);
        let run = deps.batch.run_until(event, deadline, |m| async move {
            if m.body().is_some_and(|b| b.contains(POISON)) {
                future::pending::<()>().await;
            }
            apply(m, deps, applied).await
        });
        // Then the handler answers in time, every time, naming the hung message
        let report = tokio::time::timeout(timeout, run)
            .await
            .expect("the handler answers before the function's timeout");
        assert_eq!(report.failed_ids(), [poison.as_str()]);
        lambda_deletes_successes(&orders, event, &report).await;
    })
    .await;
    // And only the poison message reached the dead-letter queue
    assert!(
        deliveries >= MAX_RECEIVES as usize,
        "{deliveries} deliveries"
    );
    assert_only_the_poison_is_dead_lettered(&orders, &poison, applied).await;
}
