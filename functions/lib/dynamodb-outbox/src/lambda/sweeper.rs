//! The sweeper function: one sweep within the invocation's deadline, its metrics
//! printed, its summary returned. The event names the worker's share of the index
//! when the stacks run several (`{"sweepGroup": i, "sweepGroups": n}`, [`SweepGroup`]);
//! anything else in it is ignored, so a manual test invoke with `{}` sweeps it all.

use super::learned::{Got, Learned};
use super::log_config_error;
use super::start::Start;
use super::table::TableGate;
use crate::dynamo::DynamoStore;
use crate::sink::AwsSink;
use crate::sweep::{SweepGroup, SweepSummary, Sweeper, SweeperConfig, handle_scheduled_event};
use aws_types::SdkConfig;
use dynamodb_outbox_core::__private::metrics::{Emitter, sweeper_metrics};
use dynamodb_outbox_core::__private::ports::{MessageSink, OutboxStore, SweepStore};
use dynamodb_outbox_core::__private::schema::table_check::TableNeeds;
use dynamodb_outbox_core::ConfigError;
use lambda_runtime::{Error, LambdaEvent};

/// The sweeper Lambda function, run on a schedule: messages still `PENDING` past
/// their due time are published again with backoff, and after the attempt limit
/// marked `FAILED` with a copy on the dead-letter queue.
///
/// ```no_run
/// use dynamodb_outbox::lambda::SweeperFunction;
/// use lambda_runtime::{Error, service_fn};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     lambda_runtime::tracing::init_default_subscriber();
///     let aws = aws_config::load_from_env().await;
///     let function = SweeperFunction::from_env(&aws).await?;
///     lambda_runtime::run(service_fn(|event| function.handle(event))).await
/// }
/// ```
///
/// Building it makes no request: every SQS destination's size limit is read from its
/// queue on the first invocation, and kept once every queue has answered.
#[derive(Debug)]
pub struct SweeperFunction {
    /// The configuration and clients, as built at start.
    start: Start<SweeperConfig>,
    /// Prints the metrics under the deployment's name.
    metrics: Emitter,
    /// The sweeper with the queues' limits, once they are all read.
    deps: Learned<Deps<AwsSink, DynamoStore>>,
    /// Whether the table is the configured one (keys, index).
    table: TableGate,
}

impl SweeperFunction {
    /// Reads [`SweeperConfig`] (the publisher's settings plus `OUTBOX_MAX_ATTEMPTS`,
    /// `OUTBOX_SWEEP_GRACE_SECONDS`, …) and the metrics namespace from the
    /// environment, then builds the function. A missing or malformed variable is
    /// logged and returned, naming the variable and what to set. Makes no request (it
    /// stays `async` so that a start-up step may be added without changing callers).
    pub async fn from_env(aws: &SdkConfig) -> Result<Self, ConfigError> {
        let config = SweeperConfig::from_env().inspect_err(log_config_error)?;
        let metrics = Emitter::from_env().inspect_err(log_config_error)?;
        Ok(Self::build(config, metrics, aws))
    }

    /// With a configuration of your own; metrics go to the `namespace`.
    pub async fn new(config: SweeperConfig, namespace: &str, aws: &SdkConfig) -> Self {
        Self::build(config, Emitter::new(namespace), aws)
    }

    fn build(config: SweeperConfig, metrics: Emitter, aws: &SdkConfig) -> Self {
        let table = config.publisher.table_name.clone();
        let keys = config.publisher.key_names.clone();
        let start = Start::new(config, aws);
        let needs = TableNeeds { stream: false };
        SweeperFunction {
            table: TableGate::new(start.dynamodb().clone(), table, keys, needs),
            start,
            metrics,
            deps: Learned::default(),
        }
    }

    /// The sweeper: kept, else built from the queues' limits read now (on the first
    /// invocation, and on each one after a queue could not be read).
    async fn deps(&self) -> Got<'_, Deps<AwsSink, DynamoStore>> {
        self.deps
            .get(|| async {
                let learned = self.start.learn().await;
                learned.map(|sweeper| Deps {
                    sweeper,
                    metrics: self.metrics.clone(),
                })
            })
            .await
    }

    /// One sweep within the invocation's remaining time; an error when the sweep
    /// could not do its work (so the function's `Errors` alarm shows it). The first
    /// invocation checks the table first (its keys and the sweeper index, against the
    /// configuration): on a mismatch every invocation fails, naming the setting, and
    /// no item is touched.
    pub async fn handle(
        &self,
        event: LambdaEvent<serde_json::Value>,
    ) -> Result<SweepSummary, Error> {
        let (admitted, deps) = futures::future::join(self.table.admit(), self.deps()).await;
        admitted?;
        handle(event, &*deps).await
    }
}

/// What every invocation shares, built once.
#[derive(Debug)]
pub(crate) struct Deps<K, S> {
    /// The sweeper (and its publish path).
    pub(crate) sweeper: Sweeper<K, S>,
    /// Prints the metrics under the deployment's name.
    pub(crate) metrics: Emitter,
}

/// One sweep of the event's share of the index within the invocation's remaining
/// time. A sweep whose store requests
/// failed — it could not see every shard, or claim or reschedule what it saw — fails
/// the invocation (after printing its metrics), so that the function's `Errors`
/// metric and its alarm show a sweeper that cannot do its work; its summary is logged.
pub(crate) async fn handle<K: MessageSink, S: OutboxStore + SweepStore>(
    event: LambdaEvent<serde_json::Value>,
    deps: &Deps<K, S>,
) -> Result<SweepSummary, Error> {
    // A malformed share is the schedule's error: sweeping everything instead would
    // run two workers over the same shards, so the invocation fails, saying why.
    let group =
        SweepGroup::of_event(&event.payload).inspect_err(|e| tracing::error!(error = %e))?;
    let summary = handle_scheduled_event(&deps.sweeper, event.context.deadline, group).await;
    let now = deps.sweeper.publisher.clock.now_ms();
    deps.metrics.emit(now, &sweeper_metrics(&summary));
    if summary.errors > 0 {
        return Err(format!(
            "the sweep failed {} store request(s) ({} of the index's shards unread): see the log for each; {summary:?}",
            summary.errors, summary.unread_shards
        )
        .into());
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_core::__private::Publisher;
    use dynamodb_outbox_core::fakes::{MemoryStore, RecordingSink, StoreFaults, key, pending_item};
    use dynamodb_outbox_core::{Destination, ManualClock, PublisherConfig, Routes};

    const NOW: i64 = 1_700_000_000_000;

    /// The sweeper over in-memory ports at `NOW`, routing `routes`.
    fn deps(routes: Routes) -> Deps<RecordingSink, MemoryStore> {
        let config = PublisherConfig {
            table_name: "t".into(),
            routes,
            dead_letter: Destination::sqs("https://q/dlq"),
            ttl_days: 7,
            key_names: Default::default(),
        };
        let publisher = Publisher::new(
            RecordingSink::default(),
            MemoryStore::default(),
            config.clone(),
        )
        .with_clock(ManualClock::at(NOW));
        Deps {
            sweeper: Sweeper::new(publisher, SweeperConfig::new(config)),
            metrics: Emitter::new("test"),
        }
    }

    /// A scheduled invocation with a minute left.
    fn scheduled() -> LambdaEvent<serde_json::Value> {
        scheduled_with(serde_json::json!({}))
    }

    /// A scheduled invocation with a minute left, its input `payload`.
    fn scheduled_with(payload: serde_json::Value) -> LambdaEvent<serde_json::Value> {
        let mut context = lambda_runtime::Context::default();
        context.deadline = u64::try_from(NOW + 60_000).unwrap_or(0);
        LambdaEvent::new(payload, context)
    }

    #[tokio::test]
    async fn a_scheduled_invocation_sweeps_within_its_deadline() {
        let deps = deps(Routes::new(
            [("orders".to_owned(), Destination::sqs("https://q/orders"))],
            None,
        ));
        let k = key("A", "MESSAGE#X#1");
        deps.sweeper.publisher.store.put(
            k.clone(),
            pending_item(&k, "orders", 0, NOW - 1, NOW - 90_000),
        );
        let summary = handle(scheduled(), &deps).await.expect("handled");
        assert_eq!((summary.found, summary.published), (1, 1), "{summary:?}");
        assert_eq!(summary.oldest_pending_age_ms, Some(90_000));
    }

    #[tokio::test]
    async fn an_invocation_whose_index_queries_fail_is_an_error() {
        // Before, the queries' errors were logged and the invocation succeeded, with
        // an oldest pending age of 0: a broken sweeper looked healthy.
        let deps = deps(Routes::new([], None));
        deps.sweeper.publisher.store.fail(StoreFaults {
            queries: dynamodb_outbox_core::SweepShards::default().all(),
            ..StoreFaults::default()
        });
        let err = handle(scheduled(), &deps)
            .await
            .expect_err("a sweep that could not look is an error");
        assert!(
            err.to_string().contains("16 of the index's shards unread"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn each_worker_sweeps_its_share_of_the_index_and_a_malformed_share_is_an_error() {
        let deps = deps(Routes::new(
            [("orders".to_owned(), Destination::sqs("https://q/orders"))],
            None,
        ));
        let layout = dynamodb_outbox_core::SweepShards::default();
        let (a, b) = (key("A", "MESSAGE#X#1"), key("B", "MESSAGE#X#1"));
        for k in [&a, &b] {
            deps.sweeper.publisher.store.put(
                k.clone(),
                pending_item(k, "orders", 0, NOW - 1, NOW - 90_000),
            );
        }
        // Two workers: the one whose share holds A's shard sends A, and only A
        let number = |pk: &str| layout.shard_of(pk).parse::<u64>().unwrap_or(0);
        let (na, nb) = (number("A"), number("B"));
        assert_ne!(na % 2, nb % 2, "the test wants A and B in different halves");
        let input = serde_json::json!({"sweepGroup": na % 2, "sweepGroups": 2});
        let summary = handle(scheduled_with(input), &deps).await.expect("handled");
        assert_eq!((summary.found, summary.published), (1, 1), "{summary:?}");
        assert_eq!(summary.index_queries, 8, "half of the 16 shards");
        let err = handle(
            scheduled_with(serde_json::json!({"sweepGroup": 2, "sweepGroups": 2})),
            &deps,
        )
        .await
        .expect_err("not a share");
        assert!(
            err.to_string()
                .contains("sweepGroup is not below sweepGroups"),
            "{err}"
        );
    }
}
