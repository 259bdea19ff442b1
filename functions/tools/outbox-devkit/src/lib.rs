//! The development kit: what a developer needs around the deployed system on the
//! local AWS (MiniStack), and nothing production runs.
//!
//! - [`aws`]: clients for the local AWS (or an account), counting their requests;
//! - [`deployment`]: a stack deployed by `scripts/deploy-local`, read back from its
//!   functions' configuration, with their logs and metrics;
//! - [`demo`]: the one-command demo: produce, observe, verify;
//! - `chaos` (feature `chaos`): the chaos benchmark: faults in every call, crashes, discards;
//! - [`provision`]: tables and queues for the integration tests, which need fresh,
//!   uniquely named resources per test on both emulators;
//! - [`runtime_api`]: a Lambda Runtime API on loopback, to run a function's packaged
//!   binary through invocations without Lambda.
//! - [`regions`]: the outbox on a global table in two regions of the local AWS:
//!   published once across both, a failover and a failback (docs/global-tables.md);
//! - [`drain`]: the sweeper's drain of a backlog on a deployed stack, beside the
//!   local AWS's raw read rate;
//! - [`scale`]: where each ceiling is as the message rate grows, and which binds
//!   first (docs/scale.md).
//!
//! What it no longer has: an imitation of Lambda's event source mappings and of the
//! EventBridge schedule. The local AWS runs our compiled functions behind real ones.
#![warn(missing_docs)]

pub mod aws;
#[cfg(feature = "chaos")]
pub mod chaos;
pub mod coldstart;
pub mod cost;
pub mod counter;
pub mod demo;
pub mod deployment;
pub mod drain;
pub mod latency;
pub mod provision;
pub mod regions;
pub mod runtime_api;
pub mod scale;
mod writes;
