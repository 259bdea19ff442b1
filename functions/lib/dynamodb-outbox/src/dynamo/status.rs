//! The stream path's status read ([`OutboxStore::statuses`](dynamodb_outbox_core::__private::ports::OutboxStore::statuses)):
//! the current `Status` of a batch's items in strongly consistent `BatchGetItem`s of
//! at most 100 keys, projected to the key and `Status` (the table's own key names in
//! the request, the engine's in what the core sees). Keys DynamoDB leaves unprocessed
//! (throttling, the 16 MB answer limit) are asked again after a pause, a bounded
//! number of times; what is then still unread fails the whole read, which the core
//! reports for retry. Billing is by the item's size, not the projection: a
//! consistent read of an item up to 4 KB is one read unit.

use super::{DynamoStore, Item, request};
use crate::sdk_error::store_failure;
use aws_sdk_dynamodb::types::KeysAndAttributes;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::__private::policy::batch_retry_delay;
use dynamodb_outbox_core::__private::ports::StatusRead;
use dynamodb_outbox_core::home::HOME_REGION;
use dynamodb_outbox_core::__private::schema::PENDING_ELSEWHERE;
use dynamodb_outbox_core::__private::schema::{ItemKey, STATUS, Status, item_key, string_attr};
use futures::StreamExt;
use std::future::Future;
use std::time::Duration;

/// The most keys one `BatchGetItem` takes.
const BATCH_GET_LIMIT: usize = 100;

/// Calls one chunk of keys may take — the first and the retries of what it left
/// unprocessed — before the read gives up (pauses of 50 ms to 1.6 s between them).
const STATUS_READ_ATTEMPTS: u32 = 6;

/// Chunks read at once: a batch of up to 10,000 records is 100 chunks.
const STATUS_READ_CONCURRENCY: usize = 8;

/// One call's answer: the items found, and the keys left unprocessed.
type Answer = (Vec<Item>, Vec<Item>);

impl DynamoStore {
    /// The current `Status` of `keys`, as [`StatusRead`] says.
    pub(super) async fn read_statuses(&self, keys: &[ItemKey]) -> Result<StatusRead, Failure> {
        // Built before they are streamed: a lazy map here is not `Send` for every
        // lifetime of `keys`, which the port's future must be.
        let chunks: Vec<_> = keys
            .chunks(BATCH_GET_LIMIT)
            .map(|chunk| {
                let keys = chunk.iter().map(|key| self.key_of(key)).collect();
                read_chunk(keys, |keys| self.batch_get(keys), |pause| self.sleep(pause))
            })
            .collect();
        let answers: Vec<_> = futures::stream::iter(chunks)
            .buffer_unordered(STATUS_READ_CONCURRENCY)
            .collect()
            .await;
        let mut read = StatusRead::default();
        for answer in answers {
            let (items, requests) = answer?;
            read.requests += requests;
            for raw in items {
                let item = self.canonical(&raw);
                let key = item_key(&item).ok_or_else(|| {
                    Failure::permanent(format!(
                        "BatchGetItem on {} answered an item without a string key ({}, {})",
                        self.table, self.keys.partition_key, self.keys.sort_key
                    ))
                })?;
                let status = string_attr(&item, STATUS).map(str::to_owned);
                read.statuses.insert(key, self.as_seen_here(status, &item));
            }
        }
        Ok(read)
    }

    /// One strongly consistent `BatchGetItem` of `keys` (at most 100), projected to
    /// the key and `Status`.
    async fn batch_get(&self, keys: Vec<Item>) -> Result<Answer, Failure> {
        let wanted = KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(true)
            .projection_expression("#pk, #sk, #status, #home")
            .expression_attribute_names("#pk", &self.keys.partition_key)
            .expression_attribute_names("#sk", &self.keys.sort_key)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#home", HOME_REGION)
            .build()
            .map_err(|e| Failure::permanent(format!("BatchGetItem request: {e}")))?;
        let out = request(
            self.client
                .batch_get_item()
                .request_items(&self.table, wanted)
                .send(),
        )
        .await
        .map_err(|e| {
            let failure = store_failure(&e);
            Failure::new(
                failure.kind,
                format!("BatchGetItem on {}: {}", self.table, failure.reason),
            )
        })?;
        let found = out
            .responses
            .and_then(|mut r| r.remove(&self.table))
            .unwrap_or_default();
        let unprocessed = out
            .unprocessed_keys
            .and_then(|mut u| u.remove(&self.table))
            .map(|k| k.keys)
            .unwrap_or_default();
        Ok((found, unprocessed))
    }
}

impl DynamoStore {
    /// A `PENDING` item another region owns now (re-homed by a failover since its
    /// insert) as [`PENDING_ELSEWHERE`]; any other status as it is.
    fn as_seen_here(&self, status: Option<String>, item: &serde_dynamo::Item) -> Option<String> {
        let pending = status.as_deref() == Some(Status::Pending.as_str());
        if pending && !self.keys.regions.owns(string_attr(item, HOME_REGION)) {
            return Some(PENDING_ELSEWHERE.to_owned());
        }
        status
    }
}

/// Reads `keys` through `get`: once, then again for what each call left unprocessed,
/// pausing ([`batch_retry_delay`]) before each retry, at most
/// [`STATUS_READ_ATTEMPTS`] calls. The items found and the calls made; an error when
/// a call failed or keys are still unread.
async fn read_chunk<G, GF, P, PF>(
    keys: Vec<Item>,
    get: G,
    pause: P,
) -> Result<(Vec<Item>, usize), Failure>
where
    G: Fn(Vec<Item>) -> GF,
    GF: Future<Output = Result<Answer, Failure>>,
    P: Fn(Duration) -> PF,
    PF: Future<Output = ()>,
{
    let asked = keys.len();
    let mut found = Vec::with_capacity(asked);
    let mut left = keys;
    for attempt in 0..STATUS_READ_ATTEMPTS {
        if attempt > 0 {
            pause(batch_retry_delay(attempt)).await;
        }
        let (items, unprocessed) = get(left).await?;
        found.extend(items);
        left = unprocessed;
        if left.is_empty() {
            return Ok((found, attempt as usize + 1));
        }
    }
    Err(Failure::transient(format!(
        "BatchGetItem left {} of {asked} keys unprocessed after {STATUS_READ_ATTEMPTS} calls (throttled, or the table's read capacity is exhausted)",
        left.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// How the keys of one call are known here: by their partition key.
    fn pks(keys: &[Item]) -> Vec<String> {
        keys.iter()
            .filter_map(|k| k.get("PK").and_then(|v| v.as_s().ok()).cloned())
            .collect()
    }

    fn keys(n: usize) -> Vec<Item> {
        (0..n)
            .map(|i| HashMap::from([("PK".to_owned(), AttributeValue::S(format!("A{i}")))]))
            .collect()
    }

    /// A `get` that leaves the last key unprocessed `times` times, recording each call.
    fn throttling(
        times: usize,
        calls: &Mutex<Vec<Vec<String>>>,
    ) -> impl Fn(Vec<Item>) -> std::future::Ready<Result<Answer, Failure>> + '_ {
        move |mut keys| {
            let mut seen = calls.lock().unwrap_or_else(|p| p.into_inner());
            seen.push(pks(&keys));
            let unprocessed = if seen.len() <= times {
                keys.split_off(keys.len().saturating_sub(1))
            } else {
                Vec::new()
            };
            std::future::ready(Ok((keys, unprocessed)))
        }
    }

    fn no_pause(_: Duration) -> std::future::Ready<()> {
        std::future::ready(())
    }

    #[tokio::test]
    async fn unprocessed_keys_are_asked_again_until_every_key_is_read() {
        let calls = Mutex::new(Vec::new());
        let (found, requests) = read_chunk(keys(3), throttling(2, &calls), no_pause)
            .await
            .expect("read");
        assert_eq!(pks(&found), ["A0", "A1", "A2"]);
        assert_eq!(requests, 3);
        let calls = calls.into_inner().unwrap_or_default();
        assert_eq!(calls, [vec!["A0", "A1", "A2"], vec!["A2"], vec!["A2"]]);
    }

    #[tokio::test]
    async fn keys_still_unprocessed_after_the_last_attempt_fail_the_read() {
        let calls = Mutex::new(Vec::new());
        let pauses = Mutex::new(Vec::new());
        let pause = |d: Duration| {
            pauses.lock().unwrap_or_else(|p| p.into_inner()).push(d);
            std::future::ready(())
        };
        let err = read_chunk(keys(2), throttling(usize::MAX, &calls), pause)
            .await
            .expect_err("gives up");
        assert!(err.is_retryable(), "{err:?}");
        assert!(err.reason.contains("1 of 2 keys unprocessed"), "{err}");
        let attempts = STATUS_READ_ATTEMPTS as usize;
        assert_eq!(calls.lock().map(|c| c.len()).unwrap_or(0), attempts);
        let pauses = pauses.into_inner().unwrap_or_default();
        assert_eq!(pauses.len(), attempts - 1);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
    }

    #[tokio::test]
    async fn a_failed_call_fails_the_read() {
        let get = |_| std::future::ready(Err::<Answer, _>(Failure::permanent("AccessDeniedException")));
        let err = read_chunk(keys(1), get, no_pause).await.expect_err("fails");
        assert_eq!(err.reason, "AccessDeniedException");
    }
}
