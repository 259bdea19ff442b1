//! DynamoDB adapter: conditional state changes on outbox items.

use crate::ports::{
    Claim, DueKey, DuePage, MarkOutcome, OutboxStore, PageToken, ScanPage, StoreError, SweepStore,
    UnindexedItem,
};
use crate::schema::{
    CREATED_AT, EXPIRES_AT, FAILED_AT, ITEM_TYPE, ItemKey, LAST_ERROR, PENDING_MESSAGE, PK,
    RETRY_COUNT, SENT_AT, SK, STATUS, SWEEP_DUE_AT, SWEEP_INDEX, SWEEP_SHARD, Status,
};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::types::ReturnValue;
use aws_smithy_types::error::display::DisplayErrorContext;
use std::collections::HashMap;

/// Outbox items in one table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoStore {
    /// Wraps a client built once at start-up.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
        }
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The client.
    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    fn update(
        &self,
        key: &ItemKey,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PK, AttributeValue::S(key.pk.clone()))
            .key(SK, AttributeValue::S(key.sk.clone()))
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_values(
                ":pending",
                AttributeValue::S(Status::Pending.as_str().into()),
            )
    }
}

fn outcome<T>(result: Result<T, SdkError<UpdateItemError>>) -> Result<MarkOutcome, StoreError> {
    match result {
        Ok(_) => Ok(MarkOutcome::Marked),
        Err(e)
            if e.as_service_error()
                .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
        {
            Ok(MarkOutcome::AlreadyFinished)
        }
        Err(e) => Err(StoreError(DisplayErrorContext(&e).to_string())),
    }
}

impl OutboxStore for DynamoStore {
    async fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> Result<MarkOutcome, StoreError> {
        outcome(
            self.update(key)
                .update_expression(format!(
                    "SET #status = :sent, {SENT_AT} = :now, {EXPIRES_AT} = :exp REMOVE {SWEEP_SHARD}, {SWEEP_DUE_AT}"
                ))
                .expression_attribute_values(":sent", AttributeValue::S(Status::Sent.as_str().into()))
                .expression_attribute_values(":now", AttributeValue::N(sent_at_ms.to_string()))
                .expression_attribute_values(":exp", AttributeValue::N(expires_at_s.to_string()))
                .send()
                .await,
        )
    }

    async fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
    ) -> Result<MarkOutcome, StoreError> {
        SweepStore::adopt(self, key, shard, due_ms).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        reason: &str,
        failed_at_ms: i64,
    ) -> Result<MarkOutcome, StoreError> {
        outcome(
            self.update(key)
                .update_expression(format!(
                    "SET #status = :failed, {LAST_ERROR} = :reason, {FAILED_AT} = :now REMOVE {SWEEP_SHARD}, {SWEEP_DUE_AT}"
                ))
                .expression_attribute_values(":failed", AttributeValue::S(Status::Failed.as_str().into()))
                .expression_attribute_values(":reason", AttributeValue::S(reason.to_owned()))
                .expression_attribute_values(":now", AttributeValue::N(failed_at_ms.to_string()))
                .send()
                .await,
        )
    }
}

/// A numeric attribute, if present and a number.
fn number_attr(item: &HashMap<String, AttributeValue>, name: &str) -> Option<i64> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

/// The primary key of an item read from the table or the index.
fn key_of(item: &HashMap<String, AttributeValue>) -> Option<ItemKey> {
    match (item.get(PK), item.get(SK)) {
        (Some(AttributeValue::S(pk)), Some(AttributeValue::S(sk))) => Some(ItemKey {
            pk: pk.clone(),
            sk: sk.clone(),
        }),
        _ => None,
    }
}

fn token(last: Option<HashMap<String, AttributeValue>>) -> Option<PageToken> {
    last.filter(|k| !k.is_empty())
        .map(|k| PageToken(serde_dynamo::Item::from(k)))
}

fn start_key(start: Option<PageToken>) -> Option<HashMap<String, AttributeValue>> {
    start.map(|t| t.0.into())
}

fn scanned(count: i32) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

impl SweepStore for DynamoStore {
    async fn due_page(
        &self,
        shard: &str,
        due_by_ms: i64,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<DuePage, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(SWEEP_INDEX)
            .key_condition_expression("#shard = :shard AND #due <= :now")
            .expression_attribute_names("#shard", SWEEP_SHARD)
            .expression_attribute_names("#due", SWEEP_DUE_AT)
            .expression_attribute_values(":shard", AttributeValue::S(shard.to_owned()))
            .expression_attribute_values(":now", AttributeValue::N(due_by_ms.to_string()))
            .scan_index_forward(true)
            .limit(limit)
            .set_exclusive_start_key(start_key(start))
            .send()
            .await
            .map_err(|e| StoreError(DisplayErrorContext(&e).to_string()))?;
        let keys = out
            .items()
            .iter()
            .filter_map(|item| {
                let key = key_of(item)?;
                let due_at_ms = number_attr(item, SWEEP_DUE_AT)?;
                Some(DueKey { key, due_at_ms })
            })
            .collect();
        Ok(DuePage {
            keys,
            scanned: scanned(out.scanned_count()),
            next: token(out.last_evaluated_key),
        })
    }

    async fn claim(
        &self,
        key: &ItemKey,
        seen_due_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Claim, StoreError> {
        let result = self
            .update(key)
            .condition_expression("#status = :pending AND #due = :seen")
            .update_expression(format!(
                "SET {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero) + :one, #due = :lease"
            ))
            .expression_attribute_names("#due", SWEEP_DUE_AT)
            .expression_attribute_values(":seen", AttributeValue::N(seen_due_ms.to_string()))
            .expression_attribute_values(":lease", AttributeValue::N(lease_until_ms.to_string()))
            .expression_attribute_values(":zero", AttributeValue::N("0".to_owned()))
            .expression_attribute_values(":one", AttributeValue::N("1".to_owned()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Claim::Claimed(serde_dynamo::Item::from(
                out.attributes.unwrap_or_default(),
            ))),
            Err(e) => match outcome::<()>(Err(e))? {
                MarkOutcome::AlreadyFinished => Ok(Claim::Lost),
                MarkOutcome::Marked => Err(StoreError("unreachable claim outcome".to_owned())),
            },
        }
    }

    async fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
    ) -> Result<MarkOutcome, StoreError> {
        outcome(
            self.update(key)
                .condition_expression("#status = :pending AND #due = :claimed")
                .update_expression(format!("SET {LAST_ERROR} = :reason, #due = :next"))
                .expression_attribute_names("#due", SWEEP_DUE_AT)
                .expression_attribute_values(
                    ":claimed",
                    AttributeValue::N(claimed_due_ms.to_string()),
                )
                .expression_attribute_values(":next", AttributeValue::N(next_due_ms.to_string()))
                .expression_attribute_values(":reason", AttributeValue::S(reason.to_owned()))
                .send()
                .await,
        )
    }

    async fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<ScanPage, StoreError> {
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .segment(i32::try_from(segment).unwrap_or(0))
            .total_segments(i32::try_from(segments).unwrap_or(1))
            .filter_expression(
                "#type = :message AND #status = :pending AND attribute_not_exists(#shard)",
            )
            .projection_expression("#pk, #sk, #created")
            .expression_attribute_names("#type", ITEM_TYPE)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#shard", SWEEP_SHARD)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#created", CREATED_AT)
            .expression_attribute_values(":message", AttributeValue::S(PENDING_MESSAGE.to_owned()))
            .expression_attribute_values(
                ":pending",
                AttributeValue::S(Status::Pending.as_str().to_owned()),
            )
            .limit(limit)
            .set_exclusive_start_key(start_key(start))
            .send()
            .await
            .map_err(|e| StoreError(DisplayErrorContext(&e).to_string()))?;
        let items = out
            .items()
            .iter()
            .filter_map(|item| {
                Some(UnindexedItem {
                    key: key_of(item)?,
                    created_at_ms: number_attr(item, CREATED_AT),
                })
            })
            .collect();
        Ok(ScanPage {
            items,
            scanned: scanned(out.scanned_count()),
            next: token(out.last_evaluated_key),
        })
    }

    async fn adopt(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
    ) -> Result<MarkOutcome, StoreError> {
        outcome(
            self.update(key)
                .condition_expression(
                    "#status = :pending AND #type = :message AND attribute_not_exists(#shard)",
                )
                .update_expression(format!(
                    "SET #shard = :shard, #due = :due, {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero)"
                ))
                .expression_attribute_names("#type", ITEM_TYPE)
                .expression_attribute_names("#shard", SWEEP_SHARD)
                .expression_attribute_names("#due", SWEEP_DUE_AT)
                .expression_attribute_values(":message", AttributeValue::S(PENDING_MESSAGE.to_owned()))
                .expression_attribute_values(":shard", AttributeValue::S(shard.to_owned()))
                .expression_attribute_values(":due", AttributeValue::N(due_ms.to_string()))
                .expression_attribute_values(":zero", AttributeValue::N("0".to_owned()))
                .send()
                .await,
        )
    }
}
