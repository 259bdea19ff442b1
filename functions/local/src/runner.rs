//! What Lambda's DynamoDB event source mapping does, locally: poll each shard,
//! apply the deployed FilterCriteria, batch, invoke the handler, and honour partial
//! batch responses — checkpoint before the lowest failed sequence number, deliver
//! again from there, give up on a record after a retry limit.

use crate::filter::FilterCriteria;
use crate::stream::{Position, StreamError, StreamReader, event_of};
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use std::collections::HashMap;
use std::future::Future;

/// Event source mapping settings (Lambda's names and defaults where they matter).
#[derive(Debug, Clone)]
pub struct MappingSettings {
    /// Most records per invocation (Lambda's `BatchSize`, default 100).
    pub batch_size: usize,
    /// Deliveries of one record before it is skipped (`MaximumRetryAttempts`).
    pub max_retry_attempts: u32,
}

impl Default for MappingSettings {
    fn default() -> Self {
        MappingSettings {
            batch_size: 100,
            max_retry_attempts: 10,
        }
    }
}

/// What one poll did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollStats {
    /// Records read from the stream.
    pub read: usize,
    /// Records that passed the filter and were delivered.
    pub delivered: usize,
    /// Handler invocations.
    pub invocations: usize,
    /// Records reported as failed by the handler.
    pub failed: usize,
    /// Records skipped after exhausting their retries (Lambda would send their
    /// metadata to the on-failure destination; the sweeper recovers the message).
    pub given_up: usize,
}

/// A stream event source mapping running on this machine.
#[derive(Debug)]
pub struct StreamMapping {
    reader: StreamReader,
    filter: FilterCriteria,
    settings: MappingSettings,
    attempts: HashMap<String, u32>,
    fence: Option<Fence>,
}

/// Serialises stream reads with writers' transactions, against an emulator quirk:
/// moto applies a transaction's writes (and appends their stream records) before it
/// checks the remaining conditions, then restores the whole table — stream included —
/// when one fails. A read in that window sees records of a transaction that never
/// committed, and later records reuse their sequence numbers. Real DynamoDB has no
/// such window. Writers in the same process hold the fence while they commit.
pub type Fence = std::sync::Arc<tokio::sync::Mutex<()>>;

impl StreamMapping {
    /// A mapping over `reader` with the outbox's deployed filter.
    pub fn new(reader: StreamReader, settings: MappingSettings) -> Self {
        StreamMapping {
            reader,
            filter: FilterCriteria::outbox(),
            settings,
            attempts: HashMap::new(),
            fence: None,
        }
    }

    /// Holds `fence` while reading the stream (see [`Fence`]).
    pub fn with_fence(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Starts from the end of the stream (Lambda's `LATEST`).
    pub async fn start_at_latest(&mut self) -> Result<(), StreamError> {
        self.reader.skip_to_end().await
    }

    /// Reads what is new on every shard and delivers it in batches until each shard
    /// is caught up or a batch failed (the failed part is delivered on the next poll,
    /// as Lambda retries).
    pub async fn poll<H, F>(&mut self, handler: &H) -> Result<PollStats, StreamError>
    where
        H: Fn(Event) -> F,
        F: Future<Output = Result<DynamoDbEventResponse, String>>,
    {
        let mut stats = PollStats::default();
        let limit = i32::try_from(self.settings.batch_size.max(1) * 10).unwrap_or(1000);
        let shards = {
            let _guard = match &self.fence {
                Some(f) => Some(f.lock().await),
                None => None,
            };
            self.reader.read(limit).await?
        };
        for (shard, records) in shards {
            stats.read += records.len();
            let mut rest: &[EventRecord] = &records;
            while !rest.is_empty() {
                let take = rest.len().min(self.settings.batch_size.max(1));
                let (batch, tail) = rest.split_at(take);
                let Some(last_seq) = batch.last().and_then(|r| r.change.sequence_number.clone())
                else {
                    break;
                };
                let delivered: Vec<EventRecord> = batch
                    .iter()
                    .filter(|r| serde_json::to_value(r).is_ok_and(|v| self.filter.matches(&v)))
                    .cloned()
                    .collect();
                if delivered.is_empty() {
                    self.reader.set_position(&shard, Position::After(last_seq));
                    rest = tail;
                    continue;
                }
                stats.delivered += delivered.len();
                stats.invocations += 1;
                let response = match handler(event_of(delivered.clone())).await {
                    Ok(r) => r,
                    Err(e) => {
                        // The invocation failed (crash, timeout): Lambda retries the
                        // whole batch, up to the retry limit, then skips it.
                        stats.failed += delivered.len();
                        let first = batch.first().and_then(|r| r.change.sequence_number.clone());
                        if let Some(first) = first {
                            let n = self.attempts.entry(first.clone()).or_insert(0);
                            *n += 1;
                            if *n > self.settings.max_retry_attempts {
                                tracing::error!(error = %e, records = delivered.len(), "batch exhausted its retries; skipping it (the sweeper recovers the messages)");
                                stats.given_up += delivered.len();
                                self.attempts.remove(&first);
                                self.reader.set_position(&shard, Position::After(last_seq));
                            } else {
                                tracing::warn!(error = %e, records = delivered.len(), "invocation failed; the whole batch is delivered again");
                                self.reader.set_position(&shard, Position::At(first));
                            }
                        }
                        break;
                    }
                };
                let failed: Vec<&str> = response
                    .batch_item_failures
                    .iter()
                    .filter_map(|f| f.item_identifier.as_deref())
                    .collect();
                if failed.is_empty() {
                    self.reader.set_position(&shard, Position::After(last_seq));
                    rest = tail;
                    continue;
                }
                stats.failed += failed.len();
                // Checkpoint at the lowest failed sequence number, as Lambda does.
                let lowest = delivered
                    .iter()
                    .filter_map(|r| r.change.sequence_number.as_deref())
                    .find(|s| failed.contains(s))
                    .map(str::to_owned);
                match lowest {
                    Some(seq) => {
                        let n = self.attempts.entry(seq.clone()).or_insert(0);
                        *n += 1;
                        if *n > self.settings.max_retry_attempts {
                            tracing::error!(sequence_number = %seq, "record exhausted its retries; skipping it (the sweeper recovers the message)");
                            stats.given_up += 1;
                            self.attempts.remove(&seq);
                            self.reader.set_position(&shard, Position::After(seq));
                        } else {
                            self.reader.set_position(&shard, Position::At(seq));
                        }
                    }
                    None => {
                        // An identifier that matches no record: Lambda retries the whole batch.
                        if let Some(first) =
                            batch.first().and_then(|r| r.change.sequence_number.clone())
                        {
                            self.reader.set_position(&shard, Position::At(first));
                        }
                    }
                }
                break;
            }
        }
        Ok(stats)
    }
}
