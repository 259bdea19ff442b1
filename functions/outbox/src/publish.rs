//! The publish path shared by the stream publisher and the sweeper: route, build
//! entries, batch within the destination's limits while keeping each aggregate's
//! order, send, then mark `SENT` — or isolate poison as `FAILED` with a copy on the
//! dead-letter queue.

use crate::config::PublisherConfig;
use crate::message::{ATTR_ERROR, ATTR_SK, AttrValue, OutboundMessage};
use crate::ports::{EntryResult, MarkOutcome, MessageSink, OutboxStore};
use crate::route::{Destination, SQS_MAX_BATCH_ENTRIES};
use crate::schema::{ItemKey, OutboxMessage};
use futures::StreamExt;
use std::collections::{HashMap, HashSet};

/// How many conditional updates run at once after a publish.
const MARK_CONCURRENCY: usize = 32;

/// When an unindexed item the stream path could not finish becomes the sweeper's.
const ADOPT_GRACE_MS: i64 = 60_000;

/// One unit of work for the publish path.
#[derive(Debug, Clone)]
pub struct WorkItem {
    /// Opaque id the caller uses to match outcomes (a stream sequence number).
    pub id: String,
    /// What to do.
    pub work: Work,
}

/// What the publish path should do with an item.
#[derive(Debug, Clone)]
pub enum Work {
    /// A well-formed message: route and publish it.
    Publish(OutboxMessage),
    /// A permanent problem found before publishing: dead-letter it and mark it
    /// `FAILED`.
    Poison(Poison),
}

/// An item that can never be published as it is.
#[derive(Debug, Clone)]
pub struct Poison {
    /// Its key, when known (needed to mark it `FAILED`).
    pub key: Option<ItemKey>,
    /// The outbox message id, when it could be read or derived.
    pub message_id: Option<String>,
    /// The topic, when it could be read.
    pub topic: Option<String>,
    /// What the dead-letter queue receives: the payload, or the raw item as JSON
    /// when there is no usable payload, so nothing is lost.
    pub body: String,
    /// Why, in words an operator understands.
    pub reason: String,
}

/// What happened to one work item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Published. `marked` is false when the `SENT` update could not be made (the
    /// sweeper will find the item; consumers see a duplicate at worst) or someone
    /// else had already finished the item.
    Sent {
        /// Whether this call changed the item to `SENT`.
        marked: bool,
    },
    /// Poison: copied to the dead-letter queue and marked `FAILED`.
    DeadLettered {
        /// The reason recorded in `LastError`.
        reason: String,
    },
    /// A transient failure: report for retry.
    Retry {
        /// What failed.
        reason: String,
    },
    /// Not attempted: an earlier message of the same aggregate failed in this batch,
    /// and publishing this one first would break the aggregate's order.
    Blocked,
}

impl Outcome {
    /// Whether the caller must deliver this item again.
    pub fn needs_retry(&self) -> bool {
        matches!(self, Outcome::Retry { .. } | Outcome::Blocked)
    }
}

/// Counts for logs and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Published.
    pub sent: usize,
    /// Published but not marked by this call.
    pub unmarked: usize,
    /// Poison isolated.
    pub dead_lettered: usize,
    /// Reported for retry (failed or blocked).
    pub retried: usize,
}

impl Summary {
    /// Tallies outcomes.
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        let mut s = Summary::default();
        for o in outcomes {
            match o {
                Outcome::Sent { marked } => {
                    s.sent += 1;
                    if !marked {
                        s.unmarked += 1;
                    }
                }
                Outcome::DeadLettered { .. } => s.dead_lettered += 1,
                Outcome::Retry { .. } | Outcome::Blocked => s.retried += 1,
            }
        }
        s
    }
}

/// A message placed in a call.
#[derive(Debug)]
struct Entry {
    index: usize,
    aggregate: String,
    message: OutboundMessage,
}

/// The calls of one round, by destination index. Rounds run one after another;
/// the calls in a round run concurrently.
type Round = HashMap<usize, Call>;

#[derive(Debug, Default)]
struct Call {
    entries: Vec<Entry>,
    bytes: usize,
}

/// The plan for a batch: destinations, rounds of calls, and the poison found while
/// routing. Pure: no I/O.
#[derive(Debug, Default)]
pub struct Plan {
    destinations: Vec<Destination>,
    rounds: Vec<Round>,
    poison: Vec<(usize, Poison)>,
}

/// Routes every item, builds its entry, and places it in the earliest call that
/// keeps its aggregate's order: never before an earlier message of the same
/// aggregate; in a later round when the earlier one went to another destination or
/// to a FIFO queue (where one call may partly fail and let a later message overtake).
pub fn plan(config: &PublisherConfig, items: &[WorkItem]) -> Plan {
    let mut plan = Plan::default();
    let mut dest_index: HashMap<Destination, usize> = HashMap::new();
    let mut last_round: HashMap<&str, (usize, usize)> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let msg = match &item.work {
            Work::Poison(p) => {
                plan.poison.push((index, p.clone()));
                continue;
            }
            Work::Publish(msg) => msg,
        };
        let Some(dest) = config.routes.resolve(&msg.topic) else {
            plan.poison.push((
                index,
                poison_of(
                    msg,
                    format!(
                        "no route for topic `{}`: add it to OUTBOX_ROUTES or set OUTBOX_DEFAULT_DESTINATION, then redrive the message",
                        msg.topic
                    ),
                ),
            ));
            continue;
        };
        let outbound = OutboundMessage::for_destination(msg, dest);
        let size = dest.message_size(&outbound);
        if size > dest.max_message_bytes() {
            plan.poison.push((
                index,
                poison_of(
                    msg,
                    format!(
                        "message is {size} bytes (payload plus attributes) but {dest} accepts at most {}: shrink the payload or store it elsewhere and send a reference",
                        dest.max_message_bytes()
                    ),
                ),
            ));
            continue;
        }
        let d = *dest_index.entry(dest.clone()).or_insert_with(|| {
            plan.destinations.push(dest.clone());
            plan.destinations.len() - 1
        });
        let earliest = match last_round.get(msg.aggregate()) {
            None => 0,
            Some(&(round, prev_d)) if prev_d == d && !dest.is_fifo() => round,
            Some(&(round, _)) => round + 1,
        };
        let mut r = earliest;
        loop {
            if r == plan.rounds.len() {
                plan.rounds.push(Round::new());
            }
            let call = plan.rounds[r].entry(d).or_default();
            if call.entries.len() < SQS_MAX_BATCH_ENTRIES
                && call.bytes + size <= dest.max_batch_bytes()
            {
                call.bytes += size;
                call.entries.push(Entry {
                    index,
                    aggregate: msg.key.pk.clone(),
                    message: outbound,
                });
                break;
            }
            r += 1;
        }
        last_round.insert(msg.aggregate(), (r, d));
    }
    plan
}

impl Plan {
    /// Number of destination calls the plan makes.
    pub fn call_count(&self) -> usize {
        self.rounds.iter().map(HashMap::len).sum()
    }

    /// Number of items found to be poison while routing.
    pub fn poison_count(&self) -> usize {
        self.poison.len()
    }

    /// Every entry of every call, as the SQS adapter would send it.
    pub fn messages(&self) -> impl Iterator<Item = &OutboundMessage> {
        self.rounds
            .iter()
            .flat_map(|r| r.values())
            .flat_map(|c| c.entries.iter().map(|e| &e.message))
    }
}

/// Poison built from a decoded message that cannot be delivered.
pub fn poison_of(msg: &OutboxMessage, reason: String) -> Poison {
    Poison {
        key: Some(msg.key.clone()),
        message_id: Some(msg.message_id.clone()),
        topic: Some(msg.topic.clone()),
        body: msg.payload.clone(),
        reason,
    }
}

/// The publish path with its dependencies.
#[derive(Debug)]
pub struct Publisher<K, S> {
    /// Sends to destinations (and the dead-letter queue).
    pub sink: K,
    /// Changes item states.
    pub store: S,
    /// Routing, dead-letter queue, TTL.
    pub config: PublisherConfig,
}

impl<K: MessageSink, S: OutboxStore> Publisher<K, S> {
    /// Publishes `items`, returning one outcome per item, in the same order.
    pub async fn process(&self, items: &[WorkItem]) -> Vec<Outcome> {
        let mut outcomes: Vec<Option<Outcome>> = vec![None; items.len()];
        let plan = plan(&self.config, items);
        let mut failed_aggregates: HashSet<String> = HashSet::new();
        let mut sent: Vec<usize> = Vec::new();
        let mut poison = plan.poison;

        for round in &plan.rounds {
            let mut calls = Vec::with_capacity(round.len());
            for (&d, call) in round {
                let (blocked, live): (Vec<&Entry>, Vec<&Entry>) = call
                    .entries
                    .iter()
                    .partition(|e| failed_aggregates.contains(&e.aggregate));
                for e in blocked {
                    outcomes[e.index] = Some(Outcome::Blocked);
                }
                if !live.is_empty() {
                    calls.push(self.send_call(&plan.destinations[d], live));
                }
            }
            for results in futures::future::join_all(calls).await {
                for (entry, result) in results {
                    match result {
                        EntryResult::Sent => sent.push(entry.index),
                        EntryResult::Failed {
                            permanent: true,
                            reason,
                        } => {
                            let reason = format!("the destination refused the message: {reason}");
                            match &items[entry.index].work {
                                Work::Publish(msg) => {
                                    poison.push((entry.index, poison_of(msg, reason)))
                                }
                                Work::Poison(_) => {
                                    outcomes[entry.index] = Some(Outcome::Retry { reason })
                                }
                            }
                        }
                        EntryResult::Failed {
                            permanent: false,
                            reason,
                        } => {
                            failed_aggregates.insert(entry.aggregate.clone());
                            outcomes[entry.index] = Some(Outcome::Retry { reason });
                        }
                    }
                }
            }
        }

        for (index, outcome) in self.dead_letter(poison).await {
            outcomes[index] = Some(outcome);
        }
        for (index, marked) in self.mark_all_sent(items, &sent).await {
            outcomes[index] = Some(Outcome::Sent { marked });
        }
        let outcomes: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or(Outcome::Retry {
                    reason: "internal: item was not planned".to_owned(),
                })
            })
            .collect();
        self.adopt_unfinished(items, &outcomes).await;
        outcomes
    }

    /// Items from minimal producers carry no sweeper index keys, so if the stream path
    /// cannot finish them (a retry that may run out, a SENT mark that failed) nothing
    /// would ever look at them again. Put them in the index, due after the grace.
    async fn adopt_unfinished(&self, items: &[WorkItem], outcomes: &[Outcome]) {
        let due = now_ms() + ADOPT_GRACE_MS;
        let unfinished =
            items
                .iter()
                .zip(outcomes)
                .filter_map(|(item, outcome)| match (&item.work, outcome) {
                    (
                        Work::Publish(msg),
                        Outcome::Retry { .. } | Outcome::Blocked | Outcome::Sent { marked: false },
                    ) if !msg.indexed => Some(msg),
                    _ => None,
                });
        futures::stream::iter(unfinished)
            .for_each_concurrent(MARK_CONCURRENCY, |msg| async move {
                let shard = crate::schema::sweep_shard(&msg.key.pk);
                if let Err(e) = self.store.adopt_unindexed(&msg.key, &shard, due).await {
                    tracing::warn!(message_id = %msg.message_id, error = %e, "could not put the item in the sweeper index; scan mode will find it");
                }
            })
            .await;
    }

    /// Sends one call and pairs each entry with its result.
    async fn send_call<'e>(
        &self,
        dest: &Destination,
        entries: Vec<&'e Entry>,
    ) -> Vec<(&'e Entry, EntryResult)> {
        let messages: Vec<&OutboundMessage> = entries.iter().map(|e| &e.message).collect();
        let results = self.send_resilient(dest, &messages).await;
        entries.into_iter().zip(results).collect()
    }

    /// Sends one call and returns one result per message. When the service refuses
    /// the whole call for its content, the messages are sent one by one, so the one
    /// to blame is found (and refused for good) and the others go out.
    async fn send_resilient(
        &self,
        dest: &Destination,
        messages: &[&OutboundMessage],
    ) -> Vec<EntryResult> {
        let failed_all = |reason: String, permanent: bool| {
            vec![EntryResult::Failed { permanent, reason }; messages.len()]
        };
        match self.sink.send_batch(dest, messages).await {
            Ok(results) if results.len() == messages.len() => results,
            Ok(results) => failed_all(
                format!(
                    "{dest} answered {} results for {} messages",
                    results.len(),
                    messages.len()
                ),
                false,
            ),
            Err(err) if err.content_refused && messages.len() > 1 => {
                tracing::warn!(destination = %dest, error = %err, "call refused for its content; sending its messages one by one");
                let mut out = Vec::with_capacity(messages.len());
                for m in messages {
                    out.push(match self.sink.send_batch(dest, &[*m]).await {
                        Ok(mut r) if r.len() == 1 => r.remove(0),
                        Ok(_) => EntryResult::Failed {
                            permanent: false,
                            reason: format!("{dest} answered the wrong number of results"),
                        },
                        Err(e) => EntryResult::Failed {
                            permanent: e.content_refused,
                            reason: format!("{dest} refused it: {e}"),
                        },
                    });
                }
                out
            }
            Err(err) => {
                tracing::warn!(destination = %dest, error = %err, entries = messages.len(), "send failed");
                failed_all(
                    format!("sending to {dest} failed: {err}"),
                    err.content_refused,
                )
            }
        }
    }

    /// Copies poison to the dead-letter queue, then marks it `FAILED`. The copy comes
    /// first: a crash between the two leaves the item `PENDING` (found again), never
    /// `FAILED` without its copy.
    async fn dead_letter(&self, poison: Vec<(usize, Poison)>) -> Vec<(usize, Outcome)> {
        if poison.is_empty() {
            return Vec::new();
        }
        let dlq = &self.config.dead_letter;
        let mut out = Vec::with_capacity(poison.len());
        let mut copied: Vec<(usize, Poison)> = Vec::new();
        for chunk in chunk_by_limits(dlq, &poison, |(_, p)| dead_letter_message(p, dlq)) {
            let (members, messages): (Vec<&(usize, Poison)>, Vec<OutboundMessage>) =
                chunk.into_iter().unzip();
            let refs: Vec<&OutboundMessage> = messages.iter().collect();
            let results = self.send_resilient(dlq, &refs).await;
            for (member, result) in members.into_iter().zip(results) {
                match result {
                    EntryResult::Sent => copied.push((member.0, member.1.clone())),
                    // SQS refuses this content everywhere (e.g. characters it does not
                    // allow, a size over the queue's limit): retrying cannot help. The
                    // payload stays on the FAILED item in the table, so nothing is lost.
                    EntryResult::Failed {
                        permanent: true,
                        reason,
                    } => {
                        let mut p = member.1.clone();
                        p.reason = format!(
                            "{}; the dead-letter queue also refused a copy ({reason}), so the payload is only on this item",
                            p.reason
                        );
                        copied.push((member.0, p));
                    }
                    EntryResult::Failed {
                        permanent: false,
                        reason,
                    } => {
                        tracing::error!(%reason, "could not dead-letter poison; will retry");
                        out.push((
                            member.0,
                            Outcome::Retry {
                                reason: format!("dead-letter queue refused the copy: {reason}"),
                            },
                        ));
                    }
                }
            }
        }
        let now = now_ms();
        let marks = futures::stream::iter(copied.into_iter().map(|(index, p)| async move {
            tracing::warn!(
                message_id = p.message_id.as_deref().unwrap_or("-"),
                topic = p.topic.as_deref().unwrap_or("-"),
                aggregate = p.key.as_ref().map(|k| k.pk.as_str()).unwrap_or("-"),
                reason = %p.reason,
                "message is poison: copied to the dead-letter queue, marking FAILED"
            );
            if let Some(key) = &p.key
                && let Err(e) = self.store.mark_failed(key, &p.reason, now).await
            {
                // The copy is safe on the dead-letter queue; the item stays PENDING
                // and the sweeper will fail it again. Not worth a stream retry.
                tracing::error!(error = %e, sk = %key.sk, "could not mark FAILED; the sweeper will");
            }
            (index, Outcome::DeadLettered { reason: p.reason })
        }))
        .buffer_unordered(MARK_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
        out.extend(marks);
        out
    }

    /// Marks every published item `SENT`, concurrently. A refused condition means
    /// someone else finished the item; an error leaves it for the sweeper.
    async fn mark_all_sent(&self, items: &[WorkItem], sent: &[usize]) -> Vec<(usize, bool)> {
        let now = now_ms();
        let expires = now / 1000 + i64::from(self.config.ttl_days) * 86_400;
        futures::stream::iter(sent.iter().filter_map(|&index| match &items[index].work {
            Work::Publish(msg) => Some((index, msg)),
            Work::Poison(_) => None,
        }))
        .map(|(index, msg)| async move {
            let marked = match self.store.mark_sent(&msg.key, now, expires).await {
                Ok(MarkOutcome::Marked) => true,
                Ok(MarkOutcome::AlreadyFinished) => {
                    tracing::debug!(message_id = %msg.message_id, "already finished by another worker");
                    false
                }
                Err(e) => {
                    tracing::warn!(message_id = %msg.message_id, topic = %msg.topic, error = %e,
                        "published but could not mark SENT; the sweeper will republish it (a duplicate for consumers)");
                    false
                }
            };
            (index, marked)
        })
        .buffer_unordered(MARK_CONCURRENCY)
        .collect()
        .await
    }
}

/// The dead-letter copy of a poison item: its body, the reason and where it came from.
pub fn dead_letter_message(p: &Poison, dlq: &Destination) -> OutboundMessage {
    let mut attributes = Vec::new();
    if let Some(id) = &p.message_id {
        attributes.push((
            crate::message::ATTR_MESSAGE_ID,
            AttrValue::String(id.clone()),
        ));
    }
    if let Some(topic) = &p.topic {
        attributes.push((crate::message::ATTR_TOPIC, AttrValue::String(topic.clone())));
    }
    if let Some(key) = &p.key {
        attributes.push((
            crate::message::ATTR_AGGREGATE,
            AttrValue::String(key.pk.clone()),
        ));
        attributes.push((ATTR_SK, AttrValue::String(key.sk.clone())));
    }
    // Attribute values are limited only by the message size; keep the reason short.
    let reason: String = p.reason.chars().take(1000).collect();
    attributes.push((ATTR_ERROR, AttrValue::String(reason)));
    let fifo = dlq.is_fifo();
    let group = p
        .key
        .as_ref()
        .map(|k| k.pk.as_str())
        .unwrap_or("outbox-poison");
    let dedup = p.message_id.as_deref().unwrap_or(&p.body);
    OutboundMessage {
        body: if p.body.is_empty() {
            "(empty payload)".to_owned()
        } else {
            p.body.clone()
        },
        attributes,
        group_id: fifo.then(|| crate::message::fifo_id(group)),
        dedup_id: fifo.then(|| crate::message::fifo_id(dedup)),
    }
}

/// Groups items into chunks within `dest`'s batch limits (10 entries, its byte limit).
fn chunk_by_limits<'a, T>(
    dest: &Destination,
    items: &'a [T],
    build: impl Fn(&T) -> OutboundMessage,
) -> Vec<Vec<(&'a T, OutboundMessage)>> {
    let mut chunks: Vec<Vec<(&T, OutboundMessage)>> = Vec::new();
    let mut bytes = 0;
    for item in items {
        let m = build(item);
        let size = dest.message_size(&m);
        let full = chunks.last().is_none_or(|c| {
            c.len() >= SQS_MAX_BATCH_ENTRIES || bytes + size > dest.max_batch_bytes()
        });
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(c) = chunks.last_mut() {
            c.push((item, m));
        }
    }
    chunks
}

/// Wall-clock epoch milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{SendError, StoreError};
    use crate::route::Routes;
    use std::sync::Mutex;

    /// Records every call; fails entries whose body is in `fail_bodies`.
    #[derive(Default)]
    struct FakeSink {
        calls: Mutex<Vec<(String, Vec<String>)>>,
        transient: Vec<&'static str>,
        permanent: Vec<&'static str>,
        /// Bodies for which the service refuses the whole call (content).
        refuse_call: Vec<&'static str>,
    }

    impl MessageSink for FakeSink {
        async fn send_batch(
            &self,
            destination: &Destination,
            messages: &[&OutboundMessage],
        ) -> Result<Vec<EntryResult>, SendError> {
            self.calls.lock().expect("lock").push((
                destination.to_string(),
                messages.iter().map(|m| m.body.clone()).collect(),
            ));
            if messages
                .iter()
                .any(|m| self.refuse_call.contains(&m.body.as_str()))
            {
                return Err(SendError::content("BatchRequestTooLong"));
            }
            Ok(messages
                .iter()
                .map(|m| {
                    let dlq = destination.to_string().contains("dlq");
                    if !dlq && self.transient.contains(&m.body.as_str()) {
                        EntryResult::Failed {
                            permanent: false,
                            reason: "Throttled".into(),
                        }
                    } else if self.permanent.contains(&m.body.as_str())
                        && (!dlq || m.body.contains("everywhere"))
                    {
                        EntryResult::Failed {
                            permanent: true,
                            reason: "InvalidMessageContents".into(),
                        }
                    } else {
                        EntryResult::Sent
                    }
                })
                .collect())
        }
    }

    #[derive(Default)]
    struct FakeStore {
        sent: Mutex<Vec<ItemKey>>,
        failed: Mutex<Vec<(ItemKey, String)>>,
    }

    impl OutboxStore for FakeStore {
        async fn mark_sent(
            &self,
            key: &ItemKey,
            _: i64,
            _: i64,
        ) -> Result<MarkOutcome, StoreError> {
            self.sent.lock().expect("lock").push(key.clone());
            Ok(MarkOutcome::Marked)
        }
        async fn mark_failed(
            &self,
            key: &ItemKey,
            reason: &str,
            _: i64,
        ) -> Result<MarkOutcome, StoreError> {
            self.failed
                .lock()
                .expect("lock")
                .push((key.clone(), reason.to_owned()));
            Ok(MarkOutcome::Marked)
        }
    }

    fn config() -> PublisherConfig {
        PublisherConfig {
            table_name: "t".into(),
            routes: Routes::new(
                [
                    ("std".to_owned(), Destination::sqs("https://q/std")),
                    ("fifo".to_owned(), Destination::sqs("https://q/f.fifo")),
                    ("other".to_owned(), Destination::sqs("https://q/other")),
                ],
                None,
            ),
            dead_letter: Destination::sqs("https://q/dlq"),
            ttl_days: 7,
        }
    }

    fn work(pk: &str, topic: &str, body: &str) -> WorkItem {
        WorkItem {
            id: body.to_owned(),
            work: Work::Publish(OutboxMessage {
                key: ItemKey {
                    pk: pk.into(),
                    sk: format!("MESSAGE#{body}"),
                },
                message_id: format!("id-{body}"),
                topic: topic.into(),
                payload: body.into(),
                created_at: 1,
                retry_count: 0,
                sequence: None,
                indexed: true,
            }),
        }
    }

    fn publisher(sink: FakeSink) -> Publisher<FakeSink, FakeStore> {
        Publisher {
            sink,
            store: FakeStore::default(),
            config: config(),
        }
    }

    #[tokio::test]
    async fn a_transient_entry_failure_holds_back_only_later_messages_of_its_aggregate() {
        // Given A1 fails transiently in the first call, and A2, A3 follow in later calls
        let items: Vec<WorkItem> = vec![
            work("A", "fifo", "a1"),
            work("B", "fifo", "b1"),
            work("A", "fifo", "a2"),
            work("B", "fifo", "b2"),
            work("A", "other", "a3"),
        ];
        let p = publisher(FakeSink {
            transient: vec!["a1"],
            ..Default::default()
        });
        let outcomes = p.process(&items).await;
        assert_eq!(
            outcomes[0],
            Outcome::Retry {
                reason: "Throttled".into()
            }
        );
        assert_eq!(outcomes[1], Outcome::Sent { marked: true });
        assert_eq!(outcomes[2], Outcome::Blocked);
        assert_eq!(outcomes[3], Outcome::Sent { marked: true });
        assert_eq!(
            outcomes[4],
            Outcome::Blocked,
            "another destination, same aggregate: held back too"
        );
        // And A2 / A3 were never sent
        let sent: Vec<String> = p
            .sink
            .calls
            .lock()
            .expect("lock")
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect();
        assert!(
            !sent.contains(&"a2".to_owned()) && !sent.contains(&"a3".to_owned()),
            "{sent:?}"
        );
    }

    #[tokio::test]
    async fn a_fifo_call_never_holds_two_messages_of_one_group() {
        let items: Vec<WorkItem> = (0..4)
            .map(|i| work("A", "fifo", &format!("a{i}")))
            .chain([work("B", "fifo", "b0")])
            .collect();
        let p = publisher(FakeSink::default());
        p.process(&items).await;
        let calls = p.sink.calls.lock().expect("lock").clone();
        assert_eq!(
            calls.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(),
            vec![vec!["a0", "b0"], vec!["a1"], vec!["a2"], vec!["a3"]],
            "one call per round, in order, B packed with A's first"
        );
    }

    #[tokio::test]
    async fn a_standard_queue_packs_one_aggregate_into_full_calls_in_order() {
        let items: Vec<WorkItem> = (0..23)
            .map(|i| work("A", "std", &format!("m{i:02}")))
            .collect();
        let p = publisher(FakeSink::default());
        let outcomes = p.process(&items).await;
        assert!(
            outcomes
                .iter()
                .all(|o| *o == Outcome::Sent { marked: true })
        );
        let calls = p.sink.calls.lock().expect("lock").clone();
        assert_eq!(
            calls.iter().map(|(_, b)| b.len()).collect::<Vec<_>>(),
            vec![10, 10, 3]
        );
        let flat: Vec<String> = calls.into_iter().flat_map(|(_, b)| b).collect();
        let mut sorted = flat.clone();
        sorted.sort();
        assert_eq!(flat, sorted);
    }

    #[tokio::test]
    async fn an_entry_the_destination_refuses_for_good_becomes_poison_without_blocking() {
        let items = vec![work("A", "std", "bad"), work("A", "std", "good")];
        let p = publisher(FakeSink {
            permanent: vec!["bad"],
            ..Default::default()
        });
        let outcomes = p.process(&items).await;
        assert!(
            matches!(&outcomes[0], Outcome::DeadLettered { reason } if reason.contains("InvalidMessageContents"))
        );
        assert_eq!(outcomes[1], Outcome::Sent { marked: true });
        let failed = p.store.failed.lock().expect("lock").clone();
        assert_eq!(failed.len(), 1);
        let calls = p.sink.calls.lock().expect("lock").clone();
        assert!(
            calls
                .iter()
                .any(|(d, b)| d.contains("dlq") && b == &vec!["bad".to_owned()])
        );
    }

    #[tokio::test]
    async fn a_call_refused_for_one_message_s_content_is_retried_one_by_one() {
        let items = vec![
            work("A", "std", "ok1"),
            work("B", "std", "huge"),
            work("C", "std", "ok2"),
        ];
        let p = publisher(FakeSink {
            refuse_call: vec!["huge"],
            ..Default::default()
        });
        let outcomes = p.process(&items).await;
        assert_eq!(outcomes[0], Outcome::Sent { marked: true });
        assert_eq!(outcomes[2], Outcome::Sent { marked: true });
        // The culprit becomes poison; the dead-letter queue refuses it too, so it ends
        // FAILED with its payload kept on the item.
        assert!(
            matches!(&outcomes[1], Outcome::DeadLettered { reason } if reason.contains("BatchRequestTooLong")),
            "{outcomes:?}"
        );
    }

    #[tokio::test]
    async fn content_the_dead_letter_queue_refuses_too_still_ends_failed_not_retried_forever() {
        let items = vec![work("A", "std", "bad everywhere")];
        let p = publisher(FakeSink {
            permanent: vec!["bad everywhere"],
            ..Default::default()
        });
        let outcomes = p.process(&items).await;
        assert!(
            matches!(&outcomes[0], Outcome::DeadLettered { reason } if reason.contains("only on this item")),
            "{outcomes:?}"
        );
        assert_eq!(p.store.failed.lock().expect("lock").len(), 1);
    }
}
