//! The publisher's stream mapping as AWS runs it, where the local AWS is kinder:
//! Lambda's redelivery after a partial batch response ([`crate::replay`],
//! `OUTBOX_FAULTS_REDELIVER`) and concurrent batches of one shard under a
//! parallelization factor ([`crate::parallel`], `OUTBOX_FAULTS_PARALLEL`). The
//! publisher built with the `fault-injection` feature runs its handler through
//! [`StreamFaults::run`] when either is set; without them nothing changes.
//!
//! Under a factor, each batch the local AWS delivers is split as AWS may split a
//! shard's records ([`crate::parallel::split`]: per-item order only), and the parts
//! are handed to the handler as concurrent invocations, started in a seeded random
//! order a drawn interval apart (0 to [`MAX_STAGGER_MS`] ms: from fully overlapping
//! to one after the other). Each part is delivered again on its own by the
//! redelivery rule, as AWS retries each concurrent batch on its own.
//!
//! Approximations: AWS checkpoints each concurrent batch on its own and may run a
//! later batch's records of other items beside an earlier one still being retried;
//! here the parts of one delivered batch run together and the local AWS gets one
//! answer, the union of the parts' last answers (it ignores a partial batch response
//! anyway), or the first error of a part (the local AWS then delivers the whole batch
//! again, as AWS would only that part's). Records of the same item never run
//! concurrently, as in AWS.

use crate::parallel::{Parallel, ParallelError, SPLIT_LOG, split};
use crate::replay::{Redelivery, RedeliveryError, deliver};
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// The longest interval between the starts of two parts of a split batch.
pub const MAX_STAGGER_MS: u64 = 150;

/// What the publisher's fault variables ask of its stream batches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamFaults {
    /// Lambda's redelivery rule (`OUTBOX_FAULTS_REDELIVER`).
    pub redelivery: Option<Redelivery>,
    /// Concurrent batches of one shard (`OUTBOX_FAULTS_PARALLEL`).
    pub parallel: Option<Parallel>,
}

/// A stream fault variable could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamFaultsError {
    /// `OUTBOX_FAULTS_REDELIVER`.
    #[error(transparent)]
    Redelivery(#[from] RedeliveryError),
    /// `OUTBOX_FAULTS_PARALLEL`.
    #[error(transparent)]
    Parallel(#[from] ParallelError),
}

impl StreamFaults {
    /// The stream faults the environment asks for, or `None` when neither variable
    /// is set.
    pub fn from_env() -> Result<Option<Self>, StreamFaultsError> {
        let faults = StreamFaults {
            redelivery: Redelivery::from_env()?,
            parallel: Parallel::from_env()?,
        };
        Ok((faults.redelivery.is_some() || faults.parallel.is_some()).then_some(faults))
    }

    /// Runs the Lambda runtime, handing `handler` each batch as AWS would.
    pub async fn run<H, Fut>(self, handler: H) -> Result<(), Error>
    where
        H: Fn(LambdaEvent<Event>) -> Fut,
        Fut: Future<Output = Result<DynamoDbEventResponse, Error>>,
    {
        lambda_runtime::run(service_fn(|event| self.handle(event, &handler))).await
    }

    /// Hands `handler` the batch — split into concurrent parts under a factor — and
    /// again what Lambda would deliver again; the union of the last answers.
    pub async fn handle<H, Fut>(
        &self,
        event: LambdaEvent<Event>,
        handler: &H,
    ) -> Result<DynamoDbEventResponse, Error>
    where
        H: Fn(LambdaEvent<Event>) -> Fut,
        Fut: Future<Output = Result<DynamoDbEventResponse, Error>>,
    {
        let LambdaEvent {
            payload: mut shell,
            context,
        } = event;
        let records = std::mem::take(&mut shell.records);
        let mut rng = draws(&records);
        let mut parts = match self.parallel {
            Some(p) => {
                let items: Vec<String> = records.iter().map(item_of).collect();
                split(&items, p.factor, |n| rng.usize(..n))
            }
            None => vec![(0..records.len()).collect()],
        };
        rng.shuffle(&mut parts);
        let stagger_ms = if parts.len() > 1 {
            let ms = rng.u64(..=MAX_STAGGER_MS);
            tracing::warn!(
                records = records.len(),
                parts = parts.len(),
                stagger_ms = ms,
                "{}",
                SPLIT_LOG
            );
            ms
        } else {
            0
        };
        let redelivery = self.redelivery.unwrap_or(Redelivery {
            retries: 0,
            after_success: 0.0,
        });
        let (shell, context) = (&shell, &context);
        let runs = parts.into_iter().zip(0u64..).map(|(part, rank)| {
            let part: Vec<EventRecord> = part.iter().map(|&i| records[i].clone()).collect();
            let mut draws = fastrand::Rng::with_seed(rng.u64(..));
            async move {
                if rank > 0 {
                    tokio::time::sleep(Duration::from_millis(stagger_ms * rank)).await;
                }
                deliver(
                    part,
                    redelivery,
                    |r: &EventRecord| r.change.sequence_number.as_deref(),
                    reported,
                    || draws.f64(),
                    |batch| {
                        let mut event = shell.clone();
                        event.records = batch;
                        handler(LambdaEvent::new(event, context.clone()))
                    },
                )
                .await
            }
        });
        union(futures::future::join_all(runs).await)
    }
}

fn reported(answer: &DynamoDbEventResponse) -> Vec<Option<String>> {
    answer
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

/// One answer from the parts': the first error, or every part's reported records.
fn union(
    answers: Vec<Result<DynamoDbEventResponse, Error>>,
) -> Result<DynamoDbEventResponse, Error> {
    let mut all = DynamoDbEventResponse::default();
    for answer in answers {
        all.batch_item_failures.extend(answer?.batch_item_failures);
    }
    Ok(all)
}

/// The item a record changed: its key attributes, in name order.
fn item_of(record: &EventRecord) -> String {
    let mut keys: Vec<String> = record
        .change
        .keys
        .iter()
        .map(|(name, value)| format!("{name}={value:?}"))
        .collect();
    keys.sort_unstable();
    keys.join(",")
}

/// The draws for one batch: from `OUTBOX_FAULTS_SEED` and the batch's first record
/// when the seed is set (the same batch draws alike; the local AWS runs each
/// invocation in a new process, so a seed alone would draw the same for every batch).
fn draws(records: &[EventRecord]) -> fastrand::Rng {
    let Some(seed) = std::env::var(crate::SEED_VAR)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return fastrand::Rng::new();
    };
    let mut h = std::hash::DefaultHasher::new();
    seed.hash(&mut h);
    records
        .first()
        .and_then(|r| r.change.sequence_number.as_deref())
        .hash(&mut h);
    fastrand::Rng::with_seed(h.finish())
}

#[cfg(test)]
mod tests;
