//! The stream publisher's handler: DynamoDB stream event in, partial batch response
//! out. The Lambda binary and the local runner call the same function.

use crate::ports::{MessageSink, OutboxStore};
use crate::publish::{Outcome, Poison, Publisher, Summary, Work, WorkItem};
use crate::schema::{self, ITEM_TYPE, PENDING_MESSAGE, STATUS, Status};
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};

/// Why a record is not for the publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not an insert: the `SENT`/`FAILED` updates (`MODIFY`) and TTL deletes (`REMOVE`).
    NotAnInsert,
    /// Some other item type in the same table (the business items).
    NotAnOutboxItem,
    /// An outbox item inserted in a state other than `PENDING`.
    NotPending,
}

/// Turns one stream record into work for the publish path, or says why it is skipped.
///
/// Mirrors the FilterCriteria in `infra/stream-filter.json`, so the handler is safe
/// even when deployed without the filter.
pub fn classify(record: &EventRecord) -> Result<WorkItem, Skip> {
    if record.event_name != "INSERT" {
        return Err(Skip::NotAnInsert);
    }
    let image = &record.change.new_image;
    if schema::string_attr(image, ITEM_TYPE) != Some(PENDING_MESSAGE) {
        return Err(Skip::NotAnOutboxItem);
    }
    if schema::string_attr(image, STATUS) != Some(Status::Pending.as_str()) {
        return Err(Skip::NotPending);
    }
    let id = record_id(record);
    let key = schema::item_key(&record.change.keys).or_else(|| schema::item_key(image));
    let work = match schema::decode_message(image.clone(), key.as_ref()) {
        Ok(msg) => Work::Publish(msg),
        Err(e) => Work::Poison(Poison {
            message_id: key.as_ref().map(schema::derive_message_id),
            topic: schema::string_attr(image, schema::TOPIC).map(str::to_owned),
            body: serde_json::to_string(image)
                .unwrap_or_else(|_| "(unserialisable item)".to_owned()),
            key,
            reason: e.to_string(),
        }),
    };
    Ok(WorkItem { id, work })
}

/// The identifier Lambda expects in a partial batch response: the sequence number.
fn record_id(record: &EventRecord) -> String {
    record
        .change
        .sequence_number
        .clone()
        .unwrap_or_else(|| record.event_id.clone())
}

/// Publishes the pending messages of a stream event and reports the records to retry.
pub async fn handle_stream_event<K: MessageSink, S: OutboxStore>(
    publisher: &Publisher<K, S>,
    event: &Event,
) -> (DynamoDbEventResponse, Summary) {
    let mut skipped = 0usize;
    let work: Vec<WorkItem> = event
        .records
        .iter()
        .filter_map(|r| match classify(r) {
            Ok(w) => Some(w),
            Err(_) => {
                skipped += 1;
                None
            }
        })
        .collect();
    // Boxed: the publish path's future is deep, and the Lambda runtime nests it further.
    let outcomes = Box::pin(publisher.process(&work)).await;
    let summary = Summary::of(&outcomes);
    let mut response = DynamoDbEventResponse::default();
    for (item, outcome) in work.iter().zip(&outcomes) {
        if let Outcome::Retry { reason } = outcome {
            tracing::warn!(sequence_number = %item.id, %reason, "reporting record for retry");
        }
        if outcome.needs_retry() {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(item.id.clone());
            response.batch_item_failures.push(failure);
        }
    }
    tracing::info!(
        records = event.records.len(),
        skipped,
        sent = summary.sent,
        unmarked = summary.unmarked,
        dead_lettered = summary.dead_lettered,
        retried = summary.retried,
        "stream batch done"
    );
    (response, summary)
}
