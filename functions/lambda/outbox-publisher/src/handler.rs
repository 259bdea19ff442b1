//! The publisher's handler: one stream batch published, its metrics printed, the
//! partial batch response returned. The work itself is `dynamodb_outbox::stream`'s, which the
//! integration tests call too.

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use dynamodb_outbox::metrics::{Emitter, publisher_metrics};
use dynamodb_outbox::ports::{MessageSink, OutboxStore};
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{AwsPublisher, ConfigError, FromSdkConfig, Publisher, PublisherConfig};
use lambda_runtime::{Error, LambdaEvent};

/// What every invocation shares, built once.
#[derive(Debug)]
pub struct Deps<K, S> {
    /// The publish path.
    pub publisher: Publisher<K, S>,
    /// Prints the metrics under the deployment's name.
    pub metrics: Emitter,
}

impl Deps<dynamodb_outbox::sink::AwsSink, dynamodb_outbox::dynamo::DynamoStore> {
    /// Reads the configuration, builds every client from one AWS configuration, and
    /// learns every SQS destination's size limit from its queue (once, concurrently;
    /// a queue it cannot read is logged and gets SQS's default, 1 MiB).
    pub async fn from_env() -> Result<Self, lambda_runtime::Error> {
        let config = PublisherConfig::from_env().inspect_err(log)?;
        let metrics = Emitter::from_env().inspect_err(log)?;
        let aws = aws_config::load_from_env().await;
        #[cfg(feature = "fault-injection")]
        let aws = outbox_faults::from_env(aws)?;
        Ok(Deps {
            publisher: AwsPublisher::load(config, &aws).await,
            metrics,
        })
    }
}

fn log(e: &ConfigError) {
    lambda_runtime::tracing::error!(error = %e, "bad configuration");
}

/// Publishes the batch's pending messages and reports the records to retry.
pub async fn handle<K: MessageSink, S: OutboxStore>(
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
    use dynamodb_outbox::{Destination, Routes};
    use dynamodb_outbox_core::clock::ManualClock;
    use dynamodb_outbox_core::fakes::{MemoryStore, RecordingSink, Refusals};

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
        };
        let publisher =
            Publisher::new(RecordingSink::new(refusals), MemoryStore::default(), config)
                .with_clock(ManualClock::at(1_700_000_000_000));
        Deps {
            publisher,
            metrics: Emitter::new("test"),
        }
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
        let failed: Vec<_> = response
            .batch_item_failures
            .iter()
            .filter_map(|f| f.item_identifier.as_deref())
            .collect();
        assert_eq!(failed, ["2"]);
        assert_eq!(deps.publisher.store.sent().len(), 1);
    }
}
