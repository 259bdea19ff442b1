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
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

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
///
/// Build it once, outside the handler, and run each event through it; the report's
/// [`response`](BatchReport::response) is what the Lambda function returns.
///
/// ```
/// use dynamodb_outbox_idempotency::{BatchProcessor, IdempotencyError, SqsEvent};
///
/// #[derive(serde::Deserialize)]
/// struct Order { id: String }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let batch = BatchProcessor::new().concurrency(4);
/// let event: SqsEvent = serde_json::from_value(serde_json::json!({"Records": [
///     {"messageId": "m-1", "body": "{\"id\": \"o-1\"}", "attributes": {}, "messageAttributes": {}},
///     {"messageId": "m-2", "body": "not an order", "attributes": {}, "messageAttributes": {}},
/// ]})).expect("an SQS event");
/// let report = batch
///     .run(&event, |msg| async move {
///         let order: Order = msg.parse()?;
///         Ok::<_, IdempotencyError>(order.id)
///     })
///     .await;
/// assert_eq!(report.failed_ids(), ["m-2"]); // the partial batch response names only m-2
/// let _response = report.response();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BatchProcessor {
    concurrency: usize,
    sqs_id_fallback: bool,
    payloads: Option<Arc<dyn PayloadSource>>,
}

impl Default for BatchProcessor {
    fn default() -> Self {
        BatchProcessor {
            concurrency: Self::DEFAULT_CONCURRENCY,
            sqs_id_fallback: false,
            payloads: None,
        }
    }
}

impl BatchProcessor {
    /// Default number of messages (or FIFO groups) processed at once.
    pub const DEFAULT_CONCURRENCY: usize = 10;

    /// At most [`DEFAULT_CONCURRENCY`](Self::DEFAULT_CONCURRENCY) messages or groups at
    /// once.
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

    /// Reads offloaded payloads (large-payload offload pointers, see [`PayloadSource`])
    /// from `source` — [`S3Payloads`](crate::S3Payloads) — before the
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
fn lanes(messages: &[SqsMessage]) -> Vec<Vec<usize>> {
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
fn group_id(msg: &SqsMessage) -> Option<&str> {
    msg.attributes.get("MessageGroupId").map(String::as_str)
}

#[cfg(test)]
mod tests;
