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
use crate::{IdempotencyError, Item, Outcome, render_key};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use serde::Serialize;

/// Writes an item once per business key.
#[derive(Debug, Clone)]
pub struct BusinessKeyGuard {
    client: aws_sdk_dynamodb::Client,
    table: String,
    key_attribute: String,
    ignore: Vec<String>,
}

impl BusinessKeyGuard {
    /// A guard on `table`, whose hash key is `key_attribute` (e.g. `id`).
    pub fn new(
        client: aws_sdk_dynamodb::Client,
        table: impl Into<String>,
        key_attribute: impl Into<String>,
    ) -> Self {
        BusinessKeyGuard {
            client,
            table: table.into(),
            key_attribute: key_attribute.into(),
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

    /// The table written to.
    pub fn table(&self) -> &str {
        &self.table
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
        let key = match item.get(&self.key_attribute) {
            Some(v) => render_key(&self.key_attribute, v),
            None => {
                return Err(IdempotencyError::Invalid(format!(
                    "the item has no key attribute `{}`",
                    self.key_attribute
                )));
            }
        };
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(#key)")
            .expression_attribute_names("#key", &self.key_attribute)
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
pub fn decide(
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
