use super::record::{
    COMPLETED, Existing, IN_PROGRESS, Stored, completed_by, new_token, read_existing,
};
use super::retry::{MAX_RETRIES, retry_delay};
use super::*;
use crate::table::offline_client as client;
use serde_json::json;

fn record(status: &str, hash: &str) -> Item {
    Item::from([
        ("Status".to_owned(), AttributeValue::S(status.into())),
        ("PayloadHash".to_owned(), AttributeValue::S(hash.into())),
        ("Token".to_owned(), AttributeValue::S("theirs".into())),
        ("LockedUntil".to_owned(), AttributeValue::N("42".into())),
        ("Result".to_owned(), AttributeValue::S("\"ok\"".into())),
    ])
}

#[test]
fn an_existing_record_is_read_as_ours_in_progress_completed_or_another_payload() {
    let h = PayloadHash::of(&json!(1)).expect("hash");
    let other = PayloadHash::of(&json!(2)).expect("hash");
    let read = |item: &Item, hash: &PayloadHash| read_existing("k", item, hash, "mine");
    assert_eq!(
        read(&record(IN_PROGRESS, h.as_str()), &h).expect("read"),
        Existing::InProgress {
            locked_until_ms: 42
        }
    );
    let mut ours = record(IN_PROGRESS, h.as_str());
    ours.insert("Token".into(), AttributeValue::S("mine".into()));
    assert_eq!(read(&ours, &h).expect("read"), Existing::Ours);
    assert_eq!(
        read(&record(COMPLETED, h.as_str()), &h).expect("read"),
        Existing::Completed(Stored::Json("\"ok\"".into()))
    );
    assert!(matches!(
        read(&record(COMPLETED, h.as_str()), &other),
        Err(IdempotencyError::KeyReused { .. })
    ));
    assert!(matches!(
        read(&record("WEIRD", h.as_str()), &h),
        Err(IdempotencyError::Corrupt { .. })
    ));
}

#[test]
fn a_completed_record_without_its_result_says_why() {
    let h = PayloadHash::of(&json!(1)).expect("hash");
    let mut item = record(COMPLETED, h.as_str());
    item.remove("Result");
    item.insert(
        "ResultNotKept".into(),
        AttributeValue::S("result not kept: 409602 bytes".into()),
    );
    item.insert("ResultBytes".into(), AttributeValue::N("409602".into()));
    match read_existing("k", &item, &h, "mine").expect("read") {
        Existing::Completed(Stored::NotKept { reason, bytes, .. }) => {
            assert!(reason.contains("409602"));
            assert_eq!(bytes, 409_602);
        }
        other => panic!("expected a result not kept, got {other:?}"),
    }
}

#[test]
fn a_result_too_large_for_a_record_is_stored_as_its_size_and_hash() {
    assert_eq!(Stored::of(&"small"), Stored::Json("\"small\"".into()));
    let big = "x".repeat(IdempotentEffects::MAX_RESULT_BYTES);
    match Stored::of(&big) {
        Stored::NotKept {
            reason,
            bytes,
            sha256,
        } => {
            assert_eq!(
                bytes,
                IdempotentEffects::MAX_RESULT_BYTES + 2,
                "the JSON string's quotes"
            );
            assert!(reason.contains(&bytes.to_string()), "{reason}");
            assert_eq!(sha256.len(), 64);
        }
        other => panic!("expected the bounded form, got {other:?}"),
    }
    // A map with non-string keys does not serialise to JSON.
    let unserialisable = std::collections::HashMap::from([((1, 2), 3)]);
    assert!(matches!(
        Stored::of(&unserialisable),
        Stored::NotKept { reason, .. } if reason.contains("does not serialise")
    ));
    assert!(matches!(
        Stored::Json("\"x\"".into()).bounded(),
        Stored::NotKept { bytes: 3, .. }
    ));
}

#[test]
fn record_writes_are_retried_with_doubling_waits_within_the_deadline() {
    let deadline = 100_000;
    let waits: Vec<u128> = (1..=6)
        .map(|r| retry_delay(r, 0, deadline).expect("time left").as_millis())
        .collect();
    assert_eq!(waits, [50, 100, 200, 400, 800, 1000]);
    assert_eq!(retry_delay(MAX_RETRIES + 1, 0, deadline), None);
    assert_eq!(retry_delay(0, 0, deadline), None);
    // A wait that would leave less than the reserve before the deadline is not made.
    assert_eq!(
        retry_delay(1, deadline - 550, deadline),
        Some(Duration::from_millis(50))
    );
    assert_eq!(retry_delay(1, deadline - 549, deadline), None);
    assert_eq!(retry_delay(1, deadline, deadline), None);
}

#[test]
fn only_a_replay_without_a_result_has_no_value() {
    assert_eq!(Effect::Ran(1).into_value(), Some(1));
    assert_eq!(Effect::Replayed(1).into_value(), Some(1));
    let without: Effect<u32> = Effect::ReplayedWithoutResult {
        reason: "too large".into(),
    };
    assert!(without.is_replay());
    assert_eq!(without.into_value(), None);
    assert!(!Effect::Ran(1).is_replay());
}

#[test]
fn a_refused_completion_is_ours_only_if_our_token_completed_the_record() {
    let h = PayloadHash::of(&json!(1)).expect("hash");
    let mut ours = record(COMPLETED, h.as_str());
    ours.insert("Token".into(), AttributeValue::S("mine".into()));
    assert!(completed_by(Some(&ours), "mine"), "our earlier try landed");
    assert!(!completed_by(Some(&record(COMPLETED, h.as_str())), "mine"));
    let mut taken = record(IN_PROGRESS, h.as_str());
    taken.insert("Token".into(), AttributeValue::S("mine".into()));
    assert!(!completed_by(Some(&taken), "mine"), "still in progress");
    assert!(!completed_by(None, "mine"), "the record is gone");
}

#[test]
fn every_attempt_has_its_own_token() {
    assert_ne!(new_token(), new_token());
}

#[test]
fn a_lambda_deadline_is_epoch_milliseconds() {
    let d = Deadline::from_epoch_millis(1_700_000_000_123);
    assert_eq!(d.epoch_millis(), 1_700_000_000_123);
    assert_eq!(
        d.at(),
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)
    );
}

fn effects_on(table: IdempotencyTable) -> IdempotentEffects {
    IdempotentEffects::in_table(table)
}

#[test]
fn by_default_records_follow_the_orders_table_contract() {
    let effects = effects_on(IdempotencyTable::new(client(), "orders"));
    let h = PayloadHash::of(&json!(1)).expect("hash");
    let item = effects.in_progress_item("k", &h, "mine", Deadline::from_epoch_millis(42), 1_000);
    assert_eq!(item.get("id"), Some(&AttributeValue::S("IDEM#k".into())));
    assert_eq!(
        item.get("ExpiresAt"),
        Some(&AttributeValue::N((1 + 14 * 86_400).to_string()))
    );
    assert_eq!(effects.rendered_key("k"), "id=IDEM#k");
}

#[test]
fn on_a_pk_sk_table_every_record_write_is_keyed_in_both_attributes() {
    let effects = effects_on(
        IdempotencyTable::new(client(), "app")
            .partition_key("PK")
            .sort_key("SK")
            .ttl_attribute("ttl"),
    );
    let h = PayloadHash::of(&json!(1)).expect("hash");
    let key = AttributeValue::S("IDEM#k".into());
    let taking = effects.in_progress_item("k", &h, "mine", Deadline::from_epoch_millis(42), 1_000);
    let done = effects.completed_item("k", &h, "mine", &Stored::Json("1".into()), 1_000);
    for item in [&taking, &done] {
        assert_eq!(item.get("PK"), Some(&key));
        assert_eq!(item.get("SK"), Some(&key));
        assert_eq!(item.get("id"), None, "no attribute of the default key");
        assert_eq!(
            item.get("ttl"),
            Some(&AttributeValue::N((1 + 14 * 86_400).to_string()))
        );
    }
    assert_eq!(
        taking.get("Status"),
        Some(&AttributeValue::S(IN_PROGRESS.into()))
    );
    assert_eq!(
        done.get("Status"),
        Some(&AttributeValue::S(COMPLETED.into()))
    );
    // Release and forget delete by the full key.
    assert_eq!(effects.record_key("k").len(), 2);
    assert_eq!(effects.rendered_key("k"), "PK=IDEM#k,SK=IDEM#k");
}
