//! Producer API: the application's own writes and its outbox messages in one
//! `TransactWriteItems`, so both land or neither does.
//!
//! Everything AWS would refuse is refused here first (`check`), with an error
//! that says what to change ([`ProducerError`]). The items are the schema's
//! [`OutboxItem`](dynamodb_outbox_core::__private::schema::OutboxItem), written through `serde_dynamo`.

mod check;
mod error;
mod offload;
mod prepared;
mod trace;

pub use dynamodb_outbox_core::NewMessage;
pub use dynamodb_outbox_core::producer::{CancelledAction, MAX_TRANSACTION_ACTIONS};
pub use error::ProducerError;
pub use prepared::PreparedCommit;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox_core::trace::TraceContext;
use dynamodb_outbox_core::{KeyNames, SharedClock, SweepShards, clock};
use std::collections::HashMap;
use std::time::Duration;

/// A committed transaction: the ids its messages carry to every consumer (see
/// [`OutboxWriter::commit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The `MessageId`s written, in the order of the messages given.
    pub message_ids: Vec<String>,
    /// Their sort keys.
    pub sort_keys: Vec<String>,
}

/// Writes business changes and outbox messages atomically.
///
/// One writer per outbox table, built once and shared (it is cheap to clone).
///
/// ```no_run
/// use dynamodb_outbox::OutboxWriter;
/// use std::time::Duration;
///
/// # async fn build() -> OutboxWriter {
/// let aws = aws_config::load_from_env().await;
/// OutboxWriter::new(dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws), "orders")
///     // every message in the sweeper index from its write, due two minutes after it
///     .index_at_commit(true)
///     .sweep_grace(Duration::from_secs(120))
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OutboxWriter {
    client: aws_sdk_dynamodb::Client,
    table: String,
    sweep_grace: Duration,
    index_at_commit: bool,
    key_schemas: HashMap<String, Vec<String>>,
    keys: KeyNames,
    clock: SharedClock,
    large: Option<offload::Offloader>,
    capture_lambda_trace: bool,
    home_region: Option<String>,
}

impl OutboxWriter {
    /// A writer for the outbox `table`. Its messages are written outside the sweeper
    /// index: the stream path publishes them, and puts in the index only those it
    /// could not finish ([`OutboxWriter::index_at_commit`]).
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        let home_region = client.config().region().map(|r| r.as_ref().to_owned());
        OutboxWriter {
            client,
            table: table.into(),
            sweep_grace: Duration::from_secs(60),
            index_at_commit: false,
            key_schemas: HashMap::new(),
            keys: KeyNames::default(),
            clock: clock::system(),
            large: None,
            capture_lambda_trace: true,
            home_region,
        }
    }

    /// The region written as each message's home (`HomeRegion`): on a global table,
    /// the region whose deployment publishes it (docs/global-tables.md). By default
    /// the client's region, the replica the transaction commits to; `None` writes no
    /// home, as a minimal producer does (the deployments' default home region's). A
    /// value that is not a region name (empty, or with spaces around it) fails the
    /// commit with [`ProducerError::InvalidHomeRegion`]: the stream filter would not
    /// deliver its messages.
    pub fn home_region(mut self, region: Option<String>) -> Self {
        self.home_region = region;
        self
    }

    /// Whether a message committed without a trace of its own
    /// ([`NewMessage::trace`]) takes the Lambda invocation's (`_X_AMZN_TRACE_ID`, which
    /// the Rust runtime sets per invocation): on by default. With the `opentelemetry`
    /// feature the active span's context comes first, when there is one (see
    /// [`OutboxWriter::prepare_at`]). Off, only the traces you give and the active
    /// span's are stored. Outside Lambda the variable is unset and nothing is captured;
    /// so it is where invocations run concurrently (Lambda Managed Instances), which
    /// leave it unset: there, pass the invocation's `context.xray_trace_id` to
    /// [`NewMessage::trace`] (`TraceContext::from_xray`).
    pub fn capture_lambda_trace(mut self, capture: bool) -> Self {
        self.capture_lambda_trace = capture;
        self
    }

    /// Enables the large-payload offload: a payload an outbox item cannot hold (400 KB with
    /// the other attributes) is written to `bucket` under `outbox/<MessageId>` before
    /// the transaction, and the item carries the extended clients' pointer instead;
    /// the publisher forwards it as it is, and the consumer library resolves it.
    /// Build `s3` with [`crate::s3_client`] (path-style addressing on an overridden
    /// endpoint). An object whose transaction fails is left to the bucket's
    /// lifecycle rule: no message refers to it.
    ///
    /// ```no_run
    /// use dynamodb_outbox::{OutboxWriter, s3_client};
    ///
    /// # async fn writer() -> OutboxWriter {
    /// let aws = aws_config::load_from_env().await;
    /// OutboxWriter::new(dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws), "orders")
    ///     .large_payloads(s3_client(&aws), "orders-outbox-large-payloads")
    ///     // payloads over 64 KiB go to S3 even where the item could hold them
    ///     .large_payload_threshold(64 * 1024)
    /// # }
    /// ```
    pub fn large_payloads(mut self, s3: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        let threshold = self.large.as_ref().and_then(|l| l.threshold);
        self.large = Some(offload::Offloader {
            client: s3,
            bucket: bucket.into(),
            threshold,
        });
        self
    }

    /// With the large-payload offload enabled, payloads larger than `bytes` go to S3 even when
    /// the item could hold them (smaller items, cheaper writes and streams).
    pub fn large_payload_threshold(mut self, bytes: usize) -> Self {
        if let Some(large) = &mut self.large {
            large.threshold = Some(bytes);
        }
        self
    }

    /// Whether every message enters the sweeper index at commit (off by default).
    ///
    /// Off, a message is written once by the transaction and marked once by the
    /// publisher, and enters the sparse index only when the stream path could not
    /// finish it: the publisher adopts what it could not send or mark, the recovery
    /// function what a stream batch discarded, the backstop scan the rest. On, the
    /// sweeper finds every message `sweep_grace` after its write whatever became of
    /// its stream record, without waiting for those paths. The price: two more index
    /// write units per message (the entry, and its removal by the `SENT` mark), about
    /// $1.25 per million messages at on-demand prices (`outbox-devkit cost` prints
    /// it), and index writes that grow with the commit rate (docs/scale.md).
    pub fn index_at_commit(mut self, index: bool) -> Self {
        self.index_at_commit = index;
        self
    }

    /// How long after its write the sweeper may pick up a message indexed at commit
    /// ([`OutboxWriter::index_at_commit`]; one minute by default). A message the
    /// stream path adopts takes its adopter's due time instead.
    pub fn sweep_grace(mut self, grace: Duration) -> Self {
        self.sweep_grace = grace;
        self
    }

    /// The clock that stamps `CreatedAt` (the system clock by default).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Names the key attributes of another table, so that two `Put`s of one item in
    /// that table are caught before AWS refuses them. (Updates, deletes and
    /// condition checks carry their key and need no schema.)
    pub fn key_schema(mut self, table: impl Into<String>, keys: &[&str]) -> Self {
        self.key_schemas
            .insert(table.into(), keys.iter().map(|k| (*k).to_owned()).collect());
        self
    }

    /// Names the outbox table's key and TTL attributes (`PK`, `SK`, `ExpiresAt` by
    /// default): the writer's items carry their key and TTL under these names, as the
    /// functions' `OUTBOX_PARTITION_KEY`, `OUTBOX_SORT_KEY` and `OUTBOX_TTL_ATTRIBUTE`
    /// say. Names a table cannot have (empty, a sort key named as the partition key, a
    /// TTL on a key) are refused by every [`prepare`](OutboxWriter::prepare), before
    /// any request ([`ProducerError::InvalidKeyNames`]).
    ///
    /// ```
    /// use dynamodb_outbox::{KeyNames, NewMessage, OutboxWriter, ProducerError};
    ///
    /// # let aws = aws_types::SdkConfig::builder()
    /// #     .behavior_version(dynamodb_outbox::aws_sdk_dynamodb::config::BehaviorVersion::latest())
    /// #     .build();
    /// let client = dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws);
    /// // A single-table design keyed `pk`/`sk` whose TTL attribute is `expires_at`.
    /// let writer = OutboxWriter::new(client.clone(), "app")
    ///     .key_names(KeyNames::new("pk", "sk").ttl_attribute("expires_at"));
    /// let prepared = writer.prepare(vec![], &[NewMessage::new("ORDER#42", "orders", "{}")])?;
    /// assert!(prepared.committed().sort_keys[0].starts_with("MESSAGE#"));
    ///
    /// let wrong = OutboxWriter::new(client, "app").key_names(KeyNames::new("id", "id"));
    /// let err = wrong.prepare(vec![], &[NewMessage::new("ORDER#42", "orders", "{}")]).unwrap_err();
    /// assert!(matches!(err, ProducerError::InvalidKeyNames(_)));
    /// # Ok::<(), ProducerError>(())
    /// ```
    pub fn key_names(mut self, keys: KeyNames) -> Self {
        self.keys = keys;
        self
    }

    /// The sweeper index shards the writer's messages indexed at commit go to
    /// ([`OutboxWriter::index_at_commit`]; 16 by default): set it
    /// to the deployment's `sweep_shards` (its functions' `OUTBOX_SWEEP_SHARDS`), and
    /// while that count changes, to the same change. [`KeyNames`] carries the layout
    /// too, so set it after [`key_names`](OutboxWriter::key_names).
    ///
    /// ```
    /// use dynamodb_outbox::{ConfigError, OutboxWriter, SweepShards};
    ///
    /// # let aws = aws_types::SdkConfig::builder()
    /// #     .behavior_version(dynamodb_outbox::aws_sdk_dynamodb::config::BehaviorVersion::latest())
    /// #     .build();
    /// let client = dynamodb_outbox::aws_sdk_dynamodb::Client::new(&aws);
    /// // A table taking more than ~8,000 messages a second (docs/scale.md).
    /// let writer = OutboxWriter::new(client, "orders").sweep_shards(SweepShards::new(64)?);
    /// assert_eq!(writer.keys().sweep_shards.count(), 64);
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn sweep_shards(mut self, shards: SweepShards) -> Self {
        self.keys.sweep_shards = shards;
        self
    }

    /// The outbox table's key and TTL attribute names.
    pub fn keys(&self) -> &KeyNames {
        &self.keys
    }

    /// The outbox table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Builds and checks the transaction without sending it: new message ids, the
    /// items, and the idempotency token of this transaction. Send it with
    /// [`OutboxWriter::commit_prepared`] — again, if an attempt's outcome is unknown.
    ///
    /// ```no_run
    /// use dynamodb_outbox::{NewMessage, OutboxWriter, ProducerError};
    ///
    /// # async fn announce(writer: &OutboxWriter) -> Result<(), ProducerError> {
    /// let message = NewMessage::new("ORDER#42", "orders", r#"{"orderId":42}"#);
    /// let prepared = writer.prepare(vec![], &[message])?;
    /// // The same ids and the same idempotency token on every attempt: a retry after a
    /// // timeout whose request may have committed never writes the message twice.
    /// let committed = loop {
    ///     match writer.commit_prepared(&prepared).await {
    ///         Err(e) if e.is_retryable() => continue,
    ///         other => break other?,
    ///     }
    /// };
    /// assert_eq!(committed.message_ids, prepared.committed().message_ids);
    /// # Ok(())
    /// # }
    /// ```
    pub fn prepare(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
    ) -> Result<PreparedCommit, ProducerError> {
        self.prepare_at(business, messages, self.clock.now_ms())
    }

    /// [`OutboxWriter::prepare`] with `CreatedAt` = `now_ms`.
    ///
    /// Each message is committed under a trace: its own ([`NewMessage::trace`]),
    /// else — with the `opentelemetry` feature — the active span's (the current
    /// `tracing` span through a `tracing-opentelemetry` layer, else OpenTelemetry's
    /// current context), else the Lambda invocation's X-Ray trace
    /// ([`OutboxWriter::capture_lambda_trace`]), else none.
    pub fn prepare_at(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
        now_ms: i64,
    ) -> Result<PreparedCommit, ProducerError> {
        let ambient = trace::active_span().or_else(|| {
            self.capture_lambda_trace
                .then(trace::lambda_invocation)
                .flatten()
        });
        self.prepare_under(business, messages, now_ms, ambient.as_ref())
    }

    /// [`OutboxWriter::prepare_at`] under `ambient`, the trace a message without
    /// one of its own is committed in.
    fn prepare_under(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
        now_ms: i64,
        ambient: Option<&TraceContext>,
    ) -> Result<PreparedCommit, ProducerError> {
        if messages.is_empty() {
            return Err(ProducerError::NoMessages);
        }
        self.keys
            .validate()
            .map_err(ProducerError::InvalidKeyNames)?;
        if let Some(home) = self.home_region.as_deref().filter(|h| !is_region_name(h)) {
            return Err(ProducerError::InvalidHomeRegion(home.to_owned()));
        }
        let count = business.len() + messages.len();
        if count > MAX_TRANSACTION_ACTIONS {
            return Err(ProducerError::TooManyActions { count });
        }
        let first_message = business.len();
        let mut actions = business;
        let mut committed = Committed {
            message_ids: Vec::with_capacity(messages.len()),
            sort_keys: Vec::with_capacity(messages.len()),
        };
        let mut aggregates = Vec::with_capacity(messages.len());
        let mut uploads = Vec::new();
        // Each aggregate's last message so far: the next one names it (`Follows`), so
        // that the fence can read it by key whatever order the records arrive in.
        let mut last_of: HashMap<&str, String> = HashMap::new();
        // Each aggregate's messages so far: a sequenced sort key carries the place.
        let mut position_of: HashMap<&str, u8> = HashMap::new();
        for (index, m) in messages.iter().enumerate() {
            if let Some(reason) = m.invalid() {
                return Err(ProducerError::InvalidMessage { index, reason });
            }
            let id = uuid::Uuid::now_v7().to_string();
            let position = position_of.entry(m.aggregate.as_str()).or_insert(0u8);
            let mut item = m.outbox_item_at(*position, &id, now_ms);
            if self.index_at_commit {
                item = item.indexed_at_commit(&self.keys.sweep_shards, self.sweep_grace);
            }
            *position = position.saturating_add(1);
            if let (None, Some(trace)) = (&m.trace, ambient) {
                item = item.with_trace(trace);
            }
            item.home_region.clone_from(&self.home_region);
            let sk = item.sk.clone().unwrap_or_default();
            item.follows = last_of.insert(m.aggregate.as_str(), sk.clone());
            let mut put = self.put(index, &item)?;
            let offload = self
                .large
                .as_ref()
                .and_then(|l| l.decide(&put, &m.payload, &id));
            if let Some(pointer) = offload {
                item.payload = Some(pointer.encode());
                item.payload_size = u64::try_from(m.payload.len()).ok();
                put = self.put(index, &item)?;
                uploads.push(offload::Upload {
                    pointer,
                    payload: m.payload.clone(),
                });
            }
            actions.push(put);
            committed.message_ids.push(id);
            committed.sort_keys.push(sk);
            aggregates.push(m.aggregate.clone());
        }
        check::check(&actions, &self.table, &self.keys, &self.key_schemas)?;
        let described = actions
            .iter()
            .map(|a| check::describe(a, &self.table))
            .collect();
        Ok(PreparedCommit::new(
            actions,
            described,
            first_message,
            aggregates,
            committed,
            uploads,
        ))
    }

    /// The conditional `Put` of one outbox item: never over an existing item.
    fn put(
        &self,
        index: usize,
        item: &dynamodb_outbox_core::__private::schema::OutboxItem,
    ) -> Result<TransactWriteItem, ProducerError> {
        let invalid = |reason| ProducerError::InvalidMessage { index, reason };
        let mut item: HashMap<String, AttributeValue> =
            serde_dynamo::to_item(item).map_err(|_| invalid("could not serialise the item"))?;
        self.keys.to_configured(&mut item);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", &self.keys.partition_key)
            .build()
            .map_err(|_| invalid("could not build the Put"))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// Writes the application's actions and the messages in one transaction: both
    /// land, or neither does. Calling it again after an error mints new message ids;
    /// to retry an attempt whose outcome is unknown (a timeout), [`prepare`] once
    /// and call [`commit_prepared`] again.
    ///
    /// ```no_run
    /// use dynamodb_outbox::aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
    /// use dynamodb_outbox::{NewMessage, OutboxWriter};
    ///
    /// # async fn ship(writer: &OutboxWriter) -> Result<(), Box<dyn std::error::Error>> {
    /// let shipped = Update::builder()
    ///     .table_name("orders")
    ///     .key("PK", AttributeValue::S("ORDER#42".into()))
    ///     .key("SK", AttributeValue::S("ORDER".into()))
    ///     .update_expression("SET #s = :shipped")
    ///     .expression_attribute_names("#s", "Status")
    ///     .expression_attribute_values(":shipped", AttributeValue::S("SHIPPED".into()))
    ///     .build()?;
    /// let message = NewMessage::new("ORDER#42", "orders", r#"{"orderId":42,"status":"SHIPPED"}"#)
    ///     .event_type("OrderShipped");
    /// let committed = writer
    ///     .commit(vec![TransactWriteItem::builder().update(shipped).build()], &[message])
    ///     .await?;
    /// println!("announced as {}", committed.message_ids[0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`prepare`]: OutboxWriter::prepare
    /// [`commit_prepared`]: OutboxWriter::commit_prepared
    pub async fn commit(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
    ) -> Result<Committed, ProducerError> {
        let prepared = self.prepare(business, messages)?;
        self.commit_prepared(&prepared).await
    }
}

#[cfg(test)]
mod tests;

/// Whether `home` can be a region's name as the stream filter compares it: not empty,
/// nothing around it (the filter matches `HomeRegion` exactly; the model checker
/// found "" and " us-east-1 " left for the sweeper's backstop).
fn is_region_name(home: &str) -> bool {
    !home.is_empty() && home.trim() == home
}
