//! DynamoDB adapter: conditional state changes on outbox items.

use crate::ports::{MarkOutcome, OutboxStore, StoreError};
use crate::schema::{
    EXPIRES_AT, FAILED_AT, ItemKey, LAST_ERROR, PK, SENT_AT, SK, STATUS, SWEEP_DUE_AT, SWEEP_SHARD,
    Status,
};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_types::error::display::DisplayErrorContext;

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
