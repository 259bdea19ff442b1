//! Processed-message marker: for consumers whose writes are not naturally idempotent
//! (counters, several items, updates). Their writes and a marker item keyed by the
//! message id go in one `TransactWriteItems`, so either both land or neither does; a
//! second delivery fails the marker's `attribute_not_exists` and changes nothing.
//!
//! The marker is action 0 of the transaction. A cancellation whose reason for action 0
//! is `ConditionalCheckFailed` is a duplicate (whatever the other actions report: they
//! see the state the first delivery left). Any other cancellation is an error naming
//! the failing actions.
//!
//! Which id: [`Delivery::message_id`](crate::Delivery::message_id) — the outbox
//! `MessageId`, read from the message attribute or from an SNS or EventBridge envelope
//! (a message republished by the sweeper gets a new SQS `MessageId` but keeps it).
//!
//! Markers are kept for the [`Retention`] (14 days by default); a marker whose TTL
//! has passed but that DynamoDB has not deleted yet still makes a duplicate, since
//! the condition is `attribute_not_exists`.

use crate::retention::Retention;
use crate::{IdempotencyError, Item, Outcome, render_key};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox_core::clock::{self, SharedClock};
use dynamodb_outbox_core::producer::{CancelledAction, MAX_TRANSACTION_ACTIONS};

/// Default marker key prefix (the orders table contract: `id = "MSG#<MessageId>"`).
pub const MARKER_PREFIX: &str = "MSG#";
/// Default TTL attribute.
pub const TTL_ATTRIBUTE: &str = "ExpiresAt";

/// Writes a consumer's changes once per message.
#[derive(Debug, Clone)]
pub struct MessageMarker {
    client: aws_sdk_dynamodb::Client,
    table: String,
    key_attribute: String,
    sort_key: Option<(String, String)>,
    prefix: String,
    retention: Retention,
    ttl_attribute: String,
    clock: SharedClock,
}

impl MessageMarker {
    /// Markers in `table` under `id = "MSG#<message id>"`, kept for the default
    /// [`Retention`] (14 days) through the TTL attribute `ExpiresAt`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        MessageMarker {
            client,
            table: table.into(),
            key_attribute: "id".to_owned(),
            sort_key: None,
            prefix: MARKER_PREFIX.to_owned(),
            retention: Retention::default(),
            ttl_attribute: TTL_ATTRIBUTE.to_owned(),
            clock: clock::system(),
        }
    }

    /// The clock that stamps the markers' expiry (the system clock by default).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The table's hash key attribute (default `id`).
    pub fn key_attribute(mut self, name: impl Into<String>) -> Self {
        self.key_attribute = name.into();
        self
    }

    /// For tables with a range key: its name and the value markers use.
    pub fn sort_key(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.sort_key = Some((name.into(), value.into()));
        self
    }

    /// How long markers are kept (default 14 days); use the same value for the
    /// [`IdempotentEffects`](crate::IdempotentEffects) of the same consumer.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The marker item for `message_id`, written at `now_ms` (epoch milliseconds).
    pub fn marker_item(&self, message_id: &str, now_ms: i64) -> Item {
        let mut item = Item::from([
            (
                self.key_attribute.clone(),
                AttributeValue::S(format!("{}{message_id}", self.prefix)),
            ),
            (
                "ItemType".to_owned(),
                AttributeValue::S("PROCESSED_MESSAGE".to_owned()),
            ),
            (
                self.ttl_attribute.clone(),
                AttributeValue::N(self.retention.expires_at(now_ms).to_string()),
            ),
        ]);
        if let Some((name, value)) = &self.sort_key {
            item.insert(name.clone(), AttributeValue::S(value.clone()));
        }
        item
    }

    /// The conditional `Put` of the marker, for callers building their own transaction.
    pub fn marker_action(
        &self,
        message_id: &str,
        now_ms: i64,
    ) -> Result<TransactWriteItem, IdempotencyError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(self.marker_item(message_id, now_ms)))
            .condition_expression("attribute_not_exists(#key)")
            .expression_attribute_names("#key", &self.key_attribute)
            .build()
            .map_err(|e| IdempotencyError::Invalid(format!("marker put: {e}")))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// Writes `writes` and the marker for `message_id` in one transaction.
    /// [`Outcome::Duplicate`] when the marker exists: nothing was written.
    pub async fn commit(
        &self,
        message_id: &str,
        writes: Vec<TransactWriteItem>,
    ) -> Result<Outcome, IdempotencyError> {
        if message_id.is_empty() {
            return Err(IdempotencyError::Invalid(
                "the message id is empty: markers need the outbox MessageId (Delivery::message_id)"
                    .into(),
            ));
        }
        if writes.len() + 1 > MAX_TRANSACTION_ACTIONS {
            return Err(IdempotencyError::Invalid(format!(
                "{} writes plus the marker exceed DynamoDB's {MAX_TRANSACTION_ACTIONS} actions per transaction: split the work",
                writes.len()
            )));
        }
        let mut actions = Vec::with_capacity(writes.len() + 1);
        actions.push(self.marker_action(message_id, self.clock.now_ms())?);
        actions.extend(writes);
        let described: Vec<String> = actions
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i == 0 {
                    format!("processed-message marker {}{message_id}", self.prefix)
                } else {
                    describe(a, &self.key_attribute)
                }
            })
            .collect();
        let err = match self
            .client
            .transact_write_items()
            .set_transact_items(Some(actions))
            .send()
            .await
        {
            Ok(_) => return Ok(Outcome::Applied),
            Err(err) => err,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(tc)) =
            err.as_service_error()
        {
            let codes: Vec<Option<&str>> =
                tc.cancellation_reasons().iter().map(|r| r.code()).collect();
            if let Some(outcome) = classify_cancellation(&codes) {
                return match outcome {
                    Ok(()) => Ok(Outcome::Duplicate),
                    Err(indices) => Err(IdempotencyError::Cancelled {
                        failures: indices
                            .into_iter()
                            .map(|index| CancelledAction {
                                index,
                                action: described
                                    .get(index)
                                    .cloned()
                                    .unwrap_or_else(|| "unknown action".to_owned()),
                                code: codes
                                    .get(index)
                                    .copied()
                                    .flatten()
                                    .unwrap_or_default()
                                    .to_owned(),
                                message: tc
                                    .cancellation_reasons()
                                    .get(index)
                                    .and_then(|r| r.message())
                                    .map(str::to_owned),
                            })
                            .collect(),
                    }),
                };
            }
        }
        Err(IdempotencyError::aws("TransactWriteItems", err))
    }
}

/// From the cancellation reason codes (marker first): `Some(Ok(()))` when the marker's
/// condition failed (a duplicate), `Some(Err(indices))` naming the actions that failed
/// otherwise, `None` when no reason says anything (treat as a plain AWS error).
pub fn classify_cancellation(codes: &[Option<&str>]) -> Option<Result<(), Vec<usize>>> {
    if codes.first().copied().flatten() == Some("ConditionalCheckFailed") {
        return Some(Ok(()));
    }
    let failed: Vec<usize> = codes
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_some_and(|c| c != "None"))
        .map(|(i, _)| i)
        .collect();
    (!failed.is_empty()).then_some(Err(failed))
}

/// A transaction action in words: kind, table and, where known, its key.
fn describe(action: &TransactWriteItem, key_attribute: &str) -> String {
    let key = |k: &Item| {
        let mut parts: Vec<String> = k.iter().map(|(n, v)| render_key(n, v)).collect();
        parts.sort();
        parts.join(",")
    };
    if let Some(p) = &action.put {
        return match p.item().get(key_attribute) {
            Some(v) => format!(
                "Put on {} ({})",
                p.table_name(),
                render_key(key_attribute, v)
            ),
            None => format!("Put on {}", p.table_name()),
        };
    }
    if let Some(u) = &action.update {
        return format!("Update on {} ({})", u.table_name(), key(u.key()));
    }
    if let Some(d) = &action.delete {
        return format!("Delete on {} ({})", d.table_name(), key(d.key()));
    }
    if let Some(c) = &action.condition_check {
        return format!("ConditionCheck on {} ({})", c.table_name(), key(c.key()));
    }
    "empty action".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker() -> MessageMarker {
        let conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .build();
        MessageMarker::new(aws_sdk_dynamodb::Client::from_conf(conf), "orders")
    }

    #[test]
    fn the_marker_follows_the_orders_table_contract() {
        let now = 1_000_000;
        let item = marker().marker_item("abc", now);
        assert_eq!(item.get("id"), Some(&AttributeValue::S("MSG#abc".into())));
        assert_eq!(
            item.get("ExpiresAt"),
            Some(&AttributeValue::N((1_000 + 14 * 86_400).to_string()))
        );
        let with_sk = marker()
            .key_attribute("PK")
            .sort_key("SK", "MARKER")
            .marker_item("abc", now);
        assert_eq!(
            with_sk.get("PK"),
            Some(&AttributeValue::S("MSG#abc".into()))
        );
        assert_eq!(with_sk.get("SK"), Some(&AttributeValue::S("MARKER".into())));
    }

    #[test]
    fn only_the_markers_condition_means_duplicate() {
        let ccf = Some("ConditionalCheckFailed");
        let none = Some("None");
        assert_eq!(classify_cancellation(&[ccf, none]), Some(Ok(())));
        assert_eq!(classify_cancellation(&[ccf, ccf]), Some(Ok(())));
        assert_eq!(classify_cancellation(&[none, ccf]), Some(Err(vec![1])));
        assert_eq!(
            classify_cancellation(&[Some("TransactionConflict"), none, ccf]),
            Some(Err(vec![0, 2]))
        );
        assert_eq!(classify_cancellation(&[none, none]), None);
        assert_eq!(classify_cancellation(&[]), None);
    }

    #[test]
    fn actions_are_described_with_their_table_and_key() {
        let put = Put::builder()
            .table_name("orders")
            .item("id", AttributeValue::S("o-1".into()))
            .build()
            .expect("valid put");
        let action = TransactWriteItem::builder().put(put).build();
        assert_eq!(describe(&action, "id"), "Put on orders (id=o-1)");
    }
}
