//! The fence's read of a sequenced aggregate ([`Scope::Sequence`]): its outbox items
//! by sort key, newest first, from the batch's last member down to the first item
//! below its first member — strongly consistent, a few small items in one request
//! whatever the partition holds (business items sort elsewhere; the `SENT` history
//! lies below the one item it reads under the members).

use super::super::{DynamoStore, Item, request, s, scanned};
use super::named;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::__private::policy::Sibling;
use dynamodb_outbox_core::__private::policy::holds_in_sequence;
use dynamodb_outbox_core::__private::ports::PendingPage;
use dynamodb_outbox_core::__private::schema::{
    ITEM_TYPE, SEQUENCED_PREFIX, STATUS, SeenIndex, TABLE, item_key,
};


/// The range of one sequenced aggregate.
pub(in crate::dynamo) struct Range<'a> {
    pub aggregate: &'a str,
    pub lowest: &'a str,
    pub highest: &'a str,
    pub members: usize,
}

impl DynamoStore {
    /// The pending items of `range`, at most `max_pages` requests; complete once it
    /// read an item below the lowest member, or the range's end (then the aggregate
    /// has no earlier sequenced message: `no_earlier_sequence`).
    pub(in crate::dynamo) async fn sequence_read(
        &self,
        range: &Range<'_>,
        max_pages: usize,
    ) -> Result<PendingPage, Failure> {
        let mut page = PendingPage::default();
        let mut start: Option<Item> = None;
        // DynamoDB bills a read for the whole items it reads, whatever the projection:
        // the first page asks for the members and one more — all it needs unless
        // messages of other batches lie between the members. A next page asks for one
        // item once the lowest member was read, else for up to 25. Two pages at least,
        // whatever the batch's budget: a gap must not leave the earliest member unable
        // to tell.
        let mut limit = i32::try_from(range.members.saturating_add(1))
            .unwrap_or(100)
            .clamp(2, 100);
        for _ in 0..max_pages.max(2) {
            let out = self.sequence_page(range, limit, start).await?;
            page.requests += 1;
            page.scanned += scanned(out.scanned_count());
            let mut reached_below = false;
            let mut reached_lowest = false;
            for raw in out.items() {
                let item = self.canonical(raw);
                let Some(key) = item_key(&item) else { continue };
                reached_lowest |= key.sk.as_str() == range.lowest;
                reached_below = key.sk.as_str() < range.lowest;
                if pending(&item) {
                    let due_at_ms = SeenIndex::of(&item).due_ms();
                    page.siblings.push(Sibling { key, due_at_ms, order: None });
                }
                if reached_below {
                    break;
                }
            }
            start = out.last_evaluated_key.filter(|k| !k.is_empty());
            if reached_below || start.is_none() {
                page.complete = true;
                page.no_earlier_sequence = !reached_below;
                return Ok(page);
            }
            limit = if reached_lowest { 1 } else { 25 };
        }
        Ok(page)
    }

    async fn sequence_page(
        &self,
        range: &Range<'_>,
        limit: i32,
        start: Option<Item>,
    ) -> Result<QueryOutput, Failure> {
        request(
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
                .projection_expression("#pk, #sk, #type, #status, #shard, #due")
                .expression_attribute_names("#pk", &self.keys.partition_key)
                .expression_attribute_names("#sk", &self.keys.sort_key)
                .expression_attribute_names("#type", ITEM_TYPE)
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#shard", TABLE.sweep_index_partition_key)
                .expression_attribute_names("#due", TABLE.sweep_index_sort_key)
                .expression_attribute_values(":pk", s(range.aggregate))
                .expression_attribute_values(":lo", s(SEQUENCED_PREFIX))
                .expression_attribute_values(":hi", s(range.highest))
                .scan_index_forward(false)
                .consistent_read(true)
                .limit(limit)
                .set_exclusive_start_key(start)
                .send(),
        )
        .await
        .map_err(|e| named(&e, &format!("Query (dynamodb:Query) on {}", self.table)))
    }
}

/// Whether an item the read returned holds back the messages after it
/// ([`holds_in_sequence`]).
fn pending(item: &serde_dynamo::Item) -> bool {
    let text = |name: &str| match item.get(name) {
        Some(serde_dynamo::AttributeValue::S(v)) => Some(v.as_str()),
        _ => None,
    };
    holds_in_sequence(text(ITEM_TYPE), text(STATUS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_core::__private::schema::PENDING_MESSAGE;
    use serde_dynamo::AttributeValue;
    use std::collections::HashMap;

    fn item(status: Option<AttributeValue>) -> serde_dynamo::Item {
        let mut i = HashMap::from([(
            ITEM_TYPE.to_owned(),
            AttributeValue::S(PENDING_MESSAGE.to_owned()),
        )]);
        if let Some(v) = status {
            i.insert(STATUS.to_owned(), v);
        }
        i.into()
    }

    #[test]
    fn only_an_outbox_item_exactly_pending_holds_back_the_next() {
        let text = |v: &str| Some(AttributeValue::S(v.to_owned()));
        assert!(pending(&item(text("PENDING"))));
        assert!(
            !pending(&item(text(" PENDING"))),
            "unreadable: nobody ever sends it, so it holds nothing back"
        );
        assert!(!pending(&item(text("SENT"))));
        assert!(!pending(&item(text("FAILED"))));
        assert!(!pending(&item(None)), "no status: not a message in flight");
        let mut business = item(text("PENDING"));
        business.insert(ITEM_TYPE.to_owned(), AttributeValue::S("ORDER".into()));
        assert!(!pending(&business), "not an outbox item");
    }
}
