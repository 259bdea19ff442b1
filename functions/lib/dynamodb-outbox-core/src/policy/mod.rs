//! Every decision of the outbox, as plain functions of plain data: which size limit
//! an SQS destination has ([`limit`]), what to do with a destination's answer
//! ([`send`]), with each answer of a batched state change ([`marks`]), which form
//! a dead-letter copy takes ([`dead_letter`]), how poison is marked `FAILED` so that the mark
//! fits ([`poison`]), what a claimed item becomes and when to try again ([`retry`]),
//! how a sweep keeps each aggregate's order ([`order`]), reads the index a round at a time
//! ([`round`]) and walks a chunk in waves ([`wave`]), which messages routed to
//! FIFO destinations wait behind an earlier pending one ([`fence`]), and how much
//! time a sweep may use ([`budget`]). The publish and sweep paths call them between their I/O; a
//! test or a model checker calls them directly.
//!
//! (STYLE.md's example keeps retryability in one `RetryLogic`; here every decision
//! the outbox makes lives in this one module, because the sweeper's and the
//! publisher's decisions depend on each other's outcomes.)

pub mod budget;
pub mod dead_letter;
pub mod fence;
pub mod limit;
pub mod marks;
pub mod order;
pub mod poison;
pub mod retry;
pub mod round;
pub mod send;
pub mod wave;

pub use budget::{Budget, adopted_due, expired, work_window};
pub use dead_letter::{
    CopyForm, CopyVerdict, RetentionVerdict, copy_forms, judge_copy, judge_retention,
    over_dead_letter_limit, refusal_note, uncopied_reason,
};
pub use fence::{
    CONFIRM_LIMIT, FENCE_BATCH_PAGES, Fence, FenceRead, Member, Pending, READ_BOUNDED, READ_FAILED,
    Scope, Sibling, cannot_tell_reason, fallback_reads, fence_reads, fenced, key_position, page_budgets,
    predecessors, switch_over_reads, to_confirm,
};
pub use limit::{LimitRead, QueueLimits, QueueRole, sqs_limit, unknown_limit_advice};
pub use marks::{
    MARK_BATCH_ATTEMPTS, MARK_BATCH_LIMIT, StatementVerdict, batch_retry_delay, judge_statement,
};
pub use order::{
    Gate, OrderKey, Retrying, chunk_due, held_back, next_due_times, order_attempts, order_key,
};
pub use poison::{
    FailedMark, PAYLOAD_ON_DEAD_LETTER_QUEUE, bounded_error, failed_marks, retained_payload,
};
pub use retry::{
    Attempt, AttemptVerdict, HELD_BACK, attempt_of, backoff, exhausted, give_up_reason, jitter_of,
    judge_attempt, millis, unclaimable,
};
pub use round::next_ask;
pub use send::{
    CallVerdict, DESTINATION_REFUSED, DeadLetterVerdict, EntryVerdict, blames_the_destination,
    judge_call, judge_dead_letter, judge_entry, judge_single,
};
pub use wave::{WAVE_PER_AGGREGATE, Waves};
