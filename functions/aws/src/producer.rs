//! Producer API: the application's own writes and its outbox messages in one
//! `TransactWriteItems`, so both land or neither does.
//!
//! Everything AWS would refuse is refused here first, with an error that says what
//! to change: more than 100 actions, more than 4 MB, an item over 400 KB, two
//! actions on one item.

use crate::schema::{
    CREATED_AT, ITEM_TYPE, MESSAGE_ID, PAYLOAD, PENDING_MESSAGE, PK, RETRY_COUNT, SEQUENCE, SK,
    STATUS, SWEEP_DUE_AT, SWEEP_SHARD, Status, TOPIC, sweep_shard,
};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use aws_smithy_types::error::display::DisplayErrorContext;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// Most actions in one `TransactWriteItems`.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
/// Largest aggregate size of the items in one transaction.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Largest DynamoDB item.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// A message the application wants announced once its write commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// The aggregate it belongs to: becomes `PK`, the FIFO group and the order key.
    pub aggregate: String,
    /// Logical topic; configuration routes it to a destination.
    pub topic: String,
    /// Body (JSON text).
    pub payload: String,
    /// Event name in the sort key (`MESSAGE#<EVENT>#<id>`); defaults to the topic.
    pub event_type: Option<String>,
    /// Optional per-aggregate sequence number for consumers that need strict order.
    pub sequence: Option<u64>,
}

impl NewMessage {
    /// A message for `aggregate` on `topic`.
    pub fn new(
        aggregate: impl Into<String>,
        topic: impl Into<String>,
        payload: impl Into<String>,
    ) -> Self {
        NewMessage {
            aggregate: aggregate.into(),
            topic: topic.into(),
            payload: payload.into(),
            event_type: None,
            sequence: None,
        }
    }

    /// Sets the event name used in the sort key.
    pub fn event_type(mut self, event: impl Into<String>) -> Self {
        self.event_type = Some(event.into());
        self
    }

    /// Sets a per-aggregate sequence number.
    pub fn sequence(mut self, sequence: u64) -> Self {
        self.sequence = Some(sequence);
        self
    }
}

/// One action of a transaction that AWS cancelled, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelledAction {
    /// Position in the transaction (0-based, application actions first).
    pub index: usize,
    /// What the action was.
    pub action: String,
    /// AWS's reason code, e.g. `ConditionalCheckFailed`.
    pub code: String,
    /// AWS's message, if any.
    pub message: Option<String>,
}

impl fmt::Display for CancelledAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "action {} ({}): {}", self.index, self.action, self.code)?;
        if let Some(m) = &self.message {
            write!(f, " — {m}")?;
        }
        Ok(())
    }
}

/// Why a transaction was not written.
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// Nothing to write.
    #[error(
        "the transaction has no messages: pass at least one NewMessage (use a plain write for changes that announce nothing)"
    )]
    NoMessages,
    /// A message lacks a required field.
    #[error("message {index} is invalid: {reason}")]
    InvalidMessage {
        /// Position among the messages.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Over the action limit.
    #[error(
        "the transaction has {count} actions but DynamoDB allows at most {MAX_TRANSACTION_ACTIONS}: split the work into several transactions"
    )]
    TooManyActions {
        /// Actions requested (application's plus messages).
        count: usize,
    },
    /// Over the aggregate size limit.
    #[error(
        "the transaction's items total {bytes} bytes but DynamoDB allows at most {MAX_TRANSACTION_BYTES}: split it or shrink the payloads"
    )]
    TransactionTooLarge {
        /// Estimated size.
        bytes: usize,
    },
    /// One item over 400 KB.
    #[error(
        "action {index} ({action}) writes an item of {bytes} bytes but DynamoDB allows at most {MAX_ITEM_BYTES}: store large payloads elsewhere (e.g. S3) and send a reference"
    )]
    ItemTooLarge {
        /// Position in the transaction.
        index: usize,
        /// What the action is.
        action: String,
        /// Estimated size.
        bytes: usize,
    },
    /// Two actions on one item.
    #[error(
        "actions {first} and {second} both touch the item {key} in table {table}: DynamoDB refuses two actions on one item in a transaction; merge them"
    )]
    DuplicateItem {
        /// First action.
        first: usize,
        /// Second action.
        second: usize,
        /// Table.
        table: String,
        /// Key, rendered.
        key: String,
    },
    /// An action that is not a Put, Update, Delete or ConditionCheck.
    #[error("action {index} is empty: set exactly one of Put, Update, Delete or ConditionCheck")]
    EmptyAction {
        /// Position in the transaction.
        index: usize,
    },
    /// AWS cancelled the transaction; nothing was written.
    #[error("the transaction was cancelled and nothing was written: {}", .failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Cancelled {
        /// The actions that caused the cancellation.
        failures: Vec<CancelledAction>,
    },
    /// Any other AWS error.
    #[error("TransactWriteItems failed: {message}")]
    Aws {
        /// The error, with its context.
        message: String,
        /// Whether retrying the same call may succeed (throttling, 5xx, network).
        retryable: bool,
        /// The SDK error.
        #[source]
        source: Box<SdkError<TransactWriteItemsError>>,
    },
}

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
        }
    }

    /// How long after its write the sweeper may pick up a message the stream path
    /// has not finished.
    pub fn sweep_grace(mut self, grace: Duration) -> Self {
        self.sweep_grace = grace;
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

    /// Builds and checks the transaction without sending it.
    pub fn prepare(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
        now_ms: i64,
    ) -> Result<(Vec<TransactWriteItem>, Committed), ProducerError> {
        if messages.is_empty() {
            return Err(ProducerError::NoMessages);
        }
        let count = business.len() + messages.len();
        if count > MAX_TRANSACTION_ACTIONS {
            return Err(ProducerError::TooManyActions { count });
        }
        let mut actions = business;
        let mut committed = Committed {
            message_ids: Vec::with_capacity(messages.len()),
            sort_keys: Vec::with_capacity(messages.len()),
        };
        for (index, m) in messages.iter().enumerate() {
            if m.aggregate.is_empty() {
                return Err(ProducerError::InvalidMessage {
                    index,
                    reason: "aggregate is empty",
                });
            }
            if m.topic.trim().is_empty() {
                return Err(ProducerError::InvalidMessage {
                    index,
                    reason: "topic is empty",
                });
            }
            let id = uuid::Uuid::now_v7().to_string();
            let item = outbox_item(m, &id, now_ms, self.sweep_grace);
            let sk = match item.get(SK) {
                Some(AttributeValue::S(s)) => s.clone(),
                _ => String::new(),
            };
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK)
                .build()
                .map_err(|_| ProducerError::InvalidMessage {
                    index,
                    reason: "could not build the Put",
                })?;
            actions.push(TransactWriteItem::builder().put(put).build());
            committed.message_ids.push(id);
            committed.sort_keys.push(sk);
        }
        self.check(&actions)?;
        Ok((actions, committed))
    }

    /// Writes the application's actions and the messages in one transaction.
    pub async fn commit(
        &self,
        business: Vec<TransactWriteItem>,
        messages: &[NewMessage],
    ) -> Result<Committed, ProducerError> {
        let (actions, committed) = self.prepare(business, messages, crate::publish::now_ms())?;
        let described: Vec<String> = actions.iter().map(|a| describe(a, &self.table)).collect();
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(actions))
            .send()
            .await
        {
            Ok(_) => Ok(committed),
            Err(e) => Err(cancellation(e, &described)),
        }
    }

    /// The limit checks, on a built transaction.
    fn check(&self, actions: &[TransactWriteItem]) -> Result<(), ProducerError> {
        let mut total = 0usize;
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        for (index, action) in actions.iter().enumerate() {
            let (table, key, bytes) = match (
                &action.put,
                &action.update,
                &action.delete,
                &action.condition_check,
            ) {
                (Some(p), _, _, _) => {
                    let keys: Vec<String> = if p.table_name() == self.table {
                        vec![PK.to_owned(), SK.to_owned()]
                    } else {
                        self.key_schemas
                            .get(p.table_name())
                            .cloned()
                            .unwrap_or_default()
                    };
                    let key = (!keys.is_empty()).then(|| render_key(p.item(), Some(&keys)));
                    (p.table_name().to_owned(), key, item_size(p.item()))
                }
                (_, Some(u), _, _) => (
                    u.table_name().to_owned(),
                    Some(render_key(u.key(), None)),
                    item_size(u.key()),
                ),
                (_, _, Some(d), _) => (
                    d.table_name().to_owned(),
                    Some(render_key(d.key(), None)),
                    item_size(d.key()),
                ),
                (_, _, _, Some(c)) => (
                    c.table_name().to_owned(),
                    Some(render_key(c.key(), None)),
                    item_size(c.key()),
                ),
                _ => return Err(ProducerError::EmptyAction { index }),
            };
            if bytes > MAX_ITEM_BYTES {
                return Err(ProducerError::ItemTooLarge {
                    index,
                    action: describe(action, &self.table),
                    bytes,
                });
            }
            total += bytes;
            if let Some(key) = key {
                if let Some(&first) = seen.get(&(table.clone(), key.clone())) {
                    return Err(ProducerError::DuplicateItem {
                        first,
                        second: index,
                        table,
                        key,
                    });
                }
                seen.insert((table, key), index);
            }
        }
        if total > MAX_TRANSACTION_BYTES {
            return Err(ProducerError::TransactionTooLarge { bytes: total });
        }
        Ok(())
    }
}

/// The outbox item for a message: every attribute of the schema.
pub fn outbox_item(
    m: &NewMessage,
    message_id: &str,
    now_ms: i64,
    sweep_grace: Duration,
) -> HashMap<String, AttributeValue> {
    let event = m.event_type.as_deref().unwrap_or(&m.topic);
    let due = now_ms.saturating_add(i64::try_from(sweep_grace.as_millis()).unwrap_or(i64::MAX));
    let mut item = HashMap::from([
        (PK.to_owned(), AttributeValue::S(m.aggregate.clone())),
        (
            SK.to_owned(),
            AttributeValue::S(format!("MESSAGE#{event}#{message_id}")),
        ),
        (
            ITEM_TYPE.to_owned(),
            AttributeValue::S(PENDING_MESSAGE.to_owned()),
        ),
        (TOPIC.to_owned(), AttributeValue::S(m.topic.clone())),
        (PAYLOAD.to_owned(), AttributeValue::S(m.payload.clone())),
        (
            STATUS.to_owned(),
            AttributeValue::S(Status::Pending.as_str().to_owned()),
        ),
        (RETRY_COUNT.to_owned(), AttributeValue::N("0".to_owned())),
        (
            MESSAGE_ID.to_owned(),
            AttributeValue::S(message_id.to_owned()),
        ),
        (CREATED_AT.to_owned(), AttributeValue::N(now_ms.to_string())),
        (
            SWEEP_SHARD.to_owned(),
            AttributeValue::S(sweep_shard(&m.aggregate)),
        ),
        (SWEEP_DUE_AT.to_owned(), AttributeValue::N(due.to_string())),
    ]);
    if let Some(seq) = m.sequence {
        item.insert(SEQUENCE.to_owned(), AttributeValue::N(seq.to_string()));
    }
    item
}

/// DynamoDB's item size rules: attribute names plus values (strings and binaries by
/// length, numbers by digits, containers with their overhead).
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len().div_ceil(2) + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|x| 1 + value_size(x)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, x)| 1 + k.len() + value_size(x))
                .sum::<usize>()
        }
        _ => 0,
    }
}

fn render_key(item: &HashMap<String, AttributeValue>, names: Option<&[String]>) -> String {
    let mut parts: Vec<String> = match names {
        Some(names) => names
            .iter()
            .map(|n| format!("{n}={}", item.get(n).map(render_value).unwrap_or_default()))
            .collect(),
        None => item
            .iter()
            .map(|(n, v)| format!("{n}={}", render_value(v)))
            .collect(),
    };
    parts.sort();
    parts.join(",")
}

fn render_value(v: &AttributeValue) -> String {
    match v {
        AttributeValue::S(s) => s.clone(),
        AttributeValue::N(n) => n.clone(),
        AttributeValue::B(b) => format!("{:?}", b.as_ref()),
        other => format!("{other:?}"),
    }
}

/// A short description of an action for error messages (no attribute values).
fn describe(action: &TransactWriteItem, outbox_table: &str) -> String {
    if let Some(p) = &action.put {
        if p.table_name() == outbox_table
            && matches!(p.item().get(ITEM_TYPE), Some(AttributeValue::S(t)) if t == PENDING_MESSAGE)
        {
            let topic = match p.item().get(TOPIC) {
                Some(AttributeValue::S(t)) => t.as_str(),
                _ => "?",
            };
            return format!("Put of the outbox message for topic `{topic}`");
        }
        return format!("Put on {}", p.table_name());
    }
    if let Some(u) = &action.update {
        return format!("Update on {}", u.table_name());
    }
    if let Some(d) = &action.delete {
        return format!("Delete on {}", d.table_name());
    }
    if let Some(c) = &action.condition_check {
        return format!("ConditionCheck on {}", c.table_name());
    }
    "empty action".to_owned()
}

fn cancellation(e: SdkError<TransactWriteItemsError>, described: &[String]) -> ProducerError {
    if let Some(TransactWriteItemsError::TransactionCanceledException(tc)) = e.as_service_error() {
        let failures: Vec<CancelledAction> = tc
            .cancellation_reasons()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.code().is_some_and(|c| c != "None"))
            .map(|(index, r)| CancelledAction {
                index,
                action: described
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| "unknown action".to_owned()),
                code: r.code().unwrap_or_default().to_owned(),
                message: r.message().map(str::to_owned),
            })
            .collect();
        if !failures.is_empty() {
            return ProducerError::Cancelled { failures };
        }
    }
    let retryable = crate::error::is_retryable(&e);
    ProducerError::Aws {
        message: DisplayErrorContext(&e).to_string(),
        retryable,
        source: Box::new(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (actions, committed) = writer()
            .prepare(
                vec![],
                &[NewMessage::new("USER#1", "orders", "{}").event_type("CREATED")],
                1_000,
            )
            .expect("valid");
        let item = actions[0].put.as_ref().expect("a put").item();
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
        let (_, committed) = writer().prepare(vec![], &msgs, 5).expect("valid");
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
            .prepare(
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
            .prepare(vec![], &[NewMessage::new("A", "orders", big)], 0)
            .expect_err("too big");
        match err {
            ProducerError::ItemTooLarge { index, action, .. } => {
                assert_eq!(index, 0);
                assert!(action.contains("orders"), "{action}");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn refuses_over_4_mb_in_total() {
        let chunk = "x".repeat(300 * 1024);
        let msgs: Vec<NewMessage> = (0..14)
            .map(|_| NewMessage::new("A", "t", chunk.clone()))
            .collect();
        let err = writer().prepare(vec![], &msgs, 0).expect_err("over 4 MB");
        assert!(
            matches!(err, ProducerError::TransactionTooLarge { .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_two_actions_on_one_item() {
        let err = writer()
            .prepare(
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
            .prepare(
                vec![put("orders", &[("id", "1")]), put("orders", &[("id", "2")])],
                &[NewMessage::new("A", "t", "{}")],
                0,
            )
            .expect("distinct items");
    }

    #[test]
    fn refuses_empty_topic_and_no_messages() {
        assert!(matches!(
            writer().prepare(vec![], &[], 0),
            Err(ProducerError::NoMessages)
        ));
        assert!(matches!(
            writer().prepare(vec![], &[NewMessage::new("A", " ", "{}")], 0),
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
