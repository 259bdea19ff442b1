use super::*;
use std::cell::RefCell;

/// A stream batch of `(item, sequence number)` records; the item is `PK/SK`.
fn batch(records: &[(&str, &str)]) -> LambdaEvent<Event> {
    let records: Vec<serde_json::Value> = records
        .iter()
        .map(|(item, seq)| {
            let (pk, sk) = item.split_once('/').unwrap_or((item, ""));
            serde_json::json!({
                "awsRegion": "us-east-1",
                "eventID": seq,
                "eventName": "INSERT",
                "dynamodb": {
                    "Keys": {"PK": {"S": pk}, "SK": {"S": sk}},
                    "SequenceNumber": seq,
                    "SizeBytes": 10,
                },
            })
        })
        .collect();
    let event = serde_json::from_value(serde_json::json!({ "Records": records }))
        .map_err(|e| e.to_string());
    assert!(event.is_ok(), "{event:?}");
    LambdaEvent::new(
        event.unwrap_or_default(),
        lambda_runtime::Context::default(),
    )
}

/// Two aggregates; A's three items, each changed twice.
const RECORDS: [(&str, &str); 8] = [
    ("A/1", "10"),
    ("A/2", "11"),
    ("B/1", "12"),
    ("A/3", "13"),
    ("A/1", "14"),
    ("A/2", "15"),
    ("B/1", "16"),
    ("A/3", "17"),
];

fn item(seq: &str) -> &'static str {
    RECORDS
        .iter()
        .find(|(_, s)| *s == seq)
        .map_or("?", |(i, _)| i)
}

fn answer(failed: &[&str]) -> DynamoDbEventResponse {
    let mut a = DynamoDbEventResponse::default();
    for id in failed {
        let mut f = aws_lambda_events::event::streams::DynamoDbBatchItemFailure::default();
        f.item_identifier = Some((*id).to_owned());
        a.batch_item_failures.push(f);
    }
    a
}

/// Runs one batch through `faults`; the handler reports the records `fail` names
/// (once each) and errs on a record `err` names. Returns each invocation's sequence
/// numbers and the answer.
async fn run(
    faults: StreamFaults,
    fail: &[&'static str],
    err: Option<&str>,
) -> (Vec<Vec<String>>, Result<Vec<String>, String>) {
    let seen = RefCell::new(Vec::new());
    let to_fail = RefCell::new(fail.to_vec());
    let handler = |event: LambdaEvent<Event>| {
        let seqs: Vec<String> = event
            .payload
            .records
            .iter()
            .filter_map(|r| r.change.sequence_number.clone())
            .collect();
        seen.borrow_mut().push(seqs.clone());
        let failing: Vec<&str> = to_fail
            .borrow()
            .iter()
            .copied()
            .filter(|f| seqs.iter().any(|s| s == f))
            .collect();
        to_fail.borrow_mut().retain(|f| !failing.contains(f));
        let erred = err.is_some_and(|e| seqs.iter().any(|s| s == e));
        async move {
            if erred {
                return Err(Error::from("the handler failed"));
            }
            Ok(answer(&failing))
        }
    };
    let answer = faults.handle(batch(&RECORDS), &handler).await;
    let answer = answer
        .map(|a| {
            let mut ids: Vec<String> = a
                .batch_item_failures
                .into_iter()
                .filter_map(|f| f.item_identifier)
                .collect();
            ids.sort();
            ids
        })
        .map_err(|e| e.to_string());
    (seen.into_inner(), answer)
}

fn parallel(factor: usize) -> StreamFaults {
    StreamFaults {
        redelivery: None,
        parallel: Some(Parallel { factor }),
    }
}

#[tokio::test]
async fn each_record_goes_to_one_invocation_with_its_item_in_order_and_failures_are_united() {
    let mut apart = false;
    for _ in 0..40 {
        let (calls, answer) = run(parallel(3), &["13", "16"], None).await;
        assert!((1..=3).contains(&calls.len()), "{calls:?}");
        let mut all: Vec<&String> = calls.iter().flatten().collect();
        all.sort();
        assert_eq!(all, RECORDS.iter().map(|(_, s)| s).collect::<Vec<_>>());
        for call in &calls {
            assert!(
                call.windows(2).all(|w| w[0] < w[1]),
                "batch order: {call:?}"
            );
        }
        for (it, _) in RECORDS {
            let holding = calls
                .iter()
                .filter(|c| c.iter().any(|s| item(s) == it))
                .count();
            assert_eq!(holding, 1, "{it} in {calls:?}");
        }
        assert_eq!(answer, Ok(vec!["13".to_owned(), "16".to_owned()]));
        let call_of = |it: &str| calls.iter().position(|c| c.iter().any(|s| item(s) == it));
        apart |= call_of("A/1") != call_of("A/2");
    }
    assert!(apart, "A/1 and A/2 never ran in different invocations");
}

#[tokio::test]
async fn each_part_is_delivered_again_on_its_own_and_an_error_is_the_answer() {
    let faults = StreamFaults {
        redelivery: Some(Redelivery {
            retries: 2,
            after_success: 0.0,
        }),
        parallel: Some(Parallel { factor: 2 }),
    };
    for _ in 0..20 {
        // 13 (A/3) fails once: its part is delivered again from it, nothing else.
        let (calls, answer) = run(faults, &["13"], None).await;
        let first = calls.iter().position(|c| c.contains(&"13".to_owned()));
        let again: Vec<&Vec<String>> = calls
            .iter()
            .skip(first.map_or(0, |f| f + 1))
            .filter(|c| c.contains(&"13".to_owned()))
            .collect();
        assert_eq!(again.len(), 1, "{calls:?}");
        assert!(again[0].iter().all(|s| s.as_str() >= "13"), "{calls:?}");
        assert_eq!(answer, Ok(Vec::new()), "the retry succeeded");
    }
    let (_, answer) = run(parallel(2), &[], Some("12")).await;
    assert_eq!(answer, Err("the handler failed".to_owned()));
}

#[test]
fn a_record_s_item_is_its_whole_key() {
    let a = batch(&[("A/1", "1"), ("A/2", "2"), ("A/1", "3")])
        .payload
        .records;
    assert_eq!(item_of(&a[0]), item_of(&a[2]));
    assert_ne!(
        item_of(&a[0]),
        item_of(&a[1]),
        "same PK, other SK: another item"
    );
}
