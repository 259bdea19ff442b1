//! Business-key guard: the effect *is* one item, keyed by the business id.
//!
//! One conditional `PutItem` (`attribute_not_exists(<key>)`) with
//! `ReturnValuesOnConditionCheckFailure = ALL_OLD`: DynamoDB checks and writes in one
//! step (no read-then-write race) and, when the key exists, hands back the stored
//! item in the same answer. Same details → [`Outcome::Duplicate`] (acknowledge it);
//! different details → [`IdempotencyError::Conflict`] (never acknowledged silently).
//! Keying by the business id, not the SQS `MessageId`, also catches a producer that
//! sends the same order twice as two messages.

use crate::item::differing_attributes;
use crate::table::IdempotencyTable;
use crate::{IdempotencyError, Item, Outcome};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use serde::Serialize;

/// Writes an item once per business key.
///
/// The table's partition key is the business key (`id` unless the
/// [`IdempotencyTable`] says otherwise); on a table with a sort key, each item brings
/// both.
///
/// ```no_run
/// use dynamodb_outbox_idempotency::{BusinessKeyGuard, IdempotencyError, Outcome};
///
/// #[derive(serde::Serialize)]
/// struct Order { id: String, quantity: u8 }
///
/// # async fn example(client: aws_sdk_dynamodb::Client) -> Result<(), IdempotencyError> {
/// let guard = BusinessKeyGuard::new(client, "orders").ignoring(["ProcessedAt"]);
/// let order = Order { id: "o-1".into(), quantity: 4 };
/// match guard.put(&order).await? {
///     Outcome::Applied => println!("stored now"),
///     Outcome::Duplicate => println!("already stored with the same details"),
/// }
/// // The same id with other details is `Err(IdempotencyError::Conflict { .. })`.
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BusinessKeyGuard {
    table: IdempotencyTable,
    ignore: Vec<String>,
}

impl BusinessKeyGuard {
    /// A guard on `table`, whose hash key `id` is the business key; shorthand for
    /// [`in_table`](Self::in_table) with [`IdempotencyTable::new`].
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self::in_table(IdempotencyTable::new(client, table))
    }

    /// A guard on `table`, keyed by its partition key (and sort key, if it has one).
    pub fn in_table(table: IdempotencyTable) -> Self {
        BusinessKeyGuard {
            table,
            ignore: Vec::new(),
        }
    }

    /// Attributes left out of the duplicate/conflict comparison: ones that differ
    /// between two deliveries of the same request, such as a `ProcessedAt` stamp.
    pub fn ignoring<I, S>(mut self, attributes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignore = attributes.into_iter().map(Into::into).collect();
        self
    }

    /// Writes `value` (serialised with `serde_dynamo`) unless its key exists; see
    /// [`put_item`](Self::put_item).
    pub async fn put<T: Serialize>(&self, value: &T) -> Result<Outcome, IdempotencyError> {
        let item = serde_dynamo::to_item(value).map_err(|e| {
            IdempotencyError::Invalid(format!("the value is not a DynamoDB item: {e}"))
        })?;
        self.put_item(item).await
    }

    /// Writes `item` unless its key exists. A stored item with the same details is a
    /// duplicate; with other details, a conflict carrying both versions. Every error
    /// other than `ConditionalCheckFailedException` propagates as it is.
    pub async fn put_item(&self, item: Item) -> Result<Outcome, IdempotencyError> {
        let key = self.table.rendered_key(&item)?;
        let result = self
            .table
            .client()
            .put_item()
            .table_name(self.table.name())
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(#key)")
            .expression_attribute_names("#key", self.table.partition_key_name())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let err = match result {
            Ok(_) => return Ok(Outcome::Applied),
            Err(err) => err,
        };
        let stored = match err.as_service_error() {
            Some(PutItemError::ConditionalCheckFailedException(ccf)) => ccf.item.clone(),
            _ => return Err(IdempotencyError::aws("PutItem", err)),
        };
        let Some(stored) = stored else {
            // AWS always returns the item when asked to; without it nothing can be
            // compared, so the message is retried rather than acknowledged.
            return Err(IdempotencyError::aws(
                "PutItem (no ALL_OLD item returned)",
                err,
            ));
        };
        decide(key, stored, item, &self.ignore)
    }
}

/// Duplicate or conflict, from the stored and the requested item.
fn decide(
    key: String,
    stored: Item,
    requested: Item,
    ignore: &[String],
) -> Result<Outcome, IdempotencyError> {
    let differing = differing_attributes(&stored, &requested, ignore);
    if differing.is_empty() {
        Ok(Outcome::Duplicate)
    } else {
        Err(IdempotencyError::Conflict {
            key,
            differing,
            stored: Box::new(stored),
            requested: Box::new(requested),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn order(q: &str, total: &str) -> Item {
        Item::from([
            ("id".to_owned(), AttributeValue::S("o-1".into())),
            ("quantity".to_owned(), AttributeValue::N(q.into())),
            ("total_cents".to_owned(), AttributeValue::N(total.into())),
        ])
    }

    #[test]
    fn same_details_are_a_duplicate() {
        let out = decide("id=o-1".into(), order("4", "1100"), order("4", "1100"), &[]);
        assert!(matches!(out, Ok(Outcome::Duplicate)));
    }

    #[test]
    fn other_details_are_a_conflict_carrying_both_versions() {
        match decide("id=o-1".into(), order("4", "1100"), order("5", "1350"), &[]) {
            Err(IdempotencyError::Conflict {
                differing,
                stored,
                requested,
                ..
            }) => {
                assert_eq!(differing, ["quantity", "total_cents"]);
                assert_eq!(*stored, order("4", "1100"));
                assert_eq!(*requested, order("5", "1350"));
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn ignored_attributes_do_not_make_a_conflict() {
        let mut stored = order("4", "1100");
        stored.insert("ProcessedAt".into(), AttributeValue::N("1".into()));
        let mut requested = order("4", "1100");
        requested.insert("ProcessedAt".into(), AttributeValue::N("2".into()));
        assert!(decide("k".into(), stored.clone(), requested.clone(), &[]).is_err());
        assert!(matches!(
            decide("k".into(), stored, requested, &["ProcessedAt".into()]),
            Ok(Outcome::Duplicate)
        ));
    }
}
