//! DynamoDB adapter: conditional state changes on outbox items ([`OutboxStore`]; the
//! batched ones in `batch`), the order fence's reads (`fence`), the stream path's
//! status read (`status`), and the sweeper's
//! index queries, claims, adoption scan and scan cursors ([`SweepStore`](dynamodb_outbox_core::__private::ports::SweepStore), in `sweep`).
//! Items are read as the schema's [`OutboxItem`] through `serde_dynamo`; errors become
//! [`Failure`]s. The table's own key and TTL names ([`KeyNames`]) are used in every
//! request built here, and renamed to the engine's (`PK`, `SK`, `ExpiresAt`) in every
//! item read here (`DynamoStore::canonical`), so the core never sees them.

mod batch;
mod claim;
mod describe;
mod fence;
mod status;
mod sweep;

pub use describe::{Described, describe_table, key_schema};

use crate::sdk_error::{AwsError, store_failure};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::{Failure, KeyNames};
use dynamodb_outbox_core::__private::policy::{FailedMark, FenceRead, PAYLOAD_ON_DEAD_LETTER_QUEUE};
use dynamodb_outbox_core::__private::ports::{
    MarkChange, MarkCondition, MarkOutcome, OutboxStore, PageToken, PendingPage, StatementAnswer, StatusRead,
};
use dynamodb_outbox_core::__private::schema::{
    FAILED_AT, ItemKey, LAST_ERROR, OutboxItem, PAYLOAD, PAYLOAD_ON, SENT_AT, STATUS, SeenIndex,
    Status, TABLE, failed_sweep_shard,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

type Item = HashMap<String, AttributeValue>;

/// Outbox items in one table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
    /// The table's key and TTL attribute names.
    keys: KeyNames,
    /// Set once the order fence's PartiQL select was refused for good: the fence
    /// queries each shard from then on (`fence.rs`).
    select_refused: Arc<AtomicBool>,
}

impl DynamoStore {
    /// Wraps a client built once at start-up.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
            keys: KeyNames::default(),
            select_refused: Arc::default(),
        }
    }

    /// The same store on a table whose key and TTL attributes are named `keys`.
    pub fn with_key_names(mut self, keys: KeyNames) -> Self {
        self.keys = keys;
        self
    }

    /// The table's key and TTL attribute names.
    pub fn key_names(&self) -> &KeyNames {
        &self.keys
    }

    /// An item read from the table, its key and TTL attributes under the engine's names.
    pub(crate) fn canonical(&self, raw: &Item) -> serde_dynamo::Item {
        let mut item = raw.clone();
        self.keys.to_canonical(&mut item);
        serde_dynamo::Item::from(item)
    }

    /// The key of an item in a request.
    fn key_of(&self, key: &ItemKey) -> Item {
        HashMap::from([
            (self.keys.partition_key.clone(), s(&key.pk)),
            (self.keys.sort_key.clone(), s(&key.sk)),
        ])
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
            .set_key(Some(self.key_of(key)))
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

/// An item read back from the table or the index (its names already the engine's), as
/// the schema's type.
fn read(item: serde_dynamo::Item) -> Option<OutboxItem> {
    OutboxItem::from_item(item).ok()
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

/// The condition that the index attributes are still as `seen`, with the names
/// `#shard` and `#due` and the values `:seen_shard` and `:seen_due` it uses. Numbers
/// compare by value, so a due time read as `1700000000000.5` matches what is stored.
fn index_unchanged(seen: &SeenIndex) -> (String, Vec<(&'static str, AttributeValue)>) {
    let mut values = Vec::new();
    let shard = match &seen.shard {
        Some(shard) => {
            values.push((":seen_shard", s(shard)));
            "#shard = :seen_shard"
        }
        None => "attribute_not_exists(#shard)",
    };
    let due = match &seen.due {
        Some(due) => {
            values.push((":seen_due", AttributeValue::N(due.clone())));
            "#due = :seen_due"
        }
        None => "attribute_not_exists(#due)",
    };
    (format!("{shard} AND {due}"), values)
}

/// The update expression of a `FAILED` mark of `key`, and the values it uses besides
/// `:failed` and `:now`. A mark with `FailedAt` moves the item to its `FAILED#NN`
/// index partition, due at the failure time; the size-limited marks remove the index
/// keys, the room they need (see `policy::failed_marks`).
fn failed_update(key: &ItemKey, mark: &FailedMark) -> (String, Vec<(&'static str, AttributeValue)>) {
    let (shard, due) = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
    let mut set = Vec::new();
    let mut remove = Vec::new();
    let mut values = Vec::new();
    if mark.failed_at {
        set.push(format!("{shard} = :failed_shard, {due} = :now"));
        values.push((":failed_shard", s(&failed_sweep_shard(&key.pk))));
    } else {
        remove.extend([shard.to_owned(), due.to_owned()]);
    }
    if let Some(reason) = &mark.last_error {
        set.push(format!("{LAST_ERROR} = :reason"));
        values.push((":reason", s(reason)));
    }
    if mark.failed_at {
        set.push(format!("{FAILED_AT} = :now"));
    }
    if mark.payload_moved {
        set.push(format!("{PAYLOAD_ON} = :payload_on"));
        values.push((":payload_on", s(PAYLOAD_ON_DEAD_LETTER_QUEUE)));
        remove.push(PAYLOAD.to_owned());
    }
    if let Some(payload) = &mark.payload {
        // The pointer to the payload's copy kept under `failed/`: as long as the one
        // it replaces, so never the reason a mark is refused for size.
        set.push(format!("{PAYLOAD} = :payload"));
        values.push((":payload", s(payload)));
    }
    // DynamoDB applies an expression as a whole; moto applies it action by action,
    // keeps what it applied before an action it refuses for size, and refuses an item
    // at its limit that a SET grows before the REMOVE that makes room. So: REMOVE
    // first, and the state change last, so that a mark refused there never leaves
    // the item FAILED without its reason.
    set.push("#status = :failed".to_owned());
    let remove = if remove.is_empty() {
        String::new()
    } else {
        format!("REMOVE {} ", remove.join(", "))
    };
    (format!("{remove}SET {}", set.join(", ")), values)
}

impl OutboxStore for DynamoStore {
    async fn mark_batch(
        &self,
        changes: &[(ItemKey, MarkChange)],
    ) -> Result<Vec<StatementAnswer>, Failure> {
        self.batch_execute(changes).await
    }

    async fn pause(&self, pause: std::time::Duration) {
        self.sleep(pause).await;
    }

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
                        "SET #status = :sent, {SENT_AT} = :now, #expires = :exp REMOVE {}, {}",
                        index.0, index.1
                    ))
                    .expression_attribute_names("#expires", &self.keys.ttl_attribute)
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
        seen: &SeenIndex,
    ) -> Result<MarkOutcome, Failure> {
        dynamodb_outbox_core::__private::ports::SweepStore::adopt(self, key, shard, due_ms, seen).await
    }

    async fn mark_failed(
        &self,
        key: &ItemKey,
        mark: &FailedMark,
        failed_at_ms: i64,
        condition: &MarkCondition,
    ) -> Result<MarkOutcome, Failure> {
        let (expression, values) = failed_update(key, mark);
        let mut update = self
            .update(key)
            .update_expression(expression)
            .expression_attribute_values(":failed", s(Status::Failed.as_str()));
        if let Some(due) = condition.sweep_due_at() {
            // Under a sweep's claim: refused once the item was redriven or claimed
            // again (its `SweepDueAt` is no longer the lease).
            update = update
                .condition_expression("#status = :pending AND #claimed_due = :claimed_due")
                .expression_attribute_names("#claimed_due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":claimed_due", AttributeValue::N(due.to_owned()));
        }
        if mark.failed_at {
            update = update.expression_attribute_values(":now", n(failed_at_ms));
        }
        for (name, value) in values {
            update = update.expression_attribute_values(name, value);
        }
        outcome(request(update.send()).await)
    }

    async fn load(&self, key: &ItemKey) -> Result<Option<serde_dynamo::Item>, Failure> {
        let out = request(
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(self.key_of(key)))
                .consistent_read(true)
                .send(),
        )
        .await
        .map_err(|e| store_failure(&e))?;
        Ok(out.item.as_ref().map(|item| self.canonical(item)))
    }

    async fn pending(&self, read: &FenceRead, max_pages: u32) -> Result<PendingPage, Failure> {
        self.fence_read(read, max_pages).await
    }

    async fn statuses(&self, keys: &[ItemKey]) -> Result<StatusRead, Failure> {
        self.read_statuses(keys).await
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

    fn key() -> ItemKey {
        ItemKey {
            pk: "USER#1".into(),
            sk: "MESSAGE#X#1".into(),
        }
    }

    #[test]
    fn each_failed_mark_changes_only_what_it_says() {
        let full = failed_update(&key(), &FailedMark {
            last_error: Some("why".into()),
            failed_at: true,
            payload_moved: false,
            payload: None,
        });
        assert_eq!(
            full.0,
            "SET SweepShard = :failed_shard, SweepDueAt = :now, LastError = :reason, FailedAt = :now, #status = :failed"
        );
        assert!(full.1.contains(&(":failed_shard", s(&failed_sweep_shard("USER#1")))));
        let moved = failed_update(&key(), &FailedMark {
            last_error: Some("why".into()),
            failed_at: true,
            payload_moved: true,
            payload: None,
        });
        assert!(moved.0.starts_with("REMOVE Payload SET SweepShard = :failed_shard"));
        assert!(moved.0.contains("PayloadOn = :payload_on"));
        assert!(moved.1.contains(&(":payload_on", s("dead-letter queue"))));
        let bare = failed_update(&key(), &FailedMark {
            last_error: None,
            failed_at: false,
            payload_moved: false,
            payload: None,
        });
        assert_eq!(
            bare.0,
            "REMOVE SweepShard, SweepDueAt SET #status = :failed"
        );
        assert!(bare.1.is_empty());
        let pointed = failed_update(&key(), &FailedMark {
            last_error: None,
            failed_at: false,
            payload_moved: false,
            payload: Some("pointer".into()),
        });
        assert_eq!(
            pointed.0,
            "REMOVE SweepShard, SweepDueAt SET Payload = :payload, #status = :failed"
        );
        assert_eq!(pointed.1, vec![(":payload", s("pointer"))]);
    }

    #[test]
    fn items_read_from_a_table_keyed_otherwise_carry_the_engines_names() {
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .build(),
        );
        let store = DynamoStore::new(client, "t")
            .with_key_names(KeyNames::new("pk", "sk").ttl_attribute("expires_at"));
        let raw: Item = HashMap::from([
            ("pk".to_owned(), s("USER#1")),
            ("sk".to_owned(), s("MESSAGE#X#1")),
            ("expires_at".to_owned(), n(9)),
        ]);
        let item = read(store.canonical(&raw)).expect("reads");
        assert_eq!(item.key(), Some(key()));
        assert_eq!(item.expires_at, Some(9));
        assert_eq!(
            store.key_of(&key()),
            HashMap::from([
                ("pk".to_owned(), s("USER#1")),
                ("sk".to_owned(), s("MESSAGE#X#1"))
            ])
        );
    }

    #[test]
    fn adoption_is_conditional_on_the_index_values_as_read() {
        let (absent, values) = index_unchanged(&SeenIndex::default());
        assert_eq!(
            absent,
            "attribute_not_exists(#shard) AND attribute_not_exists(#due)"
        );
        assert!(values.is_empty());
        let seen = SeenIndex {
            shard: Some("99".into()),
            due: Some("1700000000000.5".into()),
        };
        let (foreign, values) = index_unchanged(&seen);
        assert_eq!(foreign, "#shard = :seen_shard AND #due = :seen_due");
        assert!(values.contains(&(":seen_due", AttributeValue::N("1700000000000.5".into()))));
    }
}
