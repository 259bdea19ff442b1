//! The order fence's reads: the pending messages of some aggregates, from sweeper
//! index shards (keys only: every item in the sparse index is pending, so this reads
//! only pending items, never an aggregate's `SENT` history) or, for another
//! producer's aggregate whose pending items may be outside the index, from its
//! partition (a consistent read, with `CreatedAt` and `MessageId`).
//!
//! The shards a batch touches are read in one request: a PartiQL `SELECT` on the
//! index with `IN` on its partition key, which DynamoDB serves as a query of each
//! shard, not a scan. One request per batch instead of one per shard took the
//! publisher from 0.30 to about 0.15 requests per message on a half-FIFO workload
//! (`scripts/bench`). Where the select is refused for good — an emulator without
//! PartiQL on indexes (moto) — the store says so once and queries each shard
//! instead; a denied select (a role without `dynamodb:PartiQLSelect`) falls back too,
//! and is reported as an error naming the action and counted (`AccessDenied`) where
//! its failure is built. A read that still fails makes the fence unable to tell (the
//! sweeper charges the attempt and says why, with the request and action named).
//! Every read takes at most the pages the core gives it (its share of one budget per
//! batch). A sequenced aggregate's read is its own ([`sequence`]): a bounded,
//! strongly consistent read of its key range.

mod sequence;

use super::{DynamoStore, Item, request, s, scanned};
use crate::sdk_error::{AwsError, store_failure};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_smithy_types::retry::ProvideErrorKind;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::{KeyNames, Failure};
use dynamodb_outbox_core::__private::policy::{FenceRead, Scope, Sibling};
use dynamodb_outbox_core::__private::ports::PendingPage;
use dynamodb_outbox_core::__private::schema::{
    CREATED_AT, ITEM_TYPE, MESSAGE_ID, PENDING_MESSAGE, STATUS, SeenIndex, Status, TABLE, item_key,
};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

impl DynamoStore {
    /// Reads what `read` asks for, at most `max_pages` requests in all (the core
    /// shares one budget among a batch's reads).
    pub(super) async fn fence_read(
        &self,
        read: &FenceRead,
        max_pages: u32,
    ) -> Result<PendingPage, Failure> {
        let max_pages = usize::try_from(max_pages.max(1)).unwrap_or(usize::MAX);
        let shards = match &read.scope {
            Scope::Sequence {
                aggregate,
                lowest,
                highest,
                members,
            } => {
                let range = sequence::Range {
                    aggregate,
                    lowest,
                    highest,
                    members: *members,
                };
                return self.sequence_read(&range, max_pages).await;
            }
            Scope::Partition(pk) => {
                let mut page = PendingPage::default();
                self.query_pages(read, Target::Partition(pk), max_pages, &mut page)
                    .await?;
                return Ok(page);
            }
            Scope::Shards(shards) if shards.is_empty() => {
                return Ok(PendingPage {
                    complete: true,
                    ..PendingPage::default()
                });
            }
            Scope::Shards(shards) => shards,
        };
        if !self.select_refused.load(Ordering::Relaxed) {
            match self.select_shards(read, shards, max_pages).await {
                Err(Refusal::Unserved(e)) => {
                    // A denial is reported as an error naming the action where the
                    // failure is built (`sdk_error::store_failure`): the fallback
                    // does not hide it.
                    self.select_refused.store(true, Ordering::Relaxed);
                    tracing::warn!(error = %e,
                        "the order fence cannot read the index shards in one PartiQL select (denied, or not served on an index by this store); querying each shard instead");
                }
                Err(Refusal::Failed(e)) => return Err(e),
                Ok(page) => return Ok(page),
            }
        }
        let mut page = PendingPage {
            complete: true,
            ..PendingPage::default()
        };
        // One query per shard: each gets at least its first page, or a batch whose
        // shards outnumber its budget could never tell on such a store.
        let max_pages = max_pages.max(shards.len());
        for shard in shards {
            let left = max_pages.saturating_sub(page.requests);
            if left == 0 {
                page.complete = false;
                break;
            }
            self.query_pages(read, Target::Shard(shard), left, &mut page)
                .await?;
            if !page.complete {
                break;
            }
        }
        Ok(page)
    }

    /// Adds the pages of one query to `page`, at most `max_pages` of them;
    /// `page.complete` says whether it got to the end.
    async fn query_pages(
        &self,
        read: &FenceRead,
        target: Target<'_>,
        max_pages: usize,
        page: &mut PendingPage,
    ) -> Result<(), Failure> {
        let mut start: Option<Item> = None;
        page.complete = false;
        for _ in 0..max_pages.max(1) {
            let out = match target {
                Target::Shard(shard) => self.shard_page(shard, start).await?,
                Target::Partition(pk) => self.partition_page(pk, start).await?,
            };
            page.requests += 1;
            page.scanned += scanned(out.scanned_count());
            page.siblings
                .extend(out.items().iter().filter_map(|raw| sibling(read, self.canonical(raw))));
            start = out.last_evaluated_key.filter(|k| !k.is_empty());
            if start.is_none() {
                page.complete = true;
                return Ok(());
            }
        }
        Ok(())
    }

    /// Every pending key of `shards`, in one PartiQL select and its next pages, at
    /// most `max_pages` requests in all. DynamoDB takes up to 50 partition keys in an
    /// `IN`; the index has 16 shards.
    async fn select_shards(
        &self,
        read: &FenceRead,
        shards: &BTreeSet<String>,
        max_pages: usize,
    ) -> Result<PendingPage, Refusal> {
        let statement = select_statement(&self.table, &self.keys, shards.len());
        let parameters: Vec<AttributeValue> = shards.iter().map(|shard| s(shard)).collect();
        let mut page = PendingPage::default();
        let mut next: Option<String> = None;
        loop {
            let out = request(
                self.client
                    .execute_statement()
                    .statement(&statement)
                    .set_parameters(Some(parameters.clone()))
                    .set_next_token(next)
                    .send(),
            )
            .await
            .map_err(|e| Refusal::of(&e, &self.table))?;
            page.requests += 1;
            page.scanned += out.items().len() as u64;
            page.siblings
                .extend(out.items().iter().filter_map(|raw| sibling(read, self.canonical(raw))));
            next = out.next_token.filter(|t| !t.is_empty());
            if next.is_none() {
                page.complete = true;
                return Ok(page);
            }
            if page.requests >= max_pages {
                return Ok(page);
            }
        }
    }

    /// One page of an index shard: every pending key, whatever its due time.
    async fn shard_page(&self, shard: &str, start: Option<Item>) -> Result<QueryOutput, Failure> {
        request(
            self.client
                .query()
                .table_name(&self.table)
                .index_name(TABLE.sweep_index)
                .key_condition_expression("#shard = :shard")
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_values(":shard", s(shard))
                .set_exclusive_start_key(start)
                .send(),
        )
        .await
        .map_err(|e| named(&e, &format!("Query (dynamodb:Query) on the sweep index of {}", self.table)))
    }

    /// One page of an aggregate's partition: its pending outbox items.
    async fn partition_page(&self, pk: &str, start: Option<Item>) -> Result<QueryOutput, Failure> {
        request(
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .filter_expression("#type = :message AND #status = :pending")
                .projection_expression("#pk, #sk, #created, #id, #shard, #due")
                .expression_attribute_names("#pk", &self.keys.partition_key)
                .expression_attribute_names("#sk", &self.keys.sort_key)
                .expression_attribute_names("#type", ITEM_TYPE)
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#created", CREATED_AT)
                .expression_attribute_names("#id", MESSAGE_ID)
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":message", s(PENDING_MESSAGE))
                .expression_attribute_values(":pending", s(Status::Pending.as_str()))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send(),
        )
        .await
        .map_err(|e| named(&e, &format!("Query (dynamodb:Query) on {}", self.table)))
    }
}

/// The IAM action the select needs, on the index's ARN: named in its failures.
const SELECT_ACTION: &str = "dynamodb:PartiQLSelect";

/// Why the select did not answer.
enum Refusal {
    /// Refused for good (a role without `dynamodb:PartiQLSelect`, an emulator that
    /// serves no PartiQL on an index): the store queries each shard instead.
    Unserved(Failure),
    /// A passing failure: the fence cannot tell this time.
    Failed(Failure),
}

impl Refusal {
    fn of<E>(err: &AwsError<E>, table: &str) -> Self
    where
        E: ProvideErrorKind + ProvideErrorMetadata + std::error::Error + 'static,
    {
        let what = format!("ExecuteStatement ({SELECT_ACTION}) on the sweep index of {table}");
        let failure = named(err, &what);
        if failure.is_retryable() {
            Refusal::Failed(failure)
        } else {
            Refusal::Unserved(failure)
        }
    }
}

/// The store's failure for `err`, its reason naming the request and its action.
fn named<E>(err: &AwsError<E>, what: &str) -> Failure
where
    E: ProvideErrorKind + ProvideErrorMetadata + std::error::Error + 'static,
{
    let failure = store_failure(err);
    Failure::new(failure.kind, format!("{what}: {}", failure.reason))
}

/// What one query reads.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// An index shard.
    Shard(&'a str),
    /// An aggregate's partition of the table.
    Partition(&'a str),
}

/// The select of every key in `shards` shards of the sweep index: keys and due
/// times only, the shards as parameters.
fn select_statement(table: &str, keys: &KeyNames, shards: usize) -> String {
    let marks = vec!["?"; shards.max(1)].join(", ");
    format!(
        r#"SELECT "{pk}", "{sk}", "{due}" FROM "{table}"."{index}" WHERE "{shard}" IN [{marks}]"#,
        pk = keys.partition_key,
        sk = keys.sort_key,
        due = TABLE.sweep_index_sort_key,
        index = TABLE.sweep_index,
        shard = TABLE.sweep_index_partition_key,
    )
}

/// A returned item as a sibling, when it belongs to one of `read`'s aggregates. From
/// the index: its key and due time. From the partition: its place too — unless its
/// attributes do not read, and then its place is unknown (it fences).
fn sibling(read: &FenceRead, item: serde_dynamo::Item) -> Option<Sibling> {
    let key = item_key(&item)?;
    if !read.aggregates.contains(&key.pk) {
        return None;
    }
    let due = SeenIndex::of(&item).due_ms();
    match &read.scope {
        Scope::Shards(_) => Some(Sibling::indexed(key, due?)),
        // A sequence read is the adapter's own (`sequence`).
        Scope::Sequence { .. } => None,
        Scope::Partition(_) => Some(
            match dynamodb_outbox_core::__private::schema::OutboxItem::from_item(item) {
                Ok(i) => Sibling::read(key, due, i.created_at, i.message_id.as_deref()),
                Err(_) => Sibling {
                    key,
                    due_at_ms: due,
                    order: None,
                },
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn the_select_names_the_index_and_one_parameter_per_shard() {
        assert_eq!(
            select_statement("orders", &KeyNames::default(), 3),
            r#"SELECT "PK", "SK", "SweepDueAt" FROM "orders"."OutboxSweepIndex" WHERE "SweepShard" IN [?, ?, ?]"#
        );
        assert!(
            select_statement("orders", &KeyNames::new("pk", "sk"), 1)
                .starts_with(r#"SELECT "pk", "sk", "SweepDueAt" FROM"#)
        );
    }

    fn read(scope: Scope) -> FenceRead {
        FenceRead {
            scope,
            aggregates: BTreeSet::from(["A".to_owned()]),
        }
    }

    #[test]
    fn only_the_aggregates_asked_for_are_siblings_with_what_each_read_tells() {
        let raw = |pk: &str, extra: &[(&str, AttributeValue)]| -> serde_dynamo::Item {
            let mut i: Item = HashMap::from([
                ("PK".to_owned(), s(pk)),
                ("SK".to_owned(), s("MESSAGE#X#1")),
                ("SweepDueAt".to_owned(), AttributeValue::N("42.5".into())),
            ]);
            i.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
            i.into()
        };
        let shard = read(Scope::Shards(BTreeSet::from(["07".to_owned()])));
        assert_eq!(sibling(&shard, raw("B", &[])), None, "another aggregate");
        let from_index = sibling(&shard, raw("A", &[])).expect("a sibling");
        assert_eq!((from_index.due_at_ms, from_index.order), (Some(42), None));
        let partition = read(Scope::Partition("A".into()));
        let created = [("CreatedAt", AttributeValue::N("5".into()))];
        let exact = sibling(&partition, raw("A", &created)).expect("a sibling");
        assert!(exact.order.is_some());
        let odd = [("CreatedAt", AttributeValue::Bool(true))];
        let unknown = sibling(&partition, raw("A", &odd)).expect("still a sibling");
        assert_eq!(unknown.order, None, "unreadable: its place is unknown");
    }

    fn select_error(
        code: &str,
        status: u16,
    ) -> AwsError<aws_sdk_dynamodb::operation::execute_statement::ExecuteStatementError> {
        use aws_smithy_runtime_api::http::{Response, StatusCode};
        use aws_smithy_types::body::SdkBody;
        use aws_smithy_types::error::ErrorMetadata;
        let meta = ErrorMetadata::builder().code(code).message("said so").build();
        let raw = Response::new(
            StatusCode::try_from(status).expect("status"),
            SdkBody::empty(),
        );
        aws_sdk_dynamodb::error::SdkError::service_error(
            aws_sdk_dynamodb::operation::execute_statement::ExecuteStatementError::generic(meta),
            raw,
        )
    }

    #[test]
    fn a_failed_select_names_its_request_and_action_and_only_a_passing_one_stops_the_read() {
        let Refusal::Failed(failure) =
            Refusal::of(&select_error("ThrottlingException", 400), "orders")
        else {
            panic!("a throttled select is a passing failure");
        };
        assert!(failure.is_retryable());
        assert!(
            failure.reason.contains("ExecuteStatement (dynamodb:PartiQLSelect)")
                && failure.reason.contains("orders")
                && failure.reason.contains("ThrottlingException"),
            "{failure}"
        );
        for code in ["ValidationException", "AccessDeniedException"] {
            assert!(
                matches!(
                    Refusal::of(&select_error(code, 400), "orders"),
                    Refusal::Unserved(_)
                ),
                "{code}: the shards are queried instead"
            );
        }
    }
}
