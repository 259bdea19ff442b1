use super::plan::lanes;
use super::*;
use aws_lambda_events::event::sqs::SqsMessageAttribute;
use std::sync::Mutex;
use std::time::Duration;

fn msg(id: &str, group: Option<&str>, body: &str) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(body.to_owned());
    if let Some(g) = group {
        m.attributes.insert("MessageGroupId".into(), g.into());
    }
    m
}

fn event(msgs: Vec<SqsMessage>) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = msgs;
    e
}

#[tokio::test]
async fn only_failed_messages_are_reported() {
    let ev = event(vec![
        msg("a", None, "ok"),
        msg("b", None, "bad"),
        msg("c", None, "ok"),
    ]);
    let report = BatchProcessor::new()
        .run(&ev, |m| async move {
            match m.body() {
                Some("ok") => Ok(()),
                _ => Err("bad body"),
            }
        })
        .await;
    assert_eq!(report.failed_ids(), ["b"]);
    let response = report.response();
    assert_eq!(response.batch_item_failures.len(), 1);
    assert_eq!(response.batch_item_failures[0].item_identifier, "b");
    let ids: Vec<&str> = report
        .outcomes
        .iter()
        .map(|o| o.message_id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b", "c"], "outcomes keep batch order");
}

#[tokio::test]
async fn standard_messages_run_concurrently() {
    let ev = event((0..5).map(|i| msg(&i.to_string(), None, "x")).collect());
    let running = Mutex::new((0usize, 0usize)); // (now, max)
    let report = BatchProcessor::new()
        .concurrency(3)
        .run(&ev, |_| async {
            {
                let mut r = running.lock().map_err(|_| "poisoned")?;
                r.0 += 1;
                r.1 = r.1.max(r.0);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            running.lock().map_err(|_| "poisoned")?.0 -= 1;
            Ok::<_, &str>(())
        })
        .await;
    assert!(report.failed_ids().is_empty());
    assert_eq!(
        running.lock().expect("lock").1,
        3,
        "at most 3 at once, and 3 did"
    );
}

#[tokio::test]
async fn a_fifo_group_stops_at_its_first_failure_and_reports_the_rest() {
    let ev = event(vec![
        msg("a1", Some("A"), "ok"),
        msg("b1", Some("B"), "ok"),
        msg("a2", Some("A"), "bad"),
        msg("a3", Some("A"), "ok"),
        msg("b2", Some("B"), "ok"),
    ]);
    let ran = Mutex::new(Vec::new());
    let report = BatchProcessor::new()
        .run(&ev, |m| {
            let ran = &ran;
            async move {
                let id = m.sqs_message_id().to_owned();
                ran.lock().map_err(|_| "poisoned")?.push(id);
                match m.body() {
                    Some("ok") => Ok(()),
                    _ => Err("bad"),
                }
            }
        })
        .await;
    assert_eq!(report.failed_ids(), ["a2", "a3"]);
    let mut ran = ran.into_inner().expect("lock");
    assert!(!ran.contains(&"a3".to_owned()), "a3 never ran");
    let a: Vec<&String> = ran.iter().filter(|id| id.starts_with('a')).collect();
    assert_eq!(a, ["a1", "a2"], "in order within the group");
    ran.sort();
    assert_eq!(ran, ["a1", "a2", "b1", "b2"]);
    match &report.outcomes[3].result {
        Err(MessageFailure::Skipped { after }) => assert_eq!(after, "a2"),
        other => panic!("a3 should be skipped, got {other:?}"),
    }
}

#[tokio::test]
async fn a_panic_fails_only_its_message() {
    let ev = event(vec![msg("a", None, "ok"), msg("b", None, "boom")]);
    let report = BatchProcessor::new()
        .run(&ev, |m| async move {
            if m.body() == Some("boom") {
                panic!("handler bug");
            }
            Ok::<_, &str>(())
        })
        .await;
    assert_eq!(report.failed_ids(), ["b"]);
    match &report.outcomes[1].result {
        Err(e @ MessageFailure::Panicked(_)) => {
            assert!(e.to_string().contains("handler bug"), "{e}")
        }
        other => panic!("expected a panic failure, got {other:?}"),
    }
}

#[test]
fn lanes_group_fifo_messages_and_isolate_the_others() {
    let msgs = vec![
        msg("1", Some("A"), ""),
        msg("2", None, ""),
        msg("3", Some("B"), ""),
        msg("4", Some("A"), ""),
        msg("5", None, ""),
    ];
    assert_eq!(lanes(&msgs), vec![vec![0, 3], vec![1], vec![2], vec![4]]);
}

#[tokio::test]
async fn each_message_is_handed_over_opened_and_its_outbox_id_reported() {
    let mut with_id = msg("sqs-1", None, r#"{"n":1}"#);
    let mut attr = SqsMessageAttribute::default();
    attr.string_value = Some("outbox-7".into());
    attr.data_type = Some("String".into());
    with_id
        .message_attributes
        .insert(dynamodb_outbox_core::message::ATTR_MESSAGE_ID.into(), attr);
    let ev = event(vec![with_id, msg("sqs-2", None, r#"{"n":2}"#)]);
    let keys = |processor: BatchProcessor| {
        let ev = &ev;
        async move {
            processor
                .run(ev, |m| async move { m.message_id().map(str::to_owned) })
                .await
        }
    };
    // By default a message without an outbox id is refused, for good
    let report = keys(BatchProcessor::new()).await;
    assert_eq!(report.failed_ids(), ["sqs-2"]);
    assert_eq!(
        report.outcomes[0].outbox_message_id.as_deref(),
        Some("outbox-7")
    );
    assert!(matches!(
        &report.outcomes[1].result,
        Err(MessageFailure::Failed(e @ IdempotencyError::NoMessageId { .. })) if !e.is_retryable()
    ));
    // With the opt-in it is keyed by its SQS id
    let report = keys(BatchProcessor::new().sqs_message_id_fallback()).await;
    let ids: Vec<String> = report
        .outcomes
        .into_iter()
        .map(|o| o.result.expect("keyed"))
        .collect();
    assert_eq!(ids, ["outbox-7", "sqs-2"]);
}

fn received(id: &str, receives: u32, body: &str) -> SqsMessage {
    let mut m = msg(id, None, body);
    m.attributes
        .insert("ApproximateReceiveCount".into(), receives.to_string());
    m
}

/// A processor whose clock stands at 0, and the deadline of an invocation with
/// `ms` left.
fn at_zero(ms: u64) -> (BatchProcessor, Deadline) {
    let processor = BatchProcessor::new().clock(crate::ManualClock::at(0));
    (processor, Deadline::from_epoch_millis(ms))
}

/// Runs `ev` until `deadline`; a message with the body "hang" never ends.
async fn run_hanging(
    processor: &BatchProcessor,
    ev: &SqsEvent,
    deadline: Deadline,
) -> BatchReport<(), &'static str> {
    processor
        .run_until(ev, deadline, |m| async move {
            if m.body() == Some("hang") {
                std::future::pending::<()>().await;
            }
            Ok::<_, &str>(())
        })
        .await
}

// Real time, with a deadline 2 s away: tokio's paused clock (`test-util`) would give
// the workspace's tests a tokio build of their own, and the AWS SDK on top of it.
#[tokio::test]
async fn a_hung_message_is_reported_unfinished_before_the_deadline_and_the_others_are_kept() {
    let ev = event(vec![
        msg("a", None, "ok"),
        msg("hangs", None, "hang"),
        msg("c", None, "ok"),
    ]);
    let (processor, deadline) = at_zero(2_000);
    let started = std::time::Instant::now();
    let report = run_hanging(&processor, &ev, deadline).await;
    assert_eq!(report.failed_ids(), ["hangs"]);
    assert!(matches!(
        report.outcomes[1].result,
        Err(MessageFailure::Unfinished)
    ));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "answered a margin (1 s) before the deadline (2 s), not at it: {took:?}"
    );
}

#[tokio::test]
async fn finished_messages_are_deleted_at_once_and_failed_ones_are_left_to_the_queue() {
    let deleter = crate::MemoryDeleter::default();
    let processor = BatchProcessor::new().delete_finished(deleter.clone());
    let ev = event(vec![msg("a", None, "ok"), msg("b", None, "bad")]);
    let report = processor
        .run(&ev, |m| async move {
            match m.body() {
                Some("ok") => Ok(()),
                _ => Err("bad"),
            }
        })
        .await;
    assert_eq!(report.failed_ids(), ["b"]);
    assert_eq!(deleter.deleted(), ["a"]);
    // A batch of one is left to Lambda: nothing could crash after it
    let one = event(vec![msg("alone", None, "ok")]);
    processor.run(&one, |_| async { Ok::<_, &str>(()) }).await;
    assert_eq!(deleter.deleted(), ["a"]);
}

#[tokio::test]
async fn redelivered_messages_run_first_one_at_a_time_each_deleted_before_the_next_starts() {
    let deleter = crate::MemoryDeleter::default();
    let processor = BatchProcessor::new().delete_finished(deleter.clone());
    let ev = event(vec![
        received("fresh", 1, "x"),
        received("twice", 2, "x"),
        received("thrice", 3, "x"),
    ]);
    let started = Mutex::new(Vec::new());
    let report = processor
        .run(&ev, |m| {
            let (started, deleter) = (&started, &deleter);
            async move {
                let log = (m.sqs_message_id().to_owned(), deleter.deleted());
                started.lock().map_err(|_| "poisoned")?.push(log);
                tokio::task::yield_now().await;
                Ok::<_, &str>(())
            }
        })
        .await;
    assert!(report.failed_ids().is_empty());
    let started = started.into_inner().expect("lock");
    let expected: Vec<(String, Vec<String>)> = vec![
        ("thrice".into(), vec![]),
        ("twice".into(), vec!["thrice".into()]),
        ("fresh".into(), vec!["thrice".into(), "twice".into()]),
    ];
    assert_eq!(started, expected);
}

#[tokio::test]
async fn a_redelivered_message_that_hangs_hands_back_the_ones_behind_it_and_keeps_the_ones_before()
{
    let ev = event(vec![
        received("fresh", 1, "ok"),
        received("first", 3, "ok"),
        received("hangs", 2, "hang"),
    ]);
    let (processor, deadline) = at_zero(1_000);
    let report = run_hanging(&processor, &ev, deadline).await;
    assert_eq!(report.failed_ids(), ["fresh", "hangs"]);
    assert!(report.outcomes[1].result.is_ok());
}

#[tokio::test]
async fn each_outcome_names_the_trace_its_message_carries_and_none_is_invented() {
    let mut traced = msg("sqs-1", None, "ok");
    let mut attr = SqsMessageAttribute::default();
    attr.string_value = Some("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01".into());
    attr.data_type = Some("String".into());
    traced
        .message_attributes
        .insert(dynamodb_outbox_core::trace::ATTR_TRACEPARENT.into(), attr);
    let ev = event(vec![traced, msg("sqs-2", None, "ok")]);
    let report = BatchProcessor::new()
        .run(&ev, |_| async { Ok::<(), &str>(()) })
        .await;
    let traces: Vec<Option<&str>> = report
        .outcomes
        .iter()
        .map(|o| o.trace_id.as_deref())
        .collect();
    assert_eq!(traces, [Some("5759e988bd862e3fe1be46a994272793"), None]);
}
