//! What one model instance explores: the workload, the deployment's settings (in
//! ticks), the fault budgets, and a deliberate mutation, if any.

/// How a producer writes its outbox items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Producer {
    /// `OutboxWriter` as it is by default: `MessageId`, `CreatedAt`, `Follows`, no
    /// sweeper index keys. The item enters the index only when the stream path cannot
    /// finish it: the publisher's adoption, the recovery of a discarded range, the
    /// backstop scan.
    Library,
    /// `OutboxWriter::index_at_commit(true)`: the same, and the sweeper index keys at
    /// commit (due after the grace), as the library wrote before issue 38.
    LibraryIndexedAtCommit,
    /// A hand-written producer: `PK, SK, ItemType, Topic, Payload, Status, RetryCount`
    /// only, so the item is outside the sweeper index until someone adopts it.
    Minimal,
}

/// What kind of message an outbox item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A message the destination accepts.
    Good,
    /// The destination refuses it for good (`SenderFault=true`).
    Refused,
    /// Its topic has no route.
    Unroutable,
    /// It does not decode (no `Topic` attribute).
    Undecodable,
}

/// The `HomeRegion` attribute of an outbox item, in each DynamoDB shape the protocol
/// may read: a producer that is not the library writes what its SDK makes of its value
/// (boto3 writes a Python `None` as `NULL`; a form field can be empty or padded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Home {
    /// No `HomeRegion` (a minimal producer; the model's default).
    Absent,
    /// `{"S": "<the deployment's region>"}`, as the library writes it.
    Region,
    /// `{"NULL": true}`.
    Null,
    /// `{"S": ""}`.
    Empty,
    /// `{"S": " <the deployment's region> "}`.
    Padded,
}

/// One producer transaction: a business item and outbox items of one aggregate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Txn {
    /// The aggregate (`PK`); transactions of one aggregate commit in order.
    pub aggregate: u8,
    /// Its outbox items, in the order the producer adds them.
    pub messages: Vec<Kind>,
    /// Whether the model explores the transaction rolling back too.
    pub may_roll_back: bool,
    /// How the producer writes.
    pub producer: Producer,
    /// The `HomeRegion` its outbox items carry.
    pub home: Home,
    /// The library's producer gives its messages the aggregate's sequence
    /// (`NewMessage::sequence`: its version, committed under a condition in the same
    /// transaction, so the aggregate's transactions number 1, 2, … in commit order):
    /// their sort keys are sequenced (`schema::sequenced_sort_key`) and the order
    /// fence reads the aggregate's key range consistently (`Scope::Sequence`).
    pub sequenced: bool,
}

impl Txn {
    /// A committed-or-rolled-back library transaction of `n` good messages.
    pub fn library(aggregate: u8, n: usize) -> Self {
        Txn {
            aggregate,
            messages: vec![Kind::Good; n],
            may_roll_back: false,
            producer: Producer::Library,
            home: Home::Absent,
            sequenced: false,
        }
    }

    /// The same written with `OutboxWriter::index_at_commit(true)`.
    pub fn library_indexed(aggregate: u8, n: usize) -> Self {
        Txn::library(aggregate, n).indexed_at_commit()
    }

    /// The same written by a minimal producer.
    pub fn minimal(aggregate: u8, n: usize) -> Self {
        Txn {
            producer: Producer::Minimal,
            ..Txn::library(aggregate, n)
        }
    }

    /// A library transaction that writes the sweeper index keys at commit
    /// (`OutboxWriter::index_at_commit(true)`).
    pub fn indexed_at_commit(mut self) -> Self {
        self.producer = Producer::LibraryIndexedAtCommit;
        self
    }

    /// Whether its messages are written by the library (`MessageId`, `CreatedAt`,
    /// `Follows`, the aggregate's sequence when asked), with or without the index.
    pub fn by_library(&self) -> bool {
        matches!(
            self.producer,
            Producer::Library | Producer::LibraryIndexedAtCommit
        )
    }

    /// This transaction may also roll back.
    pub fn or_roll_back(mut self) -> Self {
        self.may_roll_back = true;
        self
    }

    /// Its outbox items carry `HomeRegion` in this shape.
    pub fn home(mut self, home: Home) -> Self {
        self.home = home;
        self
    }

    /// Its messages carry the aggregate's sequence (a library transaction's only).
    pub fn sequenced(mut self) -> Self {
        self.sequenced = true;
        self
    }

    /// With these message kinds.
    pub fn kinds(mut self, kinds: &[Kind]) -> Self {
        self.messages = kinds.to_vec();
        self
    }
}

/// How the consumer makes its effect happen once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consumer {
    /// `MessageMarker`: the effect and a marker keyed by the message key in one
    /// transaction.
    Marker,
    /// `BusinessKeyGuard`: the effect is one conditional put keyed by the business id
    /// in the payload.
    BusinessKey,
    /// `IdempotentEffects`: a guard record `IN_PROGRESS` (locked until the invocation's
    /// deadline) → effect outside DynamoDB → `COMPLETED`.
    SideEffect,
}

/// A deliberately broken variant of the protocol. Each must be caught by a property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mutation {
    /// The publish path marks `SENT` before it publishes.
    MarkBeforePublish,
    /// A claim does not move `SweepDueAt` (no lease): a concurrent sweeper claims too.
    NoLease,
    /// The consumer keys its marker on the SQS `MessageId`, not the outbox one.
    ConsumerKeysOnSqsId,
    /// Nobody reads the stream mapping's on-failure records.
    NoRecovery,
    /// The publish path does not hold back later messages of an aggregate whose
    /// earlier message failed in the same batch (stream or sweep).
    NoAggregateBlocking,
    /// `SENT` is set without the `Status = PENDING` condition.
    UnconditionalMark,
    /// The stream shows the writes of a rolled-back transaction (moto's quirk).
    StreamShowsRolledBack,
    /// Poison is marked `FAILED` before its dead-letter copy is sent.
    FailBeforeDeadLetter,
    /// The publish path as it was before this branch: a `FAILED` mark or an adoption
    /// that fails is not reported for retry, so an unindexed item stays `PENDING`.
    StrandUnindexed,
    /// The publish path without the order fence (as before it): a message routed to
    /// a FIFO destination goes out whatever earlier message of its aggregate is still
    /// `PENDING` outside the batch.
    NoOrderFence,
    /// The stream path as it was before the status read (issue 22, defect 2): it
    /// classifies records from the stream image alone and publishes every record
    /// Lambda delivers, also one an earlier delivery already sent and marked `SENT`.
    NoStatusRead,
    /// The order fence as it was before issue 22's defect 1 was fixed: a message the
    /// fence cannot tell about (its read failed or was cut short) is deferred like
    /// one behind a known earlier message, so the sweeper gives its attempt back and
    /// a read that keeps failing parks it forever.
    FenceParksWhenUnread,
    /// The order fence as it was before issue 22's defect 3 was fixed: it fences
    /// behind whatever the (lagging) index lists, without the consistent status read
    /// of those siblings.
    NoConsistentConfirm,
    /// The sweep as it was before issue 22's defect 8 was fixed: its `FAILED` mark is
    /// conditional on `Status = PENDING` only, not on its claim being current, so an
    /// attempt claimed before a redrive fails the redriven message again.
    UnclaimedSweepMark,
    /// The stream path as it was before the overtaking gap was closed: a message the
    /// order fence cannot tell about is held for the sweeper without being reported
    /// for retry, so the mapping moves on and a later message of its aggregate meets
    /// a fence whose index may not list the held one yet.
    UnknownNotReported,
    /// Issue 36, finding 1: `publish::plan` lays a batch out in stream order, as before
    /// its fix: one transaction's records that reach the publisher as [A2, A1] are
    /// sent A2, A1 (the model puts the plan's positions back in batch order).
    PlanKeepsStreamOrder,
    /// Issue 36, finding 1 across batches: the library's producer writes no `Follows`
    /// (the message before it in the same transaction), as before the fix, so a
    /// transaction's later message alone in a batch meets a fence whose index may not
    /// list the earlier one yet.
    NoFollows,
    /// Issue 36, finding 2's narrow variant at factor 1: a message the fence holds
    /// behind a known earlier one (`Outcome::Deferred`) is not reported for retry, as
    /// the code has it until that fix lands (then `Outcome::needs_retry` changes and
    /// this restores the code before): the mapping moves on, and a later record of its
    /// shard meets a fence whose index does not list the deferred one yet
    /// (`tests/findings.rs`, `finding_2_narrow_open_…`).
    DeferredNotReported,
    /// Issue 36, finding 5 (also in `crate::global`): the claim's ownership condition as before its fix,
    /// `(#home = :home OR attribute_not_exists(#home))`: a `HomeRegion` that is `NULL`,
    /// empty or padded — which `HomeRegions::owns` calls the deployment's — is refused
    /// at every sweep, and the message parks.
    ClaimRefusesOddHome,
    /// Global tables, issue 36 finding 3: the order fence's consistent confirmation
    /// takes a sibling `PENDING` but homed in another region (`PENDING_ELSEWHERE`) as
    /// finished, as before its fix: after a failover, a message committed in the
    /// recovered region overtakes its aggregate's earlier one the survivor still holds.
    FenceTrustsPendingElsewhereAsDone,
    /// Global tables, issue 36 finding 7: the failback's condition compares
    /// `SweepDueAt` with the operator's clock (`<= now`), as before its fix; with
    /// `GlobalParams::operator_clock_ahead` it takes a message the surviving region's
    /// sweep holds.
    FailbackComparesOperatorClock,
    /// Global tables: `outbox-ops failover`'s condition as the model found it
    /// (`#home = :from`, or also `attribute_not_exists(#home)` out of the default
    /// home), which refuses a `HomeRegion` the failed region owns as `NULL`, empty or
    /// padded: the failover leaves such a message behind, waiting for that region.
    FailoverRefusesOddHome,
    /// Global tables (`crate::global`): no ownership filter — every region's
    /// publisher publishes every `INSERT` its replica's stream carries (replicated ones
    /// too) and every region's sweeper sweeps every pending item, as before issue 25.
    PublishOnEveryReplica,
    /// Global tables: the failover re-homes every item of the failed region that the
    /// surviving replica holds, whatever its status (an unconditional overwrite), not
    /// only the `PENDING` ones (`Status = PENDING AND HomeRegion = failed`).
    UnconditionalFailover,
    /// Global tables: the failback re-homes a failed-over `PENDING` message without
    /// checking that no sweep of the surviving region holds a claim on it
    /// (`SweepDueAt <= now`), so that sweep publishes it after the failed region took
    /// it back, and that region publishes it too.
    FailbackIgnoresClaim,
    /// Global tables: the stream publisher decides ownership from the `INSERT` image
    /// alone (`FilterCriteria` and the handler), not from the `HomeRegion` its status
    /// read returns, so after a failover the recovered region's stream backlog
    /// publishes messages the surviving region now owns.
    OwnershipFromImage,
    /// Global tables: the failed region's functions are started again before the
    /// failover's re-homes have replicated to it (the runbook waits for replication to
    /// catch up), so its replica still shows them as its own.
    RecoverBeforeCatchUp,
    /// Global tables: the runbook as first written (docs/global-tables.md, step 5): the
    /// failback is a conditional write in the recovered region's copy (`Status =
    /// PENDING AND HomeRegion = B AND FailedOverFrom = A`), run once replication caught
    /// up and before that region's functions start; a sweep of the surviving region
    /// that claimed the message is not seen.
    FailbackFromRecoveredRegion,
    /// Global tables: a sweep gives up on poison (its dead-letter copy, its `FAILED`
    /// mark) before checking that it owns the item: it claims any `PENDING` item its
    /// destination refuses, whatever its `HomeRegion`, so the owner dead-letters it too.
    PoisonBeforeOwnership,
    /// Global tables: the failover out of a region that is not the default home also
    /// re-homes the items without `HomeRegion` (the default home's, which is up), as if
    /// `--default-home` named the failed region.
    FailoverTakesDefaultHomes,
    /// Global tables: the failover out of the default home re-homes only the items whose
    /// `HomeRegion` names it, not those without `HomeRegion` (`--default-home` left
    /// out): a minimal producer's message waits for the failed region.
    FailoverIgnoresDefaultHome,
    /// Global tables, issue 36 finding 9: the publisher's stream filter as the stacks
    /// rendered it before the fix, naming the default home at deploy time: only the
    /// deployed default home's filter passes an `INSERT` without `HomeRegion`, so after
    /// the operator moves the default home (`GlobalParams::move_default_home`) the new
    /// one's publisher never receives them (only the backstop scan finds them).
    FilterNamesDefaultHome,
    /// Global tables, issue 36 finding 9: the operator moves the default home in any
    /// order (`GlobalParams::move_default_home`), not as the runbook says (a region takes
    /// the items without `HomeRegion` only once no other running region owns them, no
    /// invocation started under the old setting still runs and the old owner's writes
    /// have replicated; the failed region starts again only under the same rule): both
    /// regions own them for a while and both publish one.
    DefaultHomeMovedInAnyOrder,
    /// The order fence's read of a sequenced aggregate (`Scope::Sequence`) stops at
    /// the batch's lowest member instead of reading one item below it: the message
    /// just before the batch, pending, is not seen, so a later message's batch that
    /// runs first (factor above 1, records in any order) overtakes it.
    SequenceReadStopsAtLowest,
    /// The order fence's read of a sequenced aggregate answers from the sweeper index
    /// (eventually consistent) instead of the table: it does not list a message just
    /// written yet, and still lists one a mark just removed.
    SequenceReadFromIndex,
    /// Issue 38: the library's producer writes the sweeper index keys at commit by
    /// default, as before the change (`Producer::Library` behaves like
    /// `LibraryIndexedAtCommit`): two index writes per message on the happy path.
    ProducerIndexesAtCommit,
    /// Issue 38: the recovery function adopts only items without the library's
    /// `MessageId` and `CreatedAt` (a minimal producer's), as its comment assumed while
    /// the library indexed at commit: a discarded library message stays outside the
    /// index.
    RecoverySkipsLibraryItems,
    /// Issue 38: the publisher adopts only a minimal producer's messages it could not
    /// finish (as `publish/adopt.rs` assumed while the library indexed at commit): a
    /// library message whose `SENT` mark failed, or that was deferred, stays outside
    /// the index.
    PublisherSkipsLibraryItems,
    /// Not a defect: issue 38's design, step (d) 1, ahead of the code — the order fence
    /// of a library message without a sequence reads the index shards
    /// (`Scope::Shards`) whether or not the message is in the index, never its
    /// aggregate's partition (`Member::library` true for every library message).
    FenceReadsIndexOnly,
    /// An aggregate's first sequenced message reads its sequenced key range only (no
    /// `switch_over_reads`): a message of the aggregate written without a sequence and
    /// still pending sorts apart and is not seen, so the first sequenced one goes first.
    NoSwitchOverRead,
}

/// One model instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Params {
    /// The producer transactions.
    pub txns: Vec<Txn>,
    /// The destination is a FIFO queue (per-group order, deduplication window).
    pub fifo: bool,
    /// The stream mapping's batch size.
    pub batch_size: u8,
    /// The stream mapping's `MaximumRetryAttempts`.
    pub esm_retries: u8,
    /// The stream mapping's `MaximumRecordAgeInSeconds`, in ticks.
    pub max_record_age: u8,
    /// Sweeper attempts before `FAILED` (`OUTBOX_MAX_ATTEMPTS`).
    pub max_attempts: u32,
    /// Sweeper invocations that may run at once.
    pub sweepers: u8,
    /// Items a sweep claims and publishes together (`SweepLimits::chunk`).
    pub chunk: u8,
    /// Crashes of a function between two of its steps (publisher, sweeper, consumer).
    pub crashes: u8,
    /// Calls that fail (throttled), or succeed with the answer lost.
    pub faults: u8,
    /// The consumer's strategy.
    pub consumer: Consumer,
    /// Consumer invocations that may run at once.
    pub consumers: u8,
    /// The queue's `maxReceiveCount` before its dead-letter queue.
    pub max_receives: u8,
    /// The queue's visibility timeout, in ticks.
    pub visibility: u8,
    /// The FIFO deduplication window, in ticks.
    pub dedup_window: u8,
    /// `OUTBOX_TTL_DAYS`, in ticks.
    pub ttl: u8,
    /// Operator redrives of `FAILED` items.
    pub redrives: u8,
    /// Every read of the order fence fails (a lasting `AccessDenied`, a KMS error, an
    /// aggregate with more pending keys than the fence reads): it never can tell.
    pub fence_reads_fail: bool,
    /// The sweeper index lags the table: until time passes, a read of it may still
    /// list a message a mark has just removed from it (`State::lagging`).
    pub index_lag: bool,
    /// The sweeper index lags the table's writes too: until time passes, a lagging
    /// read may not list a message just committed (`State::unlisted`) — the fence's
    /// read and the sweep's query alike.
    pub index_lags_writes: bool,
    /// A transaction's stream records reach its shard one at a time, in any order and
    /// interleaved with other transactions' records (AWS's *Transactions: how it
    /// works*: they "might appear at different times and could be interleaved"), not
    /// at the commit in message order (`State::unstreamed`, `Action::Append`).
    pub stream_any_order: bool,
    /// The stream mapping's `ParallelizationFactor`: a shard's records are handed to
    /// this many concurrent batches, in order per item only (each message is its own
    /// item: the model gives an aggregate's messages lanes in turn, `Fixture::lane`).
    pub parallelization: u8,
    /// On-failure records of the stream mapping that never reach the recovery
    /// function (lost on the way: a misconfigured or deleted destination, a queue
    /// purged): each discarded range may be one of these, up to this many.
    pub on_failure_lost: u8,
    /// On-failure records the recovery function fails on past its retries
    /// (`maxReceiveCount`): they go to its dead-letter queue and nobody adopts their
    /// range. Up to this many.
    pub recovery_gives_up: u8,
    /// The stream's 24-hour retention runs out before the recovery function reads an
    /// on-failure record's range, up to this many times: it finds nothing
    /// (`RangeError::Lost`, left to the backstop scan).
    pub retention: u8,
    /// A shard's mapping stalls (disabled, failing) past the stream's retention, up to
    /// this many times: its undelivered records are trimmed without an on-failure
    /// record.
    pub mapping_stalls: u8,
    /// The sweeper's backstop scan runs (`OUTBOX_SWEEP_SCAN_MODE=backstop`; the
    /// default `off` leaves this to `outbox-ops reconcile`, the same adoption): it adopts every committed `PENDING` item outside the index, due now.
    /// A bounded scan of 100 items a sweep reaches each item eventually; the model lets
    /// it reach them once the stream path has done what it does (nothing runs, no
    /// record waits), which is when it is needed: the race with the stream path is
    /// the indexed-at-commit producer's, checked there.
    pub backstop: bool,
    /// Deliberate bugs (none: the protocol as the code has it).
    pub mutations: Vec<Mutation>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            txns: vec![Txn::library(0, 1)],
            fifo: false,
            batch_size: 2,
            esm_retries: 1,
            max_record_age: 3,
            max_attempts: 2,
            sweepers: 1,
            chunk: 4,
            crashes: 1,
            faults: 1,
            consumer: Consumer::Marker,
            consumers: 1,
            max_receives: 3,
            visibility: 1,
            dedup_window: 2,
            ttl: 1,
            redrives: 0,
            fence_reads_fail: false,
            index_lag: false,
            index_lags_writes: false,
            stream_any_order: false,
            parallelization: 1,
            on_failure_lost: 0,
            recovery_gives_up: 0,
            retention: 0,
            mapping_stalls: 0,
            backstop: false,
            mutations: Vec::new(),
        }
    }
}

impl Params {
    /// With this mutation too.
    pub fn mutated(mut self, m: Mutation) -> Self {
        self.mutations.push(m);
        self
    }

    /// Whether `m` is a mutation in force.
    pub fn has(&self, m: Mutation) -> bool {
        self.mutations.contains(&m)
    }
}
