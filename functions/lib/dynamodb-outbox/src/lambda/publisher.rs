//! The publisher function: one stream batch published, its metrics printed, the
//! partial batch response returned. The work itself is the `stream` module's.

use super::learned::{Got, Learned};
use super::log_config_error;
use super::start::Start;
use super::table::TableGate;
use crate::dynamo::DynamoStore;
use crate::sink::AwsSink;
use crate::stream::handle_stream_event;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use aws_types::SdkConfig;
use dynamodb_outbox_core::__private::Publisher;
use dynamodb_outbox_core::__private::metrics::{Emitter, publisher_metrics};
use dynamodb_outbox_core::__private::ports::{MessageSink, OutboxStore};
use dynamodb_outbox_core::__private::schema::table_check::TableNeeds;
use dynamodb_outbox_core::{ConfigError, PublisherConfig};
use lambda_runtime::{Error, LambdaEvent, service_fn};

/// The publisher Lambda function: the outbox table's DynamoDB stream in, every new
/// pending message published to its destination and marked `SENT`, the records to
/// retry reported in a partial batch response.
///
/// Build it once per execution environment (no request is made then: every SQS
/// destination's size limit is read from its queue on the first invocation, and kept
/// once every queue has answered) and [`run`](PublisherFunction::run) it:
///
/// ```no_run
/// use dynamodb_outbox::lambda::PublisherFunction;
/// use lambda_runtime::Error;
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     lambda_runtime::tracing::init_default_subscriber();
///     let aws = aws_config::load_from_env().await;
///     let function = PublisherFunction::from_env(&aws).await?;
///     function.run().await
/// }
/// ```
///
/// For a runtime of your own (layers of yours, say), hand it
/// [`PublisherFunction::handle`], as [`run`](PublisherFunction::run) does.
#[derive(Debug)]
pub struct PublisherFunction {
    /// The configuration and clients, as built at start.
    start: Start<PublisherConfig>,
    /// Prints the metrics under the deployment's name.
    metrics: Emitter,
    /// The publish path with the queues' limits, once they are all read.
    deps: Learned<Deps<AwsSink, DynamoStore>>,
    /// Whether the table is the configured one (keys, index, a stream of new images).
    table: TableGate,
}

impl PublisherFunction {
    /// Reads [`PublisherConfig`] from the environment (`OUTBOX_TABLE_NAME`,
    /// `OUTBOX_ROUTES`, `OUTBOX_DLQ_URL`, …) and the metrics namespace, then builds
    /// the function. A missing or malformed variable is logged and returned, naming
    /// the variable and what to set. Makes no request (it stays `async` so that a
    /// start-up step may be added without changing callers).
    pub async fn from_env(aws: &SdkConfig) -> Result<Self, ConfigError> {
        let config = PublisherConfig::from_env().inspect_err(log_config_error)?;
        let metrics = Emitter::from_env().inspect_err(log_config_error)?;
        Ok(Self::build(config, metrics, aws))
    }

    /// With a configuration of your own (routes built in code, say); metrics go to the
    /// `namespace` (the deployment's name).
    ///
    /// ```no_run
    /// use dynamodb_outbox::lambda::PublisherFunction;
    /// use dynamodb_outbox::{Destination, PublisherConfig, Routes};
    ///
    /// # async fn build() -> PublisherFunction {
    /// let config = PublisherConfig {
    ///     table_name: "orders".into(),
    ///     routes: Routes::new(
    ///         [("orders".to_owned(), Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/orders"))],
    ///         None,
    ///     ),
    ///     dead_letter: Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-dlq"),
    ///     ttl_days: 7,
    ///     key_names: Default::default(),
    /// };
    /// let aws = aws_config::load_from_env().await;
    /// PublisherFunction::new(config, "orders-outbox", &aws).await
    /// # }
    /// ```
    pub async fn new(config: PublisherConfig, namespace: &str, aws: &SdkConfig) -> Self {
        Self::build(config, Emitter::new(namespace), aws)
    }

    fn build(config: PublisherConfig, metrics: Emitter, aws: &SdkConfig) -> Self {
        let table = config.table_name.clone();
        let keys = config.key_names.clone();
        let start = Start::new(config, aws);
        let needs = TableNeeds { stream: true };
        PublisherFunction {
            table: TableGate::new(start.dynamodb().clone(), table, keys, needs),
            start,
            metrics,
            deps: Learned::default(),
        }
    }

    /// The publish path: kept, else built from the queues' limits read now (on the
    /// first invocation, and on each one after a queue could not be read).
    async fn deps(&self) -> Got<'_, Deps<AwsSink, DynamoStore>> {
        self.deps
            .get(|| async {
                let learned = self.start.learn().await;
                learned.map(|publisher| Deps {
                    publisher,
                    metrics: self.metrics.clone(),
                })
            })
            .await
    }

    /// Runs the function on the Lambda runtime for as long as the execution environment
    /// lives, each invocation traced as `lambda_runtime::run` traces it. The runtime
    /// parses each event into an [`Event`]; one that is not a stream event fails the
    /// invocation, the runtime naming what was wrong.
    ///
    /// The runtime's own parse, not one of ours: a lean parse of the bytes Lambda sent
    /// saved 0.4 ms of CPU per batch of 100, at most 3% of an invocation's billed
    /// duration (`docs/benchmarks.md`, the stream parse).
    pub async fn run(&self) -> Result<(), Error> {
        lambda_runtime::run(service_fn(|event| self.handle(event))).await
    }

    /// Publishes the batch's pending messages and reports the records to retry.
    ///
    /// The first invocation checks the table first (its keys, the sweeper index, a
    /// stream of new images, against the configuration): on a mismatch every
    /// invocation fails, naming the setting, and nothing is published or
    /// dead-lettered — the stream retries the batch until the configuration is fixed.
    pub async fn handle(&self, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse, Error> {
        let (admitted, deps) = futures::future::join(self.table.admit(), self.deps()).await;
        admitted?;
        handle(event, &*deps).await
    }
}

/// What every invocation shares, built once.
#[derive(Debug)]
pub(crate) struct Deps<K, S> {
    /// The publish path.
    pub(crate) publisher: Publisher<K, S>,
    /// Prints the metrics under the deployment's name.
    pub(crate) metrics: Emitter,
}

/// Publishes the batch's pending messages and reports the records to retry.
pub(crate) async fn handle<K: MessageSink, S: OutboxStore>(
    event: LambdaEvent<Event>,
    deps: &Deps<K, S>,
) -> Result<DynamoDbEventResponse, Error> {
    let (response, summary) = handle_stream_event(&deps.publisher, &event.payload).await;
    let now = deps.publisher.clock.now_ms();
    deps.metrics.emit(now, &publisher_metrics(&summary));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_core::fakes::{MemoryStore, RecordingSink, Refusals};
    use dynamodb_outbox_core::{Destination, ManualClock, Routes};

    fn record(seq: &str, pk: &str, topic: &str) -> serde_json::Value {
        let image = serde_json::json!({
            "PK": {"S": pk}, "SK": {"S": format!("MESSAGE#X#{seq}")},
            "ItemType": {"S": "PENDING_MESSAGE"}, "Status": {"S": "PENDING"},
            "Topic": {"S": topic}, "Payload": {"S": seq}, "RetryCount": {"N": "0"},
            "SweepShard": {"S": "00"}, "SweepDueAt": {"N": "1"}
        });
        serde_json::json!({
            "eventID": seq, "eventName": "INSERT", "eventSource": "aws:dynamodb",
            "eventVersion": "1.1", "awsRegion": "eu-west-1",
            "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/x",
            "dynamodb": {
                "ApproximateCreationDateTime": 1732870800, "SizeBytes": 400,
                "SequenceNumber": seq, "StreamViewType": "NEW_IMAGE",
                "Keys": {"PK": image["PK"], "SK": image["SK"]}, "NewImage": image
            }
        })
    }

    fn deps(refusals: Refusals) -> Deps<RecordingSink, MemoryStore> {
        let config = PublisherConfig {
            table_name: "t".into(),
            routes: Routes::new(
                [("orders".to_owned(), Destination::sqs("https://q/orders"))],
                None,
            ),
            dead_letter: Destination::sqs("https://q/dlq"),
            ttl_days: 7,
            key_names: Default::default(),
        };
        let publisher =
            Publisher::new(RecordingSink::new(refusals), MemoryStore::default(), config)
                .with_clock(ManualClock::at(1_700_000_000_000));
        Deps {
            publisher,
            metrics: Emitter::new("test"),
        }
    }

    /// The records a response reports for retry.
    fn failed(response: &DynamoDbEventResponse) -> Vec<&str> {
        response
            .batch_item_failures
            .iter()
            .filter_map(|f| f.item_identifier.as_deref())
            .collect()
    }

    #[tokio::test]
    async fn a_batch_is_published_and_only_its_failed_records_are_reported() {
        let event: Event = serde_json::from_value(serde_json::json!({
            "Records": [record("1", "A", "orders"), record("2", "B", "orders")]
        }))
        .expect("event");
        let deps = deps(Refusals {
            transient: vec!["2".into()],
            ..Refusals::default()
        });
        let response = handle(LambdaEvent::new(event, Default::default()), &deps)
            .await
            .expect("handled");
        assert_eq!(failed(&response), ["2"]);
        assert_eq!(deps.publisher.store.sent().len(), 1);
    }

    #[tokio::test]
    async fn updates_are_skipped_poison_is_failed_with_its_reason_and_only_refusals_are_reported() {
        // Given a batch of a published record, a refused one, an update and a poison item
        let mut poison = record("4", "D", "orders");
        poison["dynamodb"]["NewImage"]["Topic"] = serde_json::json!({"N": "1"});
        let mut update = record("3", "C", "orders");
        update["eventName"] = serde_json::json!("MODIFY");
        let event: Event = serde_json::from_value(serde_json::json!({
            "Records": [record("1", "A", "orders"), record("2", "B", "orders"), update, poison]
        }))
        .expect("event");
        let deps = deps(Refusals {
            transient: vec!["2".into()],
            ..Refusals::default()
        });
        // When it is handled
        let response = handle(LambdaEvent::new(event, Default::default()), &deps)
            .await
            .expect("handled");
        // Then only the refused record is reported; the poison item is FAILED, saying why
        assert_eq!(failed(&response), ["2"]);
        assert_eq!(deps.publisher.store.sent().len(), 1);
        let failed_items = deps.publisher.store.failed();
        assert_eq!(failed_items.len(), 1, "{failed_items:?}");
        assert_eq!(failed_items[0].0.pk, "D", "{failed_items:?}");
        assert!(failed_items[0].1.contains("Topic"), "{failed_items:?}");
    }

    #[tokio::test]
    async fn a_batch_delivered_again_sends_again_only_the_record_it_reported() {
        // Given a batch whose first delivery sent record 1 and reported record 2
        let event = || -> Event {
            serde_json::from_value(serde_json::json!({
                "Records": [record("1", "A", "orders"), record("2", "B", "orders")]
            }))
            .expect("event")
        };
        let deps = deps(Refusals {
            transient: vec!["2".into()],
            ..Refusals::default()
        });
        let first = handle(LambdaEvent::new(event(), Default::default()), &deps).await;
        assert_eq!(first.expect("handled").batch_item_failures.len(), 1);
        // When Lambda delivers the batch again (from its lowest reported record, or
        // whole after a bisect)
        let again = handle(LambdaEvent::new(event(), Default::default()), &deps)
            .await
            .expect("handled");
        // Then record 1, SENT by the first delivery, is not sent again; record 2 is
        // tried again and reported again
        let bodies: Vec<String> = deps
            .publisher
            .sink
            .delivered("orders")
            .into_iter()
            .map(|m| m.body)
            .collect();
        assert_eq!(bodies, ["1"]);
        assert_eq!(failed(&again), ["2"]);
        let attempts = deps.publisher.sink.calls();
        assert_eq!(attempts.len(), 2, "{attempts:?}");
        assert_eq!(attempts[1].1, ["2"], "{attempts:?}");
    }
}
