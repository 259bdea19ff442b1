//! Producer API: the application's own writes and its outbox messages in one
//! `TransactWriteItems`, so both land or neither does.
//!
//! Everything AWS would refuse is refused here first (`check`), with an error
//! that says what to change ([`ProducerError`]). The items are the schema's
//! [`OutboxItem`](outbox_core::schema::OutboxItem), written through `serde_dynamo`.

mod check;
mod error;
mod offload;
mod prepared;

pub use check::item_size;
pub use error::ProducerError;
pub use outbox_core::producer::{
    CancelledAction, MAX_ITEM_BYTES, MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES, NewMessage,
};
pub use prepared::PreparedCommit;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use outbox_core::clock::{self, SharedClock};
use outbox_core::schema::TABLE;
use std::collections::HashMap;
use std::time::Duration;

/// A committed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The `MessageId`s written, in the order of the messages given.
    pub message_ids: Vec<String>,
    /// Their sort keys.
    pub sort_keys: Vec<String>,
}

/// Writes business changes and outbox messages atomically.
#[derive(Debug, Clone)]
pub struct OutboxWriter {
    client: aws_sdk_dynamodb::Client,
    table: String,
    sweep_grace: Duration,
    key_schemas: HashMap<String, Vec<String>>,
    clock: SharedClock,
    large: Option<offload::Offloader>,
}

impl OutboxWriter {
    /// A writer for the outbox `table`. Messages become due for the sweeper one
    /// minute after they are written.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        OutboxWriter {
            client,
            table: table.into(),
            sweep_grace: Duration::from_secs(60),
            key_schemas: HashMap::new(),
            clock: clock::system(),
            large: None,
        }
    }

    /// Enables the claim check: a payload an outbox item cannot hold (400 KB with
    /// the other attributes) is written to `bucket` under `outbox/<MessageId>` before
    /// the transaction, and the item carries the extended clients' pointer instead;
    /// the publisher forwards it as it is, and the consumer library resolves it.
    /// Build `s3` with [`crate::s3::client`] (path-style addressing on an overridden
    /// endpoint). An object whose transaction fails is left to the bucket's
    /// lifecycle rule: no message refers to it.
    pub fn large_payloads(mut self, s3: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        let threshold = self.large.as_ref().and_then(|l| l.threshold);
        self.large = Some(offload::Offloader {
            client: s3,
            bucket: bucket.into(),
            threshold,
        });
        self
    }

    /// With the claim check enabled, payloads larger than `bytes` go to S3 even when
    /// the item could hold them (smaller items, cheaper writes and streams).
    pub fn large_payload_threshold(mut self, bytes: usize) -> Self {
        if let Some(large) = &mut self.large {
            large.threshold = Some(bytes);
        }
        self
    }

    /// How long after its write the sweeper may pick up a message the stream path
    /// has not finished.
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

    /// The outbox table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Builds and checks the transaction without sending it: new message ids, the
    /// items, and the idempotency token of this transaction. Send it with
    /// [`OutboxWriter::commit_prepared`] — again, if an attempt's outcome is unknown.
    pub fn prepare(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
    ) -> Result<PreparedCommit, ProducerError> {
        self.prepare_at(business, messages, self.clock.now_ms())
    }

    /// [`OutboxWriter::prepare`] with `CreatedAt` = `now_ms`.
    pub fn prepare_at(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
        now_ms: i64,
    ) -> Result<PreparedCommit, ProducerError> {
        if messages.is_empty() {
            return Err(ProducerError::NoMessages);
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
        for (index, m) in messages.iter().enumerate() {
            if let Some(reason) = m.invalid() {
                return Err(ProducerError::InvalidMessage { index, reason });
            }
            let id = uuid::Uuid::now_v7().to_string();
            let mut item = m.outbox_item(&id, now_ms, self.sweep_grace);
            let sk = item.sk.clone().unwrap_or_default();
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
        check::check(&actions, &self.table, &self.key_schemas)?;
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
        item: &outbox_core::schema::OutboxItem,
    ) -> Result<TransactWriteItem, ProducerError> {
        let invalid = |reason| ProducerError::InvalidMessage { index, reason };
        let item: HashMap<String, AttributeValue> =
            serde_dynamo::to_item(item).map_err(|_| invalid("could not serialise the item"))?;
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", TABLE.partition_key)
            .build()
            .map_err(|_| invalid("could not build the Put"))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// Writes the application's actions and the messages in one transaction: both
    /// land, or neither does. Calling it again after an error mints new message ids;
    /// to retry an attempt whose outcome is unknown (a timeout), [`prepare`] once
    /// and call [`commit_prepared`] again.
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
mod tests {
    use super::*;
    use outbox_core::claim::PayloadPointer;
    use outbox_core::schema::{
        CREATED_AT, ITEM_TYPE, SK, STATUS, SWEEP_DUE_AT, SWEEP_SHARD, sweep_shard,
    };

    fn writer() -> OutboxWriter {
        let conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .build();
        OutboxWriter::new(aws_sdk_dynamodb::Client::from_conf(conf), "outbox")
            .key_schema("orders", &["id"])
    }

    fn put(table: &str, item: &[(&str, &str)]) -> TransactWriteItem {
        let p = Put::builder()
            .table_name(table)
            .set_item(Some(
                item.iter()
                    .map(|(k, v)| ((*k).to_owned(), AttributeValue::S((*v).to_owned())))
                    .collect(),
            ))
            .build()
            .expect("valid put");
        TransactWriteItem::builder().put(p).build()
    }

    #[test]
    fn message_items_follow_the_schema() {
        let prepared = writer()
            .prepare_at(
                vec![],
                &[NewMessage::new("USER#1", "orders", "{}").event_type("CREATED")],
                1_000,
            )
            .expect("valid");
        let committed = prepared.committed();
        let item = prepared.actions()[0].put.as_ref().expect("a put").item();
        assert_eq!(
            item.get(ITEM_TYPE),
            Some(&AttributeValue::S("PENDING_MESSAGE".into()))
        );
        assert_eq!(item.get(STATUS), Some(&AttributeValue::S("PENDING".into())));
        assert_eq!(
            item.get(CREATED_AT),
            Some(&AttributeValue::N("1000".into()))
        );
        assert_eq!(
            item.get(SWEEP_DUE_AT),
            Some(&AttributeValue::N("61000".into()))
        );
        assert_eq!(
            item.get(SWEEP_SHARD),
            Some(&AttributeValue::S(sweep_shard("USER#1")))
        );
        let sk = format!("MESSAGE#CREATED#{}", committed.message_ids[0]);
        assert_eq!(item.get(SK), Some(&AttributeValue::S(sk)));
    }

    #[test]
    fn two_messages_in_one_millisecond_get_distinct_time_ordered_ids() {
        let msgs: Vec<NewMessage> = (0..50)
            .map(|i| NewMessage::new("A", "t", i.to_string()))
            .collect();
        let prepared = writer().prepare_at(vec![], &msgs, 5).expect("valid");
        let committed = prepared.committed();
        let mut sorted = committed.message_ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 50);
        assert_eq!(
            sorted, committed.message_ids,
            "v7 ids sort in creation order"
        );
    }

    #[test]
    fn refuses_more_than_100_actions() {
        let business: Vec<_> = (0..99)
            .map(|i| put("orders", &[("id", &i.to_string())]))
            .collect();
        let err = writer()
            .prepare_at(
                business,
                &[
                    NewMessage::new("A", "t", "{}"),
                    NewMessage::new("A", "t", "{}"),
                ],
                0,
            )
            .expect_err("101 actions");
        assert!(
            matches!(err, ProducerError::TooManyActions { count: 101 }),
            "{err}"
        );
    }

    #[test]
    fn refuses_an_item_over_400_kb_naming_the_action() {
        let big = "x".repeat(MAX_ITEM_BYTES);
        let err = writer()
            .prepare_at(vec![], &[NewMessage::new("A", "orders", big)], 0)
            .expect_err("too big");
        match err {
            ProducerError::ItemTooLarge { index, action, .. } => {
                assert_eq!(index, 0);
                assert!(action.contains("orders"), "{action}");
            }
            other => panic!("unexpected {other}"),
        }
    }

    fn s3() -> aws_sdk_s3::Client {
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    #[test]
    fn with_a_bucket_a_payload_an_item_cannot_hold_is_committed_as_a_pointer() {
        let big = "x".repeat(MAX_ITEM_BYTES);
        let writer = writer().large_payloads(s3(), "large");
        let prepared = writer
            .prepare_at(
                vec![],
                &[
                    NewMessage::new("A", "orders", big),
                    NewMessage::new("A", "orders", "{}"),
                ],
                0,
            )
            .expect("offloaded");
        let id = &prepared.committed().message_ids[0];
        let pointer = PayloadPointer::for_message("large", id);
        assert_eq!(prepared.offloaded(), [&pointer]);
        let payload = |i: usize| {
            prepared.actions()[i]
                .put
                .as_ref()
                .and_then(|p| p.item().get(outbox_core::schema::PAYLOAD).cloned())
        };
        assert_eq!(payload(0), Some(AttributeValue::S(pointer.encode())));
        let size = prepared.actions()[0]
            .put
            .as_ref()
            .and_then(|p| p.item().get(outbox_core::schema::PAYLOAD_SIZE).cloned());
        assert_eq!(size, Some(AttributeValue::N(MAX_ITEM_BYTES.to_string())));
        assert_eq!(payload(1), Some(AttributeValue::S("{}".into())));
        let debug = format!("{prepared:?}");
        assert!(
            debug.contains("bytes: 409600"),
            "sizes, not payloads: {debug}"
        );
    }

    #[test]
    fn above_the_threshold_a_payload_that_fits_goes_to_s3_too() {
        let writer = writer()
            .large_payloads(s3(), "large")
            .large_payload_threshold(100);
        let prepared = writer
            .prepare_at(
                vec![],
                &[NewMessage::new("A", "orders", "y".repeat(101))],
                0,
            )
            .expect("valid");
        assert_eq!(prepared.offloaded().len(), 1);
        let prepared = writer
            .prepare_at(
                vec![],
                &[NewMessage::new("A", "orders", "y".repeat(100))],
                0,
            )
            .expect("valid");
        assert!(prepared.offloaded().is_empty());
    }

    #[test]
    fn refuses_over_4_mb_in_total() {
        let chunk = "x".repeat(300 * 1024);
        let msgs: Vec<NewMessage> = (0..14)
            .map(|_| NewMessage::new("A", "t", chunk.clone()))
            .collect();
        let err = writer()
            .prepare_at(vec![], &msgs, 0)
            .expect_err("over 4 MB");
        assert!(
            matches!(err, ProducerError::TransactionTooLarge { .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_two_actions_on_one_item() {
        let err = writer()
            .prepare_at(
                vec![
                    put("orders", &[("id", "1"), ("x", "a")]),
                    put("orders", &[("id", "1"), ("x", "b")]),
                ],
                &[NewMessage::new("A", "t", "{}")],
                0,
            )
            .expect_err("same item twice");
        assert!(
            matches!(
                err,
                ProducerError::DuplicateItem {
                    first: 0,
                    second: 1,
                    ..
                }
            ),
            "{err}"
        );
        // Different keys in a table of known schema are fine.
        writer()
            .prepare_at(
                vec![put("orders", &[("id", "1")]), put("orders", &[("id", "2")])],
                &[NewMessage::new("A", "t", "{}")],
                0,
            )
            .expect("distinct items");
    }

    #[test]
    fn refuses_empty_topic_and_no_messages() {
        assert!(matches!(
            writer().prepare_at(vec![], &[], 0),
            Err(ProducerError::NoMessages)
        ));
        assert!(matches!(
            writer().prepare_at(vec![], &[NewMessage::new("A", " ", "{}")], 0),
            Err(ProducerError::InvalidMessage { index: 0, .. })
        ));
    }

    #[test]
    fn item_size_counts_names_and_values() {
        let item = HashMap::from([
            ("ab".to_owned(), AttributeValue::S("xyz".into())),
            ("n".to_owned(), AttributeValue::N("12345".into())),
        ]);
        assert_eq!(item_size(&item), 2 + 3 + 1 + 4);
    }
}
