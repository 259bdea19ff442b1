//! The publish path shared by the stream publisher and the sweeper: route, build
//! entries and batch within the destinations' limits while keeping each aggregate's
//! order ([`plan()`]), send and judge the answers (`dispatch`), then mark `SENT` — or
//! isolate poison as `FAILED` with a copy on the dead-letter queue (`mark`).
//!
//! Every decision on an answer is a plain function in [`crate::policy`]; this module
//! only sequences the I/O around them.

mod dispatch;
mod fence;
mod mark;
pub mod plan;

pub use plan::{Plan, chunk_by_limits, dead_letter_message, plan};

use crate::clock::{self, SharedClock};
use crate::config::PublisherConfig;
use crate::ports::{MessageSink, OutboxStore};
use crate::schema::{ItemKey, OutboxMessage, Undecodable, derive_message_id};
use std::collections::HashSet;

/// How many conditional updates run at once after a publish.
const MARK_CONCURRENCY: usize = 32;

/// When an unindexed item the stream path could not finish becomes the sweeper's.
const ADOPT_GRACE_MS: i64 = 60_000;

/// Pages each order-fence read may take (DynamoDB's pages hold up to 1 MB: some
/// 7,000 index keys each). A read with more left fences its aggregates.
pub const FENCE_MAX_PAGES: u32 = 8;

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

impl Work {
    /// The item's key, when known.
    pub fn key(&self) -> Option<&ItemKey> {
        match self {
            Work::Publish(msg) => Some(&msg.key),
            Work::Poison(p) => p.key.as_ref(),
        }
    }
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
    /// Poison: copied to the dead-letter queue and marked `FAILED` — or, when
    /// `marked` is false, the mark could not be made and the item is still `PENDING`
    /// (the sweeper finishes it).
    DeadLettered {
        /// The reason recorded in `LastError`.
        reason: String,
        /// Whether the item is now `FAILED`.
        marked: bool,
    },
    /// Poison that someone else had already finished (a replay of a record whose item
    /// is `FAILED` by now): nothing was sent, nothing changed.
    AlreadyFinished,
    /// A transient failure: report for retry.
    Retry {
        /// What failed.
        reason: String,
    },
    /// Not attempted: an earlier message of the same aggregate failed in this batch,
    /// and publishing this one first would break the aggregate's order.
    Blocked,
    /// Not attempted: routed to a FIFO destination while an earlier message of its
    /// aggregate is still `PENDING` outside this batch (or may be: the order fence,
    /// [`crate::policy::fence`]). Left `PENDING` in the sweeper index for the
    /// sweeper, which publishes an aggregate's messages in order; not reported for
    /// retry, which would stall the stream shard behind the sweeper's backoff.
    Deferred {
        /// The latest due time of what it waits behind, when known: the sweeper does
        /// not make it due before.
        not_before: Option<i64>,
    },
}

impl Outcome {
    /// Whether this call finished the item: it is `SENT` or `FAILED` now, no longer
    /// pending.
    pub fn finished_here(&self) -> bool {
        matches!(
            self,
            Outcome::Sent { marked: true } | Outcome::DeadLettered { marked: true, .. }
        )
    }

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
    /// Left for the sweeper behind an earlier pending message (the order fence).
    pub deferred: usize,
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
                Outcome::AlreadyFinished => {}
                Outcome::Retry { .. } | Outcome::Blocked => s.retried += 1,
                Outcome::Deferred { .. } => s.deferred += 1,
            }
        }
        s
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

impl From<Undecodable> for Poison {
    /// An item that is not a message: its raw content goes to the dead-letter queue.
    fn from(u: Undecodable) -> Self {
        Poison {
            message_id: u.key.as_ref().map(derive_message_id),
            key: u.key,
            topic: u.topic,
            body: u.raw,
            reason: u.error.to_string(),
        }
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
    /// What time it is (`SentAt`, `FailedAt`, adoption due times).
    pub clock: SharedClock,
}

/// What a batch has come to so far, as the rounds run.
#[derive(Debug)]
struct Progress {
    outcomes: Vec<Option<Outcome>>,
    failed_aggregates: HashSet<String>,
    sent: Vec<usize>,
    poison: Vec<(usize, Poison)>,
}

impl<K, S> Publisher<K, S> {
    /// A publish path on the system clock.
    pub fn new(sink: K, store: S, config: PublisherConfig) -> Self {
        Publisher {
            sink,
            store,
            config,
            clock: clock::system(),
        }
    }

    /// The same on another clock.
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }
}

impl<K: MessageSink, S: OutboxStore> Publisher<K, S> {
    /// Publishes `items`, returning one outcome per item, in the same order.
    pub async fn process(&self, items: &[WorkItem]) -> Vec<Outcome> {
        self.process_after(items, &HashSet::new()).await
    }

    /// The same, after the caller finished the messages `finished` (marked them
    /// `SENT` or `FAILED`): the order fence does not wait behind them, though the
    /// sweeper index, eventually consistent, may still list them as pending.
    pub async fn process_after(
        &self,
        items: &[WorkItem],
        finished: &HashSet<ItemKey>,
    ) -> Vec<Outcome> {
        let now = self.clock.now_ms();
        let plan = plan(&self.config, items);
        let mut outcomes = vec![None; items.len()];
        for (index, fence) in self.fence(&plan, items, finished).await {
            outcomes[index] = Some(Outcome::Deferred {
                not_before: fence.not_before,
            });
        }
        let mut progress = Progress {
            outcomes,
            failed_aggregates: HashSet::new(),
            sent: Vec::new(),
            poison: plan.poison,
        };
        for round in &plan.rounds {
            self.dispatch_round(&plan.destinations, round, items, &mut progress)
                .await;
        }
        let mut outcomes = progress.outcomes;
        for (index, outcome) in self.dead_letter(progress.poison, now).await {
            outcomes[index] = Some(outcome);
        }
        for (index, marked) in self.mark_all_sent(items, &progress.sent, now).await {
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
        let mut outcomes = outcomes;
        for index in self.adopt_unfinished(items, &outcomes, now).await {
            outcomes[index] = Outcome::Retry {
                reason: "not finished (published and not marked SENT, or left for the sweeper) and not put in the sweeper index"
                    .to_owned(),
            };
        }
        outcomes
    }
}

#[cfg(test)]
mod tests;
