//! A discarded range of stream records: parsing Lambda's on-failure record (pure),
//! and reading the range back from the stream (the one piece of I/O).

use super::progress::{Bound, Next, Page, Progress};
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use dynamodb_outbox_core::__private::schema::{
    self, ItemKey, OutboxItem, PENDING_MESSAGE, SeenIndex, Status,
};
use dynamodb_outbox_core::trace::{TraceContext, log_trace_id};
use dynamodb_outbox_core::{Clock, KeyNames};
use serde::Deserialize;
use std::cmp::Ordering;

/// What Lambda sends to a stream mapping's on-failure destination: where the
/// discarded batch was, never the records themselves.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct OnFailureRecord {
    /// Why the batch was discarded (`MaxRecordAgeExceeded`, `RetryAttemptsExhausted`).
    #[serde(rename = "requestContext", default)]
    pub context: Option<RequestContext>,
    /// The range.
    #[serde(rename = "DDBStreamBatchInfo")]
    pub batch: BatchInfo,
}

/// The invocation that gave up.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RequestContext {
    /// `MaxRecordAgeExceeded`, `RetryAttemptsExhausted`, ...
    #[serde(default)]
    pub condition: Option<String>,
}

/// The discarded records: one shard, from one sequence number to another, inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchInfo {
    /// The shard.
    pub shard_id: String,
    /// The first discarded record.
    pub start_sequence_number: String,
    /// The last discarded record.
    pub end_sequence_number: String,
    /// The stream.
    pub stream_arn: String,
}

/// Reads an on-failure record from a message body, saying what is wrong with it.
pub(crate) fn parse(body: &str) -> Result<OnFailureRecord, String> {
    serde_json::from_str(body).map_err(|e| {
        format!("not a DynamoDB stream on-failure record ({e}): is this function subscribed to the stream mapping's on-failure queue?")
    })
}

/// Compares two stream sequence numbers: decimal strings of any length.
pub(crate) fn compare_sequence(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// A pending outbox item a discarded record inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Discarded {
    /// Its key.
    pub(crate) key: ItemKey,
    /// Its index attributes as inserted.
    pub(crate) seen: SeenIndex,
    /// Its outbox message id (derived from the key when the producer wrote none), for
    /// the log line that says it is back.
    pub(crate) message_id: String,
    /// The W3C trace id it was committed in, `-` without one (or a malformed one).
    pub(crate) trace_id: String,
}

/// The outbox item a stream record inserted as `PENDING`, if it did — the items the
/// publisher would have published. The record's `Keys` and image carry the table's
/// names, `keys`.
pub(crate) fn pending_insert(record: &Record, keys: &KeyNames) -> Option<Discarded> {
    if record.event_name().map(|n| n.as_str()) != Some("INSERT") {
        return None;
    }
    let change = record.dynamodb()?;
    let mut image = change.new_image()?.clone();
    keys.to_canonical(&mut image);
    let image: serde_dynamo::Item = image.into();
    let seen = SeenIndex::of(&image);
    let item = OutboxItem::from_item(image).ok()?;
    if item.item_type.as_deref() != Some(PENDING_MESSAGE) || item.status() != Some(Status::Pending)
    {
        return None;
    }
    // Another region's message: its own deployment recovers it (on a global table
    // every replica's stream, and so every region's discarded ranges, carry it).
    if !keys.regions.owns(item.home_region.as_deref()) {
        return None;
    }
    let mut record_keys = change.keys()?.clone();
    keys.to_canonical(&mut record_keys);
    let key = schema::item_key(&record_keys.into()).or_else(|| item.key())?;
    let trace = TraceContext::from_attributes(
        item.trace_parent.as_deref(),
        item.trace_state.as_deref(),
        item.aws_trace_header.as_deref(),
    )
    .and_then(Result::ok);
    let message_id = match item.message_id {
        Some(id) if !id.is_empty() => id,
        _ => schema::derive_message_id(&key),
    };
    Some(Discarded {
        trace_id: log_trace_id(trace.as_ref()).to_owned(),
        message_id,
        key,
        seen,
    })
}

/// Why a range could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RangeError {
    /// The records are gone from the stream (older than its 24 hours): reading again
    /// cannot help. `outbox-ops reconcile` (or the sweeper's scan) finds their items.
    Lost(String),
    /// Throttling, a network failure: worth another try.
    Transient(String),
}

/// What reading a range gave: the pending outbox items its records inserted (key and
/// index attributes as inserted), in stream order, and the bound that stopped the
/// reading before the range's end, if one did.
#[derive(Debug, Default)]
pub(crate) struct RangeRead {
    /// The pending items found.
    pub(crate) items: Vec<Discarded>,
    /// Why the range was left unfinished; `None` when it was read to its end.
    pub(crate) stopped: Option<Bound>,
}

/// Reads the records of `batch` from the stream, page after page while the shard
/// iterator stays open and the range's end has not been reached ([`Progress`]: an
/// empty page is no end), starting no page at or after `stop_at_ms` on `clock`.
pub(crate) async fn pending_items_in(
    streams: &aws_sdk_dynamodbstreams::Client,
    batch: &BatchInfo,
    keys: &KeyNames,
    clock: &dyn Clock,
    stop_at_ms: i64,
) -> Result<RangeRead, RangeError> {
    let iterator = streams
        .get_shard_iterator()
        .stream_arn(&batch.stream_arn)
        .shard_id(&batch.shard_id)
        .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
        .sequence_number(&batch.start_sequence_number)
        .send()
        .await
        .map_err(classify)?;
    let mut progress = Progress::new(&batch.end_sequence_number, stop_at_ms);
    let mut next = iterator.shard_iterator().map(str::to_owned);
    let mut read = RangeRead::default();
    while let Some(iterator) = next.take() {
        let page = streams
            .get_records()
            .shard_iterator(iterator)
            .send()
            .await
            .map_err(classify)?;
        for record in page.records() {
            if progress.within(sequence_of(record).unwrap_or_default()) {
                read.items.extend(pending_insert(record, keys));
            }
        }
        let seen = Page {
            last_sequence: page.records().last().and_then(sequence_of),
            has_next: page.next_shard_iterator().is_some(),
        };
        match progress.after(seen, clock.now_ms()) {
            Next::Continue => next = page.next_shard_iterator().map(str::to_owned),
            Next::Done => {}
            Next::Stopped(bound) => read.stopped = Some(bound),
        }
    }
    Ok(read)
}

/// A stream record's sequence number.
fn sequence_of(record: &Record) -> Option<&str> {
    record.dynamodb().and_then(|d| d.sequence_number())
}

fn classify<E, R>(err: aws_sdk_dynamodbstreams::error::SdkError<E, R>) -> RangeError
where
    E: aws_sdk_dynamodbstreams::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let text = aws_sdk_dynamodbstreams::error::DisplayErrorContext(&err).to_string();
    if let Some(e) = err.as_service_error()
        && e.code()
            .is_some_and(dynamodb_outbox_core::failure::is_denial_code)
    {
        let action = dynamodb_outbox_core::failure::denied_action(e.message().unwrap_or_default());
        crate::sdk_error::report_denied(action.unwrap_or_default(), &text);
    }
    match err.as_service_error().and_then(|e| e.code()) {
        Some("TrimmedDataAccessException" | "ResourceNotFoundException") => RangeError::Lost(text),
        _ => RangeError::Transient(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lambda's on-failure record for a DynamoDB stream, as documented.
    const ON_FAILURE: &str = r#"{
        "requestContext": {"requestId": "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:outbox-publisher",
            "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 1},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0", "timestamp": "2026-11-29T10:00:00.000Z",
        "DDBStreamBatchInfo": {
            "shardId": "shardId-00000001631211445843-cd8f4b5a",
            "startSequenceNumber": "800000000003126276362",
            "endSequenceNumber": "800000000003126276363",
            "approximateArrivalOfFirstRecord": "2026-11-29T09:59:00Z",
            "approximateArrivalOfLastRecord": "2026-11-29T09:59:00Z",
            "batchSize": 2,
            "streamArn": "arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-11-29T00:00:00.000"}
    }"#;

    #[test]
    fn an_on_failure_record_names_the_discarded_range() {
        let record = parse(ON_FAILURE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            record.context.and_then(|c| c.condition).as_deref(),
            Some("RetryAttemptsExhausted")
        );
        assert_eq!(record.batch.start_sequence_number, "800000000003126276362");
        assert_eq!(record.batch.end_sequence_number, "800000000003126276363");
        assert!(
            record
                .batch
                .stream_arn
                .ends_with("/stream/2026-11-29T00:00:00.000")
        );
    }

    #[test]
    fn anything_else_is_refused_saying_where_the_function_should_listen() {
        let err = parse(r#"{"orderId": 1}"#).err().unwrap_or_default();
        assert!(err.contains("on-failure queue"), "{err}");
    }

    #[test]
    fn sequence_numbers_compare_as_numbers_of_any_length() {
        assert_eq!(compare_sequence("9", "10"), Ordering::Less);
        assert_eq!(
            compare_sequence("800000000003126276363", "800000000003126276362"),
            Ordering::Greater
        );
        assert_eq!(compare_sequence("0042", "42"), Ordering::Equal);
        assert_eq!(
            compare_sequence("111111111111111111111111111111", "99999999999999999999"),
            Ordering::Greater
        );
    }

    fn record(event: &str, item_type: &str, status: &str) -> Record {
        use aws_sdk_dynamodbstreams::types::{AttributeValue as Av, OperationType, StreamRecord};
        let s = |v: &str| Av::S(v.to_owned());
        let image = std::collections::HashMap::from([
            ("PK".to_owned(), s("USER#1")),
            ("SK".to_owned(), s("MESSAGE#X#1")),
            ("ItemType".to_owned(), s(item_type)),
            ("Status".to_owned(), s(status)),
            ("Topic".to_owned(), s("orders")),
            ("Payload".to_owned(), s("{}")),
        ]);
        let keys = std::collections::HashMap::from([
            ("PK".to_owned(), s("USER#1")),
            ("SK".to_owned(), s("MESSAGE#X#1")),
        ]);
        Record::builder()
            .event_name(OperationType::from(event))
            .dynamodb(
                StreamRecord::builder()
                    .set_keys(Some(keys))
                    .set_new_image(Some(image))
                    .sequence_number("1")
                    .build(),
            )
            .build()
    }

    #[test]
    fn a_recovered_item_is_named_by_its_message_id_and_trace_for_the_log_line() {
        use aws_sdk_dynamodbstreams::types::AttributeValue as Av;
        // A minimal producer's item: neither; the id the publisher would derive.
        let minimal = pending_insert(
            &record("INSERT", "PENDING_MESSAGE", "PENDING"),
            &KeyNames::default(),
        )
        .unwrap_or_else(|| panic!("pending"));
        assert_eq!(minimal.message_id, schema::derive_message_id(&minimal.key));
        assert_eq!(minimal.trace_id, "-");
        // A library item: its own id and trace.
        let mut traced = record("INSERT", "PENDING_MESSAGE", "PENDING");
        if let Some(change) = traced.dynamodb.as_mut()
            && let Some(image) = change.new_image.as_mut()
        {
            image.insert("MessageId".into(), Av::S("m-7".into()));
            let tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";
            image.insert("TraceParent".into(), Av::S(tp.into()));
        }
        let traced =
            pending_insert(&traced, &KeyNames::default()).unwrap_or_else(|| panic!("pending"));
        assert_eq!(traced.message_id, "m-7");
        assert_eq!(traced.trace_id, "5759e988bd862e3fe1be46a994272793");
    }

    #[test]
    fn only_inserted_pending_outbox_items_are_recovered() {
        let key = |r: Record| pending_insert(&r, &KeyNames::default()).map(|d| d.key);
        let want = Some(ItemKey {
            pk: "USER#1".into(),
            sk: "MESSAGE#X#1".into(),
        });
        assert_eq!(key(record("INSERT", "PENDING_MESSAGE", "PENDING")), want);
        assert_eq!(key(record("MODIFY", "PENDING_MESSAGE", "SENT")), None);
        assert_eq!(key(record("INSERT", "ORDER", "PENDING")), None);
        assert_eq!(key(record("INSERT", "PENDING_MESSAGE", "FAILED")), None);
        let seen = pending_insert(
            &record("INSERT", "PENDING_MESSAGE", "PENDING"),
            &KeyNames::default(),
        )
        .unwrap_or_else(|| panic!("pending"))
        .seen;
        assert!(
            !seen.is_valid(&dynamodb_outbox_core::SweepShards::default()),
            "a minimal item carries no index attributes"
        );
    }

    #[test]
    fn only_the_regions_own_messages_are_recovered() {
        use aws_sdk_dynamodbstreams::types::{AttributeValue as Av, OperationType, StreamRecord};
        use dynamodb_outbox_core::HomeRegions;
        let homed = |home: Option<&str>| {
            let plain = record("INSERT", "PENDING_MESSAGE", "PENDING");
            let change = plain
                .dynamodb()
                .cloned()
                .unwrap_or_else(|| panic!("change"));
            let mut image = change.new_image().cloned().unwrap_or_default();
            if let Some(home) = home {
                image.insert("HomeRegion".to_owned(), Av::S(home.to_owned()));
            }
            Record::builder()
                .event_name(OperationType::Insert)
                .dynamodb(
                    StreamRecord::builder()
                        .set_keys(change.keys().cloned())
                        .set_new_image(Some(image))
                        .sequence_number("1")
                        .build(),
                )
                .build()
        };
        let keys = KeyNames::default()
            .regions(HomeRegions::in_region("eu-west-1").default_home("us-east-1"));
        let recovered = |home| pending_insert(&homed(home), &keys).is_some();
        assert!(recovered(Some("eu-west-1")));
        assert!(
            !recovered(Some("us-east-1")),
            "us-east-1's deployment recovers it"
        );
        assert!(!recovered(None), "the default home's");
        assert!(pending_insert(&homed(Some("us-east-1")), &KeyNames::default()).is_some());
    }

    #[test]
    fn a_record_of_a_table_keyed_otherwise_is_read_with_its_names() {
        use aws_sdk_dynamodbstreams::types::{AttributeValue as Av, StreamRecord};
        let renamed = |map: &std::collections::HashMap<String, Av>| {
            map.iter()
                .map(|(k, v)| (k.to_lowercase(), v.clone()))
                .collect::<std::collections::HashMap<_, _>>()
        };
        let plain = record("INSERT", "PENDING_MESSAGE", "PENDING");
        let change = plain.dynamodb().expect("change");
        let mut image = change.new_image().cloned().unwrap_or_default();
        for name in ["PK", "SK"] {
            if let Some(v) = image.remove(name) {
                image.insert(name.to_lowercase(), v);
            }
        }
        let keyed = Record::builder()
            .set_event_name(plain.event_name().cloned())
            .dynamodb(
                StreamRecord::builder()
                    .set_keys(change.keys().map(renamed))
                    .set_new_image(Some(image))
                    .build(),
            )
            .build();
        let key = pending_insert(&keyed, &KeyNames::new("pk", "sk"))
            .expect("pending")
            .key;
        assert_eq!(
            (key.pk.as_str(), key.sk.as_str()),
            ("USER#1", "MESSAGE#X#1")
        );
    }
}
