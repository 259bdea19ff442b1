//! An effect once under Lambda's real failure semantics: its outcome's write refused
//! or too large, records kept as long as markers, past their TTL.

use super::fail_writes::FailWrites;
use super::{Orders, charge_hash, deadline_after, effects_on};
use dynamodb_outbox_idempotency::{Effect, IdempotencyError, ManualClock, MessageMarker};
use outbox_tests::{n, s};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[tokio::test]
async fn an_effect_whose_completed_write_failed_once_is_recorded_and_not_run_again() {
    // Given DynamoDB refusing the first COMPLETED write after the effect ran
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
