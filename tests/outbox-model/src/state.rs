//! The model's state: small, hashable, bounded by the parameters.

use std::collections::BTreeSet;

/// A producer transaction's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    /// Not decided yet.
    Open,
    /// Both the business item and the outbox items landed.
    Committed,
    /// Nothing landed.
    RolledBack,
}

/// An outbox item's `Status` (and whether it exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Not written (not committed yet, or rolled back).
    Absent,
    /// `PENDING`.
    Pending,
    /// `SENT`.
    Sent,
    /// `FAILED`.
    Failed,
    /// Deleted by TTL after `SENT`.
    Deleted,
}

/// An outbox item in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Item {
    /// `Status`.
    pub status: Status,
    /// `RetryCount`.
    pub retry: u8,
    /// `SweepDueAt` in ticks; `None` when the item is outside the sweeper index.
    pub due: Option<u8>,
    /// Whether `LastError` is set.
    pub error: bool,
    /// `ExpiresAt` in ticks (meaningful once `SENT`).
    pub expires: u8,
    /// Which running sweep's claim wrote `SweepDueAt` (its `Sweep::token`), 0 when
    /// none did: a lease is a millisecond value from each invocation's own deadline,
    /// so two sweeps never write the same one, though the model's ticks would.
    pub token: u8,
}

/// One stream shard (one aggregate's partition) and its event source mapping.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shard {
    /// `(message, tick written)` in stream order.
    pub records: Vec<(u8, u8)>,
    /// The mapping's checkpoint: the first record not yet done.
    pub next: u8,
    /// Failed attempts at the current batch.
    pub attempts: u8,
    /// Largest batch the next invocation gets (halved by bisection).
    pub limit: u8,
    /// An invocation is running.
    pub busy: bool,
}

/// What happened to one work item of a publish (`dynamodb_outbox_core::publish::Outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Out {
    /// Not decided yet.
    Open,
    /// Published; whether this call marked it `SENT`.
    Sent(bool),
    /// Dead-lettered.
    Dead,
    /// Report for retry.
    Retry,
    /// Held back behind an earlier failed message of its aggregate.
    Blocked,
    /// Held back by the order fence behind an earlier pending message (not before
    /// the tick given, when known).
    Deferred(Option<u8>),
    /// The stream path's status read found the item no longer `PENDING` (`SENT`,
    /// `FAILED`, gone): skipped, not reported (`Outcome::AlreadyFinished`).
    Finished,
    /// The stream path's status read failed: not published, reported for retry.
    Unread,
    /// Held by the order fence because it could not tell (its read failed or was cut
    /// short): not sent, not reported, and its attempt counts
    /// (`Outcome::OrderUnknown`).
    Unknown,
}

/// Where a publish is in `Publisher::process`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The stream path's status read: the current `Status` of the batch's items, in
    /// one consistent `BatchGetItem`, before anything is planned or sent.
    Status,
    /// The order fence: reading the pending messages of the batch's FIFO-routed
    /// aggregates.
    Fence,
    /// The order fence's consistent status read (`BatchGetItem`) of the index
    /// siblings that would fence (`policy::to_confirm`).
    Confirm,
    /// (Mutation) marking `SENT` before publishing.
    PreMark(u8),
    /// Sending round `n` of the plan.
    Round(u8),
    /// (Mutation) marking poison `FAILED` before its copy.
    PreFail(u8),
    /// Copying poison to the dead-letter queue.
    DeadLetter,
    /// Marking the `n`th copied poison `FAILED`.
    MarkFailed(u8),
    /// Marking the `n`th sent item `SENT`.
    MarkSent(u8),
    /// Adopting the `n`th unfinished unindexed item into the sweeper index.
    Adopt(u8),
    /// Finished: the caller takes the outcomes.
    Done,
}

/// One work item of a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Work {
    /// The message.
    pub msg: u8,
    /// The work is poison (undecodable, or given up on by the sweeper).
    pub poison: bool,
}

/// What one read of the order fence listed: `(message, due tick)` of each pending
/// message (no due tick: outside the index, from a partition read).
pub type Listed = Vec<(u8, Option<u8>)>;

/// One run of `Publisher::process`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Publish {
    /// The work items, in the caller's order.
    pub items: Vec<Work>,
    /// Positions per round, as `plan` placed them.
    pub rounds: Vec<Vec<u8>>,
    /// Where it is.
    pub phase: Phase,
    /// One outcome per position.
    pub outcome: Vec<Out>,
    /// Positions to dead-letter.
    pub poison: Vec<u8>,
    /// Positions whose dead-letter copy is safe: mark them `FAILED`.
    pub to_fail: Vec<u8>,
    /// Positions published: mark them `SENT`.
    pub sent: Vec<u8>,
    /// Aggregates with a failed message in this batch (bit per aggregate).
    pub failed_aggs: u16,
    /// Unindexed positions to adopt.
    pub adopt: Vec<u8>,
    /// Messages this invocation read `PENDING` from the table itself (a sweep's
    /// claims, the stream path's status read), bit per message: what the property
    /// `SENT_ONCE` lets it send after a `SENT` mark that landed since.
    pub read: u32,
    /// A sweep's publish: its claims' `SweepDueAt` (lease tick and sweep token), on
    /// which its `FAILED` marks are conditional; `None` on the stream path.
    pub claim: Option<(u8, u8)>,
    /// What each of the fence's reads (`policy::fence_reads`) returned, kept between
    /// the read and the consistent confirmation: `None` when it failed, else the
    /// pending messages it listed with their due ticks.
    pub found: Vec<Option<Listed>>,
    /// The aggregates whose sequence read found no earlier sequenced message: their
    /// messages without a sequence were read too (`policy::switch_over_reads`).
    pub switching: BTreeSet<String>,
}

/// Where a sweep is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepPhase {
    /// Reading the due keys.
    Query,
    /// Claiming the `n`th key of the current chunk.
    Claim(u8),
    /// Publishing what the chunk claimed.
    Publish,
    /// Rescheduling the `n`th failed attempt.
    Reschedule(u8),
}

/// One sweep invocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sweep {
    /// The sweep's notion of now (its budget's), in ticks.
    pub now: u8,
    /// Its claims' lease, in ticks.
    pub lease_until: u8,
    /// `(message, due tick as read)`, earliest first.
    pub keys: Vec<(u8, u8)>,
    /// First key of the current chunk.
    pub chunk_at: u8,
    /// Where it is.
    pub phase: SweepPhase,
    /// `(message, RetryCount after the claim, LastError set)` of the current chunk.
    pub claimed: Vec<(u8, u8, bool)>,
    /// The chunk's publish.
    pub publish: Option<Publish>,
    /// `(message, next due tick, attempted)` to reschedule; a message not attempted
    /// (held back) gets its claim's count back.
    pub resched: Vec<(u8, u8, bool)>,
    /// Its token, distinct among running sweeps (`Item::token`).
    pub token: u8,
    /// Monitor: claimed messages an operator redrove since (bit per message): the
    /// claim is no longer current, whatever this sweep still does.
    pub superseded: u32,
}

/// A running function invocation of the publish side.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Inv {
    /// The stream publisher on records `from..to` of a shard.
    Stream {
        /// The shard.
        shard: u8,
        /// First record.
        from: u8,
        /// One past the last record.
        to: u8,
        /// Its publish.
        publish: Publish,
    },
    /// A sweeper invocation.
    Sweep(Sweep),
}

/// A copy of a message in the destination queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Copy {
    /// The outbox message.
    pub msg: u8,
    /// Its SQS `MessageId` (a new one per send).
    pub sqs: u8,
    /// Receives so far.
    pub receives: u8,
    /// Invisible until this tick.
    pub visible_at: u8,
}

/// What a consumer keys its idempotency record on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GuardKey {
    /// The outbox `MessageId` of message `n`.
    Outbox(u8),
    /// An SQS `MessageId`.
    Sqs(u8),
    /// The business id in message `n`'s payload.
    Business(u8),
}

/// A consumer-side idempotency record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Record {
    /// A processed-message marker, or the business item itself.
    Done,
    /// `IN_PROGRESS`, locked until this tick (the holder's deadline).
    InProgress(u8),
    /// `COMPLETED`.
    Completed,
}

/// A running consumer invocation (batch size 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Consumer {
    /// The copy it received (its SQS id).
    pub sqs: u8,
    /// Its message.
    pub msg: u8,
    /// Its idempotency key, once read.
    pub key: Option<GuardKey>,
    /// Step of the strategy.
    pub step: u8,
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// Now, in ticks.
    pub now: u8,
    /// Crashes left.
    pub crashes: u8,
    /// Faulty calls left.
    pub faults: u8,
    /// Redrives left.
    pub redrives: u8,
    /// Each transaction's fate.
    pub txns: Vec<TxnState>,
    /// Each outbox item.
    pub items: Vec<Item>,
    /// Each shard.
    pub shards: Vec<Shard>,
    /// On-failure records not yet handled: `(shard, first, one past last)`.
    pub on_failure: Vec<(u8, u8, u8)>,
    /// Running publisher and sweeper invocations.
    pub invs: Vec<Inv>,
    /// The destination queue, in send order.
    pub queue: Vec<Copy>,
    /// FIFO deduplication: `(message, window ends)`.
    pub dedup: Vec<(u8, u8)>,
    /// SQS ids handed out.
    pub sqs_ids: u8,
    /// Messages with a copy on the outbox dead-letter queue (bit per message).
    pub dlq: u32,
    /// Messages whose copy went to the consumer's dead-letter queue.
    pub consumer_dlq: u32,
    /// Messages the destination ever accepted.
    pub accepted: u32,
    /// Times each message's effect was applied.
    pub effects: Vec<u8>,
    /// The consumer's idempotency records, sorted by key.
    pub guard: Vec<(GuardKey, Record)>,
    /// Running consumer invocations.
    pub consumers: Vec<Consumer>,
    /// Monitor: an item left `SENT` or `FAILED` other than by a redrive.
    pub left_terminal: bool,
    /// Monitor: a message of an aggregate was first accepted after a later one.
    pub overtaken: bool,
    /// Monitor: the destination accepted a send of a message already marked `SENT`
    /// from an invocation that had not read it `PENDING` from the table.
    pub sent_after_sent: bool,
    /// What the sweeper index still lists though a mark since removed it (an
    /// eventually consistent global secondary index): `(message, due tick)`, until
    /// time passes. Empty unless `Params::index_lag`.
    pub lagging: Vec<(u8, u8)>,
    /// Monitor: a message was held back behind earlier siblings none of which was
    /// pending, though every read the fence made answered.
    pub stale_fence: bool,
    /// Monitor: a sweep whose claim came before a redrive marked the redriven
    /// message `FAILED`.
    pub redrive_undone: bool,
    /// Messages written since time last passed that the sweeper index may not list
    /// yet (bit per message). Empty unless `Params::index_lags_writes`.
    pub unlisted: u32,
    /// Committed messages whose `INSERT` record has not reached its shard yet (bit per
    /// message). Empty unless `Params::stream_any_order`.
    pub unstreamed: u32,
    /// On-failure records that may still be lost on the way (`Params::on_failure_lost`).
    pub on_failure_lost: u8,
    /// On-failure records the recovery function may still fail on past its retries
    /// (`Params::recovery_gives_up`).
    pub gives_up: u8,
    /// Times the stream's retention may still run out before recovery reads a range
    /// (`Params::retention`).
    pub trims: u8,
    /// Times a mapping may still stall past the retention (`Params::mapping_stalls`).
    pub stalls: u8,
    /// Messages something went wrong for (bit per message): a faulty call or a crash
    /// of an invocation that held it, an outcome other than sent (retry, held back,
    /// deferred, unknown, a mark that did not land), a discard, a redrive. What
    /// `NO_INDEX_ON_HAPPY_PATH` excuses.
    pub troubled: u32,
    /// Monitor: a message entered the sweeper index though nothing went wrong for it
    /// (not the backstop scan's, not a producer's that indexes at commit).
    pub indexed_untroubled: bool,
    /// Messages a sweep's claim found `PENDING` and due as it read them, refused by
    /// the claim's ownership condition, since time last passed (bit per message): the
    /// next sweep comes a schedule period later, so time may pass.
    pub refused: u32,
}

/// Bit `n`.
pub fn bit(n: u8) -> u32 {
    1u32 << n
}

impl State {
    /// The consumer record under `key`.
    pub fn record(&self, key: GuardKey) -> Option<Record> {
        self.guard.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
    }

    /// Sets the consumer record under `key`, keeping the list sorted.
    pub fn set_record(&mut self, key: GuardKey, rec: Record) {
        match self.guard.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => self.guard[i].1 = rec,
            Err(i) => self.guard.insert(i, (key, rec)),
        }
    }
}
