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

use crate::delete::MessageDeleter;
use crate::delivery::Delivery;
use crate::effect::Deadline;
use crate::payload::PayloadSource;
use crate::{IdempotencyError, SharedClock};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod plan;
mod run;

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
    /// Still running, or not started, when the invocation's deadline (less the
    /// processor's margin) came: stopped, and handed back for redelivery.
    Unfinished,
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
            MessageFailure::Unfinished => f.write_str(
                "not finished before the invocation's deadline (less the processor's margin): handed back for redelivery",
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
    /// The producer's trace id (32 hex digits, [`Delivery::trace`]), when the message
    /// carries a trace: log it beside the outcome to open the trace that committed it.
    pub trace_id: Option<String>,
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
    deleter: Option<Arc<dyn MessageDeleter>>,
    deadline_margin: Duration,
    clock: SharedClock,
}

impl Default for BatchProcessor {
    fn default() -> Self {
        BatchProcessor {
            concurrency: Self::DEFAULT_CONCURRENCY,
            sqs_id_fallback: false,
            payloads: None,
            deleter: None,
            deadline_margin: Self::DEFAULT_DEADLINE_MARGIN,
            clock: dynamodb_outbox_core::clock::system(),
        }
    }
}

impl BatchProcessor {
    /// Default number of messages (or FIFO groups) processed at once.
    pub const DEFAULT_CONCURRENCY: usize = 10;

    /// Default time [`run_until`](Self::run_until) keeps before the invocation's
    /// deadline to stop the unfinished messages and answer Lambda.
    pub const DEFAULT_DEADLINE_MARGIN: Duration = Duration::from_secs(1);

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

    /// Deletes each message from its queue as soon as its function succeeded, through
    /// `deleter` ([`SqsDeleter`](crate::SqsDeleter): `sqs:DeleteMessage` on the
    /// queue), instead of leaving it to Lambda when the invocation answers. Then a
    /// message that crashes the process later in the batch cannot charge the
    /// finished ones another receive and send them to the dead-letter queue. A
    /// batch of one message is left to Lambda: nothing can crash after it.
    pub fn delete_finished(mut self, deleter: impl MessageDeleter + 'static) -> Self {
        self.deleter = Some(Arc::new(deleter));
        self
    }

    /// How long before the invocation's deadline [`run_until`](Self::run_until)
    /// stops what has not finished and answers
    /// ([`DEFAULT_DEADLINE_MARGIN`](Self::DEFAULT_DEADLINE_MARGIN)). Enough for the
    /// answer and your logging; at most half the time the invocation has left.
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.deadline_margin = margin;
        self
    }

    /// The clock [`run_until`](Self::run_until) measures the time left with (the
    /// system clock by default); a test of a handler sets a
    /// [`ManualClock`](crate::ManualClock) beside the deadline it passes.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
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
    /// reports each outcome. Without a deadline: prefer
    /// [`run_until`](Self::run_until) in a Lambda function, so that a hung message
    /// cannot make the whole batch time out.
    pub async fn run<'a, T, E, F, Fut>(&self, event: &'a SqsEvent, f: F) -> BatchReport<T, E>
    where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_messages(&event.records, f).await
    }

    /// Same as [`run`](Self::run), answering before `deadline` — Lambda's
    /// `context.deadline`, less this processor's
    /// [`deadline_margin`](Self::deadline_margin): what has not finished by then is
    /// stopped and reported as [`MessageFailure::Unfinished`], so the partial batch
    /// response names it and Lambda keeps the messages that did finish.
    pub async fn run_until<'a, T, E, F, Fut>(
        &self,
        event: &'a SqsEvent,
        deadline: Deadline,
        f: F,
    ) -> BatchReport<T, E>
    where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let (now_ms, deadline_ms) = (self.clock.now_ms(), deadline.epoch_millis());
        let left = plan::time_left(now_ms, deadline_ms, self.deadline_margin);
        if left.is_none() {
            tracing::warn!(
                deadline_ms,
                now_ms,
                "the invocation's deadline is past or further than Lambda's 15 minutes: \
                 the batch runs without one (is the runtime sending milliseconds?)"
            );
        }
        self.run_within(&event.records, left, f).await
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
        self.run_within(messages, None, f).await
    }
}

/// The FIFO `MessageGroupId` of a message, if any.
fn group_id(msg: &SqsMessage) -> Option<&str> {
    msg.attributes.get("MessageGroupId").map(String::as_str)
}

#[cfg(test)]
mod tests;
