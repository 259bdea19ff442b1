//! What the publish path answers: one outcome per work item, and the counts of a
//! batch's outcomes for logs and metrics.

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
    /// Already finished by someone else — poison whose item is `FAILED` by now, or a
    /// record delivered again whose item an earlier delivery, the sweeper or an
    /// operator finished (or that is no longer in the table): nothing was sent,
    /// nothing changed.
    AlreadyFinished,
    /// A transient failure: report for retry.
    Retry {
        /// What failed.
        reason: String,
    },
    /// Poison of a sweep whose claim on the item was gone when it came to copy or
    /// mark it: the stream publisher finished it, or an operator redrove it and a
    /// newer claim may hold it. Left alone — a `FAILED` mark now would undo the
    /// redrive. Only a sweep's poison ends so (the stream publisher holds no claim).
    ClaimLost {
        /// Whether the claim was found gone at the `FAILED` mark, after the
        /// dead-letter copy (a second copy, when whoever failed it sent one too),
        /// rather than when the item was read before the copy.
        at_mark: bool,
    },
    /// Not attempted: an earlier message of the same aggregate failed in this batch,
    /// and publishing this one first would break the aggregate's order.
    Blocked,
    /// Not attempted: routed to a FIFO destination while an earlier message of its
    /// aggregate is still `PENDING` outside this batch (or may be: the order fence,
    /// [`crate::policy::fenced`]). Left `PENDING` in the sweeper index for the
    /// sweeper, which publishes an aggregate's messages in order; not reported for
    /// retry, which would stall the stream shard behind the sweeper's backoff.
    Deferred {
        /// The latest due time of what it waits behind, when known: the sweeper does
        /// not make it due before.
        not_before: Option<i64>,
    },
    /// Not attempted: routed to a FIFO destination, and the order fence could not
    /// tell whether an earlier message of its aggregate is still pending (its read
    /// failed or stopped at its bound). Never sent out of order. The stream path
    /// reports it for retry: Lambda redelivers the shard from it, so a later message
    /// of its aggregate in the shard waits behind it instead of meeting a fence whose
    /// index may not list it yet; when the mapping's retries run out, the range is
    /// discarded and recovered for the sweeper like any other. It may be its
    /// aggregate's earliest, so the sweeper charges the attempt (`reason` in
    /// `LastError`): a fence that never can tell ends it `FAILED` and dead-lettered,
    /// instead of parked forever.
    OrderUnknown {
        /// Why ([`crate::policy::cannot_tell_reason`]).
        reason: String,
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

    /// Whether the caller must deliver this item again: a failure, a message held
    /// behind one, or a FIFO message whose place in its aggregate's order the fence
    /// could not tell (a later one must not go before it is known).
    pub fn needs_retry(&self) -> bool {
        matches!(
            self,
            Outcome::Retry { .. } | Outcome::Blocked | Outcome::OrderUnknown { .. }
        )
    }
}

/// What a batch's publish did that its outcomes do not show, counted where it was
/// done: for the cost metrics (S3 writes, the fence's DynamoDB requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effort {
    /// Payloads written to S3 by the large-payload offload, dead-letter claim checks
    /// included: only the writes that succeeded.
    pub offloaded: usize,
    /// Requests made by the order fence's reads of pending messages (index select
    /// pages, per-shard and partition query pages) that answered. A read that failed
    /// reports no count: its messages show as `FenceUnread`.
    pub fence_reads: usize,
}

impl Effort {
    /// Adds another batch's effort (a sweep publishes in waves).
    pub fn add(&mut self, other: Effort) {
        self.offloaded += other.offloaded;
        self.fence_reads += other.fence_reads;
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
    /// Reported for retry (failed, blocked, or the fence could not tell).
    pub retried: usize,
    /// Left for the sweeper behind an earlier pending message (the order fence).
    pub deferred: usize,
    /// Records delivered again whose items were already `SENT`, `FAILED` or gone:
    /// skipped, not published again (the stream path's status read).
    pub already_settled: usize,
    /// Records reported for retry because their items' status could not be read (also
    /// counted in `retried`).
    pub status_unread: usize,
    /// FIFO messages held because the order fence could not read their aggregates'
    /// pending messages (also counted in `retried`; metric `FenceUnread`).
    pub fence_unread: usize,
    /// Payloads written to S3 instead of sent inline (metric `PayloadsOffloaded`).
    pub offloaded: usize,
    /// Requests of the order fence's reads that answered (metric `FenceReads`).
    pub fence_reads: usize,
}

impl Summary {
    /// Tallies outcomes (the status read's counts are the stream path's to add).
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
                Outcome::AlreadyFinished | Outcome::ClaimLost { .. } => {}
                Outcome::Retry { .. } | Outcome::Blocked => s.retried += 1,
                Outcome::Deferred { .. } => s.deferred += 1,
                Outcome::OrderUnknown { .. } => {
                    s.retried += 1;
                    s.fence_unread += 1;
                }
            }
        }
        s
    }

    /// The same with the batch's effort: what it wrote to S3 and the fence's reads.
    pub fn with_effort(mut self, effort: Effort) -> Self {
        self.offloaded = effort.offloaded;
        self.fence_reads = effort.fence_reads;
        self
    }
}
