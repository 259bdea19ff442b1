//! Reading a table's DynamoDB stream and turning its records into the exact event
//! shape Lambda delivers, so handler tests run on both emulators (moto cannot run
//! Lambda functions; on MiniStack the deployed tests use its real event source
//! mappings instead).

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use aws_smithy_types::error::display::DisplayErrorContext;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A stream could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading the stream failed: {0}")]
pub struct StreamError(pub String);

fn err(e: impl std::error::Error) -> StreamError {
    StreamError(DisplayErrorContext(&e).to_string())
}

/// Where to read a shard from next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// From the oldest record.
    TrimHorizon,
    /// From the record with this sequence number (re-delivery after a failure).
    At(String),
    /// From the record after this sequence number.
    After(String),
}

/// Reads every shard of one stream, remembering a position per shard.
///
/// A fresh iterator is taken on every read: the emulator's iterators break after a
/// failed transaction, and the cost on AWS is one cheap call.
#[derive(Debug)]
pub struct StreamReader {
    client: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    region: String,
    positions: BTreeMap<String, Position>,
}

impl StreamReader {
    /// A reader starting at the oldest record of every shard.
    pub fn new(
        client: aws_sdk_dynamodbstreams::Client,
        stream_arn: impl Into<String>,
        region: impl Into<String>,
    ) -> Self {
        StreamReader {
            client,
            stream_arn: stream_arn.into(),
            region: region.into(),
            positions: BTreeMap::new(),
        }
    }

    /// The stream's ARN.
    pub fn stream_arn(&self) -> &str {
        &self.stream_arn
    }

    /// The latest stream of a table.
    pub async fn stream_arn_of(
        client: &aws_sdk_dynamodb::Client,
        table: &str,
    ) -> Result<String, StreamError> {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(err)?;
        out.table()
            .and_then(|t| t.latest_stream_arn())
            .map(str::to_owned)
            .ok_or_else(|| {
                StreamError(format!(
                    "table {table} has no stream: enable one with view type NEW_IMAGE"
                ))
            })
    }

    /// Reads up to `limit` records from each shard from its current position,
    /// without moving it. Call [`StreamReader::set_position`] to advance.
    pub async fn read(
        &mut self,
        limit: i32,
    ) -> Result<Vec<(String, Vec<EventRecord>)>, StreamError> {
        let described = self
            .client
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .map_err(err)?;
        let shards: Vec<String> = described
            .stream_description()
            .map(|d| {
                d.shards()
                    .iter()
                    .filter_map(|s| s.shard_id().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = Vec::with_capacity(shards.len());
        for shard in shards {
            let position = self
                .positions
                .get(&shard)
                .cloned()
                .unwrap_or(Position::TrimHorizon);
            let mut req = self
                .client
                .get_shard_iterator()
                .stream_arn(&self.stream_arn)
                .shard_id(&shard);
            req = match &position {
                Position::TrimHorizon => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
                Position::At(seq) => req
                    .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                    .sequence_number(seq),
                Position::After(seq) => req
                    .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                    .sequence_number(seq),
            };
            let iterator = req.send().await.map_err(err)?;
            let Some(iterator) = iterator.shard_iterator() else {
                out.push((shard, Vec::new()));
                continue;
            };
            let records = self
                .client
                .get_records()
                .shard_iterator(iterator)
                .limit(limit)
                .send()
                .await
                .map_err(err)?;
            let converted = records
                .records()
                .iter()
                .map(|r| to_lambda_record(r, &self.stream_arn, &self.region))
                .collect::<Result<Vec<_>, _>>()?;
            out.push((shard, converted));
        }
        Ok(out)
    }

    /// Moves a shard's position.
    pub fn set_position(&mut self, shard: &str, position: Position) {
        self.positions.insert(shard.to_owned(), position);
    }

    /// Reads and advances past everything new in every shard, as one Lambda event.
    /// Reads page after page: `GetRecords` stops at 1 MB (on AWS and MiniStack), so
    /// one call may not hold everything written.
    pub async fn next_event(&mut self, limit: i32) -> Result<Event, StreamError> {
        let mut all = Vec::new();
        loop {
            let mut got = 0;
            for (shard, records) in self.read(limit).await? {
                if let Some(last) = records
                    .last()
                    .and_then(|r| r.change.sequence_number.clone())
                {
                    self.set_position(&shard, Position::After(last));
                }
                got += records.len();
                all.extend(records);
            }
            if got == 0 {
                return Ok(event_of(all));
            }
        }
    }
}

/// A Lambda DynamoDB event holding `records`.
pub fn event_of(records: Vec<EventRecord>) -> Event {
    let mut event = Event::default();
    event.records = records;
    event
}

/// The record as Lambda delivers it, as JSON (what FilterCriteria patterns see).
pub fn record_json(r: &Record, stream_arn: &str, region: &str) -> Value {
    let mut dynamodb = serde_json::Map::new();
    if let Some(s) = r.dynamodb() {
        if let Some(t) = s.approximate_creation_date_time() {
            dynamodb.insert("ApproximateCreationDateTime".into(), json!(t.secs()));
        }
        if let Some(keys) = s.keys() {
            dynamodb.insert("Keys".into(), item_json(keys));
        }
        if let Some(img) = s.new_image() {
            dynamodb.insert("NewImage".into(), item_json(img));
        }
        if let Some(img) = s.old_image() {
            dynamodb.insert("OldImage".into(), item_json(img));
        }
        if let Some(seq) = s.sequence_number() {
            dynamodb.insert("SequenceNumber".into(), json!(seq));
        }
        dynamodb.insert("SizeBytes".into(), json!(s.size_bytes().unwrap_or(0)));
        if let Some(v) = s.stream_view_type() {
            dynamodb.insert("StreamViewType".into(), json!(v.as_str()));
        }
    }
    let mut record = json!({
        "awsRegion": r.aws_region().unwrap_or(region),
        "dynamodb": Value::Object(dynamodb),
        "eventID": r.event_id().unwrap_or_default(),
        "eventName": r.event_name().map(|n| n.as_str()).unwrap_or_default(),
        "eventSource": r.event_source().unwrap_or("aws:dynamodb"),
        "eventVersion": r.event_version().unwrap_or("1.1"),
        "eventSourceARN": stream_arn,
    });
    if let Some(u) = r.user_identity() {
        record["userIdentity"] = json!({"type": u.r#type().unwrap_or_default(), "principalId": u.principal_id().unwrap_or_default()});
    }
    record
}

fn item_json(
    item: &std::collections::HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
) -> Value {
    let item: serde_dynamo::Item = item.clone().into();
    serde_json::to_value(item).unwrap_or(Value::Null)
}

/// Converts an SDK stream record into Lambda's event record, through the same JSON
/// Lambda sends, so the handler sees exactly what it sees on AWS.
pub fn to_lambda_record(
    r: &Record,
    stream_arn: &str,
    region: &str,
) -> Result<EventRecord, StreamError> {
    serde_json::from_value(record_json(r, stream_arn, region)).map_err(|e| {
        StreamError(format!(
            "stream record does not fit Lambda's event shape: {e}"
        ))
    })
}
