//! The publisher function as the Lambda binary builds it: no AWS call at start (a cold
//! start is billed and a TLS round trip was most of it), its SQS queues' size limits
//! read on its first invocation and kept from then on.

use aws_sdk_sqs::types::QueueAttributeName;
use dynamodb_outbox::lambda::PublisherFunction;
use dynamodb_outbox::lambda_runtime::{Context, LambdaEvent};
use dynamodb_outbox::{Destination, NewMessage, Routes};
use outbox_tests::{Outbox, s};

const KIB_256: u32 = 262_144;
const MIB_1: u32 = 1_048_576;
const PAYLOAD_300_KIB: usize = 300 * 1024;

/// Sets the queue's `MaximumMessageSize`.
async fn resize(ob: &Outbox, url: &str, bytes: u32) {
    ob.clients
        .sqs
        .set_queue_attributes()
        .queue_url(url)
        .attributes(QueueAttributeName::MaximumMessageSize, bytes.to_string())
        .send()
        .await
        .expect("set MaximumMessageSize");
}

/// Commits a 300 KiB message to `small` for `aggregate` and hands the function the
/// stream's batch: the message's status and reason after it.
async fn publish_300_kib(
    ob: &mut Outbox,
    function: &PublisherFunction,
    aggregate: &str,
) -> (Option<String>, Option<String>) {
    let c = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new(
                aggregate,
                "small",
                "p".repeat(PAYLOAD_300_KIB),
            )],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let response = function
        .handle(LambdaEvent::new(event, Context::default()))
        .await
        .expect("handled");
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let item = ob.item(aggregate, &c.sort_keys[0]).await.expect("item");
    (s(&item, "Status"), s(&item, "LastError"))
}

#[tokio::test]
async fn a_queues_limit_is_read_on_the_first_invocation_not_at_start_and_kept_after() {
    // Given a function built while its queue takes 1 MiB, and the queue then lowered
    // to 256 KiB
    let mut ob = Outbox::new().await;
    let small = ob.sized_queue("small", MIB_1).await;
    let dlq = ob.sized_queue("outbox-dlq", MIB_1).await;
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"small":"{small}"}}"#), None).expect("routes");
    config.dead_letter = Destination::parse(&dlq, None).expect("dlq");
    let aws = outbox_tests::sdk_config().await;
    let function = PublisherFunction::new(config, "first-invocation", &aws).await;
    resize(&ob, &small, KIB_256).await;

    // When its first invocation publishes a 300 KiB message
    let (status, reason) = publish_300_kib(&mut ob, &function, "A").await;
    // Then the limit it read then applies: the message is poison before any send,
    // by the queue's 256 KiB (built with the limit read at start, it would be 1 MiB)
    assert_eq!(status.as_deref(), Some("FAILED"));
    let reason = reason.unwrap_or_default();
    assert!(
        reason.contains("at most 262144 bytes") && reason.contains("MaximumMessageSize"),
        "{reason}"
    );

    // When the queue is raised to 1 MiB again and a second invocation publishes one
    resize(&ob, &small, MIB_1).await;
    let (status, reason) = publish_300_kib(&mut ob, &function, "B").await;
    // Then the limit read on the first is kept: not read again, still 256 KiB
    assert_eq!(status.as_deref(), Some("FAILED"));
    let reason = reason.unwrap_or_default();
    assert!(reason.contains("at most 262144 bytes"), "{reason}");
}
