//! DynamoDB adapter: conditional state changes on outbox items, and the sweeper's
//! index queries, claims and adoption scan. Items are read as the schema's
//! [`OutboxItem`] through `serde_dynamo`; errors become [`Failure`]s.

use crate::sdk_error::{AwsError, store_failure};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use outbox_core::failure::Failure;
use outbox_core::ports::{
    Claim, ClaimedItem, DueKey, DuePage, MarkOutcome, OutboxStore, PageToken, ScanPage, SweepStore,
    UnindexedItem,
};
use outbox_core::schema::{
    CREATED_AT, EXPIRES_AT, FAILED_AT, ITEM_TYPE, ItemKey, LAST_ERROR, OutboxItem, PENDING_MESSAGE,
    RETRY_COUNT, SENT_AT, STATUS, Status, TABLE,
};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

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

    /// An update of one item, conditional on it being `PENDING`.
    fn update(&self, key: &ItemKey) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(TABLE.partition_key, s(&key.pk))
            .key(TABLE.sort_key, s(&key.sk))
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_values(":pending", s(Status::Pending.as_str()))
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Sends an SDK request boxed: see "Future depth" in the crate docs.
async fn request<F: std::future::Future>(request: F) -> F::Output {
    Box::pin(request).await
}

/// A refused condition is someone else's finished work, not an error.
fn outcome<T>(result: Result<T, AwsError<UpdateItemError>>) -> Result<MarkOutcome, Failure> {
    match result {
        Ok(_) => Ok(MarkOutcome::Marked),
        Err(e)
            if e.as_service_error()
                .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
        {
            Ok(MarkOutcome::AlreadyFinished)
        }
        Err(e) => Err(store_failure(&e)),
    }
}

/// An item read back from the table or the index, as the schema's type.
fn read(item: &Item) -> Option<OutboxItem> {
    serde_dynamo::from_item(item.clone()).ok()
}

/// DynamoDB's `LastEvaluatedKey` as an opaque token (its DynamoDB JSON).
fn token(last: Option<Item>) -> Result<Option<PageToken>, Failure> {
    match last.filter(|k| !k.is_empty()) {
        None => Ok(None),
        Some(k) => serde_json::to_string(&serde_dynamo::Item::from(k))
            .map(|text| Some(PageToken::new(text)))
            .map_err(|e| Failure::permanent(format!("unreadable LastEvaluatedKey: {e}"))),
    }
}

/// A token back into an `ExclusiveStartKey`.
fn start_key(start: Option<PageToken>) -> Result<Option<Item>, Failure> {
    start
        .map(|t| {
            serde_json::from_str::<serde_dynamo::Item>(t.as_str())
                .map(Into::into)
                .map_err(|e| Failure::permanent(format!("not a page token of this store: {e}")))
        })
        .transpose()
}

fn scanned(count: i32) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

impl OutboxStore for DynamoStore {
    async fn mark_sent(
        &self,
        key: &ItemKey,
        sent_at_ms: i64,
        expires_at_s: i64,
    ) -> Result<MarkOutcome, Failure> {
        let index = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
        outcome(
            request(
                self.update(key)
                    .update_expression(format!(
                        "SET #status = :sent, {SENT_AT} = :now, {EXPIRES_AT} = :exp REMOVE {}, {}",
                        index.0, index.1
                    ))
                    .expression_attribute_values(":sent", s(Status::Sent.as_str()))
                    .expression_attribute_values(":now", n(sent_at_ms))
                    .expression_attribute_values(":exp", n(expires_at_s))
                    .send(),
            )
            .await,
        )
    }

    async fn adopt_unindexed(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
    ) -> Result<MarkOutcome, Failure> {
        SweepStore::adopt(self, key, shard, due_ms).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        reason: &str,
        failed_at_ms: i64,
    ) -> Result<MarkOutcome, Failure> {
        let index = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
        outcome(
            request(self.update(key)
                .update_expression(format!(
                    "SET #status = :failed, {LAST_ERROR} = :reason, {FAILED_AT} = :now REMOVE {}, {}",
                    index.0, index.1
                ))
                .expression_attribute_values(":failed", s(Status::Failed.as_str()))
                .expression_attribute_values(":reason", s(reason))
                .expression_attribute_values(":now", n(failed_at_ms))
                .send())
            .await,
        )
    }
}

impl SweepStore for DynamoStore {
    async fn due_page(
        &self,
        shard: &str,
        due_by_ms: i64,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<DuePage, Failure> {
        let out = request(
            self.client
                .query()
                .table_name(&self.table)
                .index_name(TABLE.sweep_index)
                .key_condition_expression("#shard = :shard AND #due <= :now")
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":shard", s(shard))
                .expression_attribute_values(":now", n(due_by_ms))
                .scan_index_forward(true)
                .limit(limit)
                .set_exclusive_start_key(start_key(start)?)
                .send(),
        )
        .await
        .map_err(|e| store_failure(&e))?;
        let keys = out
            .items()
            .iter()
            .filter_map(read)
            .filter_map(|item| {
                Some(DueKey {
                    due_at_ms: item.sweep_due_at?,
                    key: item.key()?,
                })
            })
            .collect();
        Ok(DuePage {
            keys,
            scanned: scanned(out.scanned_count()),
            next: token(out.last_evaluated_key)?,
        })
    }

    async fn claim(
        &self,
        key: &ItemKey,
        seen_due_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Claim, Failure> {
        let result = request(
            self.update(key)
                .condition_expression("#status = :pending AND #due = :seen")
                .update_expression(format!(
                    "SET {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero) + :one, #due = :lease"
                ))
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":seen", n(seen_due_ms))
                .expression_attribute_values(":lease", n(lease_until_ms))
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
                .return_values(ReturnValue::AllNew)
                .send(),
        )
        .await;
        match result {
            Ok(out) => {
                let item = serde_dynamo::Item::from(out.attributes.unwrap_or_default());
                Ok(Claim::Claimed(Box::new(ClaimedItem::decode(
                    key.clone(),
                    item,
                ))))
            }
            Err(e) => match outcome::<()>(Err(e))? {
                MarkOutcome::AlreadyFinished => Ok(Claim::Lost),
                MarkOutcome::Marked => Err(Failure::permanent("unreachable claim outcome")),
            },
        }
    }

    async fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
    ) -> Result<MarkOutcome, Failure> {
        outcome(
            request(
                self.update(key)
                    .condition_expression("#status = :pending AND #due = :claimed")
                    .update_expression(format!("SET {LAST_ERROR} = :reason, #due = :next"))
                    .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                    .expression_attribute_values(":claimed", n(claimed_due_ms))
                    .expression_attribute_values(":next", n(next_due_ms))
                    .expression_attribute_values(":reason", s(reason))
                    .send(),
            )
            .await,
        )
    }

    async fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<ScanPage, Failure> {
        let out = request(
            self.client
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
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#pk", TABLE.partition_key)
                .expression_attribute_names("#sk", TABLE.sort_key)
                .expression_attribute_names("#created", CREATED_AT)
                .expression_attribute_values(":message", s(PENDING_MESSAGE))
                .expression_attribute_values(":pending", s(Status::Pending.as_str()))
                .limit(limit)
                .set_exclusive_start_key(start_key(start)?)
                .send(),
        )
        .await
        .map_err(|e| store_failure(&e))?;
        let items = out
            .items()
            .iter()
            .filter_map(read)
            .filter_map(|item| {
                Some(UnindexedItem {
                    created_at_ms: item.created_at,
                    key: item.key()?,
                })
            })
            .collect();
        Ok(ScanPage {
            items,
            scanned: scanned(out.scanned_count()),
            next: token(out.last_evaluated_key)?,
        })
    }

    async fn adopt(&self, key: &ItemKey, shard: &str, due_ms: i64) -> Result<MarkOutcome, Failure> {
        outcome(
            request(self.update(key)
                .condition_expression(
                    "#status = :pending AND #type = :message AND attribute_not_exists(#shard)",
                )
                .update_expression(format!(
                    "SET #shard = :shard, #due = :due, {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero)"
                ))
                .expression_attribute_names("#type", ITEM_TYPE)
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":message", s(PENDING_MESSAGE))
                .expression_attribute_values(":shard", s(shard))
                .expression_attribute_values(":due", n(due_ms))
                .expression_attribute_values(":zero", n(0))
                .send())
            .await,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_token_hands_back_the_key_it_was_made_of() {
        let last: Item = HashMap::from([
            ("PK".to_owned(), s("USER#1")),
            ("SK".to_owned(), s("MESSAGE#X#1")),
            ("SweepDueAt".to_owned(), n(42)),
        ]);
        let token = token(Some(last.clone())).expect("encodes");
        assert_eq!(start_key(token).expect("decodes"), Some(last));
        assert_eq!(token_of_empty(), None);
    }

    fn token_of_empty() -> Option<PageToken> {
        token(Some(HashMap::new())).expect("empty is no token")
    }
}
