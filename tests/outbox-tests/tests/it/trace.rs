//! A trace given at commit reaches the destination, through the stream publisher and
//! through the sweeper, as the W3C `traceparent` attribute (SQS) or detail field
//! (EventBridge) and as the X-Ray header of the request (SQS `AWSTraceHeader`,
//! EventBridge `TraceHeader`); a message committed without one carries none.
//!
//! What the local AWS drops: both MiniStack and moto keep `AWSTraceHeader` for
//! `SendMessage` but not for `SendMessageBatch`, which the publisher uses, so the
//! X-Ray header is read from the request the publisher sent (an SDK interceptor),
//! the W3C form from the queue.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use dynamodb_outbox::sink::AwsSink;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::AwsSweeper;
use dynamodb_outbox::trace::{ATTR_TRACEPARENT, TraceContext};
use dynamodb_outbox::{AwsPublisher, FromSdkConfig, NewMessage, Routes};
use outbox_tests::subscribers::{bus_into, subscriber};
use outbox_tests::{Outbox, attr, drain};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const XRAY: &str = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";

fn trace() -> TraceContext {
    TraceContext::from_w3c(TRACEPARENT, None).expect("context")
}

/// One entry the publisher sent: its body (an event's detail), its X-Ray header.
type SentEntry = (String, Option<String>);

/// The X-Ray header of every entry the publisher sent, by message body.
#[derive(Debug, Clone, Default)]
struct SentTraceHeaders(Arc<Mutex<Vec<SentEntry>>>);

impl SentTraceHeaders {
    fn of(&self, body_part: &str) -> Vec<Option<String>> {
        let sent = self.0.lock().unwrap();
        sent.iter()
            .filter(|(body, _)| body.contains(body_part))
            .map(|(_, header)| header.clone())
            .collect()
    }
}

impl Intercept for SentTraceHeaders {
    fn name(&self) -> &'static str {
        "SentTraceHeaders"
    }

    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        use aws_sdk_eventbridge::operation::put_events::PutEventsInput;
        use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;
        use aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader;
        let mut sent = self.0.lock().unwrap();
        if let Some(batch) = context.input().downcast_ref::<SendMessageBatchInput>() {
            for e in batch.entries() {
                let header = e
                    .message_system_attributes()
                    .and_then(|a| a.get(&AwsTraceHeader))
                    .and_then(|v| v.string_value())
                    .map(str::to_owned);
                sent.push((e.message_body().to_owned(), header));
            }
        }
        if let Some(events) = context.input().downcast_ref::<PutEventsInput>() {
            for e in events.entries() {
                let body = e.detail().unwrap_or_default().to_owned();
                sent.push((body, e.trace_header().map(str::to_owned)));
            }
        }
        Ok(())
    }
}

/// A sink whose SQS and EventBridge requests `headers` reads.
fn watched_sink(ob: &Outbox, headers: &SentTraceHeaders) -> AwsSink {
    let config = &ob.clients.sdk_config;
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(config)
            .interceptor(headers.clone())
            .build(),
    );
    let eventbridge = aws_sdk_eventbridge::Client::from_conf(
        aws_sdk_eventbridge::config::Builder::from(config)
            .interceptor(headers.clone())
            .build(),
    );
    AwsSink::new(sqs, ob.clients.sns.clone(), eventbridge)
}

#[tokio::test]
async fn a_trace_given_at_commit_reaches_the_queue_and_a_message_without_one_gets_none() {
    // Given a message committed inside a trace and one committed outside any
    let mut ob = Outbox::new().await;
    ob.writer()
        .capture_lambda_trace(false)
        .commit(
            vec![],
            &[
                NewMessage::new("ORDER#1", "orders", r#"{"traced":true}"#).trace(trace()),
                NewMessage::new("ORDER#2", "orders", r#"{"traced":false}"#),
            ],
        )
        .await
        .expect("commit");
    // When the stream publisher handles the inserts
    let headers = SentTraceHeaders::default();
    let publisher = AwsPublisher::with_sink(
        ob.config(),
        ob.clients.dynamodb.clone(),
        watched_sink(&ob, &headers),
    );
    let event = ob.filtered_event().await;
    let (response, summary) = handle_stream_event(&publisher, &event).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.sent, 2);
    // Then the traced message carries its traceparent on the queue and its X-Ray
    // header in the request; the other carries neither
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    let traceparent_of = |traced: &str| {
        let m = msgs
            .iter()
            .find(|m| m.body().is_some_and(|b| b.contains(traced)))
            .expect("the message is on the queue");
        attr(m, ATTR_TRACEPARENT)
    };
    assert_eq!(traceparent_of("true").as_deref(), Some(TRACEPARENT));
    assert_eq!(traceparent_of("false"), None);
    assert_eq!(headers.of("true"), [Some(XRAY.to_owned())]);
    assert_eq!(headers.of("false"), [None]);
}

#[tokio::test]
async fn an_event_carries_the_trace_in_its_detail_and_its_trace_header() {
    // Given a bus routing the outbox's events to a queue, and a traced message for it
    let mut ob = Outbox::new().await;
    let queue = subscriber(&ob.clients, "traced-events").await;
    let bus_arn = bus_into(&ob.clients, "traced", "shop.orders", &queue.arn).await;
    let mut config = ob.config();
    config.routes = Routes::parse(
        &format!(r#"{{"placed":{{"destination":"{bus_arn}","source":"shop.orders"}}}}"#),
        None,
    )
    .expect("routes");
    ob.writer()
        .commit(
            vec![],
            &[NewMessage::new("ORDER#9", "placed", r#"{"id":9}"#).trace(trace())],
        )
        .await
        .expect("commit");
    // When the publisher handles the insert
    let headers = SentTraceHeaders::default();
    let publisher = AwsPublisher::with_sink(
        config,
        ob.clients.dynamodb.clone(),
        watched_sink(&ob, &headers),
    );
    let event = ob.filtered_event().await;
    let (_, summary) = handle_stream_event(&publisher, &event).await;
    assert_eq!(summary.sent, 1);
    // Then the event's detail names the trace, and the request carried its X-Ray form
    let msgs = drain(&ob.clients.sqs, &queue.url).await;
    assert_eq!(msgs.len(), 1);
    let ev: serde_json::Value =
        serde_json::from_str(msgs[0].body().expect("body")).expect("event json");
    assert_eq!(ev["detail"]["outbox"]["traceparent"], TRACEPARENT);
    assert_eq!(headers.of("ORDER#9"), [Some(XRAY.to_owned())]);
}

#[tokio::test]
async fn the_sweepers_republish_keeps_the_trace_the_message_was_committed_in() {
    // Given a traced message the stream path never published
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(
            vec![],
            &[NewMessage::new("ORDER#5", "orders", r#"{"swept":1}"#).trace(trace())],
        )
        .await
        .expect("commit");
    // When the sweeper finds it due
    let headers = SentTraceHeaders::default();
    let sweeper = AwsSweeper::with_sink(
        crate::sweeper::config(ob.config()),
        ob.clients.dynamodb.clone(),
        watched_sink(&ob, &headers),
    );
    let now = dynamodb_outbox_core::clock::now_ms() + 60_000;
    let summary = crate::sweeper::sweep_at(&sweeper, now).await;
    assert_eq!(summary.marked, 1, "{summary:?}");
    // Then the message it published continues the producer's trace
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(
        attr(&msgs[0], dynamodb_outbox_core::message::ATTR_MESSAGE_ID).as_deref(),
        Some(committed.message_ids[0].as_str())
    );
    assert_eq!(
        attr(&msgs[0], ATTR_TRACEPARENT).as_deref(),
        Some(TRACEPARENT)
    );
    assert_eq!(headers.of("swept"), [Some(XRAY.to_owned())]);
}

#[tokio::test]
async fn the_operators_view_of_an_aggregate_shows_each_messages_state_and_trace() {
    // Given two messages of one aggregate, one traced, both published, and a third
    // message of another aggregate still pending
    let mut ob = Outbox::new().await;
    let writer = ob.writer().capture_lambda_trace(false);
    let committed = writer
        .commit(
            vec![],
            &[
                NewMessage::new("ORDER#7", "orders", "{}").trace(trace()),
                NewMessage::new("ORDER#7", "orders", "{}"),
            ],
        )
        .await
        .expect("commit");
    let event = ob.filtered_event().await;
    let (_, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert_eq!(summary.sent, 2);
    writer
        .commit(vec![], &[NewMessage::new("ORDER#8", "orders", "{}")])
        .await
        .expect("commit");
    // When the operator looks at each aggregate
    let table = outbox_ops::Table::new(&ob.table);
    let (order_7, reads) = outbox_ops::show(&ob.clients.dynamodb, &table, "ORDER#7", None)
        .await
        .expect("show");
    // Then the first shows SENT with the trace it was committed in, the second none
    assert_eq!(reads.requests, 1, "one query of the aggregate's partition");
    let ids: Vec<&str> = order_7.iter().map(|l| l.message_id.as_str()).collect();
    assert_eq!(
        ids,
        committed
            .message_ids
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    for life in &order_7 {
        assert_eq!(
            life.status,
            Some(dynamodb_outbox_core::schema::Status::Sent)
        );
        assert!(life.sent_at_ms >= life.created_at_ms && life.sent_at_ms.is_some());
    }
    assert_eq!(
        order_7[0].trace.as_ref().map(TraceContext::trace_id),
        Some("0af7651916cd43dd8448eb211c80319c")
    );
    assert_eq!(order_7[1].trace, None);
    // And one message can be asked for by its id; a pending one the stream path has
    // yet to publish shows no due time (it is in no sweep's index)
    let (one, _) = outbox_ops::show(
        &ob.clients.dynamodb,
        &table,
        "ORDER#7",
        Some(committed.message_ids[1].as_str()),
    )
    .await
    .expect("show");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].message_id, committed.message_ids[1]);
    let (order_8, _) = outbox_ops::show(&ob.clients.dynamodb, &table, "ORDER#8", None)
        .await
        .expect("show");
    assert_eq!(order_8.len(), 1);
    assert_eq!(
        order_8[0].status,
        Some(dynamodb_outbox_core::schema::Status::Pending)
    );
    assert!(order_8[0].due_ms.is_none() && order_8[0].sent_at_ms.is_none());
    // And an item that is not a readable outbox item (poison) is shown by its key, with
    // why, not left out
    let mut poison = outbox_tests::indexed_item("ORDER#9", "MESSAGE#X#1", "orders", "{}", 0);
    poison.insert(
        "Topic".into(),
        aws_sdk_dynamodb::types::AttributeValue::N("5".into()),
    );
    ob.put_raw(poison).await;
    let (order_9, _) = outbox_ops::show(&ob.clients.dynamodb, &table, "ORDER#9", None)
        .await
        .expect("show");
    assert_eq!(order_9.len(), 1);
    assert_eq!(order_9[0].key.sk, "MESSAGE#X#1");
    assert!(
        order_9[0]
            .decode_error
            .as_deref()
            .is_some_and(|e| e.contains("Topic")),
        "{:?}",
        order_9[0].decode_error
    );
}
