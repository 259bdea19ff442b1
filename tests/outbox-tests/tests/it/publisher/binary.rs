//! The publisher's binary itself — as packaged in `OUTBOX_LAMBDA_DIR`: the debug build
//! in the suite, the release artifacts when tests/run checks them — run
//! under a local Lambda Runtime API ([`LocalRuntime`]) with one stream batch delivered
//! three times, as Lambda delivers it after a partial batch response, an error or a
//! timeout: whole, whole again, then its last 15 records. The binary's calls go to
//! the emulator with its own configuration, as on Lambda.

use super::redelivery::{commit_each, statuses, tail};
use outbox_devkit::runtime_api::{LocalRuntime, trust_env};
use outbox_tests::pipeline::lambda_dir;
use outbox_tests::{Outbox, drain, endpoint};

/// What Lambda and the function's stack give the publisher, at `ob`'s table and
/// queues on the emulator, with test credentials.
fn publisher_env(ob: &Outbox) -> Vec<(String, String)> {
    let routes = serde_json::json!({ "orders": ob.queue.url, "ledger": ob.fifo.url });
    let mut env: Vec<(String, String)> = [
        ("AWS_LAMBDA_FUNCTION_NAME", "outbox-publisher"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
        ("AWS_ENDPOINT_URL", &endpoint()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("OUTBOX_TABLE_NAME", &ob.table),
        ("OUTBOX_ROUTES", &routes.to_string()),
        ("OUTBOX_DLQ_URL", &ob.dlq_url),
        ("OUTBOX_DEPLOYMENT", "binary-redelivery"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.extend(trust_env());
    env
}

/// The records the binary reports for retry, from its partial batch response.
fn reported(answer: &outbox_devkit::runtime_api::Answer) -> Vec<serde_json::Value> {
    let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_else(|e| {
        panic!(
            "not a batch response ({e}): {}",
            String::from_utf8_lossy(&answer.body)
        )
    });
    body["batchItemFailures"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no batchItemFailures in {body}"))
}

#[tokio::test]
async fn the_publisher_binary_fed_one_batch_three_times_as_lambda_redelivers_it_publishes_each_message_once()
 {
    // Given 20 pending messages, one aggregate each, and their batch of 20 records
    let mut ob = Outbox::new().await;
    let keys = commit_each(&ob, "ORDER", "orders", 20).await;
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 20);
    let binary = lambda_dir().join("outbox-publisher/bootstrap");
    let mut runtime = LocalRuntime::start(&binary, &publisher_env(&ob), true)
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    // When the binary gets the batch, the batch again, then its last 15 records
    let whole = serde_json::to_vec(&event).expect("event JSON");
    let last_15 = serde_json::to_vec(&tail(&event, 15)).expect("event JSON");
    let mut answers = Vec::new();
    for delivery in [&whole, &whole, &last_15] {
        // Blocking: the binary is another process, and nothing else runs meanwhile.
        let answer = runtime
            .invoke(delivery)
            .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
        answers.push(answer);
    }
    drop(runtime);
    // Then every delivery is answered with nothing to retry
    for answer in &answers {
        assert!(answer.ok, "{}", String::from_utf8_lossy(&answer.body));
        assert!(reported(answer).is_empty(), "{answer:?}");
    }
    // And the queue holds each message once, and every item is SENT
    let on_queue = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(on_queue.len(), 20, "messages on the queue");
    let sent = Some("SENT".to_owned());
    assert!(
        statuses(&ob, &keys).await.iter().all(|s| *s == sent),
        "{:?}",
        statuses(&ob, &keys).await
    );
}
