//! `outbox-publisher`: the DynamoDB stream of the outbox table in, messages out.
//!
//! Configuration is read, clients are built and the SQS destinations' size limits
//! are read from their queues once, at start-up (`dynamodb_outbox::lambda`); a missing or
//! malformed variable stops the function with a message naming it.
//! Logs follow Lambda's log level and format settings.

// Fault injection is for tests, the demo and the chaos benchmark; never ship it.
#[cfg(all(feature = "fault-injection", not(debug_assertions)))]
compile_error!("the fault-injection feature must never be compiled into a release build");

use dynamodb_outbox::lambda::PublisherFunction;
use lambda_runtime::Error;
#[cfg(feature = "fault-injection")]
use lambda_runtime::service_fn;

// mimalloc, not the system allocator: the handler bench's instruction count per
// record is 12% lower with it (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    #[cfg(feature = "fault-injection")]
    let aws = outbox_faults::from_env(aws)?;
    let function = PublisherFunction::from_env(&aws).await?;
    #[cfg(feature = "fault-injection")]
    if let Some(redelivery) = outbox_faults::replay::Redelivery::from_env()? {
        return lambda_runtime::run(service_fn(|event| {
            replay::handle(&function, redelivery, event)
        }))
        .await;
    }
    // Each event read from the bytes Lambda sent, by the publisher's lean parse.
    function.run().await
}

/// Lambda's stream redelivery where the local AWS ignores partial batch responses
/// (`OUTBOX_FAULTS_REDELIVER`): test builds only.
#[cfg(feature = "fault-injection")]
mod replay {
    use aws_lambda_events::event::dynamodb::{Event, EventRecord};
    use aws_lambda_events::event::streams::DynamoDbEventResponse;
    use dynamodb_outbox::lambda::PublisherFunction;
    use lambda_runtime::{Error, LambdaEvent};
    use outbox_faults::replay::{Redelivery, deliver};
    use std::hash::{Hash, Hasher};

    /// The draws of the redelivery after a success: from `OUTBOX_FAULTS_SEED` and the
    /// batch's first record when the seed is set (the same batch draws alike; the
    /// local AWS runs each invocation in a new process, so a seed alone would draw
    /// the same for every batch).
    fn draws(event: &Event) -> fastrand::Rng {
        let Some(seed) = std::env::var(outbox_faults::SEED_VAR)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        else {
            return fastrand::Rng::new();
        };
        let mut h = std::hash::DefaultHasher::new();
        seed.hash(&mut h);
        event
            .records
            .first()
            .and_then(|r| r.change.sequence_number.as_deref())
            .hash(&mut h);
        fastrand::Rng::with_seed(h.finish())
    }

    /// Hands the handler the batch, and again what Lambda would deliver again.
    pub async fn handle(
        function: &PublisherFunction,
        redelivery: Redelivery,
        event: LambdaEvent<Event>,
    ) -> Result<DynamoDbEventResponse, Error> {
        let LambdaEvent { payload, context } = event;
        let mut draws = draws(&payload);
        let records = payload.records.clone();
        deliver(
            records,
            redelivery,
            |r: &EventRecord| r.change.sequence_number.as_deref(),
            |a: &DynamoDbEventResponse| {
                a.batch_item_failures
                    .iter()
                    .map(|f| f.item_identifier.clone())
                    .collect()
            },
            || draws.f64(),
            |batch| {
                let mut again = payload.clone();
                again.records = batch;
                function.handle(LambdaEvent::new(again, context.clone()))
            },
        )
        .await
    }
}
