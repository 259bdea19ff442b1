//! The handler the Lambda binary calls, and the per-message work.

use crate::config::Config;
use crate::order::{Order, OrderJob};
use aws_lambda_events::event::sqs::SqsEvent;
use dynamodb_outbox_idempotency::{
    BatchProcessor, BatchReport, BusinessKeyGuard, Deadline, Delivery, IdempotencyError,
    MessageDeleter, Outcome, PayloadSource,
};
use serde::Serialize;

/// Built once at start-up, shared by every invocation.
#[derive(Debug, Clone)]
pub struct Deps {
    /// Writes an order once per id (the table's hash key).
    pub guard: BusinessKeyGuard,
    /// Runs the batch.
    pub batch: BatchProcessor,
}

impl Deps {
    /// The orders table of `config`, through `client`.
    pub fn new(client: aws_sdk_dynamodb::Client, config: &Config) -> Self {
        Deps {
            guard: BusinessKeyGuard::new(client, &config.table_name),
            batch: BatchProcessor::new(),
        }
    }

    /// The same, reading offloaded payloads (large-payload offload pointers) from `payloads`
    /// before an order job is parsed.
    pub fn with_large_payloads(mut self, payloads: impl PayloadSource + 'static) -> Self {
        self.batch = self.batch.large_payloads(payloads);
        self
    }

    /// The same, deleting each finished message from the queue at once through
    /// `deleter` (`SqsDeleter`: `sqs:DeleteMessage` on the queue), so that a message
    /// crashing the process later in the batch cannot charge it another receive.
    pub fn deleting_finished(mut self, deleter: impl MessageDeleter + 'static) -> Self {
        self.batch = self.batch.delete_finished(deleter);
        self
    }
}

/// What one message did: the lab's `RESULT` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderResult {
    /// The order id.
    pub id: String,
    /// Its quantity.
    pub quantity: u8,
    /// This delivery wrote the order.
    pub processed: bool,
    /// The order was already stored with the same details.
    pub duplicate: bool,
}

/// Validates one message's order job — the payload, also when it arrived in an SNS
/// notification or an EventBridge event — and stores the order once. The order id is
/// the key, so the message needs no outbox id.
pub async fn process_message(
    msg: &Delivery<'_>,
    deps: &Deps,
) -> Result<OrderResult, IdempotencyError> {
    let order = Order::from(msg.parse::<OrderJob>()?);
    let outcome = deps.guard.put(&order).await?;
    Ok(OrderResult {
        id: order.id,
        quantity: order.quantity,
        processed: outcome == Outcome::Applied,
        duplicate: outcome.is_duplicate(),
    })
}

/// Processes a batch, logs one line per message, and reports every outcome;
/// `report.response()` is the partial batch response for Lambda. No deadline: the
/// binary calls [`handle_until`].
pub async fn handle(event: &SqsEvent, deps: &Deps) -> BatchReport<OrderResult, IdempotencyError> {
    let report = deps
        .batch
        .run(event, |m| async move { process_message(&m, deps).await })
        .await;
    log_outcomes(event, &report);
    report
}

/// The same, answering before `deadline` (Lambda's `context.deadline`, less the batch
/// processor's margin) with the messages not finished by then reported for
/// redelivery, so that one hung message does not time the whole batch out.
pub async fn handle_until(
    event: &SqsEvent,
    deadline: Deadline,
    deps: &Deps,
) -> BatchReport<OrderResult, IdempotencyError> {
    let report = deps
        .batch
        .run_until(event, deadline, |m| async move {
            process_message(&m, deps).await
        })
        .await;
    log_outcomes(event, &report);
    report
}

/// When SQS accepted the message `message_id` of `event` (`SentTimestamp`, epoch ms),
/// or 0: for following a copy's send against its outbox item's `SentAt`.
fn sent_at_ms(event: &SqsEvent, message_id: &str) -> i64 {
    event
        .records
        .iter()
        .find(|m| m.message_id.as_deref() == Some(message_id))
        .and_then(|m| m.attributes.get("SentTimestamp"))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// One `RESULT` or `FAILED` line per message: ids (the producer's trace id among
/// them), when SQS accepted it, and outcomes, never bodies.
fn log_outcomes(event: &SqsEvent, report: &BatchReport<OrderResult, IdempotencyError>) {
    for o in &report.outcomes {
        match &o.result {
            Ok(r) => tracing::info!(
                message_id = %o.message_id,
                outbox_message_id = o.outbox_message_id.as_deref().unwrap_or_default(),
                trace_id = o.trace_id.as_deref().unwrap_or_default(),
                sent_at_ms = sent_at_ms(event, &o.message_id),
                id = %r.id,
                quantity = r.quantity,
                processed = r.processed,
                duplicate = r.duplicate,
                "RESULT"
            ),
            Err(e) => {
                let (retryable, conflict) = match e {
                    dynamodb_outbox_idempotency::MessageFailure::Failed(e) => {
                        (e.is_retryable(), e.is_conflict())
                    }
                    _ => (true, false),
                };
                tracing::error!(
                    message_id = %o.message_id,
                    outbox_message_id = o.outbox_message_id.as_deref().unwrap_or_default(),
                    trace_id = o.trace_id.as_deref().unwrap_or_default(),
                    retryable,
                    conflict,
                    error = %e,
                    "FAILED"
                );
            }
        }
    }
}
