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
//! Markers are kept for the [`Retention`](crate::Retention) (14 days by default); a marker whose TTL
//! has passed but that DynamoDB has not deleted yet still makes a duplicate, since
//! the condition is `attribute_not_exists`.

use crate::table::IdempotencyTable;
use crate::{IdempotencyError, Item, Outcome, render_key};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use dynamodb_outbox_core::producer::{CancelledAction, MAX_TRANSACTION_ACTIONS};

/// Marker key prefix (the orders table contract: `id = "MSG#<MessageId>"`).
const MARKER_PREFIX: &str = "MSG#";

/// Writes a consumer's changes once per message.
///
/// ```no_run
/// use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
/// use dynamodb_outbox_idempotency::{Delivery, IdempotencyError, MessageMarker, Outcome};
///
/// # async fn example(client: aws_sdk_dynamodb::Client, msg: Delivery<'_>)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// let marker = MessageMarker::new(client, "orders"); // markers under id = "MSG#<id>"
/// // A counter is not idempotent: it moves once per message only with the marker.
/// let add_one = Update::builder()
///     .table_name("orders")
///     .key("id", AttributeValue::S("STATS".into()))
///     .update_expression("ADD orders_seen :one")
///     .expression_attribute_values(":one", AttributeValue::N("1".into()))
///     .build()?;
/// let writes = vec![TransactWriteItem::builder().update(add_one).build()];
/// match marker.commit(msg.message_id()?, writes).await? {
///     Outcome::Applied => {}                // the counter moved, and the marker is there
///     Outcome::Duplicate => {}              // nothing written: acknowledge the copy
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MessageMarker {
    table: IdempotencyTable,
    prefix: String,
}

impl MessageMarker {
    /// Markers in `table` under `id = "MSG#<message id>"`, kept for the default
    /// [`Retention`](crate::Retention) (14 days) through the TTL attribute `ExpiresAt`;
    /// shorthand for [`in_table`](Self::in_table) with [`IdempotencyTable::new`].
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self::in_table(IdempotencyTable::new(client, table))
    }

    /// Markers in `table`, keyed `"MSG#<message id>"` in its key attributes, kept for
    /// its retention.
    pub fn in_table(table: IdempotencyTable) -> Self {
        MessageMarker {
            table,
            prefix: MARKER_PREFIX.to_owned(),
        }
    }

    /// The clock that stamps the markers' expiry. Kept for the workspace's tests: set
    /// it with [`IdempotencyTable::clock`].
    #[cfg(feature = "unstable-internals")]
    pub fn clock(mut self, clock: dynamodb_outbox_core::SharedClock) -> Self {
        self.table = self.table.clock(clock);
        self
    }

    /// The marker item for `message_id`, written at `now_ms` (epoch milliseconds).
    fn marker_item(&self, message_id: &str, now_ms: i64) -> Item {
        let mut item = self
            .table
            .record_key(&format!("{}{message_id}", self.prefix));
        item.insert(
            "ItemType".to_owned(),
            AttributeValue::S("PROCESSED_MESSAGE".to_owned()),
        );
        item.insert(
            self.table.ttl_attribute_name().to_owned(),
            self.table.expires_at(now_ms),
        );
        item
    }

    /// The conditional `Put` of the marker for `message_id`, for callers building
    /// their own transaction (put it first: [`commit`](Self::commit) reads a
    /// cancellation of action 0 as a duplicate).
    pub fn marker_action(&self, message_id: &str) -> Result<TransactWriteItem, IdempotencyError> {
        let now_ms = self.table.now_ms();
        let put = Put::builder()
            .table_name(self.table.name())
            .set_item(Some(self.marker_item(message_id, now_ms)))
            .condition_expression("attribute_not_exists(#key)")
            .expression_attribute_names("#key", self.table.partition_key_name())
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
        actions.push(self.marker_action(message_id)?);
        actions.extend(writes);
        let described: Vec<String> = actions
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i == 0 {
                    format!("processed-message marker {}{message_id}", self.prefix)
                } else {
                    describe(a, self.table.partition_key_name())
                }
            })
            .collect();
        let err = match self
            .table
            .client()
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
    use crate::table::offline_client as client;

    fn marker() -> MessageMarker {
        MessageMarker::new(client(), "orders")
    }

    fn pk_sk_marker() -> MessageMarker {
        MessageMarker::in_table(
            IdempotencyTable::new(client(), "app")
                .partition_key("PK")
                .sort_key("SK")
                .ttl_attribute("ttl"),
        )
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
    }

    #[test]
    fn on_a_pk_sk_table_the_marker_is_keyed_in_both_and_expires_through_its_ttl() {
        let item = pk_sk_marker().marker_item("abc", 1_000_000);
        assert_eq!(item.get("PK"), Some(&AttributeValue::S("MSG#abc".into())));
        assert_eq!(item.get("SK"), Some(&AttributeValue::S("MSG#abc".into())));
        assert_eq!(item.get("id"), None);
        assert_eq!(
            item.get("ttl"),
            Some(&AttributeValue::N((1_000 + 14 * 86_400).to_string()))
        );
        let action = pk_sk_marker().marker_action("abc").expect("valid put");
        let put = action.put.as_ref().expect("a put");
        assert_eq!(put.table_name(), "app");
        assert_eq!(
            put.expression_attribute_names()
                .and_then(|n| n.get("#key"))
                .map(String::as_str),
            Some("PK"),
            "the marker's condition is on the partition key"
        );
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
