//! Idempotent side effects: an effect runs once per key, its result answers the
//! duplicates, a crash or a lost answer never runs it silently twice.

use super::fail_writes::FailWrites;
use super::{Orders, charge_hash, deadline_after, effects_on};
use dynamodb_outbox_idempotency::{
    Clock, Deadline, Effect, IdempotencyError, IdempotentEffects, ManualClock, PayloadHash,
};
use outbox_tests::s;
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[tokio::test]
async fn a_crashed_attempt_is_never_silently_run_again_after_its_deadline() {
    // Given an invocation that took the key and died mid-effect (deadline in 2 s on
    // the guard's clock, which the test moves instead of sleeping)
    let orders = Orders::new().await;
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
    let clock = ManualClock::at(dynamodb_outbox_core::clock::now_ms());
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
