//! The publish path shared by the stream publisher and the sweeper, read top-down in
//! [`Publisher::process_after`] (the stream path first reads which of its records'
//! items are still pending, `redelivery`, since Lambda delivers a batch again): plan the batch ([`plan()`]: routes, entries, calls
//! within the destinations' limits, each aggregate's order kept), hold back what the
//! order fence defers (`fence`), send round by round and judge the answers
//! (`dispatch`), copy poison to the dead-letter queue (`dead_letter`), mark `FAILED`
//! and `SENT` (`mark`), and put what the stream path leaves unfinished in the sweeper
//! index (`adopt`).
//!
//! Each stage is a function from its inputs to its outcomes; only the orchestrator
//! combines them. Every decision on an answer is a plain function in
//! [`crate::policy`]; the stages only sequence the I/O around them.

mod adopt;
mod dead_letter;
mod dispatch;
mod fence;
mod mark;
mod plan;
mod redelivery;

pub use crate::outcome::{Effort, Outcome, Summary};
pub use plan::{
    Call, Entry, Plan, Round, ToFail, chunk_by_limits, dead_letter_copy, dead_letter_message, plan,
    write_order,
};
pub use redelivery::{CurrentStatuses, Delivery, judge_delivery, status_keys};
pub use crate::work::{Poison, Work, WorkItem, poison_of};

use crate::clock::{self, SharedClock};
use crate::config::PublisherConfig;
use crate::ports::{MarkCondition, MessageSink, OutboxStore};
use crate::schema::ItemKey;
use std::collections::{HashMap, HashSet};

/// How many conditional updates run at once after a publish.
const MARK_CONCURRENCY: usize = 32;

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
    ///
    /// Every item is decided by exactly one stage; adoption may then turn a decision
    /// into a retry when the sweeper index could not take the item.
    pub async fn process_after(
        &self,
        items: &[WorkItem],
        finished: &HashSet<ItemKey>,
    ) -> Vec<Outcome> {
        self.process_under_claims(items, finished, &HashMap::new())
            .await
    }

    /// The same for a sweep, which holds a claim on its items: the `FAILED` mark of
    /// an item in `claims` is conditional on its claim (and poison found no longer
    /// under it is not copied), so that a redrive during the attempt is not undone
    /// ([`Outcome::ClaimLost`]). Items not in `claims` are marked as the stream
    /// publisher marks them, on `PENDING` alone; `SENT` always is.
    pub async fn process_under_claims(
        &self,
        items: &[WorkItem],
        finished: &HashSet<ItemKey>,
        claims: &HashMap<ItemKey, MarkCondition>,
    ) -> Vec<Outcome> {
        self.process_counted(items, finished, claims).await.0
    }

    /// [`Self::process_under_claims`], with what the publish wrote to S3 and the
    /// requests of the order fence's reads, counted where they were made: for the
    /// `PayloadsOffloaded` and `FenceReads` metrics.
    pub async fn process_counted(
        &self,
        items: &[WorkItem],
        finished: &HashSet<ItemKey>,
        claims: &HashMap<ItemKey, MarkCondition>,
    ) -> (Vec<Outcome>, Effort) {
        let now_ms = self.clock.now_ms();
        // Plan: route, build entries, lay out calls; poison found while routing.
        let plan = plan(&self.config, items);
        // Fence: FIFO messages behind an earlier pending one wait for the sweeper.
        let layout = &self.config.key_names.sweep_shards;
        let (deferred, fence_reads) =
            fence::deferred(&self.store, &plan, items, finished, layout).await;
        let held: HashSet<usize> = deferred.iter().map(|&(index, _)| index).collect();
        // Dispatch: the rounds in order; a failed aggregate holds back the rest.
        let dispatched = dispatch::send_rounds(&self.sink, &plan, items, &held).await;
        // Dead-letter: copy poison (the plan's, then the sends') before marking it.
        let poison = plan.poison.into_iter().chain(dispatched.poison).collect();
        let copied =
            dead_letter::copy_poison(&self.sink, &self.store, &self.config, poison, claims).await;
        // Mark: FAILED for the poison copied, SENT for what went out. `SentAt` and
        // `FailedAt` are the time of the mark, read after the sends: a copy's send
        // time (SQS's `SentTimestamp`) is then never after its own message's `SentAt`,
        // so a copy sent later is one sent again after the mark (the chaos run counts
        // them).
        let marked_at_ms = self.clock.now_ms();
        let failed = mark::all_failed(&self.store, copied.to_fail, marked_at_ms, claims).await;
        let ttl_days = self.config.ttl_days;
        let sent =
            mark::all_sent(&self.store, ttl_days, items, &dispatched.sent, marked_at_ms).await;
        let effort = Effort {
            offloaded: dispatched.offloaded + copied.offloaded,
            fence_reads,
        };
        let decided = [deferred, dispatched.decided, copied.decided, failed, sent];
        let mut outcomes = by_position(items.len(), decided);
        // Adopt: what is left unfinished and unindexed goes in the sweeper index.
        for (index, retry) in adopt::unfinished(&self.store, items, &outcomes, now_ms, &self.config.key_names.sweep_shards).await {
            outcomes[index] = retry;
        }
        (outcomes, effort)
    }
}

/// One outcome per item, in batch order, from the stages' decisions by position. An
/// item no stage decided (none should be) is reported for retry.
fn by_position(
    len: usize,
    decided: impl IntoIterator<Item = Vec<(usize, Outcome)>>,
) -> Vec<Outcome> {
    let mut outcomes = vec![None; len];
    for (index, outcome) in decided.into_iter().flatten() {
        outcomes[index] = Some(outcome);
    }
    outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or(Outcome::Retry {
                reason: "internal: item was not planned".to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
