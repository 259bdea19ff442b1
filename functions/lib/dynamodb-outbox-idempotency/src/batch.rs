//! SQS batch handling with partial batch responses.
//!
//! Runs a per-message async function over the batch and reports exactly the messages
//! that failed (`ReportBatchItemFailures`), so one bad message never makes Lambda
//! redeliver the good ones. Messages without a `MessageGroupId` (standard queues) run
//! concurrently; messages of a FIFO queue run in order within their group (groups run
//! concurrently), and a group stops at its first failure: the rest of that group is
//! reported as failed without being run, so that SQS redelivers it in order after the
//! failed one. A panic in the per-message function fails that message only.
//!
//! The per-message function gets each message as a [`Delivery`]: its envelope (SNS
//! notification, EventBridge event) opened, the payload and the outbox message id
//! read from wherever the route put them.
//!
//! A failed message is retried after the queue's visibility timeout; after the redrive
//! policy's `maxReceiveCount` receives it moves to the dead-letter queue. That is where
//! malformed bodies and conflicts end, which is why the function should return an
//! error for them rather than acknowledge them.

use crate::IdempotencyError;
use crate::delivery::Delivery;
use crate::payload::{PayloadSource, resolve};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures::FutureExt;
use futures::stream::{self, StreamExt};
use serde::de::DeserializeOwned;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Default number of messages (or FIFO groups) processed at once.
pub const DEFAULT_CONCURRENCY: usize = 10;

/// Why a message of the batch failed.
#[derive(Debug)]
pub enum MessageFailure<E> {
    /// The per-message function returned an error.
    Failed(E),
    /// The per-message function panicked (the message fails; the batch goes on).
    Panicked(String),
    /// Not run: its payload is in S3 (a large-payload offload pointer) and could not be read
    /// ([`IdempotencyError::PayloadUnavailable`], retryable).
    PayloadUnavailable(IdempotencyError),
    /// Not run: an earlier message of its FIFO group failed.
    Skipped {
        /// The id of the message that failed first.
        after: String,
    },
}

impl<E: fmt::Display> fmt::Display for MessageFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageFailure::Failed(e) => e.fmt(f),
            MessageFailure::Panicked(p) => write!(f, "the message handler panicked: {p}"),
            MessageFailure::PayloadUnavailable(e) => write!(f, "not processed: {e}"),
            MessageFailure::Skipped { after } => write!(
                f,
                "not processed: message {after} of the same FIFO group failed first, and order within a group must hold"
            ),
        }
    }
}

/// One message's outcome.
#[derive(Debug)]
pub struct MessageOutcome<T, E> {
    /// The SQS `MessageId` (empty if the event had none).
    pub message_id: String,
    /// The outbox message id, when the message carries one: log it beside the
    /// outcome to follow a message from producer to effect.
    pub outbox_message_id: Option<String>,
    /// The FIFO `MessageGroupId`, if any.
    pub group_id: Option<String>,
    /// What the function returned.
    pub result: Result<T, MessageFailure<E>>,
}

/// Every message's outcome, in the order of the batch.
#[derive(Debug)]
pub struct BatchReport<T, E> {
    /// One per message, in batch order.
    pub outcomes: Vec<MessageOutcome<T, E>>,
}

impl<T, E> BatchReport<T, E> {
    /// The ids of the failed messages, in batch order.
    pub fn failed_ids(&self) -> Vec<&str> {
        self.outcomes
            .iter()
            .filter(|o| o.result.is_err())
            .map(|o| o.message_id.as_str())
            .collect()
    }

    /// The partial batch response for Lambda: exactly the failed messages. (A failed
    /// message without an id yields an empty identifier, which makes Lambda retry the
    /// whole batch: nothing is lost.)
    pub fn response(&self) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        response.set_failures(self.failed_ids());
        response
    }
}

/// Runs a per-message function over SQS batches.
#[derive(Debug, Clone)]
pub struct BatchProcessor {
    concurrency: usize,
    sqs_id_fallback: bool,
    payloads: Option<Arc<dyn PayloadSource>>,
}

impl Default for BatchProcessor {
    fn default() -> Self {
        BatchProcessor {
            concurrency: DEFAULT_CONCURRENCY,
            sqs_id_fallback: false,
            payloads: None,
        }
    }
}

impl BatchProcessor {
    /// At most [`DEFAULT_CONCURRENCY`] messages or groups at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many messages (standard) or groups (FIFO) run at once; at least 1. Keep it
    /// within what the table's capacity and downstream APIs accept.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Lets [`Delivery::message_id`] fall back to the SQS `MessageId` when a message
    /// carries no outbox id, instead of refusing it
    /// ([`IdempotencyError::NoMessageId`]). Only for a queue that nothing ever
    /// republishes to: a copy sent again is a new SQS message, and its effect would be
    /// applied again.
    pub fn sqs_message_id_fallback(mut self) -> Self {
        self.sqs_id_fallback = true;
        self
    }

    /// Reads offloaded payloads (large-payload offload pointers, [`crate::payload`]) from
    /// `source` — [`S3Payloads`](crate::payload::S3Payloads) — before the
    /// per-message function sees them. Without it, a message carrying a pointer
    /// fails with [`IdempotencyError::PayloadUnavailable`].
    pub fn large_payloads(mut self, source: impl PayloadSource + 'static) -> Self {
        self.payloads = Some(Arc::new(source));
        self
    }

    /// Opens `msg` as this processor's per-message function gets it.
    pub fn open<'a>(&self, msg: &'a SqsMessage) -> Delivery<'a> {
        let delivery = Delivery::open(msg);
        if self.sqs_id_fallback {
            delivery.sqs_message_id_fallback()
        } else {
            delivery
        }
    }

    /// Runs `f` over every message of `event`, each opened as a [`Delivery`], and
    /// reports each outcome.
    pub async fn run<'a, T, E, F, Fut>(&self, event: &'a SqsEvent, f: F) -> BatchReport<T, E>
    where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_messages(&event.records, f).await
    }

    /// Same as [`run`](Self::run), over a slice of messages.
    pub async fn run_messages<'a, T, E, F, Fut>(
        &self,
        messages: &'a [SqsMessage],
        f: F,
    ) -> BatchReport<T, E>
    where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let f = &f;
        let lanes = lanes(messages);
        let mut done: Vec<(usize, MessageOutcome<T, E>)> = stream::iter(lanes)
            .map(|lane| async move {
                let mut out = Vec::with_capacity(lane.len());
                let mut failed_first: Option<String> = None;
                for index in lane {
                    let Some(msg) = messages.get(index) else {
                        continue;
                    };
                    let delivery = self.open(msg);
                    let outbox_message_id = delivery.outbox_message_id().map(str::to_owned);
                    let result = match &failed_first {
                        Some(after) => Err(MessageFailure::Skipped {
                            after: after.clone(),
                        }),
                        None => match resolve(self.payloads.as_deref(), delivery).await {
                            Ok(delivery) => call(f, delivery).await,
                            Err(e) => Err(MessageFailure::PayloadUnavailable(e)),
                        },
                    };
                    if result.is_err() && failed_first.is_none() {
                        failed_first = Some(msg.message_id.clone().unwrap_or_default());
                    }
                    out.push((
                        index,
                        MessageOutcome {
                            message_id: msg.message_id.clone().unwrap_or_default(),
                            outbox_message_id,
                            group_id: group_id(msg).map(str::to_owned),
                            result,
                        },
                    ));
                }
                out
            })
            .buffer_unordered(self.concurrency)
            .flat_map(stream::iter)
            .collect()
            .await;
        done.sort_by_key(|(i, _)| *i);
        BatchReport {
            outcomes: done.into_iter().map(|(_, o)| o).collect(),
        }
    }
}

/// Calls `f`, turning a panic (while building or polling its future) into a failure.
async fn call<'a, T, E, F, Fut>(f: &F, msg: Delivery<'a>) -> Result<T, MessageFailure<E>>
where
    F: Fn(Delivery<'a>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| f(msg))) {
        Ok(fut) => fut,
        Err(p) => return Err(MessageFailure::Panicked(panic_text(p.as_ref()))),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r.map_err(MessageFailure::Failed),
        Err(p) => Err(MessageFailure::Panicked(panic_text(p.as_ref()))),
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Indices of `messages` grouped into lanes that run one after another: one lane per
/// FIFO group (in batch order), one lane per message without a group.
pub fn lanes(messages: &[SqsMessage]) -> Vec<Vec<usize>> {
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    let mut by_group: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        match group_id(m) {
            Some(g) => match by_group.get(g) {
                Some(&lane) => {
                    if let Some(l) = lanes.get_mut(lane) {
                        l.push(i);
                    }
                }
                None => {
                    by_group.insert(g, lanes.len());
                    lanes.push(vec![i]);
                }
            },
            None => lanes.push(vec![i]),
        }
    }
    lanes
}

/// The FIFO `MessageGroupId` of a message, if any.
pub fn group_id(msg: &SqsMessage) -> Option<&str> {
    msg.attributes.get("MessageGroupId").map(String::as_str)
}

/// Parses JSON text into `T`, with an error naming the path of the bad field. Quoted
/// strings are redacted from the reason, which is logged: bodies carry personal data.
/// ([`Delivery::parse`] is this on a message's payload.)
pub fn parse_json<T: DeserializeOwned>(body: &str) -> Result<T, IdempotencyError> {
    let mut de = serde_json::Deserializer::from_str(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = redact_quoted(&e.inner().to_string());
        let reason = if path == "." || path.is_empty() {
            inner
        } else {
            format!("{path}: {inner}")
        };
        IdempotencyError::MalformedBody { reason }
    })?;
    // One JSON value and nothing after it.
    de.end().map_err(|e| IdempotencyError::MalformedBody {
        reason: redact_quoted(&e.to_string()),
    })?;
    Ok(value)
}

/// Replaces the content of double-quoted strings with `…`: serde reports a wrong
/// string value verbatim (`invalid type: string "Zhang San"`), and reasons are logged.
pub fn redact_quoted(text: &str) -> String {
    // serde puts strings in `"` and numbers, variants and field names in backticks.
    // Strings and anything in backticks that is not a plain identifier (a number, a
    // variant with spaces) may be a payload's value; field names stay, to help.
    // An escaped quote does not end a quoted run.
    let mut out = String::with_capacity(text.len());
    let mut run: Option<(char, String)> = None;
    let mut escaped = false;
    for c in text.chars() {
        match &mut run {
            Some((q, inner)) => {
                if escaped {
                    escaped = false;
                    inner.push(c);
                } else if c == '\\' {
                    escaped = true;
                    inner.push(c);
                } else if c == *q {
                    let identifier = *q == '`'
                        && inner
                            .chars()
                            .next()
                            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                        && inner.chars().all(|x| x.is_ascii_alphanumeric() || x == '_');
                    if identifier {
                        out.push_str(inner);
                    } else {
                        out.push('…');
                    }
                    out.push(c);
                    run = None;
                } else {
                    inner.push(c);
                }
            }
            None => {
                if c == '"' || c == '`' {
                    run = Some((c, String::new()));
                }
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
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

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Job {
        id: String,
        n: i64,
    }

    #[test]
    fn malformed_bodies_get_a_clear_reason_without_string_values() {
        let reason = |body: &str| match parse_json::<Job>(body) {
            Err(IdempotencyError::MalformedBody { reason }) => reason,
            other => panic!("expected malformed, got {other:?}"),
        };
        assert!(reason(r#"{"id":"a","n":1,"x":2}"#).contains("unknown field `x`"));
        let r = reason(r#"{"id":"a","n":"Zhang San"}"#);
        assert!(r.starts_with("n: invalid type: string"), "{r}");
        assert!(!r.contains("Zhang"), "{r}");
        assert!(reason(r#"{"id":"a"}"#).contains("missing field `n`"));
        assert!(reason("not json").contains("expected"));
        assert!(reason(r#"{"id":"a","n":1} trailing"#).contains("trailing"));
        assert!(parse_json::<Job>(r#" {"id":"a","n":1} "#).is_ok());
    }

    #[test]
    fn redaction_keeps_structure_and_drops_string_content() {
        assert_eq!(
            redact_quoted(r#"invalid type: string "secret", expected i64"#),
            r#"invalid type: string "…", expected i64"#
        );
        assert_eq!(redact_quoted("unknown field `x`"), "unknown field `x`");
        assert_eq!(
            redact_quoted("invalid type: integer `4111111111111111`, expected a string"),
            "invalid type: integer `…`, expected a string"
        );
        assert_eq!(
            redact_quoted(r#"invalid value: string "a\"b secret", expected x"#),
            r#"invalid value: string "…", expected x"#
        );
    }
}
