//! Idempotent consumers against the emulator: messages really sent to and received
//! from emulator queues, shaped as Lambda's SQS event, handled by the same function
//! the `orders-consumer` binary calls; the successful ones are deleted as the event
//! source mapping does, the failed ones are left for the visibility timeout and the
//! redrive policy.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName, QueueAttributeName};
use dynamodb_outbox::message::ATTR_MESSAGE_ID;
use dynamodb_outbox_idempotency::{
    BatchReport, Clock, Deadline, Delivery, Effect, Envelope, IdempotencyError, IdempotentEffects,
    ManualClock, MessageFailure, MessageMarker, Outcome, PayloadHash,
};
use orders_consumer::{Config, Deps, OrderResult, handle};
use outbox_devkit::aws::Clients;
use outbox_devkit::provision::{self, QueuePair};
use outbox_tests::lambda_message;
use outbox_tests::{Item, clients, drain, n, s, sv, unique};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

type Report = BatchReport<OrderResult, IdempotencyError>;

/// An orders table, a job queue with its dead-letter queue, and the consumer's deps.
struct Orders {
    clients: Clients,
    table: String,
    queue: QueuePair,
    queue_arn: String,
    deps: Deps,
}

impl Orders {
    /// A standard queue: 30 s visibility, to the DLQ after 3 receives.
    async fn new() -> Self {
        Self::with_queue(&unique("jobs"), 30, 3).await
    }

    async fn with_queue(name: &str, visibility_s: u32, max_receives: u32) -> Self {
        let clients = clients().await;
        let table = unique("orders");
        provision::create_keyed_table(&clients.dynamodb, &table, "id")
            .await
            .expect("create orders table");
        let queue =
            provision::create_queue_with_dlq(&clients.sqs, name, visibility_s, max_receives)
                .await
                .expect("create queue");
        let queue_arn = provision::queue_arn(&clients.sqs, &queue.url)
            .await
            .expect("queue arn");
        let config = Config::from_lookup(|_| Some(table.clone())).expect("config");
        let deps = Deps::new(clients.dynamodb.clone(), &config);
        Orders {
            clients,
            table,
            queue,
            queue_arn,
            deps,
        }
    }

    async fn send(&self, body: &str) -> String {
        self.send_with(body, None, None).await
    }

    /// Sends `body`, in FIFO group `group`, carrying an outbox message id if given.
    async fn send_with(&self, body: &str, group: Option<&str>, outbox_id: Option<&str>) -> String {
        let mut req = self
            .clients
            .sqs
            .send_message()
            .queue_url(&self.queue.url)
            .message_body(body);
        if let Some(g) = group {
            req = req
                .message_group_id(g)
                .message_deduplication_id(unique("dedup"));
        }
        if let Some(id) = outbox_id {
            req = req.message_attributes(
                ATTR_MESSAGE_ID,
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(id)
                    .build()
                    .unwrap(),
            );
        }
        req.send()
            .await
            .expect("send")
            .message_id
            .expect("message id")
    }

    /// What the event source mapping does: one receive (up to 10 messages), shaped as
    /// Lambda's SQS event.
    async fn receive(&self) -> SqsEvent {
        let out = self
            .clients
            .sqs
            .receive_message()
            .queue_url(&self.queue.url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(0)
            .send()
            .await
            .expect("receive");
        let mut event = SqsEvent::default();
        event.records = out
            .messages
            .unwrap_or_default()
            .iter()
            .map(|m| lambda_message(m, &self.queue_arn, "us-east-1"))
            .collect();
        event
    }

    /// Deletes the messages the report does not name as failed, as Lambda does with a
    /// partial batch response.
    async fn acknowledge(&self, event: &SqsEvent, report: &Report) {
        let response = report.response();
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        for m in &event.records {
            if !failed.contains(&m.message_id.as_deref().unwrap()) {
                self.clients
                    .sqs
                    .delete_message()
                    .queue_url(&self.queue.url)
                    .receipt_handle(m.receipt_handle.as_deref().unwrap())
                    .send()
                    .await
                    .expect("delete");
            }
        }
    }

    /// Receive → handler → acknowledge the successes.
    async fn deliver(&self) -> (SqsEvent, Report) {
        let event = self.receive().await;
        let report = handle(&event, &self.deps).await;
        self.acknowledge(&event, &report).await;
        (event, report)
    }

    /// Delivers until a receive comes back empty; every outcome, in order.
    async fn deliver_all(&self) -> Vec<Report> {
        let mut reports = Vec::new();
        loop {
            let (event, report) = self.deliver().await;
            if event.records.is_empty() {
                return reports;
            }
            reports.push(report);
        }
    }

    async fn order(&self, id: &str) -> Option<Item> {
        self.clients
            .dynamodb
            .get_item()
            .table_name(&self.table)
            .key("id", sv(id))
            .consistent_read(true)
            .send()
            .await
            .expect("get item")
            .item
    }

    async fn items(&self) -> Vec<Item> {
        self.clients
            .dynamodb
            .scan()
            .table_name(&self.table)
            .consistent_read(true)
            .send()
            .await
            .expect("scan")
            .items
            .unwrap_or_default()
    }

    /// (visible, in flight) messages on the job queue.
    async fn queue_counts(&self) -> (u64, u64) {
        let out = self
            .clients
            .sqs
            .get_queue_attributes()
            .queue_url(&self.queue.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes");
        let attrs = out.attributes.unwrap_or_default();
        let count = |name| {
            attrs
                .get(&name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(u64::MAX)
        };
        (
            count(QueueAttributeName::ApproximateNumberOfMessages),
            count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        )
    }
}

fn results(reports: &[Report]) -> Vec<&OrderResult> {
    reports
        .iter()
        .flat_map(|r| r.outcomes.iter())
        .map(|o| o.result.as_ref().expect("every message succeeded"))
        .collect()
}

fn order_of(item: &Item) -> (String, i64, i64) {
    (
        s(item, "id").unwrap(),
        n(item, "quantity").unwrap(),
        n(item, "total_cents").unwrap(),
    )
}

// --- the lab's scenario and the business-key guard ---------------------------------

#[tokio::test]
async fn copies_of_an_order_are_acknowledged_as_duplicates_and_stored_once() {
    // Given the first order processed
    let orders = Orders::new().await;
    orders.send(r#"{"id":"dedup-order","quantity":4}"#).await;
    let mut reports = orders.deliver_all().await;
    // When two more copies of it and an independent order arrive
    orders.send(r#"{"id":"dedup-order","quantity":4}"#).await;
    orders.send(r#"{"id":"dedup-order","quantity":4}"#).await;
    orders.send(r#"{"id":"other-order","quantity":1}"#).await;
    reports.extend(orders.deliver_all().await);
    // Then four successful results, two of them duplicates
    let results = results(&reports);
    assert_eq!(results.len(), 4);
    assert!(results[0].processed && !results[0].duplicate);
    let duplicates: Vec<_> = results.iter().filter(|r| r.duplicate).collect();
    assert_eq!(duplicates.len(), 2);
    assert!(
        duplicates
            .iter()
            .all(|r| r.id == "dedup-order" && !r.processed)
    );
    assert_eq!(results.iter().filter(|r| r.processed).count(), 2);
    // And exactly two orders with the right totals
    let mut stored: Vec<_> = orders.items().await.iter().map(order_of).collect();
    stored.sort();
    assert_eq!(
        stored,
        [
            ("dedup-order".to_owned(), 4, 1100),
            ("other-order".to_owned(), 1, 350)
        ]
    );
    // And the queue is empty: every copy was acknowledged
    assert_eq!(orders.queue_counts().await, (0, 0));
}

#[tokio::test]
async fn a_conflicting_copy_is_never_acknowledged_and_ends_on_the_dead_letter_queue() {
    // Given an order stored, on a queue with a 1 s visibility timeout and 2 receives
    let orders = Orders::with_queue(&unique("jobs"), 1, 2).await;
    orders.send(r#"{"id":"conflict-order","quantity":4}"#).await;
    orders.deliver_all().await;
    // When a message with the same id and another quantity arrives
    let conflicting = orders.send(r#"{"id":"conflict-order","quantity":5}"#).await;
    for _ in 0..2 {
        let (event, report) = orders.deliver().await;
        // Then each delivery reports it failed, as a conflict
        assert_eq!(event.records.len(), 1);
        assert_eq!(report.failed_ids(), [conflicting.as_str()]);
        match &report.outcomes[0].result {
            Err(MessageFailure::Failed(e)) => assert!(e.is_conflict(), "{e}"),
            other => panic!("expected a conflict, got {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(1300)).await;
    }
    // And after the receive limit it is on the dead-letter queue, not the queue
    assert!(orders.receive().await.records.is_empty());
    let dead = drain(&orders.clients.sqs, &orders.queue.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].message_id(), Some(conflicting.as_str()));
    // And the stored order is unchanged
    let stored = orders.order("conflict-order").await.expect("order");
    assert_eq!(order_of(&stored), ("conflict-order".to_owned(), 4, 1100));
}

#[tokio::test]
async fn a_batch_of_good_duplicate_malformed_and_conflicting_messages_reports_exactly_the_bad_ones()
{
    // Given an order already stored
    let orders = Orders::new().await;
    orders.send(r#"{"id":"kept","quantity":2}"#).await;
    orders.deliver_all().await;
    // When one batch brings a new order, a copy, a malformed job and a conflict
    let good = orders.send(r#"{"id":"new","quantity":3}"#).await;
    let copy = orders.send(r#"{"id":"kept","quantity":2}"#).await;
    let malformed = orders.send(r#"{"id":"bad","quantity":true}"#).await;
    let conflict = orders.send(r#"{"id":"kept","quantity":9}"#).await;
    let (event, report) = orders.deliver().await;
    assert_eq!(event.records.len(), 4, "one batch");
    // Then exactly the malformed and the conflicting messages are reported
    let mut failed: Vec<&str> = report.failed_ids();
    failed.sort_unstable();
    let mut expected = vec![malformed.as_str(), conflict.as_str()];
    expected.sort_unstable();
    assert_eq!(failed, expected);
    for o in &report.outcomes {
        match &o.result {
            Ok(r) if o.message_id == good => assert!(r.processed),
            Ok(r) if o.message_id == copy => assert!(r.duplicate),
            Err(MessageFailure::Failed(IdempotencyError::MalformedBody { reason }))
                if o.message_id == malformed =>
            {
                assert!(reason.contains("quantity"), "{reason}")
            }
            Err(MessageFailure::Failed(e)) if o.message_id == conflict => {
                assert!(e.is_conflict())
            }
            other => panic!("unexpected outcome for {}: {other:?}", o.message_id),
        }
    }
    // And the two failures stay on the queue for retry and redrive
    assert_eq!(orders.queue_counts().await, (0, 2));
    assert!(orders.order("bad").await.is_none());
    assert_eq!(n(&orders.order("kept").await.unwrap(), "quantity"), Some(2));
}

#[tokio::test]
async fn a_real_sqs_event_is_handled_with_one_write_per_order() {
    // Given the SQS event Lambda delivers: an order, a copy of it, a malformed job
    let orders = Orders::new().await;
    let path = format!(
        "{}/fixtures/events/sqs-orders.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    let event: SqsEvent = serde_json::from_str(&text).expect("parse fixture");
    let round_trip: SqsEvent =
        serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
    assert_eq!(round_trip, event);
    // When the handler runs on it (the copies concurrently)
    let report = handle(&event, &orders.deps).await;
    // Then only the malformed job is reported, and the order was written once
    let response = serde_json::to_value(report.response()).unwrap();
    assert_eq!(
        response,
        json!({"batchItemFailures": [{"itemIdentifier": "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e03"}]})
    );
    let ok: Vec<&OrderResult> = report
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    assert_eq!(ok.iter().filter(|r| r.processed).count(), 1);
    assert_eq!(ok.iter().filter(|r| r.duplicate).count(), 1);
    assert_eq!(orders.items().await.len(), 1);
}

// --- FIFO ----------------------------------------------------------------------------

#[tokio::test]
async fn a_fifo_group_stops_at_its_first_failure_and_other_groups_go_on() {
    // Given a FIFO queue with group A (good, malformed, good) and group B (good, good)
    let orders = Orders::with_queue(&format!("{}.fifo", unique("jobs")), 30, 3).await;
    let a1 = orders
        .send_with(r#"{"id":"a1","quantity":1}"#, Some("A"), None)
        .await;
    let a2 = orders
        .send_with(r#"{"id":"a2","quantity":0}"#, Some("A"), None)
        .await;
    let a3 = orders
        .send_with(r#"{"id":"a3","quantity":3}"#, Some("A"), None)
        .await;
    orders
        .send_with(r#"{"id":"b1","quantity":1}"#, Some("B"), None)
        .await;
    orders
        .send_with(r#"{"id":"b2","quantity":2}"#, Some("B"), None)
        .await;
    // When the batch is handled
    let (event, report) = orders.deliver().await;
    assert_eq!(event.records.len(), 5, "one batch");
    // Then the failed message and the rest of its group are reported, nothing else
    assert_eq!(report.failed_ids(), [a2.as_str(), a3.as_str()]);
    let skipped = report.outcomes.iter().find(|o| o.message_id == a3).unwrap();
    assert!(matches!(&skipped.result, Err(MessageFailure::Skipped { after }) if *after == a2));
    // And a3 was not written (order holds), while group B was
    assert!(orders.order("a1").await.is_some());
    assert!(orders.order("a3").await.is_none());
    assert!(orders.order("b1").await.is_some() && orders.order("b2").await.is_some());
    assert!(!report.failed_ids().contains(&a1.as_str()));
}

// --- processed-message marker ------------------------------------------------------

/// A non-idempotent effect (a counter) applied once per message through a marker.
async fn count_once(
    msg: &SqsMessage,
    marker: &MessageMarker,
    table: &str,
) -> Result<Outcome, IdempotencyError> {
    let add = Update::builder()
        .table_name(table)
        .key("id", sv("counter"))
        .update_expression("ADD #n :one")
        .expression_attribute_names("#n", "count")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .build()
        .unwrap();
    let delivery = Delivery::open(msg);
    marker
        .commit(
            delivery.message_id()?,
            vec![TransactWriteItem::builder().update(add).build()],
        )
        .await
}

async fn counter(orders: &Orders) -> Option<i64> {
    orders.order("counter").await.and_then(|i| n(&i, "count"))
}

#[tokio::test]
async fn a_redelivered_message_is_applied_once_through_its_marker() {
    // Given an outbox message processed once whose acknowledgement was lost
    let orders = Orders::with_queue(&unique("jobs"), 1, 5).await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let sent = orders
        .send_with(r#"{"any":"payload"}"#, None, Some("outbox-msg-2"))
        .await;
    let first = orders.receive().await;
    let outcome = count_once(&first.records[0], &marker, &orders.table).await;
    assert_eq!(outcome.unwrap(), Outcome::Applied);
    // When SQS delivers it again after the visibility timeout
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let again = orders.receive().await;
    assert_eq!(again.records[0].message_id.as_deref(), Some(sent.as_str()));
    let outcome = count_once(&again.records[0], &marker, &orders.table).await;
    // Then it is a duplicate and the counter moved once
    assert_eq!(outcome.unwrap(), Outcome::Duplicate);
    assert_eq!(counter(&orders).await, Some(1));
    // And the marker is stored under MSG#<outbox MessageId> with a TTL
    let mark = orders.order("MSG#outbox-msg-2").await.expect("marker item");
    assert!(n(&mark, "ExpiresAt").unwrap() > 1_700_000_000);
}

#[tokio::test]
async fn a_message_republished_under_a_new_sqs_id_is_recognised_by_its_outbox_id() {
    // Given the same outbox message sent twice (the sweeper republished it)
    let orders = Orders::new().await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let a = orders
        .send_with(r#"{"order":1}"#, None, Some("outbox-msg-1"))
        .await;
    let b = orders
        .send_with(r#"{"order":1}"#, None, Some("outbox-msg-1"))
        .await;
    assert_ne!(a, b, "two SQS messages");
    // When both are handled
    let event = orders.receive().await;
    assert_eq!(event.records.len(), 2);
    let mut outcomes = Vec::new();
    for m in &event.records {
        outcomes.push(count_once(m, &marker, &orders.table).await.unwrap());
    }
    // Then one applied and one duplicate, and the counter moved once
    outcomes.sort_by_key(|o| o.is_duplicate());
    assert_eq!(outcomes, [Outcome::Applied, Outcome::Duplicate]);
    assert_eq!(counter(&orders).await, Some(1));
    assert!(orders.order("MSG#outbox-msg-1").await.is_some());
}

#[tokio::test]
async fn a_cancellation_not_caused_by_the_marker_is_an_error_naming_the_action() {
    // Given a consumer transaction whose own condition fails
    let orders = Orders::new().await;
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    let check = ConditionCheck::builder()
        .table_name(&orders.table)
        .key("id", sv("customer-7"))
        .condition_expression("attribute_exists(id)")
        .build()
        .unwrap();
    // When it commits with its marker
    let err = marker
        .commit(
            "msg-1",
            vec![TransactWriteItem::builder().condition_check(check).build()],
        )
        .await
        .expect_err("the condition check fails");
    // Then the error names that action, not the marker, and nothing was written
    match &err {
        IdempotencyError::Cancelled { failures } => {
            assert_eq!(failures.len(), 1, "{err}");
            assert_eq!(failures[0].index, 1);
            assert_eq!(failures[0].code, "ConditionalCheckFailed");
            assert!(
                failures[0].action.contains("ConditionCheck")
                    && failures[0].action.contains("id=customer-7"),
                "{err}"
            );
        }
        other => panic!("expected a cancellation, got {other}"),
    }
    assert!(!err.is_retryable());
    assert!(orders.order("MSG#msg-1").await.is_none(), "no marker");
}

// --- idempotent side effects -------------------------------------------------------

fn charge_hash(quantity: i64) -> PayloadHash {
    PayloadHash::of_fields(
        &json!({"id": "o-1", "quantity": quantity, "sent_at": 123}),
        &["/id", "/quantity"],
    )
}

#[tokio::test]
async fn a_crashed_attempt_is_never_silently_run_again_after_its_deadline() {
    // Given an invocation that took the key and died mid-effect (deadline in 2 s on
    // the guard's clock, which the test moves instead of sleeping)
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let effects =
        IdempotentEffects::new(orders.clients.dynamodb.clone(), &orders.table).clock(clock.clone());
    let deadline = |after_ms: i64| {
        Deadline::from_epoch_millis(u64::try_from(clock.now_ms() + after_ms).unwrap())
    };
    let hash = charge_hash(4);
    let crashed = tokio::time::timeout(
        Duration::from_millis(300),
        effects.run("charge-o-1", &hash, deadline(2_000), |_| {
            std::future::pending::<Result<u32, std::io::Error>>()
        }),
    )
    .await;
    assert!(crashed.is_err(), "the attempt never finished");
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<u32, std::io::Error>(1100)
    };
    // When a duplicate arrives before that deadline
    let early = effects
        .run("charge-o-1", &hash, deadline(30_000), effect)
        .await;
    // Then it is refused as in progress, retryable, without running the effect
    match &early {
        Err(e @ IdempotencyError::InProgress { .. }) => assert!(e.is_retryable()),
        other => panic!("expected in progress, got {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // And once the deadline has passed, the outcome of the crashed attempt is unknown
    // (it may have charged): a retry is refused for a person to check, not run
    clock.advance(Duration::from_millis(2_200));
    let late = effects
        .run("charge-o-1", &hash, deadline(30_000), effect)
        .await;
    let err = late.expect_err("outcome unknown");
    assert!(
        matches!(err, IdempotencyError::OutcomeUnknown { .. }),
        "{err}"
    );
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// An attempt that took `key` and died mid-effect, its deadline 1 s after `clock`.
async fn crash_mid_effect(effects: &IdempotentEffects, clock: &ManualClock, key: &str) {
    let crashed = tokio::time::timeout(
        Duration::from_millis(300),
        effects.run(key, &charge_hash(4), deadline_after(clock, 1_000), |_| {
            std::future::pending::<Result<u32, std::io::Error>>()
        }),
    )
    .await;
    assert!(crashed.is_err(), "the attempt never finished");
}

#[tokio::test]
async fn a_person_who_checked_can_forget_an_unknown_outcome_so_the_redrive_runs_it() {
    // Given an attempt that crashed mid-effect, its deadline passed
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let effects = effects_on(&orders, orders.clients.dynamodb.clone(), &clock);
    crash_mid_effect(&effects, &clock, "charge-o-1").await;
    assert!(
        !effects.forget("charge-o-1").await.unwrap(),
        "a lock still held is not forgotten"
    );
    clock.advance(Duration::from_secs(5));
    // When a person who checked the downstream system forgets it
    assert!(effects.forget("charge-o-1").await.unwrap());
    // Then the redriven message runs the effect
    let redriven = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            |_| async { Ok::<u32, std::io::Error>(5) },
        )
        .await;
    assert_eq!(redriven.unwrap(), Effect::Ran(5));
    // And a completed record is never forgotten
    assert!(!effects.forget("charge-o-1").await.unwrap());
}

#[tokio::test]
async fn with_a_downstream_that_dedupes_an_unknown_outcome_is_run_again_with_the_same_key() {
    // Given effects whose downstream API deduplicates by the key it is given, and an
    // attempt that crashed mid-effect
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let effects =
        effects_on(&orders, orders.clients.dynamodb.clone(), &clock).rerun_unknown_outcomes();
    crash_mid_effect(&effects, &clock, "charge-o-1").await;
    // When the message is redelivered after the deadline
    clock.advance(Duration::from_secs(5));
    let rerun = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            |key| async move { Ok::<String, std::io::Error>(format!("charged with key {key}")) },
        )
        .await;
    // Then the effect runs again, handed the same idempotency key for the downstream
    assert_eq!(
        rerun.unwrap(),
        Effect::Ran("charged with key charge-o-1".to_owned())
    );
    // And another payload under that key is still refused, not taken over
    crash_mid_effect(&effects, &clock, "charge-o-2").await;
    clock.advance(Duration::from_secs(5));
    let other = effects
        .run(
            "charge-o-2",
            &charge_hash(5),
            deadline_after(&clock, 30_000),
            |_| async { Ok::<u32, std::io::Error>(1) },
        )
        .await;
    assert!(
        matches!(other, Err(IdempotencyError::KeyReused { .. })),
        "{other:?}"
    );
}

#[tokio::test]
async fn a_lock_whose_answer_was_lost_is_recognised_as_ours_when_the_sdk_retries() {
    // Given DynamoDB losing the answer to the IN_PROGRESS write (it happened, the SDK
    // sees a 500 and sends it again, which now finds the key taken)
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let lose = FailWrites::losing_the_answer("IN_PROGRESS", 1);
    let effects = effects_on(&orders, lose.client(&orders.clients.dynamodb), &clock);
    // When the effect is run
    let ran = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            |_| async { Ok::<u32, std::io::Error>(3) },
        )
        .await;
    // Then the lock found on the retry is recognised as this attempt's own, and the
    // effect runs and is recorded
    assert_eq!(lose.failed(), 1);
    assert_eq!(ran.unwrap(), Effect::Ran(3));
    let record = orders.order("IDEM#charge-o-1").await.expect("record");
    assert_eq!(s(&record, "Status").as_deref(), Some("COMPLETED"));
}

#[tokio::test]
async fn a_completed_effect_answers_duplicates_with_its_stored_result() {
    // Given an effect that completed
    let orders = Orders::new().await;
    let effects = IdempotentEffects::new(orders.clients.dynamodb.clone(), &orders.table);
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(json!({"receipt": format!("r-{n}")}))
    };
    let deadline = Deadline::after(Duration::from_secs(30));
    let first = effects
        .run("charge-o-1", &charge_hash(4), deadline, effect)
        .await;
    assert_eq!(first.unwrap(), Effect::Ran(json!({"receipt": "r-0"})));
    // When a duplicate arrives (a field outside the hash differs)
    let hash = PayloadHash::of_fields(
        &json!({"id": "o-1", "quantity": 4, "sent_at": 999}),
        &["/id", "/quantity"],
    );
    let second = effects.run("charge-o-1", &hash, deadline, effect).await;
    // Then it gets the stored result and the effect did not run again
    assert_eq!(second.unwrap(), Effect::Replayed(json!({"receipt": "r-0"})));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let record = orders.order("IDEM#charge-o-1").await.expect("record");
    assert_eq!(s(&record, "Status").as_deref(), Some("COMPLETED"));
}

#[tokio::test]
async fn a_key_reused_with_different_content_is_refused() {
    // Given a completed effect for a quantity of 4
    let orders = Orders::new().await;
    let effects = IdempotentEffects::new(orders.clients.dynamodb.clone(), &orders.table);
    let deadline = Deadline::after(Duration::from_secs(30));
    let ok = |_| async { Ok::<_, std::io::Error>(1) };
    effects
        .run("charge-o-1", &charge_hash(4), deadline, ok)
        .await
        .unwrap();
    // When the same key comes with a quantity of 5
    let calls = AtomicU32::new(0);
    let reused = effects
        .run("charge-o-1", &charge_hash(5), deadline, |_| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(2)
        })
        .await;
    // Then it is refused, permanently, and nothing ran
    match &reused {
        Err(e @ IdempotencyError::KeyReused { .. }) => assert!(!e.is_retryable()),
        other => panic!("expected key reuse, got {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failed_effect_releases_its_key_so_a_retry_runs_it() {
    // Given an effect that failed
    let orders = Orders::new().await;
    let effects = IdempotentEffects::new(orders.clients.dynamodb.clone(), &orders.table);
    let deadline = Deadline::after(Duration::from_secs(30));
    let failed = effects
        .run("charge-o-1", &charge_hash(4), deadline, |_| async {
            Err::<u32, _>(std::io::Error::other("payment API down"))
        })
        .await;
    assert!(matches!(failed, Err(IdempotencyError::Effect { .. })));
    // When the message is retried before the deadline
    let retried = effects
        .run("charge-o-1", &charge_hash(4), deadline, |_| async {
            Ok::<u32, std::io::Error>(7)
        })
        .await;
    // Then the effect runs
    assert_eq!(retried.unwrap(), Effect::Ran(7));
}

#[tokio::test]
async fn a_batch_reports_only_the_message_whose_effect_is_in_progress_elsewhere() {
    // Given the effect helpers used from a batch, with one key already in progress
    let orders = Orders::new().await;
    let effects = IdempotentEffects::new(orders.clients.dynamodb.clone(), &orders.table);
    let hash = charge_hash(4);
    let _ = tokio::time::timeout(
        Duration::from_millis(200),
        effects.run(
            "busy",
            &hash,
            Deadline::after(Duration::from_secs(60)),
            |_| std::future::pending::<Result<u32, std::io::Error>>(),
        ),
    )
    .await;
    let busy = orders.send(r#"{"key":"busy"}"#).await;
    orders.send(r#"{"key":"free"}"#).await;
    let event = orders.receive().await;
    // When the batch runs
    let report = dynamodb_outbox_idempotency::BatchProcessor::new()
        .run(&event, |m| {
            let effects = &effects;
            let hash = &hash;
            async move {
                let body: HashMap<String, String> = m.parse()?;
                let key = body.get("key").cloned().unwrap_or_default();
                effects
                    .run(
                        &key,
                        hash,
                        Deadline::after(Duration::from_secs(60)),
                        |_| async { Ok::<_, std::io::Error>(()) },
                    )
                    .await
            }
        })
        .await;
    // Then only the message whose key is in progress is reported
    assert_eq!(report.failed_ids(), [busy.as_str()]);
}

// --- issue 11: effect once under Lambda's real failure semantics ---------------------

/// Fails the first `times` DynamoDB requests whose body contains `containing`, as
/// DynamoDB does: `refusing` them before they are sent (throttled, unreachable:
/// nothing happened), or `losing_the_answer` (the write happened; the caller sees a
/// 500 and the SDK retries).
#[derive(Debug, Clone)]
struct FailWrites(std::sync::Arc<FailInner>);

#[derive(Debug)]
struct FailInner {
    containing: &'static str,
    lose_answer: bool,
    /// Set when the request in flight is one whose answer is to be lost.
    losing: std::sync::atomic::AtomicBool,
    left: AtomicU32,
    failed: AtomicU32,
}

impl FailWrites {
    fn refusing(containing: &'static str, times: u32) -> Self {
        Self::new(containing, times, false)
    }

    fn losing_the_answer(containing: &'static str, times: u32) -> Self {
        Self::new(containing, times, true)
    }

    fn new(containing: &'static str, times: u32, lose_answer: bool) -> Self {
        FailWrites(std::sync::Arc::new(FailInner {
            containing,
            lose_answer,
            losing: std::sync::atomic::AtomicBool::new(false),
            left: AtomicU32::new(times),
            failed: AtomicU32::new(0),
        }))
    }

    fn failed(&self) -> u32 {
        self.0.failed.load(Ordering::SeqCst)
    }

    /// `client`'s configuration with this interceptor.
    fn client(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(self.clone())
                .build(),
        )
    }

    /// Whether this request is one to fail (counting it).
    fn take(&self, body: &[u8]) -> bool {
        let matches = std::str::from_utf8(body).is_ok_and(|b| b.contains(self.0.containing));
        let take = matches
            && self
                .0
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if take {
            self.0.failed.fetch_add(1, Ordering::SeqCst);
        }
        take
    }
}

impl aws_sdk_dynamodb::config::Intercept for FailWrites {
    fn name(&self) -> &'static str {
        "FailWrites"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let body = context.request().body().bytes().unwrap_or_default();
        if self.take(body) {
            if self.0.lose_answer {
                self.0.losing.store(true, Ordering::SeqCst);
            } else {
                return Err("injected: DynamoDB unreachable for this write".into());
            }
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        if self.0.losing.swap(false, Ordering::SeqCst) {
            let response = context.response_mut();
            *response.status_mut() = 500u16.try_into()?;
            *response.body_mut() = aws_smithy_types::body::SdkBody::from(
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the answer was lost"}"#,
            );
        }
        Ok(())
    }
}

/// A guard on the orders table reading the time from `clock`, through `client`.
fn effects_on(
    orders: &Orders,
    client: aws_sdk_dynamodb::Client,
    clock: &std::sync::Arc<ManualClock>,
) -> IdempotentEffects {
    IdempotentEffects::new(client, &orders.table).clock(clock.clone())
}

fn deadline_after(clock: &ManualClock, ms: i64) -> Deadline {
    Deadline::from_epoch_millis(u64::try_from(clock.now_ms() + ms).unwrap())
}

#[tokio::test]
async fn an_effect_whose_completed_write_failed_once_is_recorded_and_not_run_again() {
    // Given DynamoDB refusing the first COMPLETED write after the effect ran
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let refuse = FailWrites::refusing("COMPLETED", 1);
    let effects = effects_on(&orders, refuse.client(&orders.clients.dynamodb), &clock);
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<u32, std::io::Error>(1100)
    };
    let first = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    assert_eq!(refuse.failed(), 1, "the COMPLETED write was refused once");
    // When the message is redelivered after the first invocation's deadline
    clock.advance(Duration::from_secs(60));
    let again = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    // Then the effect ran once: the first delivery recorded it on a retry, the second
    // got the stored result
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{first:?} then {again:?}");
    assert_eq!(first.unwrap(), Effect::Ran(1100));
    assert_eq!(again.unwrap(), Effect::Replayed(1100));
}

#[tokio::test]
async fn an_effect_whose_outcome_could_not_be_recorded_is_never_run_again_by_a_redelivery() {
    // Given DynamoDB refusing every COMPLETED write after the effect ran
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let refuse = FailWrites::refusing("COMPLETED", u32::MAX);
    let effects = effects_on(&orders, refuse.client(&orders.clients.dynamodb), &clock);
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<u32, std::io::Error>(1100)
    };
    let first = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 2_000),
            effect,
        )
        .await;
    // When the message is redelivered after the first invocation's deadline
    clock.advance(Duration::from_secs(60));
    let again = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    // Then the effect is not run again, and the redelivery is refused for a person to
    // check, not retried
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{again:?}");
    let err = again.expect_err("refused");
    assert!(
        matches!(err, IdempotencyError::OutcomeUnknown { .. }),
        "{err}"
    );
    assert!(!err.is_retryable(), "{err}");
    assert!(err.to_string().contains("forget"), "{err}");
    // And the first delivery, whose effect did run, was answered with its result
    assert_eq!(first.unwrap(), Effect::Ran(1100));
    assert!(refuse.failed() > 1, "the COMPLETED write was retried");
}

#[tokio::test]
async fn an_effect_whose_result_is_too_large_to_store_is_not_run_again() {
    // Given an effect whose result (400 KB) cannot fit in a DynamoDB item
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let effects = effects_on(&orders, orders.clients.dynamodb.clone(), &clock);
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<String, std::io::Error>("x".repeat(400 * 1024))
    };
    let first = effects
        .run(
            "report-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    // When the message is redelivered after the first invocation's deadline
    clock.advance(Duration::from_secs(60));
    let again = effects
        .run(
            "report-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    // Then the effect ran once, and the redelivery is acknowledged without a result
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{again:?}");
    assert!(matches!(first, Ok(Effect::Ran(_))), "the effect ran");
    match again {
        Ok(Effect::ReplayedWithoutResult { reason }) => {
            assert!(reason.contains("409602 bytes"), "{reason}")
        }
        other => panic!("expected a replay without the result, got {other:?}"),
    }
    // And the record says so, with the result's size and hash
    let record = orders.order("IDEM#report-1").await.expect("record");
    assert_eq!(s(&record, "Status").as_deref(), Some("COMPLETED"));
    assert_eq!(n(&record, "ResultBytes"), Some(409_602));
    assert_eq!(s(&record, "ResultHash").map(|h| h.len()), Some(64));
    assert!(!record.contains_key("Result"));
}

#[tokio::test]
async fn effect_records_are_kept_as_long_as_markers_fourteen_days() {
    // Given a marker and an effect record written at the same time
    let orders = Orders::new().await;
    let clock = ManualClock::at(1_800_000_000_000);
    let effects = effects_on(&orders, orders.clients.dynamodb.clone(), &clock);
    let marker =
        MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table).clock(clock.clone());
    effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            |_| async { Ok::<u32, std::io::Error>(1) },
        )
        .await
        .unwrap();
    marker.commit("msg-1", vec![]).await.unwrap();
    // Then both expire 14 days later
    let fourteen_days = 1_800_000_000 + 14 * 86_400;
    let record = orders.order("IDEM#charge-o-1").await.expect("record");
    assert_eq!(n(&record, "ExpiresAt"), Some(fourteen_days));
    let mark = orders.order("MSG#msg-1").await.expect("marker");
    assert_eq!(n(&mark, "ExpiresAt"), Some(fourteen_days));
}

#[tokio::test]
async fn a_completed_record_past_its_ttl_but_not_yet_deleted_still_answers_duplicates() {
    // Given an effect completed, and a clock moved past the record's TTL (DynamoDB
    // deletes expired items within days, not at once)
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox::clock::now_ms());
    let effects = effects_on(&orders, orders.clients.dynamodb.clone(), &clock);
    let calls = AtomicU32::new(0);
    let effect = |_| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<u32, std::io::Error>(7)
    };
    effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await
        .unwrap();
    clock.advance(Duration::from_secs(30 * 86_400));
    // When a duplicate arrives (a message redriven from the dead-letter queue)
    let again = effects
        .run(
            "charge-o-1",
            &charge_hash(4),
            deadline_after(&clock, 30_000),
            effect,
        )
        .await;
    // Then the stored record answers it; only TTL deletion frees a key
    assert_eq!(again.unwrap(), Effect::Replayed(7));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// --- issue 11: the message id inside EventBridge and SNS envelopes -------------------

/// The outbox message id of `msg`, as the consumer's dedup key.
fn outbox_id(msg: &SqsMessage) -> Result<String, IdempotencyError> {
    Delivery::open(msg).message_id().map(str::to_owned)
}

fn fixture_event(name: &str) -> SqsEvent {
    let path = format!("{}/fixtures/events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let event: SqsEvent = serde_json::from_str(&text).expect("parse fixture");
    let round_trip: SqsEvent =
        serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
    assert_eq!(round_trip, event);
    event
}

/// Both copies in a fixture: one outbox id and one payload under two SQS ids.
fn assert_copies_share_the_outbox_id(event: &SqsEvent, outbox_id: &str, envelope: Envelope) {
    assert_eq!(event.records.len(), 2);
    assert_ne!(event.records[0].message_id, event.records[1].message_id);
    for m in &event.records {
        let delivery = Delivery::open(m);
        assert_eq!(delivery.envelope(), envelope);
        assert_eq!(delivery.message_id().unwrap(), outbox_id);
        let job: serde_json::Value = delivery.parse().expect("the payload, not the envelope");
        assert!(job["id"].is_string() && job["quantity"].is_u64(), "{job}");
    }
}

#[test]
fn the_outbox_id_of_an_eventbridge_event_on_sqs_is_read_from_its_detail() {
    let event = fixture_event("sqs-eventbridge.json");
    assert_eq!(
        outbox_id(&event.records[0]).unwrap(),
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e09"
    );
    assert_copies_share_the_outbox_id(
        &event,
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e09",
        Envelope::EventBridge,
    );
}

#[test]
fn the_outbox_id_of_an_sns_notification_on_sqs_is_read_from_its_message_attributes() {
    let event = fixture_event("sqs-sns.json");
    assert_eq!(
        outbox_id(&event.records[0]).unwrap(),
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e05"
    );
    assert_copies_share_the_outbox_id(
        &event,
        "0190f3a2-7c41-7d2e-9a55-3b1f0c2d4e05",
        Envelope::Sns,
    );
}

#[test]
fn a_message_without_an_outbox_id_is_refused_rather_than_keyed_by_its_sqs_id() {
    let mut msg = SqsMessage::default();
    msg.message_id = Some("sqs-1".into());
    msg.body = Some(r#"{"id":"o-1","quantity":1}"#.into());
    let err = outbox_id(&msg).expect_err("no outbox id");
    assert!(matches!(err, IdempotencyError::NoMessageId { .. }), "{err}");
    assert!(!err.is_retryable(), "{err}");
    // Keying by the SQS id is an explicit choice
    let opted_in = dynamodb_outbox_idempotency::BatchProcessor::new().sqs_message_id_fallback();
    assert_eq!(opted_in.open(&msg).message_id().unwrap(), "sqs-1");
}

/// The Orders job queue subscribed to a new SNS topic without raw message delivery;
/// the topic's ARN.
async fn sns_topic_into(orders: &Orders) -> String {
    let topic_arn = orders
        .clients
        .sns
        .create_topic()
        .name(unique("orders-topic"))
        .send()
        .await
        .expect("topic")
        .topic_arn
        .expect("arn");
    orders
        .clients
        .sns
        .subscribe()
        .topic_arn(&topic_arn)
        .protocol("sqs")
        .endpoint(&orders.queue_arn)
        .send()
        .await
        .expect("subscribe");
    topic_arn
}

/// A new EventBridge bus whose rule sends the outbox's events to the Orders job
/// queue; the bus's ARN.
async fn event_bus_into(orders: &Orders) -> String {
    let bus = unique("shop");
    let bus_arn = orders
        .clients
        .eventbridge
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("bus")
        .event_bus_arn
        .expect("arn");
    orders
        .clients
        .eventbridge
        .put_rule()
        .name("outbox-to-jobs")
        .event_bus_name(&bus)
        .event_pattern(r#"{"source":["dynamodb-outbox"]}"#)
        .send()
        .await
        .expect("rule");
    orders
        .clients
        .eventbridge
        .put_targets()
        .rule("outbox-to-jobs")
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("jobs")
                .arn(&orders.queue_arn)
                .build()
                .expect("target"),
        )
        .send()
        .await
        .expect("targets");
    bus_arn
}

/// Commits one order message routed to `destination` and lets the publisher handle
/// its stream record twice (Lambda retrying the batch): two copies on the job queue.
async fn publish_twice(destination: &str, body: &str) -> String {
    let mut ob = outbox_tests::Outbox::new().await;
    let mut config = ob.config();
    config.routes =
        dynamodb_outbox::Routes::parse(&format!(r#"{{"orders":"{destination}"}}"#), None)
            .expect("routes");
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[dynamodb_outbox::NewMessage::new("ORDER#9", "orders", body)],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let publisher = ob.publisher_with(config);
    for _ in 0..2 {
        let (response, summary) =
            dynamodb_outbox::stream::handle_stream_event(&publisher, &event).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(summary.sent, 1);
    }
    committed.message_ids[0].clone()
}

/// Receives until `count` messages came (deliveries through SNS and EventBridge are
/// asynchronous), without deleting them.
async fn receive_copies(orders: &Orders, count: usize) -> SqsEvent {
    let mut all = SqsEvent::default();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while all.records.len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {count} copies arrived",
            all.records.len()
        );
        all.records.extend(orders.receive().await.records);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    all
}

#[tokio::test]
async fn an_outbox_message_published_twice_through_eventbridge_is_applied_once() {
    // Given an outbox message published twice to a bus whose rule feeds the job queue
    let orders = Orders::new().await;
    let bus_arn = event_bus_into(&orders).await;
    let message_id = publish_twice(&bus_arn, r#"{"id":"o-9","quantity":2}"#).await;
    let event = receive_copies(&orders, 2).await;
    assert_ne!(event.records[0].message_id, event.records[1].message_id);
    // When both copies are handled with a processed-message marker
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    for m in &event.records {
        assert_eq!(outbox_id(m).unwrap(), message_id);
        count_once(m, &marker, &orders.table).await.unwrap();
    }
    // Then the counter moved once
    assert_eq!(counter(&orders).await, Some(1));
}

#[tokio::test]
async fn an_outbox_message_published_twice_through_sns_without_raw_delivery_is_applied_once() {
    // Given an outbox message published twice to a topic the job queue subscribes to
    // without raw message delivery (each copy wrapped in an SNS notification)
    let orders = Orders::new().await;
    let topic_arn = sns_topic_into(&orders).await;
    let message_id = publish_twice(&topic_arn, r#"{"id":"o-9","quantity":2}"#).await;
    let event = receive_copies(&orders, 2).await;
    // When both copies are handled with a processed-message marker
    let marker = MessageMarker::new(orders.clients.dynamodb.clone(), &orders.table);
    for m in &event.records {
        assert_eq!(outbox_id(m).unwrap(), message_id);
        count_once(m, &marker, &orders.table).await.unwrap();
    }
    // Then the counter moved once
    assert_eq!(counter(&orders).await, Some(1));
}

#[tokio::test]
async fn the_reference_consumer_stores_orders_that_arrive_in_eventbridge_and_sns_envelopes() {
    // Given an order published through an event bus and another through an SNS topic
    let orders = Orders::new().await;
    let bus_arn = event_bus_into(&orders).await;
    let topic_arn = sns_topic_into(&orders).await;
    publish_twice(&bus_arn, r#"{"id":"via-bus","quantity":2}"#).await;
    publish_twice(&topic_arn, r#"{"id":"via-sns","quantity":3}"#).await;
    let event = receive_copies(&orders, 4).await;
    // When the reference consumer handles them
    let report = handle(&event, &orders.deps).await;
    // Then it read the order inside each envelope, stored each once, and acknowledged
    // every copy
    assert!(report.failed_ids().is_empty(), "{report:?}");
    assert_eq!(
        order_of(&orders.order("via-bus").await.expect("stored")),
        ("via-bus".to_owned(), 2, 600)
    );
    assert_eq!(
        order_of(&orders.order("via-sns").await.expect("stored")),
        ("via-sns".to_owned(), 3, 850)
    );
}
