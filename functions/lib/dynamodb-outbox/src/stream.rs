//! The stream publisher's edge: DynamoDB stream event in, partial batch response
//! out. Each record of the event (as `lambda_runtime` parsed it) is decoded here, at
//! the boundary, into work for the publish path.

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use dynamodb_outbox_core::__private::ports::{MessageSink, OutboxStore};
use dynamodb_outbox_core::__private::publish::{Outcome, Publisher, Summary, Work, WorkItem};
use dynamodb_outbox_core::KeyNames;
use dynamodb_outbox_core::home::HOME_REGION;
use dynamodb_outbox_core::__private::schema::{self, ITEM_TYPE, PENDING_MESSAGE, STATUS, Status};

/// Why a record is not for the publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not an insert: the `SENT`/`FAILED` updates (`MODIFY`) and TTL deletes (`REMOVE`).
    Update,
    /// Some other item type in the same table (the business items).
    BusinessItem,
    /// An outbox item inserted in a state other than `PENDING`.
    NotPendingWhenInserted,
    /// A message another region publishes: on a global table every replica's stream
    /// carries every region's inserts ([`dynamodb_outbox_core::home`]).
    HomedElsewhere,
}

/// Turns one stream record into work for the publish path, or says why it is skipped.
///
/// Mirrors the FilterCriteria in `infra/stream-filter.json`, so the handler is safe
/// even when deployed without the filter. For a table keyed `PK`/`SK`; see
/// [`classify_keyed`] for others.
pub fn classify(record: &EventRecord) -> Result<WorkItem, Skip> {
    classify_keyed(record, &KeyNames::default())
}

/// [`classify`] for a table whose key and TTL attributes are named `keys`: the
/// record's `Keys` and image are read with the engine's names.
pub fn classify_keyed(record: &EventRecord, keys: &KeyNames) -> Result<WorkItem, Skip> {
    let image = &record.change.new_image;
    if let Some(skip) = skip_reason(
        &record.event_name,
        schema::string_attr(image, ITEM_TYPE),
        schema::string_attr(image, STATUS),
    )
    .or_else(|| elsewhere(keys, schema::string_attr(image, HOME_REGION)))
    {
        return Err(skip);
    }
    let id = record_id(record);
    let canonical = |item: &serde_dynamo::Item| {
        let mut item = item.clone().into_inner();
        keys.to_canonical(&mut item);
        serde_dynamo::Item::from(item)
    };
    // Renamed only when the table's names are not the engine's: the common case reads
    // the record as it came.
    let renamed;
    let (image, record_keys) = if keys.is_default() {
        (image, &record.change.keys)
    } else {
        renamed = (canonical(image), canonical(&record.change.keys));
        (&renamed.0, &renamed.1)
    };
    let key = schema::item_key(record_keys).or_else(|| schema::item_key(image));
    let work = match schema::decode(image, key.as_ref()) {
        Ok(msg) => Work::Publish(msg),
        Err(mut undecodable) => {
            if key.is_none() {
                undecodable.error = wrong_key_names(keys, &record.change.keys);
            }
            Work::Poison(undecodable.into())
        }
    };
    Ok(WorkItem { id, work })
}

/// Why a record whose keys are not the ones the deployment reads cannot be published,
/// in the table's names and the deployment's: the usual cause is key names
/// configured otherwise than the table's.
fn wrong_key_names(keys: &KeyNames, record_keys: &serde_dynamo::Item) -> schema::DecodeError {
    let mut found: Vec<String> = record_keys.inner().keys().map(|k| format!("`{k}`")).collect();
    found.sort();
    let found = if found.is_empty() {
        "missing".to_owned()
    } else {
        found.join(" and ")
    };
    let expected = format!("`{}` and `{}`", keys.partition_key, keys.sort_key);
    schema::DecodeError::key_names(&expected, &found)
}

/// [`Skip::HomedElsewhere`] when the message's home (its `HomeRegion`, when a string) is
/// not this deployment's: what the publisher's FilterCriteria drops, decided again
/// for a mapping deployed without (or with a stale) filter.
fn elsewhere(keys: &KeyNames, home: Option<&str>) -> Option<Skip> {
    (!keys.regions.owns(home)).then_some(Skip::HomedElsewhere)
}

/// Whether a record is skipped, from its event name and its image's `ItemType` and
/// `Status` (each when it is a string).
fn skip_reason(event_name: &str, item_type: Option<&str>, status: Option<&str>) -> Option<Skip> {
    if event_name != "INSERT" {
        return Some(Skip::Update);
    }
    if item_type != Some(PENDING_MESSAGE) {
        return Some(Skip::BusinessItem);
    }
    if status != Some(Status::Pending.as_str()) {
        return Some(Skip::NotPendingWhenInserted);
    }
    None
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
        .filter_map(|r| match classify_keyed(r, &publisher.config.key_names) {
            Ok(w) => Some(w),
            Err(_) => {
                skipped += 1;
                None
            }
        })
        .collect();
    publish(publisher, work, skipped).await
}

/// Publishes the work of one stream batch and reports the records to retry, by
/// sequence number.
async fn publish<K: MessageSink, S: OutboxStore>(
    publisher: &Publisher<K, S>,
    work: Vec<WorkItem>,
    skipped: usize,
) -> (DynamoDbEventResponse, Summary) {
    // Lambda may deliver these records again: only items still PENDING are published.
    let (outcomes, summary) = publisher.process_delivery(&work).await;
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
        records = work.len() + skipped,
        skipped,
        sent = summary.sent,
        unmarked = summary.unmarked,
        dead_lettered = summary.dead_lettered,
        retried = summary.retried,
        deferred = summary.deferred,
        already_settled = summary.already_settled,
        status_unread = summary.status_unread,
        fence_unread = summary.fence_unread,
        fence_reads = summary.fence_reads,
        offloaded = summary.offloaded,
        "stream batch done"
    );
    (response, summary)
}

#[cfg(test)]
mod tests;
