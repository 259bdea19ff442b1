//! The recovery handler: each on-failure record read back from the stream, each
//! pending outbox item found put into the sweeper's index, due now. Adoption is
//! conditional (still `PENDING`, not yet indexed), so items the library wrote, items
//! already finished and repeated deliveries of the same record change nothing.

use crate::range::{self, RangeError};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_lambda_events::sqs::BatchItemFailure;
use dynamodb_outbox::config::{ConfigError, required, vars};
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox::metrics::{Emitter, Metric};
use dynamodb_outbox::ports::{MarkOutcome, SweepStore};
use dynamodb_outbox::schema::{ItemKey, SeenIndex, sweep_shard};
use dynamodb_outbox::{SharedClock, SystemClock};
use lambda_runtime::{Error, LambdaEvent};
use std::sync::Arc;

/// Outbox items put back into the sweeper's index.
pub const RECOVERED_FROM_STREAM: &str = "RecoveredFromStream";
/// Discarded ranges the stream no longer holds (their items are left to the
/// sweeper's backstop scan).
pub const RECOVERY_RANGE_LOST: &str = "RecoveryRangeLost";

/// What every invocation shares, built once.
#[derive(Debug)]
pub struct Deps<S> {
    /// Reads the stream.
    pub streams: aws_sdk_dynamodbstreams::Client,
    /// Adopts items into the index.
    pub store: S,
    /// Now.
    pub clock: SharedClock,
    /// Prints the metrics under the deployment's name.
    pub metrics: Emitter,
}

impl Deps<DynamoStore> {
    /// Reads the configuration and builds the clients from one AWS configuration.
    pub async fn from_env() -> Result<Self, Error> {
        let lookup = |name: &str| std::env::var(name).ok();
        let table = required(
            &lookup,
            vars::TABLE_NAME,
            "set it to the outbox table's name",
        )
        .inspect_err(log)?;
        let metrics = Emitter::from_env().inspect_err(log)?;
        let aws = aws_config::load_from_env().await;
        #[cfg(feature = "fault-injection")]
        let aws = outbox_faults::from_env(aws)?;
        Ok(Deps {
            streams: aws_sdk_dynamodbstreams::Client::new(&aws),
            store: DynamoStore::new(aws_sdk_dynamodb::Client::new(&aws), table),
            clock: Arc::new(SystemClock),
            metrics,
        })
    }
}

fn log(e: &ConfigError) {
    lambda_runtime::tracing::error!(error = %e, "bad configuration");
}

/// What one on-failure record led to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    /// Pending outbox items found in the range.
    pub found: usize,
    /// Of those, put into the index by this call.
    pub adopted: usize,
}

/// Handles one batch of on-failure records; the ones to try again are reported.
pub async fn handle<S: SweepStore>(
    event: LambdaEvent<SqsEvent>,
    deps: &Deps<S>,
) -> Result<SqsBatchResponse, Error> {
    let mut response = SqsBatchResponse::default();
    let (mut adopted, mut lost) = (0, 0);
    for message in &event.payload.records {
        match recover(message, deps).await {
            Ok(r) => adopted += r.adopted,
            Err(RangeError::Lost(reason)) => {
                lost += 1;
                lambda_runtime::tracing::error!(%reason, "the discarded records are past the stream's retention: the sweeper's backstop scan will find their items");
            }
            Err(RangeError::Transient(reason)) => {
                lambda_runtime::tracing::warn!(%reason, "could not read the discarded range; trying again");
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = message.message_id.clone().unwrap_or_default();
                response.batch_item_failures.push(failure);
            }
        }
    }
    deps.metrics.emit(
        deps.clock.now_ms(),
        &[
            Metric::count(RECOVERED_FROM_STREAM, adopted),
            Metric::count(RECOVERY_RANGE_LOST, lost),
        ],
    );
    Ok(response)
}

/// One on-failure record: its range read, its pending items adopted, due now.
async fn recover<S: SweepStore>(
    message: &SqsMessage,
    deps: &Deps<S>,
) -> Result<Recovered, RangeError> {
    let body = message.body.as_deref().unwrap_or_default();
    // A message that is no on-failure record is reported, never dropped: after the
    // queue's receive limit it lands on its dead-letter queue for a person to read.
    let record = range::parse(body).map_err(RangeError::Transient)?;
    let keys = range::pending_items_in(&deps.streams, &record.batch).await?;
    adopt_all(&keys, deps).await
}

/// Adopts what no sweep would find: items written without valid index attributes.
/// (An item the library indexed is the sweeper's already.)
async fn adopt_all<S: SweepStore>(
    items: &[(ItemKey, SeenIndex)],
    deps: &Deps<S>,
) -> Result<Recovered, RangeError> {
    let now = deps.clock.now_ms();
    let mut recovered = Recovered {
        found: items.len(),
        adopted: 0,
    };
    for (key, seen) in items.iter().filter(|(_, seen)| !seen.is_valid()) {
        match deps
            .store
            .adopt(key, &sweep_shard(&key.pk), now, seen)
            .await
        {
            Ok(MarkOutcome::Marked) => {
                recovered.adopted += 1;
                lambda_runtime::tracing::info!(aggregate = %key.pk, sk = %key.sk, "a discarded message is back in the sweeper's index");
            }
            Ok(MarkOutcome::AlreadyFinished) => {}
            Err(e) => return Err(RangeError::Transient(e.to_string())),
        }
    }
    Ok(recovered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox::clock::ManualClock;
    use dynamodb_outbox::schema::OutboxItem;
    use dynamodb_outbox_core::fakes::{MemoryStore, key, pending_item};

    fn deps(store: MemoryStore) -> Deps<MemoryStore> {
        let aws = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        Deps {
            streams: aws_sdk_dynamodbstreams::Client::new(&aws),
            store,
            clock: ManualClock::at(1_000),
            metrics: Emitter::new("test"),
        }
    }

    #[tokio::test]
    async fn pending_unindexed_items_are_adopted_due_now_and_the_rest_left_alone() {
        // Given an item a minimal producer wrote (no index attributes), one the
        // library wrote (indexed, due later), and one already SENT
        let store = MemoryStore::default();
        let lost = key("A", "MESSAGE#X#1");
        let indexed = key("B", "MESSAGE#X#2");
        let sent = key("C", "MESSAGE#X#3");
        store.put(
            lost.clone(),
            OutboxItem {
                sweep_shard: None,
                sweep_due_at: None,
                ..pending_item(&lost, "orders", 0, 0, 500)
            },
        );
        store.put(
            indexed.clone(),
            pending_item(&indexed, "orders", 0, 5_000, 500),
        );
        store.put(
            sent.clone(),
            OutboxItem {
                status: Some("SENT".into()),
                sweep_shard: None,
                sweep_due_at: None,
                ..pending_item(&sent, "orders", 0, 0, 500)
            },
        );
        let d = deps(store);
        // When their discarded records are recovered
        let as_inserted = |k: &ItemKey| {
            (
                k.clone(),
                SeenIndex::of(&serde_dynamo::to_item(d.store.get(k)).unwrap_or_default()),
            )
        };
        let inserted = [
            as_inserted(&lost),
            as_inserted(&indexed),
            as_inserted(&sent),
        ];
        let r = adopt_all(&inserted, &d).await;
        // Then only the unindexed pending one is adopted, due now
        assert_eq!(
            r,
            Ok(Recovered {
                found: 3,
                adopted: 1
            })
        );
        let due = |k: &ItemKey| d.store.get(k).and_then(|i| i.sweep_due_at);
        assert_eq!(due(&lost), Some(1_000), "due now");
        assert_eq!(due(&indexed), Some(5_000), "left as it was");
        assert_eq!(due(&sent), None, "finished items stay out of the index");
    }
}
