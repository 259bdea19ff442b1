//! Every decision of the outbox, as plain functions of plain data: which size limit
//! an SQS destination has ([`sqs_limit`]), what to do with a destination's answer
//! ([`judge_call`], [`judge_entry`]), with each answer of a batched state change
//! ([`judge_statement`]), which form a dead-letter copy takes ([`copy_forms`]), how
//! poison is marked `FAILED` so that the mark fits ([`failed_marks`]), what a claimed
//! item becomes and when to try again ([`attempt_of`], [`judge_attempt`]), how a sweep
//! keeps each aggregate's order ([`chunk_due`], [`next_due_times`]), reads the index a
//! round at a time ([`next_ask`]) and walks a chunk in waves ([`Waves`]), which
//! messages routed to FIFO destinations wait behind an earlier pending one
//! ([`fenced`]), and how much time a sweep may use ([`Budget`]). The publish and sweep
//! paths call them between their I/O; a test or a model checker calls them directly.
//!
//! Each concern is a private file (`budget`, `dead_letter`, `fence`, `limit`, `marks`,
//! `order`, `poison`, `retry`, `round`, `send`, `wave`); every public item is
//! re-exported here, which is its one address (`policy::Budget`).
//! The limit of an SQS queue, [`SqsLimit`](crate::route::SqsLimit), is the route's.
//!
//! (vector's sinks decide retryability in one `RetryLogic`; here every decision the
//! outbox makes lives in this one module, because the sweeper's and the publisher's
//! decisions depend on each other's outcomes.)

mod budget;
mod dead_letter;
mod fence;
// Crate-visible for `route`, whose `SqsLimit` (defined here) is that type's one address.
pub(crate) mod limit;
mod marks;
mod order;
mod poison;
mod retry;
mod round;
mod send;
mod wave;

pub use budget::{Budget, FALLBACK_WINDOW, adopted_due, expired, work_window};
pub use dead_letter::{
    CopyForm, CopyVerdict, RetentionVerdict, copy_forms, judge_copy, judge_retention,
    over_dead_letter_limit, refusal_note, uncopied_reason,
};
pub use fence::{
    CONFIRM_LIMIT, FENCE_BATCH_PAGES, Fence, FenceRead, Member, Pending, READ_BOUNDED, READ_FAILED,
    KeyPlace, Scope, Sibling, cannot_tell_reason, fallback_reads, fence_reads, fenced, holds_in_sequence, key_position, page_budgets,
    predecessors, switch_over_reads, to_confirm,
};
pub use limit::{LimitRead, QueueLimits, QueueRole, sqs_limit, unknown_limit_advice};
pub use marks::{
    CONDITION_REFUSED, MARK_BATCH_ATTEMPTS, MARK_BATCH_LIMIT, RETRYABLE_STATEMENT_CODES, StatementVerdict, batch_retry_delay, judge_statement,
};
pub use order::{
    Gate, OrderKey, Retrying, chunk_due, held_back, next_due_times, next_due_times_capped, order_attempts, order_key,
};
pub use poison::{
    FailedMark, MAX_LAST_ERROR_BYTES, PAYLOAD_ON_DEAD_LETTER_QUEUE, SHORT_REASON, bounded_error, failed_marks, retained_payload,
};
pub use retry::{
    Attempt, AttemptVerdict, FIFO_DEDUPLICATION_WINDOW, HELD_BACK, REPUBLISH_SLACK, attempt_of, backoff,
    exhausted, fifo_retry_cap, give_up_reason, jitter_of, judge_attempt, millis, retry_delay,
    unclaimable,
};
pub use round::next_ask;
pub use send::{
    CallVerdict, DESTINATION_REFUSED, DeadLetterVerdict, EntryVerdict, blames_the_destination,
    judge_call, judge_dead_letter, judge_entry, judge_single,
};
pub use wave::{WAVE_PER_AGGREGATE, Waves};
