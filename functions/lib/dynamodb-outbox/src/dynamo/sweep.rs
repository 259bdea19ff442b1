//! The sweeper's side of the DynamoDB adapter: index queries, claims, reschedules,
//! the adoption scan and its saved cursors.

use super::claim::ClaimRequest;
use super::{
    DynamoStore, index_unchanged, n, outcome, read, request, s, scanned, start_key, token,
};
use crate::sdk_error::store_failure;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::home::{HOME_REGION, HomeSeen};
use dynamodb_outbox_core::__private::ports::{
    Claim, ClaimedItem, DueKey, DuePage, Held, MarkOutcome, PageToken, ScanPage, SweepStore,
    UnindexedItem,
};
use dynamodb_outbox_core::__private::schema::{
    CREATED_AT, ITEM_TYPE, ItemKey, LAST_ERROR, PENDING_MESSAGE, RETRY_COUNT, SCAN_CURSOR,
    SCAN_SEGMENTS, STATUS, SWEEPER_PK, SeenIndex, Status, TABLE, derive_message_id, item_key,
    scan_cursor_sk,
};
use dynamodb_outbox_core::__private::schema::{OutboxItem, string_attr};

/// What a refused claim found, from the item the refusal returned (`ALL_OLD`, under
/// the engine's attribute names): its state read on its own, so that an item that
/// does not decode still counts as pending.
fn refused_claim(key: &ItemKey, old: Option<serde_dynamo::Item>) -> Claim {
    let Some(raw) = old else {
        return Claim::Finished;
    };
    if string_attr(&raw, STATUS) != Some(Status::Pending.as_str()) {
        return Claim::Finished;
    }
    let due_at_ms = SeenIndex::of(&raw).due_ms();
    let item = OutboxItem::from_item(raw).unwrap_or_default();
    Claim::Held(Held {
        created_at_ms: item.created_at.unwrap_or(0),
        message_id: item
            .message_id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| derive_message_id(key)),
        due_at_ms,
    })
}

/// Whether the item a refused claim returned holds this very claim: still pending,
/// with our lease as its due time and our shard. The SDK sends a request again when
/// its answer is lost (a reset connection, a timeout); if the first one took effect,
/// the second is refused by the lease it wrote. Taken for another sweep's, the claim
/// would strand the item, and hold back its aggregate's later messages, until the
/// lease ends (issue 38). A lease is an epoch millisecond past the end of the sweep
/// that chose it: another sweep choosing the same one for the same item, as seen at
/// the same due time, would at worst publish it twice, which at-least-once allows.
fn holds_our_claim(old: &serde_dynamo::Item, claim: &ClaimRequest<'_>) -> bool {
    let seen = SeenIndex::of(old);
    string_attr(old, STATUS) == Some(Status::Pending.as_str())
        && seen.due_ms_exact() == Some(claim.lease_until_ms)
        && seen.shard.as_deref() == Some(claim.shard)
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
            .filter_map(|item| {
                let item = self.canonical(item);
                let seen = SeenIndex::of(&item);
                Some(DueKey {
                    due_at_ms: seen.due_ms()?,
                    seen_due: seen.due?,
                    key: item_key(&item)?,
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
        seen_due: &str,
        lease_until_ms: i64,
        shard: &str,
    ) -> Result<Claim, Failure> {
        let claim = ClaimRequest {
            key,
            seen_due,
            lease_until_ms,
            shard,
        };
        let refused = match self.claim_once(&claim, None).await? {
            Ok(claimed) => return Ok(claimed),
            Err(refused) => refused,
        };
        if let Some(ours) = refused.as_ref().filter(|old| holds_our_claim(old, &claim)) {
            return Ok(Claim::Claimed(Box::new(ClaimedItem::decode(
                key.clone(),
                ours.clone(),
            ))));
        }
        // A `HomeRegion` this region owns but the condition cannot match (`NULL`, an
        // empty or padded string): claimed again on exactly that value (core `home`).
        let regions = &self.key_names().regions;
        let again = refused.as_ref().filter(|old| {
            string_attr(old, STATUS) == Some(Status::Pending.as_str())
                && SeenIndex::of(old).due.as_deref() == Some(seen_due)
        });
        let exact = again.and_then(|old| regions.exact_ownership(&HomeSeen::of(old)));
        if let Some(exact) = exact
            && let Ok(claimed) = self.claim_once(&claim, Some(exact)).await?
        {
            return Ok(claimed);
        }
        Ok(refused_claim(key, refused))
    }

    async fn reschedule(
        &self,
        key: &ItemKey,
        claimed_due_ms: i64,
        next_due_ms: i64,
        reason: &str,
        attempted: bool,
    ) -> Result<MarkOutcome, Failure> {
        let give_back = if attempted {
            String::new()
        } else {
            format!(", {RETRY_COUNT} = {RETRY_COUNT} - :one")
        };
        let mut update = self
            .update(key)
            .condition_expression("#status = :pending AND #due = :claimed")
            .update_expression(format!(
                "SET {LAST_ERROR} = :reason, #due = :next{give_back}"
            ))
            .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
            .expression_attribute_values(":claimed", n(claimed_due_ms))
            .expression_attribute_values(":next", n(next_due_ms))
            .expression_attribute_values(":reason", s(reason));
        if !attempted {
            update = update.expression_attribute_values(":one", n(1));
        }
        outcome(request(update.send()).await)
    }

    async fn unindexed_page(
        &self,
        segment: u32,
        segments: u32,
        limit: i32,
        start: Option<PageToken>,
    ) -> Result<ScanPage, Failure> {
        // Every pending outbox item, with its index attributes: whether a sweep would
        // find it (a shard of ours, an integer due time) is decided here, as no filter
        // expression can say it.
        let out = request(
            self.client
                .scan()
                .table_name(&self.table)
                .segment(i32::try_from(segment).unwrap_or(0))
                .total_segments(i32::try_from(segments).unwrap_or(1))
                .filter_expression("#type = :message AND #status = :pending")
                .projection_expression("#pk, #sk, #created, #shard, #due, #home")
                .expression_attribute_names("#home", HOME_REGION)
                .expression_attribute_names("#type", ITEM_TYPE)
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_names("#pk", &self.keys.partition_key)
                .expression_attribute_names("#sk", &self.keys.sort_key)
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
            .filter_map(|raw| {
                let raw = self.canonical(raw);
                let index = SeenIndex::of(&raw);
                let item = read(raw)?;
                // Another region's message is its own sweeper's to adopt.
                let ours = self.keys.regions.owns(item.home_region.as_deref());
                (ours && !index.is_valid(&self.keys.sweep_shards)).then_some(UnindexedItem {
                    created_at_ms: item.created_at,
                    key: item.key()?,
                    index,
                })
            })
            .collect();
        Ok(ScanPage {
            items,
            scanned: scanned(out.scanned_count()),
            next: token(out.last_evaluated_key)?,
        })
    }

    async fn adopt(
        &self,
        key: &ItemKey,
        shard: &str,
        due_ms: i64,
        seen: &SeenIndex,
    ) -> Result<MarkOutcome, Failure> {
        let (unchanged, values) = index_unchanged(seen);
        let mut update = self
            .update(key)
            .condition_expression(format!(
                "#status = :pending AND #type = :message AND {unchanged}"
            ))
            .update_expression(format!(
                "SET #shard = :shard, #due = :due, {RETRY_COUNT} = if_not_exists({RETRY_COUNT}, :zero)"
            ))
            .expression_attribute_names("#type", ITEM_TYPE)
            .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
            .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
            .expression_attribute_values(":message", s(PENDING_MESSAGE))
            .expression_attribute_values(":shard", s(shard))
            .expression_attribute_values(":due", n(due_ms))
            .expression_attribute_values(":zero", n(0));
        for (name, value) in values {
            update = update.expression_attribute_values(name, value);
        }
        outcome(request(update.send()).await)
    }

    async fn scan_cursor(&self, segment: u32, segments: u32) -> Result<Option<PageToken>, Failure> {
        let out = request(
            self.client
                .get_item()
                .table_name(&self.table)
                .key(&self.keys.partition_key, s(SWEEPER_PK))
                .key(&self.keys.sort_key, s(&scan_cursor_sk(segment, self.keys.regions.region())))
                .consistent_read(true)
                .send(),
        )
        .await
        .map_err(|e| store_failure(&e))?;
        let item = out.item.unwrap_or_default();
        // A cursor of another segmentation is of no use: its segment covers other keys.
        let same_split = matches!(item.get(SCAN_SEGMENTS), Some(AttributeValue::N(v)) if *v == segments.to_string());
        Ok(match item.get(SCAN_CURSOR) {
            Some(AttributeValue::S(cursor)) if same_split => Some(PageToken::new(cursor.clone())),
            _ => None,
        })
    }

    async fn save_scan_cursor(
        &self,
        segment: u32,
        segments: u32,
        cursor: Option<&PageToken>,
    ) -> Result<(), Failure> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(&self.keys.partition_key, s(SWEEPER_PK))
            .item(&self.keys.sort_key, s(&scan_cursor_sk(segment, self.keys.regions.region())))
            .item(SCAN_SEGMENTS, n(i64::from(segments)));
        if let Some(cursor) = cursor {
            put = put.item(SCAN_CURSOR, s(cursor.as_str()));
        }
        request(put.send())
            .await
            .map(|_| ())
            .map_err(|e| store_failure(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamo::Item;
    use std::collections::HashMap;

    fn key() -> ItemKey {
        ItemKey {
            pk: "A".into(),
            sk: "MESSAGE#X#1".into(),
        }
    }

    #[test]
    fn a_refused_claim_tells_a_finished_item_from_one_still_pending() {
        assert_eq!(refused_claim(&key(), None), Claim::Finished);
        let sent: Item = HashMap::from([("Status".to_owned(), s("SENT"))]);
        assert_eq!(refused_claim(&key(), Some(sent.into())), Claim::Finished);
        // Pending, and not even decodable: still ahead of its aggregate's later
        // messages.
        let pending: Item = HashMap::from([
            ("Status".to_owned(), s("PENDING")),
            ("RetryCount".to_owned(), s("0")),
            (
                "SweepDueAt".to_owned(),
                AttributeValue::N("1700000000000.5".into()),
            ),
        ]);
        assert_eq!(
            refused_claim(&key(), Some(pending.into())),
            Claim::Held(Held {
                created_at_ms: 0,
                message_id: derive_message_id(&key()),
                due_at_ms: Some(1_700_000_000_000),
            })
        );
    }
}
