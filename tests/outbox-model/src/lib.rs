//! # outbox-model
//!
//! A model of the whole outbox protocol, checked exhaustively with
//! [stateright](https://docs.rs/stateright): producers, the table, the stream and its
//! event source mapping, the publisher, the sweeper, the recovery function, the
//! destination queue and a consumer, with crashes between any two steps and calls
//! that fail or succeed with a lost answer. See `docs/protocol.md` for the states,
//! the properties and what the model leaves out.
//!
//! The model and the functions share their decisions: the model calls the code.
//! The stream records are Lambda events turned into work by `dynamodb_outbox::stream::classify`,
//! a delivery publishes what `publish::judge_delivery` finds still pending;
//! a batch is laid out by `dynamodb_outbox_core::publish::plan`; the order fence reads by
//! `policy::fence_reads`, confirms what the index lists by `policy::to_confirm` and
//! `Pending::confirm`, and holds by `policy::fenced`; a destination's answer is
//! judged by `policy::judge_call` and `judge_entry`, a dead-letter copy's by
//! `judge_dead_letter`; a sweep's lease comes from `policy::Budget`, a claimed item
//! becomes an attempt through `policy::attempt_of` (`exhausted`), attempts are put in
//! order by `order_attempts`, their outcomes judged by `judge_attempt` and failures
//! rescheduled by `next_due_times` (`backoff`, `jitter_of`); the consumer's key is
//! `dynamodb_outbox_idempotency::message_key` and a duplicate is recognised by
//! `marker::classify_cancellation`. What the model writes itself, and why, is said
//! where it does it: the order of the I/O calls inside `Publisher::process` and a
//! sweep (async code whose interleavings a model must enumerate), the event source
//! mapping and the queues (AWS's behaviour, not ours), and the consumer's storage.
#![warn(missing_docs)]

mod delivery;
mod fence;
pub mod fixture;
pub mod global;
pub mod model;
pub mod params;
pub mod presets;
pub mod props;
mod publish;
pub mod state;
mod sweep;
pub mod trace;

pub use model::{Action, Fault, OutboxModel};
pub use params::{Consumer, Home, Kind, Mutation, Params, Producer, Txn};
pub use trace::{Report, check, find};
