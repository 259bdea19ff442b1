//! The functions' SDK timeouts against the emulator: a call that hangs (the fault
//! layer's `hang`: the request is sent and takes effect, its answer never comes)
//! fails as a timeout within the operation timeout, instead of holding the invocation
//! until Lambda ends it.

use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{AwsPublisher, FromSdkConfig, NewMessage};
use dynamodb_outbox_core::config::timeouts::{DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_OPERATION_TIMEOUT};
use outbox_faults::{FaultPlan, with_plan};
use outbox_tests::{Outbox, drain, s};
use std::time::{Duration, Instant};

/// Longer than the operation timeout with room to spare: a call still running then
/// had no timeout at all.
const HUNG: Duration = Duration::from_secs(45);

#[tokio::test]
async fn a_send_that_hangs_fails_as_a_timeout_and_the_record_is_reported_for_retry() {
    // Given a committed message, and a publisher built as the functions build theirs
    // on a network where every SendMessageBatch hangs
    let mut ob = Outbox::new().await;
    let committed = ob
        .writer()
        .commit(vec![], &[NewMessage::new("USER#1", "orders", "{}")])
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let plan: FaultPlan = "SendMessageBatch:hang:1".parse().expect("plan");
    let hanging = with_plan(outbox_tests::sdk_config().await, plan, Some(1));
    let publisher = AwsPublisher::from_conf(ob.config(), &hanging);

    // When its stream batch is published
    let started = Instant::now();
    let (response, summary) = tokio::time::timeout(HUNG, handle_stream_event(&publisher, &event))
        .await
        .expect("the send hung past 45 s: no SDK timeout ended it");

    // Then the send gave up at the operation timeout (each attempt cut at the attempt
    // timeout, the SDK's retries in between), not at the function's
    let took = started.elapsed();
    assert!(
        took >= DEFAULT_ATTEMPT_TIMEOUT
            && took < DEFAULT_OPERATION_TIMEOUT + Duration::from_secs(5),
        "{took:?}"
    );
    // And the record is reported for retry, the message still pending (the sends took
    // effect: what a retry sends again, consumers deduplicate)
    assert_eq!(response.batch_item_failures.len(), 1, "{summary:?}");
    let item = ob
        .item("USER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert!(!drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
}

#[tokio::test]
async fn a_hung_send_is_reported_as_a_timeout_a_retry_can_fix() {
    // Given the sink of a publisher built as the functions build theirs, on a
    // network where every SendMessageBatch hangs
    let ob = Outbox::new().await;
    let plan: FaultPlan = "SendMessageBatch:hang:1".parse().expect("plan");
    let hanging = with_plan(outbox_tests::sdk_config().await, plan, Some(1));
    let publisher = AwsPublisher::from_conf(ob.config(), &hanging);
    let message = dynamodb_outbox_core::message::OutboundMessage {
        body: "{}".into(),
        attributes: vec![],
        group_id: None,
        dedup_id: None,
        trace_header: None,
    };
    let queue = dynamodb_outbox::Destination::sqs(&ob.queue.url);

    // When it sends
    let sent = tokio::time::timeout(
        HUNG,
        dynamodb_outbox_core::ports::MessageSink::send_batch(&publisher.sink, &queue, &[&message]),
    )
    .await
    .expect("the send hung past 45 s: no SDK timeout ended it");

    // Then the failure says it timed out, and is transient
    let failure = sent.expect_err("nothing answered");
    assert!(failure.is_retryable(), "{failure}");
    assert!(
        failure.reason.to_lowercase().contains("timeout"),
        "{failure}"
    );
}
