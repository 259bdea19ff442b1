//! The sweeper's claim: one conditional update, made again on the exact
//! `HomeRegion` a refusal returned when this region owns that odd value (core `home`).

use super::{DynamoStore, n, request, s};
use crate::sdk_error::store_failure;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::home::{ExactHome, HOME_REGION};
use dynamodb_outbox_core::__private::ports::{Claim, ClaimedItem};
use dynamodb_outbox_core::__private::schema::{ItemKey, RETRY_COUNT, TABLE};

/// What one claim asks for.
pub(super) struct ClaimRequest<'a> {
    pub(super) key: &'a ItemKey,
    pub(super) seen_due: &'a str,
    pub(super) lease_until_ms: i64,
    pub(super) shard: &'a str,
}

impl DynamoStore {
    /// One conditional claim: the item still `PENDING`, due as seen and ours — by the
    /// general ownership condition, or by `exact` (the `HomeRegion` value a refusal
    /// returned). `Err` holds the item a refusal returned (`ALL_OLD`).
    pub(super) async fn claim_once(
        &self,
        claim: &ClaimRequest<'_>,
        exact: Option<ExactHome>,
    ) -> Result<Result<Claim, Option<serde_dynamo::Item>>, Failure> {
        let mut condition = "#status = :pending AND #due = :seen".to_owned();
        let mut update = self.update(claim.key);
        let ownership = self.key_names().regions.ownership_condition();
        let home = match (exact, ownership) {
            (Some(exact), _) => {
                let (owned, value) = exact.condition(":home");
                Some((owned, s(value)))
            }
            (None, Some((owned, region))) => Some((owned.to_owned(), s(region))),
            (None, None) => None,
        };
        if let Some((owned, value)) = home {
            condition = format!("{condition} AND {owned}");
            update = update
                .expression_attribute_names("#home", HOME_REGION)
                .expression_attribute_values(":home", value);
        }
        let result = request(
            update
                .condition_expression(condition)
                .update_expression(format!(
                    "SET {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero) + :one, #due = :lease, #shard = :shard"
                ))
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_values(":shard", AttributeValue::S(claim.shard.to_owned()))
                .expression_attribute_values(":seen", AttributeValue::N(claim.seen_due.to_owned()))
                .expression_attribute_values(":lease", n(claim.lease_until_ms))
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send(),
        )
        .await;
        match result {
            Ok(out) => {
                let item = self.canonical(&out.attributes.unwrap_or_default());
                let claimed = ClaimedItem::decode(claim.key.clone(), item);
                Ok(Ok(Claim::Claimed(Box::new(claimed))))
            }
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(refused)) => {
                    Ok(Err(refused.item().map(|i| self.canonical(i))))
                }
                _ => Err(store_failure(&e)),
            },
        }
    }
}
