//! A consumer Lambda whose effect is outside DynamoDB: charging a card through a
//! payment API. A guard record per outbox message makes a copy of the message get the
//! first charge's receipt back instead of charging again; the API is handed the
//! idempotency key too, so it closes the window a crash mid-call leaves.
//!
//! Environment: `IDEMPOTENCY_TABLE_NAME`, a table keyed `id` with TTL attribute
//! `ExpiresAt`.
use dynamodb_outbox_idempotency::{
    BatchProcessor, Deadline, Delivery, Effect, IdempotencyError, IdempotentEffects, PayloadHash,
    SqsBatchResponse, SqsEvent,
};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[derive(serde::Deserialize)]
struct ChargeRequested {
    order: String,
    amount_cents: u64,
}

/// What the payment API answers.
#[derive(serde::Serialize, serde::Deserialize)]
struct Receipt {
    charge_id: String,
}

/// Stands in for the payment provider's client: a real one sends `idempotency_key`
/// with the request, and the provider answers a repeated key with the first outcome.
async fn charge(request: &ChargeRequested, idempotency_key: &str) -> Result<Receipt, Error> {
    tracing::info!(order = %request.order, amount_cents = request.amount_cents, idempotency_key, "charging");
    Ok(Receipt {
        charge_id: format!("ch_{idempotency_key}"),
    })
}

/// Charges once per outbox message; a copy gets the stored receipt.
async fn pay(
    msg: Delivery<'_>,
    effects: &IdempotentEffects,
    deadline: Deadline,
) -> Result<Option<Receipt>, IdempotencyError> {
    let body: serde_json::Value = msg.parse()?;
    // The fields that make two requests the same: the same key with another amount is
    // refused as KeyReused rather than answered with this receipt.
    let hash = PayloadHash::of_fields(&body, &["/order", "/amount_cents"]);
    let request: ChargeRequested = msg.parse()?;
    let receipt = effects
        .run(msg.message_id()?, &hash, deadline, |key| {
            charge(&request, key)
        })
        .await?;
    if let Effect::ReplayedWithoutResult { reason } = &receipt {
        tracing::warn!(%reason, "charged before; the receipt was not kept");
    }
    Ok(receipt.into_value())
}

async fn handler(
    event: LambdaEvent<SqsEvent>,
    effects: &IdempotentEffects,
    batch: &BatchProcessor,
) -> Result<SqsBatchResponse, Error> {
    // An attempt's lock lasts until this invocation's deadline.
    let deadline = Deadline::from_epoch_millis(event.context.deadline);
    let report = batch
        .run(&event.payload, |msg| pay(msg, effects, deadline))
        .await;
    Ok(report.response())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let table =
        std::env::var("IDEMPOTENCY_TABLE_NAME").map_err(|_| "set IDEMPOTENCY_TABLE_NAME")?;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
    let effects = IdempotentEffects::new(dynamodb, table);
    let batch = BatchProcessor::new();
    lambda_runtime::run(service_fn(|event| handler(event, &effects, &batch))).await
}
