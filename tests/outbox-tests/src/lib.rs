//! Shared harness for the integration tests: the emulator's endpoint, clients,
//! unique resource names, and a provisioned outbox (table, stream, queues).
//!
//! The emulator is started by `tests/run`, which sets `OUTBOX_ENDPOINT`.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::sqs::{SqsMessage, SqsMessageAttribute};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use dynamodb_outbox::{
    AwsPublisher, Destination, FromSdkConfig, KeyNames, PublisherConfig, Routes,
};
use outbox_devkit::aws::{Clients, sdk_config as sdk_config_for};
use outbox_devkit::provision::{self, QueuePair};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use stream::{StreamReader, event_of};

pub mod pipeline;
pub mod stream;
pub mod subscribers;

pub type Item = HashMap<String, AttributeValue>;

/// The emulator's endpoint. Tests fail with instructions when it is not set.
pub fn endpoint() -> String {
    std::env::var("OUTBOX_ENDPOINT").expect(
        "OUTBOX_ENDPOINT is not set: run the suite with `tests/run`, which installs and starts the emulator",
    )
}

/// AWS configuration pointed at the emulator.
pub async fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_for(Some(&endpoint())).await
}

/// Waits until `done` holds, polling every 250 ms; fails after `limit`.
pub async fn eventually<F, Fut>(limit: std::time::Duration, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still not done after {limit:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// Clients pointed at the emulator.
pub async fn clients() -> Clients {
    Clients::new(&sdk_config().await)
}

/// A name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let id = uuid::Uuid::now_v7().simple().to_string();
    format!("{prefix}-{}-{n}", &id[20..])
}

/// A provisioned outbox: table with stream and index, a standard and a FIFO
/// destination queue, and the outbox dead-letter queue. Keyed `PK`/`SK` unless made
/// with [`Outbox::keyed`].
#[derive(Debug)]
pub struct Outbox {
    pub clients: Clients,
    pub table: String,
    /// The table's key and TTL attribute names.
    pub keys: KeyNames,
    pub reader: StreamReader,
    pub queue: QueuePair,
    pub fifo: QueuePair,
    pub dlq_url: String,
}

impl Outbox {
    pub async fn new() -> Self {
        Self::keyed(KeyNames::default()).await
    }

    /// An outbox whose table's key and TTL attributes are named `keys` (an
    /// application's own table, keyed `pk`/`sk`, say).
    pub async fn keyed(keys: KeyNames) -> Self {
        let clients = clients().await;
        let table = unique("outbox");
        let stream_arn = provision::create_outbox_table_keyed(&clients.dynamodb, &table, &keys)
            .await
            .expect("create table");
        let queue = provision::create_queue_with_dlq(&clients.sqs, &unique("orders"), 30, 3)
            .await
            .expect("create queue");
        let fifo = provision::create_queue_with_dlq(
            &clients.sqs,
            &format!("{}.fifo", unique("ledger")),
            30,
            3,
        )
        .await
        .expect("create fifo queue");
        let dlq_url = provision::create_queue(&clients.sqs, &unique("outbox-dlq"), 30)
            .await
            .expect("create dlq");
        let reader = StreamReader::new(clients.streams.clone(), stream_arn, clients.region.clone());
        Outbox {
            clients,
            table,
            keys,
            reader,
            queue,
            fifo,
            dlq_url,
        }
    }

    /// Routes: `orders` → standard queue, `ledger` → FIFO queue.
    pub fn config(&self) -> PublisherConfig {
        PublisherConfig {
            table_name: self.table.clone(),
            routes: Routes::new(
                [
                    ("orders".to_owned(), Destination::sqs(&self.queue.url)),
                    ("ledger".to_owned(), Destination::sqs(&self.fifo.url)),
                ],
                None,
            ),
            dead_letter: Destination::sqs(&self.dlq_url),
            ttl_days: 7,
            key_names: self.keys.clone(),
        }
    }

    /// The URL of a queue that does not exist, beside the outbox's own: every send to
    /// it fails.
    pub fn missing_queue_url(&self) -> String {
        self.queue.url.replace("orders-", "missing-")
    }

    /// [`Outbox::config`] with `orders` routed to [`Outbox::missing_queue_url`] only.
    pub fn config_with_orders_unreachable(&self) -> PublisherConfig {
        let mut config = self.config();
        config.routes = Routes::new(
            [(
                "orders".to_owned(),
                Destination::sqs(self.missing_queue_url()),
            )],
            None,
        );
        config
    }

    pub fn publisher(&self) -> AwsPublisher {
        self.publisher_with(self.config())
    }

    pub fn publisher_with(&self, config: PublisherConfig) -> AwsPublisher {
        AwsPublisher::with_sink(config, self.clients.dynamodb.clone(), self.clients.sink())
    }

    /// The publisher as the Lambda binary builds it at a cold start: every SQS
    /// destination's size limit (routes and dead-letter queue) learned from the queue.
    pub async fn publisher_learning(&self, config: PublisherConfig) -> AwsPublisher {
        let sink = self.clients.sink();
        let config = sink.learn_limits(config).await;
        AwsPublisher::with_sink(config, self.clients.dynamodb.clone(), sink)
    }

    /// A queue created with `MaximumMessageSize` = `max_message_bytes`.
    pub async fn sized_queue(&self, prefix: &str, max_message_bytes: u32) -> String {
        provision::create_queue_sized(
            &self.clients.sqs,
            &unique(prefix),
            30,
            Some(max_message_bytes),
        )
        .await
        .expect("create sized queue")
    }

    /// A new S3 bucket (the large-payload claim check's), named after the test run.
    pub async fn bucket(&self) -> String {
        let name = unique("large");
        self.clients
            .s3
            .create_bucket()
            .bucket(&name)
            .send()
            .await
            .expect("create bucket");
        name
    }

    pub fn writer(&self) -> dynamodb_outbox::OutboxWriter {
        dynamodb_outbox::OutboxWriter::new(self.clients.dynamodb.clone(), &self.table)
            .key_names(self.keys.clone())
    }

    /// The operator commands' view of the table.
    pub fn ops_table(&self) -> outbox_ops::Table {
        outbox_ops::Table::new(&self.table).key_names(self.keys.clone())
    }

    /// Every record written to the stream since the last call, unfiltered, as
    /// Lambda would deliver it without FilterCriteria.
    pub async fn stream_event(&mut self) -> Event {
        self.reader.next_event(1000).await.expect("read stream")
    }

    /// Only what the deployed FilterCriteria let through — new `PENDING` outbox
    /// items —, picked here by the handler's own classification. (That the real
    /// FilterCriteria deliver exactly these is tested on MiniStack's event source
    /// mapping, in the integration tests' `deployed` module.)
    pub async fn filtered_event(&mut self) -> Event {
        let event = self.stream_event().await;
        event_of(
            event
                .records
                .into_iter()
                .filter(|r| dynamodb_outbox::stream::classify_keyed(r, &self.keys).is_ok())
                .collect(),
        )
    }

    pub async fn item(&self, pk: &str, sk: &str) -> Option<Item> {
        self.clients
            .dynamodb
            .get_item()
            .table_name(&self.table)
            .key(&self.keys.partition_key, AttributeValue::S(pk.into()))
            .key(&self.keys.sort_key, AttributeValue::S(sk.into()))
            .consistent_read(true)
            .send()
            .await
            .expect("get item")
            .item
    }

    /// Every outbox item in the table.
    pub async fn all_items(&self) -> Vec<Item> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .clients
                .dynamodb
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(start)
                .consistent_read(true)
                .send()
                .await
                .expect("scan");
            items.extend(out.items().iter().cloned());
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }

    /// Writes `item` with the longest string `Payload` the table accepts (found by
    /// trying: the emulators' item limits differ from DynamoDB's 400 KB and from each
    /// other), so that the item cannot grow by a single attribute. Returns the payload's
    /// length. The tries go to a probe item of the same size that no function reads
    /// (another sort key of the same length, `ItemType` `PROBING_MESSAGE`), deleted
    /// afterwards, so the stream carries one insert of the item itself.
    pub async fn put_largest(&self, item: Item) -> usize {
        let sk = s(&item, "SK").expect("an SK");
        let mut probe = item.clone();
        probe.insert("SK".to_owned(), sv(&"~".repeat(sk.len())));
        probe.insert("ItemType".to_owned(), sv("PROBING_MESSAGE"));
        let (mut fits, mut too_big) = (300 * 1024, 420 * 1024);
        while too_big - fits > 1 {
            let len = usize::midpoint(fits, too_big);
            probe.insert("Payload".to_owned(), sv(&"p".repeat(len)));
            let put = self
                .clients
                .dynamodb
                .put_item()
                .table_name(&self.table)
                .set_item(Some(probe.clone()))
                .send()
                .await;
            match put {
                Ok(_) => fits = len,
                Err(_) => too_big = len,
            }
        }
        self.clients
            .dynamodb
            .delete_item()
            .table_name(&self.table)
            .key("PK", probe["PK"].clone())
            .key("SK", probe["SK"].clone())
            .send()
            .await
            .expect("delete the probe");
        let mut largest = item;
        largest.insert("Payload".to_owned(), sv(&"p".repeat(fits)));
        self.put_raw(largest).await;
        fits
    }

    /// Writes an item exactly as given (a hand-written producer).
    pub async fn put_raw(&self, item: Item) {
        self.clients
            .dynamodb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .expect("put item");
    }
}

/// Receives everything on a queue (deleting it), with attributes. Stops at the first
/// empty *long* poll: a short poll may answer empty while messages wait (real SQS
/// samples a subset of its servers; emulators page), a long poll asks them all.
pub async fn drain(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<Message> {
    let mut all = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let msgs = out.messages.unwrap_or_default();
        if msgs.is_empty() {
            return all;
        }
        for m in &msgs {
            if let Some(h) = m.receipt_handle() {
                sqs.delete_message()
                    .queue_url(url)
                    .receipt_handle(h)
                    .send()
                    .await
                    .expect("delete");
            }
        }
        all.extend(msgs);
    }
}

/// The bodies of everything on a queue, in the order received ([`drain`]): what an
/// order test compares.
pub async fn drain_bodies(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    drain(sqs, url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect()
}

/// An SQS message as Lambda's SQS event carries it.
pub fn lambda_message(
    m: &aws_sdk_sqs::types::Message,
    queue_arn: &str,
    region: &str,
) -> SqsMessage {
    let mut out = SqsMessage::default();
    out.message_id = m.message_id.clone();
    out.receipt_handle = m.receipt_handle.clone();
    out.body = m.body.clone();
    out.md5_of_body = m.md5_of_body.clone();
    out.md5_of_message_attributes = m.md5_of_message_attributes.clone();
    out.attributes = m
        .attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    out.message_attributes = m
        .message_attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| {
                    let mut attr = SqsMessageAttribute::default();
                    attr.string_value = v.string_value.clone();
                    attr.data_type = Some(v.data_type.clone());
                    (k.clone(), attr)
                })
                .collect()
        })
        .unwrap_or_default();
    out.event_source = Some("aws:sqs".to_owned());
    out.event_source_arn = Some(queue_arn.to_owned());
    out.aws_region = Some(region.to_owned());
    out
}

/// A string message attribute.
pub fn attr(m: &Message, name: &str) -> Option<String> {
    m.message_attributes()
        .and_then(|a| a.get(name))
        .and_then(|v| v.string_value())
        .map(str::to_owned)
}

/// A system attribute (MessageGroupId, MessageDeduplicationId, ...).
pub fn system_attr(m: &Message, name: MessageSystemAttributeName) -> Option<String> {
    m.attributes().and_then(|a| a.get(&name)).cloned()
}

/// A pending outbox item as a minimal producer writes it (the hand-written boto3
/// producer of the README): the attributes the schema requires and no more — no
/// `MessageId`, no `CreatedAt`, no sweeper-index attributes.
pub fn minimal_item(pk: &str, sk: &str, topic: &str, payload: &str) -> Item {
    HashMap::from([
        ("PK".to_owned(), sv(pk)),
        ("SK".to_owned(), sv(sk)),
        ("ItemType".to_owned(), sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), sv(topic)),
        ("Payload".to_owned(), sv(payload)),
        ("Status".to_owned(), sv("PENDING")),
        ("RetryCount".to_owned(), nv(0)),
    ])
}

/// A minimal producer's item in the sweeper index (as the stream path leaves one it
/// could not finish), due at `due_ms`.
pub fn indexed_item(pk: &str, sk: &str, topic: &str, payload: &str, due_ms: i64) -> Item {
    let mut item = minimal_item(pk, sk, topic, payload);
    item.insert(
        "SweepShard".to_owned(),
        sv(&dynamodb_outbox_core::SweepShards::default().shard_of(pk)),
    );
    item.insert("SweepDueAt".to_owned(), nv(due_ms));
    item
}

pub fn s(item: &Item, name: &str) -> Option<String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v.clone()),
        _ => None,
    }
}

pub fn n(item: &Item, name: &str) -> Option<i64> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().ok(),
        _ => None,
    }
}

pub fn sv(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

pub fn nv(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Writes items with BatchWriteItem, 25 per call, 8 calls at a time.
pub async fn bulk_put(client: &aws_sdk_dynamodb::Client, table: &str, items: Vec<Item>) {
    let mut tasks = tokio::task::JoinSet::new();
    let chunks: Vec<Vec<Item>> = items.chunks(25).map(<[Item]>::to_vec).collect();
    for group in chunks.chunks(chunks.len().div_ceil(8).max(1)) {
        let client = client.clone();
        let table = table.to_owned();
        let group = group.to_vec();
        tasks.spawn(async move {
            for chunk in group {
                let mut requests: Vec<aws_sdk_dynamodb::types::WriteRequest> = chunk
                    .into_iter()
                    .map(|item| {
                        aws_sdk_dynamodb::types::WriteRequest::builder()
                            .put_request(
                                aws_sdk_dynamodb::types::PutRequest::builder()
                                    .set_item(Some(item))
                                    .build()
                                    .unwrap(),
                            )
                            .build()
                    })
                    .collect();
                while !requests.is_empty() {
                    let out = client
                        .batch_write_item()
                        .request_items(&table, requests)
                        .send()
                        .await
                        .expect("batch write");
                    requests = out
                        .unprocessed_items
                        .and_then(|mut u| u.remove(&table))
                        .unwrap_or_default();
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("writer task");
    }
}
