//! The recovery function: each on-failure record of the stream mapping read back
//! from the stream, each pending outbox item found put into the sweeper's index, due
//! now. Adoption is conditional (still `PENDING`, not yet indexed), so items indexed
//! at commit or adopted already, items already finished and repeated deliveries of
//! the same record change nothing.

mod progress;
mod range;

use self::progress::Bound;
use self::range::Discarded;
use self::range::RangeError;
use super::log_config_error;
use super::table::TableGate;
use crate::dynamo::DynamoStore;
use crate::wiring::with_sdk_timeouts;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_lambda_events::sqs::BatchItemFailure;
use aws_types::SdkConfig;
use dynamodb_outbox_core::__private::metrics::{Emitter, Metric};
use dynamodb_outbox_core::__private::policy::{Budget, FALLBACK_WINDOW};
use dynamodb_outbox_core::__private::ports::{MarkOutcome, SweepStore};
use dynamodb_outbox_core::__private::schema::table_check::TableNeeds;
use dynamodb_outbox_core::config::timeouts::SdkTimeouts;
use dynamodb_outbox_core::config::{required, vars};
use dynamodb_outbox_core::{ConfigError, KeyNames, SharedClock, SystemClock};
use lambda_runtime::{Error, LambdaEvent};
use std::sync::Arc;

/// Outbox items put back into the sweeper's index.
pub(crate) const RECOVERED_FROM_STREAM: &str = "RecoveredFromStream";
/// Discarded ranges the stream no longer holds (their items are left to
/// `outbox-ops reconcile`, or the sweeper's scan when it has one).
pub(crate) const RECOVERY_RANGE_LOST: &str = "RecoveryRangeLost";
/// Discarded ranges a bound (pages, the invocation's time) stopped before their end:
/// what was found is adopted and the range is reported, so it is read again.
pub(crate) const RECOVERY_RANGE_UNFINISHED: &str = "RecoveryRangeUnfinished";

/// The recovery Lambda function, behind the SQS queue that is the publisher's stream
/// mapping's on-failure destination.
///
/// Lambda discards stream records it gave up on (past `MaximumRecordAgeInSeconds`,
/// after `MaximumRetryAttempts`, when every invocation holding them timed out) and
/// sends only their sequence range to the on-failure destination. This function reads
/// that range back from the stream (which keeps records 24 hours) and puts every
/// pending outbox item it finds that no index knows about into the sweeper's index,
/// due now: what saves the items of minimal producers.
///
/// ```no_run
/// use dynamodb_outbox::lambda::RecoveryFunction;
/// use lambda_runtime::{Error, service_fn};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     lambda_runtime::tracing::init_default_subscriber();
///     let aws = aws_config::load_from_env().await;
///     let function = RecoveryFunction::from_env(&aws)?;
///     lambda_runtime::run(service_fn(|event| function.handle(event))).await
/// }
/// ```
#[derive(Debug)]
pub struct RecoveryFunction(Deps<DynamoStore>, TableGate);

impl RecoveryFunction {
    /// Reads the outbox table's name (`OUTBOX_TABLE_NAME`), its key names
    /// (`OUTBOX_PARTITION_KEY`, `OUTBOX_SORT_KEY`, `OUTBOX_TTL_ATTRIBUTE`, see
    /// [`KeyNames::from_env`]), the SDK timeouts (`OUTBOX_SDK_ATTEMPT_TIMEOUT_MS`,
    /// `OUTBOX_SDK_OPERATION_TIMEOUT_MS`, where `aws` sets none) and the metrics
    /// namespace from the environment, then builds the clients. A missing or invalid
    /// variable is logged and returned, naming it.
    pub fn from_env(aws: &SdkConfig) -> Result<Self, ConfigError> {
        let lookup = |name: &str| std::env::var(name).ok();
        let table = required(
            &lookup,
            vars::TABLE_NAME,
            "set it to the outbox table's name",
        )
        .inspect_err(log_config_error)?;
        let keys = KeyNames::from_lookup(lookup).inspect_err(log_config_error)?;
        let timeouts = SdkTimeouts::from_lookup(lookup).inspect_err(log_config_error)?;
        let metrics = Emitter::from_env().inspect_err(log_config_error)?;
        Ok(Self::build(
            table,
            keys,
            metrics,
            &with_sdk_timeouts(aws, timeouts),
        ))
    }

    /// For the outbox table `table` keyed `PK`/`SK`; metrics go to the `namespace`;
    /// the clients get the default SDK timeouts where `aws` sets none.
    pub fn new(table: impl Into<String>, namespace: &str, aws: &SdkConfig) -> Self {
        Self::build(
            table.into(),
            KeyNames::default(),
            Emitter::new(namespace),
            &with_sdk_timeouts(aws, SdkTimeouts::default()),
        )
    }

    /// The same function on a table whose key and TTL attributes are named `keys`.
    pub fn with_key_names(self, keys: KeyNames) -> Self {
        let RecoveryFunction(deps, table) = self;
        RecoveryFunction(
            Deps {
                store: deps.store.with_key_names(keys.clone()),
                keys: keys.clone(),
                ..deps
            },
            table.with_key_names(keys),
        )
    }

    fn build(table: String, keys: KeyNames, metrics: Emitter, aws: &SdkConfig) -> Self {
        let dynamodb = aws_sdk_dynamodb::Client::new(aws);
        // It reads the records the publisher gave up on back from the same stream.
        let gate = TableGate::new(
            dynamodb.clone(),
            &table,
            keys.clone(),
            TableNeeds { stream: true },
        );
        RecoveryFunction(
            Deps {
                streams: aws_sdk_dynamodbstreams::Client::new(aws),
                store: DynamoStore::new(dynamodb, table).with_key_names(keys.clone()),
                keys,
                clock: Arc::new(SystemClock),
                metrics,
            },
            gate,
        )
    }

    /// Handles one batch of on-failure records; the ones to try again are reported.
    /// The first invocation checks the table first (its keys, the sweeper index, its
    /// stream, against the configuration): on a mismatch every invocation fails,
    /// naming the setting, and no item is touched (SQS delivers the records again).
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
        self.1.admit().await?;
        handle(event, &self.0).await
    }
}

/// What every invocation shares, built once.
#[derive(Debug)]
pub(crate) struct Deps<S> {
    /// Reads the stream.
    pub(crate) streams: aws_sdk_dynamodbstreams::Client,
    /// Adopts items into the index.
    pub(crate) store: S,
    /// The table's key names: how the stream records' `Keys` are read.
    pub(crate) keys: KeyNames,
    /// Now.
    pub(crate) clock: SharedClock,
    /// Prints the metrics under the deployment's name.
    pub(crate) metrics: Emitter,
}

/// What one on-failure record led to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Pending outbox items found in the range.
    pub(crate) found: usize,
    /// Of those, put into the index by this call.
    pub(crate) adopted: usize,
}

/// Handles one batch of on-failure records; the ones to try again are reported: a
/// range that could not be read, or that a bound stopped before its end.
pub(crate) async fn handle<S: SweepStore>(
    event: LambdaEvent<SqsEvent>,
    deps: &Deps<S>,
) -> Result<SqsBatchResponse, Error> {
    let stop_at_ms = reading_stops_at(event.context.deadline, deps.clock.now_ms());
    let mut response = SqsBatchResponse::default();
    let (mut adopted, mut lost, mut unfinished) = (0, 0, 0);
    for message in &event.payload.records {
        let retry = match recover(message, deps, stop_at_ms).await {
            Ok((r, None)) => {
                adopted += r.adopted;
                false
            }
            Ok((r, Some(bound))) => {
                adopted += r.adopted;
                unfinished += 1;
                tracing::warn!(%bound, found = r.found, adopted = r.adopted, "stopped reading the discarded range before its end; the rest is read again on the retry");
                true
            }
            Err(RangeError::Lost(reason)) => {
                lost += 1;
                tracing::error!(%reason, "the discarded records are past the stream's retention: their items stay PENDING until `outbox-ops reconcile` (or the sweeper's scan, sweep_scan_mode backstop or on) puts them in the index");
                false
            }
            Err(RangeError::Transient(reason)) => {
                tracing::warn!(%reason, "could not read the discarded range; trying again");
                true
            }
        };
        if retry {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
    }
    deps.metrics.emit(
        deps.clock.now_ms(),
        &[
            Metric::count(RECOVERED_FROM_STREAM, adopted),
            Metric::count(RECOVERY_RANGE_LOST, lost),
            Metric::count(RECOVERY_RANGE_UNFINISHED, unfinished),
        ],
    );
    Ok(response)
}

/// When the invocation ending at `deadline_ms` starts no new page: the sweeper's
/// work window (a fifth of the remaining time kept to adopt what was found and to
/// answer), or a fixed window when the runtime's deadline cannot be real.
fn reading_stops_at(deadline_ms: u64, now_ms: i64) -> i64 {
    Budget::for_invocation(deadline_ms, now_ms)
        .unwrap_or_else(|| Budget::for_window(now_ms, FALLBACK_WINDOW))
        .stop_at_ms(now_ms)
}

/// One on-failure record: its range read, its pending items adopted, due now; with
/// the bound that stopped the reading before the range's end, if one did.
async fn recover<S: SweepStore>(
    message: &SqsMessage,
    deps: &Deps<S>,
    stop_at_ms: i64,
) -> Result<(Recovered, Option<Bound>), RangeError> {
    let body = message.body.as_deref().unwrap_or_default();
    // A message that is no on-failure record is reported, never dropped: after the
    // queue's receive limit it lands on its dead-letter queue for a person to read.
    let record = range::parse(body).map_err(RangeError::Transient)?;
    let read = range::pending_items_in(
        &deps.streams,
        &record.batch,
        &deps.keys,
        deps.clock.as_ref(),
        stop_at_ms,
    )
    .await?;
    Ok((adopt_all(&read.items, deps).await?, read.stopped))
}

/// Adopts what no sweep would find: items without valid index attributes, as the
/// library's producer writes them by default. (An item indexed at commit, or adopted
/// already, is the sweeper's.)
async fn adopt_all<S: SweepStore>(
    items: &[Discarded],
    deps: &Deps<S>,
) -> Result<Recovered, RangeError> {
    let now = deps.clock.now_ms();
    let mut recovered = Recovered {
        found: items.len(),
        adopted: 0,
    };
    let layout = &deps.keys.sweep_shards;
    for d in items.iter().filter(|d| !d.seen.is_valid(layout)) {
        let key = &d.key;
        match deps
            .store
            .adopt(key, &layout.shard_of(&key.pk), now, &d.seen)
            .await
        {
            Ok(MarkOutcome::Marked) => {
                recovered.adopted += 1;
                tracing::info!(message_id = %d.message_id, trace_id = %d.trace_id, aggregate = %key.pk, sk = %key.sk, "a discarded message is back in the sweeper's index");
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
    use dynamodb_outbox_core::__private::schema::{ItemKey, OutboxItem};
    use dynamodb_outbox_core::ManualClock;
    use dynamodb_outbox_core::fakes::{MemoryStore, key, pending_item};

    fn deps(store: MemoryStore) -> Deps<MemoryStore> {
        let aws = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        Deps {
            streams: aws_sdk_dynamodbstreams::Client::new(&aws),
            store,
            keys: KeyNames::default(),
            clock: ManualClock::at(1_000),
            metrics: Emitter::new("test"),
        }
    }

    #[test]
    fn the_recovery_functions_clients_carry_an_attempt_and_an_operation_timeout() {
        use aws_smithy_types::timeout::TimeoutConfig;
        use std::time::Duration;
        let aws = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let RecoveryFunction(deps, _) = RecoveryFunction::new("outbox", "test", &aws);
        for timeouts in [
            deps.streams.config().timeout_config(),
            deps.store.client().config().timeout_config(),
        ] {
            assert_eq!(
                (
                    timeouts.and_then(TimeoutConfig::operation_attempt_timeout),
                    timeouts.and_then(TimeoutConfig::operation_timeout)
                ),
                (Some(Duration::from_secs(5)), Some(Duration::from_secs(20)))
            );
        }
    }

    #[tokio::test]
    async fn pending_unindexed_items_are_adopted_due_now_and_the_rest_left_alone() {
        // Given an item written without index attributes (by a minimal producer, or
        // the library's by default), one indexed at commit (due later), and one SENT
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
        let as_inserted = |k: &ItemKey| Discarded {
            key: k.clone(),
            seen: dynamodb_outbox_core::__private::schema::SeenIndex::of(
                &serde_dynamo::to_item(d.store.get(k)).unwrap_or_default(),
            ),
            message_id: dynamodb_outbox_core::__private::schema::derive_message_id(k),
            trace_id: "-".into(),
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
