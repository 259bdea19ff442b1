//! The operator's view of one message on the deployed functions: `outbox-ops show`'s
//! item from the table and the functions' log lines from CloudWatch Logs, where the
//! local AWS writes each invocation's output (`/aws/lambda/<function>`), as Lambda does.

use dynamodb_outbox::NewMessage;
use dynamodb_outbox::trace::TraceContext;
use dynamodb_outbox_core::schema::Status;
use outbox_ops::{FoundBy, LogGroups, LogOptions, MessageView, show_message};
use outbox_tests::eventually;
use outbox_tests::pipeline::{Pipeline, PipelineOptions};
use std::time::Duration;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `show` of one message on the pipeline's logs, as the CLI runs it.
async fn show(p: &Pipeline, aggregate: Option<&str>, id: &str) -> (MessageView, String) {
    let clients = &p.outbox.clients;
    let options = LogOptions {
        groups: Ok(LogGroups::of_deployment(&p.deployment.prefix)),
        since_ms: None,
    };
    let now = dynamodb_outbox_core::clock::now_ms();
    let view = show_message(
        &clients.dynamodb,
        Some(&clients.logs),
        &p.outbox.ops_table(),
        aggregate,
        id,
        &options,
        now,
    )
    .await
    .expect("show");
    let text = outbox_ops::render_message(&view, now);
    (view, text)
}

/// Whether the publisher's log has a line about the message yet (the local AWS writes
/// an invocation's output when it ends, after the item's mark).
fn publisher_line(view: &MessageView) -> bool {
    view.logs
        .as_ref()
        .is_ok_and(|l| l.lines.iter().any(|l| l.function == "publisher"))
}

#[tokio::test(flavor = "multi_thread")]
async fn one_message_by_its_id_alone_shows_its_item_its_trace_and_the_publishers_log_line() {
    // Given the deployed functions, and two messages committed in a trace: one to a
    // routed topic, one to a topic without a route (poison: the publisher logs it)
    let p = Pipeline::deploy(PipelineOptions {
        consumer: false,
        ..PipelineOptions::default()
    })
    .await;
    let (sent_at, poison_at) = (outbox_tests::unique("ORDER"), outbox_tests::unique("ORDER"));
    let trace = TraceContext::from_w3c(TRACEPARENT, None).expect("trace");
    let writer = p.outbox.writer().capture_lambda_trace(false);
    let committed = writer
        .commit(
            vec![],
            &[
                NewMessage::new(&sent_at, "orders", "{}").trace(trace.clone()),
                NewMessage::new(&poison_at, "nowhere", "{}").trace(trace.clone()),
            ],
        )
        .await
        .expect("commit");
    let (sent_id, poison_id) = (&committed.message_ids[0], &committed.message_ids[1]);

    // When the operator shows the poison message by its id alone, once the publisher
    // has finished with it
    eventually(Duration::from_secs(60), || async {
        publisher_line(&show(&p, None, poison_id).await.0)
    })
    .await;
    let (view, text) = show(&p, None, poison_id).await;
    println!("outbox-ops show --message-id {poison_id}:\n{text}");
    // Then the publisher's line named its aggregate, whose partition holds it, FAILED
    // with why, and the trace it was committed in, in both forms
    assert_eq!(view.found_by, FoundBy::Logs, "{text}");
    assert_eq!(view.lives.len(), 1, "{text}");
    let life = &view.lives[0];
    assert_eq!(
        (life.key.pk.as_str(), life.status),
        (poison_at.as_str(), Some(Status::Failed)),
        "{text}"
    );
    assert!(life.last_error.is_some(), "{text}");
    assert!(
        text.contains(&format!("message {poison_id} ({poison_at} / ")),
        "{text}"
    );
    assert!(text.contains("  status      FAILED at "), "{text}");
    assert!(
        text.contains("  dead letter copied to the deployment's dead-letter queue"),
        "{text}"
    );
    assert!(
        text.contains("  trace       4bf92f3577b34da6a3ce929d0e0e4736 (X-Ray 1-4bf92f35-77b34da6a3ce929d0e0e4736)"),
        "{text}"
    );
    // And the publisher's log line about it: time, function, level, message
    let line = text
        .lines()
        .find(|l| l.contains(" publisher ") && l.contains("message is poison"))
        .unwrap_or_else(|| panic!("no publisher line about the poison message:\n{text}"));
    assert!(
        line.contains(" WARN ") && line.contains(poison_id.as_str()),
        "{line}"
    );
    // And the function that never ran has no log group: a note, not a failure
    let recovery = format!("/aws/lambda/{}-recovery", p.deployment.prefix);
    assert!(
        text.contains(&format!("note: no log group {recovery}")),
        "{text}"
    );

    // When the operator shows the routed message by its aggregate and id, once SENT
    eventually(Duration::from_secs(60), || async {
        let (view, _) = show(&p, Some(&sent_at), sent_id).await;
        view.lives
            .first()
            .is_some_and(|l| l.status == Some(Status::Sent))
    })
    .await;
    let (view, text) = show(&p, Some(&sent_at), sent_id).await;
    // Then it shows SENT after its commit, with its trace, and no line of the poison's
    assert_eq!(view.found_by, FoundBy::Aggregate);
    assert!(
        text.contains("  status      SENT at ") && text.contains("ms after commit"),
        "{text}"
    );
    assert!(!text.contains("dead letter"), "{text}");
    assert!(
        text.contains("  trace       4bf92f3577b34da6a3ce929d0e0e4736"),
        "{text}"
    );
    assert!(!text.contains(poison_id.as_str()), "{text}");
    assert!(view.logs.is_ok(), "{text}");

    // And by its id alone too: the publisher logs each message it published and
    // marked, with its ids, so the line names its aggregate
    eventually(Duration::from_secs(60), || async {
        publisher_line(&show(&p, None, sent_id).await.0)
    })
    .await;
    let (view, text) = show(&p, None, sent_id).await;
    assert_eq!(view.found_by, FoundBy::Logs, "{text}");
    assert!(text.contains("published; marked SENT"), "{text}");
    assert!(text.contains("  status      SENT at "), "{text}");

    // And an id no message has is found nowhere, with no line
    let (view, text) = show(&p, None, &format!("{poison_id}-not")).await;
    assert_eq!(view.found_by, FoundBy::Nowhere, "{text}");
    assert!(
        view.logs.as_ref().is_ok_and(|l| l.lines.is_empty()),
        "{text}"
    );
    assert!(text.contains("not found in the table"), "{text}");
}
