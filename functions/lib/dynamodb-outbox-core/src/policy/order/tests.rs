use super::*;
use crate::policy::backoff;
use crate::work::Poison;

fn key(pk: &str, sk: &str) -> ItemKey {
    ItemKey {
        pk: pk.into(),
        sk: sk.into(),
    }
}

fn due(pk: &str, sk: &str, at: i64) -> DueKey {
    DueKey::new(key(pk, sk), at)
}

fn attempt(pk: &str, created: i64, id: &str) -> Attempt {
    let k = key(pk, &format!("MESSAGE#X#{id}"));
    Attempt {
        order: order_key(&k, created, id),
        key: k,
        retry_count: 1,
        created_at: created,
        work: Work::Poison(Poison {
            key: None,
            message_id: None,
            topic: None,
            body: String::new(),
            reason: String::new(),
            trace: None,
        }),
    }
}

fn publishable(pk: &str, created: i64, id: &str) -> Attempt {
    let mut a = attempt(pk, created, id);
    a.work = Work::Publish(crate::schema::OutboxMessage {
        key: a.key.clone(),
        message_id: id.into(),
        topic: "t".into(),
        payload: String::new(),
        created_at: created,
        retry_count: 1,
        sequence: None,
        payload_size: None,
        index: crate::schema::SeenIndex::default(),
        trace: None,
        home_region: None,
        follows: None,
    });
    a
}

fn pks(chunk: &[DueKey]) -> Vec<&str> {
    chunk.iter().map(|d| d.key.pk.as_str()).collect()
}

#[test]
fn an_aggregate_never_spans_two_chunks() {
    // A's second key is due last, after B's and C's.
    let keys = vec![
        due("A", "1", 1),
        due("B", "1", 2),
        due("C", "1", 3),
        due("A", "2", 9),
    ];
    let (chunks, left) = chunk_due(keys, 100, 2);
    assert_eq!(left, 0);
    let shapes: Vec<Vec<&str>> = chunks.iter().map(|c| pks(c)).collect();
    assert_eq!(shapes, vec![vec!["A", "A"], vec!["B", "C"]]);
    // One aggregate over the chunk size is one chunk of its own.
    let many: Vec<DueKey> = (0..5).map(|i| due("A", &i.to_string(), i)).collect();
    let (chunks, _) = chunk_due(many, 100, 2);
    assert_eq!(chunks.len(), 1);
}

#[test]
fn the_per_sweep_bound_takes_whole_aggregates_in_due_order() {
    let keys = vec![
        due("A", "1", 1),
        due("B", "1", 2),
        due("B", "2", 3),
        due("C", "1", 4),
    ];
    let (chunks, left) = chunk_due(keys, 2, 10);
    assert_eq!(pks(&chunks[0]), vec!["A"], "B does not fit whole");
    assert_eq!(left, 3);
    // An aggregate alone over the bound gives its earliest due keys.
    let many: Vec<DueKey> = (0..5).map(|i| due("A", &i.to_string(), 10 - i)).collect();
    let (chunks, left) = chunk_due(many, 3, 10);
    let dues: Vec<i64> = chunks[0].iter().map(|d| d.due_at_ms).collect();
    assert_eq!((dues, left), (vec![6, 7, 8], 2));
}

#[test]
fn a_gate_holds_back_only_later_messages_of_its_aggregate_and_never_poison() {
    let attempts = vec![
        publishable("A", 10, "a1"),
        publishable("A", 30, "a3"),
        attempt("A", 40, "a4"),
        publishable("B", 30, "b3"),
    ];
    let held = key("A", "MESSAGE#X#a2");
    let gates = vec![Gate {
        aggregate: "A".into(),
        position: Some(order_key(&held, 20, "a2")),
        key: held.clone(),
        due_floor: 500,
    }];
    assert_eq!(
        held_back(&attempts, &gates),
        vec![None, Some(500), None, None]
    );
    // A gate whose place is unknown (its claim failed) holds back all of A.
    let unknown = vec![Gate {
        aggregate: "A".into(),
        position: None,
        key: held.clone(),
        due_floor: 700,
    }];
    assert_eq!(
        held_back(&attempts, &unknown),
        vec![Some(700), Some(700), None, None]
    );
}

#[test]
fn a_gate_of_unknown_place_with_a_library_key_holds_back_only_later_messages() {
    // Three library messages of A, written in this order (UUIDv7 sort keys); the
    // claim of the middle one failed, so its place is unknown but for its key.
    let ids: Vec<String> = (0..3).map(|_| uuid::Uuid::now_v7().to_string()).collect();
    let attempts = vec![publishable("A", 10, &ids[0]), publishable("A", 30, &ids[2])];
    let failed = key("A", &format!("MESSAGE#X#{}", ids[1]));
    let gate = vec![Gate {
        aggregate: "A".into(),
        position: None,
        key: failed,
        due_floor: 700,
    }];
    // The earlier message goes; only the later one waits.
    assert_eq!(held_back(&attempts, &gate), vec![None, Some(700)]);
}

#[test]
fn a_message_that_only_waited_backs_off_as_after_one_attempt() {
    let (a1, a2) = (key("A", "1"), key("A", "2"));
    let (base, max) = (Duration::from_secs(30), Duration::from_secs(900));
    let r = |key, attempted| Retrying {
        key,
        attempt: 6,
        attempted,
        not_before: 5_000,
    };
    // Six failures before: a sent-and-failed message waits 8 to 15 minutes,
    // one that was held back waits 15 to 30 seconds (after its gate).
    let failed = next_due_times(&[r(&a1, true)], 1_000, base, max)[0];
    let waited = next_due_times(&[r(&a2, false)], 1_000, base, max)[0];
    assert!(failed >= 1_000 + 450_000, "{failed}");
    assert!(
        (1_000 + 15_000..=1_000 + 30_000).contains(&waited),
        "{waited}"
    );
}

#[test]
fn a_later_message_of_an_aggregate_is_never_due_before_an_earlier_one() {
    let (a1, a2, b1) = (key("A", "1"), key("A", "2"), key("B", "1"));
    let base = Duration::from_secs(30);
    let max = Duration::from_secs(900);
    let r = |key, attempt, not_before| Retrying {
        key,
        attempt,
        attempted: true,
        not_before,
    };
    // A1 on its 5th attempt (long delay), A2 on its 1st (short delay).
    let dues = next_due_times(
        &[
            r(&a1, 5, i64::MIN),
            r(&a2, 1, i64::MIN),
            r(&b1, 1, i64::MIN),
        ],
        1_000,
        base,
        max,
    );
    assert!(dues[1] > dues[0], "{dues:?}");
    assert_eq!(
        dues[2],
        1_000 + millis(backoff(1, base, max, jitter_of(&b1, 1)))
    );
    // Held back behind a gate due in an hour: after the gate.
    let gated = next_due_times(&[r(&a2, 1, 3_600_000)], 1_000, base, max);
    assert_eq!(gated, vec![3_600_001]);
}

#[test]
fn attempts_are_ordered_by_write_time_then_message_id_per_aggregate() {
    let mut attempts = vec![
        publishable("B", 1, "b1"),
        publishable("A", 2, "a2"),
        publishable("A", 2, "a1"),
        publishable("A", 1, "a0"),
    ];
    order_attempts(&mut attempts);
    let ids: Vec<&str> = attempts.iter().map(|a| a.key.sk.as_str()).collect();
    assert_eq!(
        ids,
        [
            "MESSAGE#X#a0",
            "MESSAGE#X#a1",
            "MESSAGE#X#a2",
            "MESSAGE#X#b1"
        ]
    );
}
