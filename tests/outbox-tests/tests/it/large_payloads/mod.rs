//! The large-payload offload on the emulator: payloads too large for their destination (or for
//! an outbox item) travel in S3, the messages carry the extended clients' pointer,
//! and the consumer library hands the handler the payload itself.

mod delivery;
mod objects;

use aws_lambda_events::event::sqs::SqsMessage;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{NewMessage, PublisherConfig, Routes};
use dynamodb_outbox_idempotency::{BatchProcessor, BatchReport, S3Payloads};
use outbox_tests::subscribers::{SnsDelivery, Subscriber, subscriber, topic_into};
use outbox_tests::{Outbox, drain, lambda_message};

/// Every key under `outbox/` in `bucket`.
async fn keys(ob: &Outbox, bucket: &str) -> Vec<String> {
    let out = ob
        .clients
        .s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix("outbox/")
        .send()
        .await
        .expect("list");
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

/// A queue named after `prefix` subscribed to a new SNS topic (no raw delivery: the
/// consumer opens the notification); the queue and the topic's ARN.
async fn notified(ob: &Outbox, prefix: &str) -> (Subscriber, String) {
    let sub = subscriber(&ob.clients, prefix).await;
    let topic_arn = topic_into(
        &ob.clients,
        "large-notify",
        &sub.arn,
        SnsDelivery::Notification,
    )
    .await;
    (sub, topic_arn)
}

/// A JSON payload of `bytes` bytes.
fn payload(bytes: usize) -> String {
    let filler = "x".repeat(bytes - r#"{"blob":""}"#.len());
    format!(r#"{{"blob":"{filler}"}}"#)
}

/// `topic` → `destination`, large payloads to `bucket` when given.
fn routes(ob: &Outbox, topic: &str, destination: &str, bucket: Option<&str>) -> PublisherConfig {
    let mut config = ob.config();
    config.routes = Routes::parse(&format!(r#"{{"{topic}":"{destination}"}}"#), None)
        .expect("routes")
        .with_large_payloads(bucket.map(str::to_owned), None);
    config
}

/// Commits `payloads` on `topic` (one aggregate each) and publishes them through the
/// stream path with `config`; returns the message ids.
async fn publish(
    ob: &mut Outbox,
    config: PublisherConfig,
    topic: &str,
    payloads: &[String],
) -> Vec<String> {
    let messages: Vec<NewMessage> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| NewMessage::new(format!("ORDER#{i}"), topic, p.clone()))
        .collect();
    let committed = ob.writer().commit(vec![], &messages).await.expect("commit");
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&ob.publisher_with(config), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(summary.sent, payloads.len());
    committed.message_ids
}

/// Everything on `sub`, as Lambda's SQS event would carry it.
async fn received(ob: &Outbox, sub: &Subscriber) -> Vec<SqsMessage> {
    drain(&ob.clients.sqs, &sub.url)
        .await
        .iter()
        .map(|m| lambda_message(m, &sub.arn, "us-east-1"))
        .collect()
}

/// Runs the batch processor, reading offloaded payloads from the emulator's S3, with
/// a handler that returns what it was handed: the payload and the outbox id.
async fn consume(ob: &Outbox, messages: &[SqsMessage]) -> BatchReport<(String, String), String> {
    BatchProcessor::new()
        .large_payloads(S3Payloads::new(ob.clients.s3.clone()))
        .run_messages(messages, |d| async move {
            let id = d.message_id().map_err(|e| e.to_string())?.to_owned();
            Ok((d.body().unwrap_or_default().to_owned(), id))
        })
        .await
}
