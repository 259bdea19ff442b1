//! Cold start and memory of a Lambda binary, without Lambda: the local Lambda Runtime
//! API ([`crate::runtime_api`]) hands it one invocation, an empty batch of the
//! trigger's shape, then holds its next `/next`. Measured: the time from `exec` to
//! the first `/next` (the binary's init: configuration, clients, runtime; no AWS call),
//! the time to the first answer (the publisher's and the sweeper's reads of their SQS
//! queues' attributes, then the sweeper's first sweep queries its index), the peak resident memory
//! (`VmHWM` of `/proc/<pid>/status`, read before the process is ended) and the binary's
//! size.
//!
//! The functions' AWS calls go to a local AWS (MiniStack), at resources that exist
//! there — a deployed stack's table and queues ([`deployed`]) or a table and queues
//! made for the bench ([`provisioned`]) — so that the calls of the first invocation (and
//! any at init: there should be none) are real and answered. Without a local AWS nothing would answer them and the
//! figures would time the SDK's retries against an unreachable endpoint: the report
//! then says so and prints the sizes only.

mod local_aws;
mod report;
mod runtime_api;

pub use crate::runtime_api::peak_rss_kib;
pub use local_aws::{FUNCTIONS, LocalAws, deployed, deployed_name, function_env, provisioned};
pub use report::report;
pub use runtime_api::{empty_event, measure};

use std::time::Duration;

/// What one cold start measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdStart {
    /// From spawning the process to its first `/next`.
    pub init: Duration,
    /// From answering that `/next` to the function's answer (response or error).
    pub first_invocation: Duration,
    /// Whether that answer was a response (not an error).
    pub first_invocation_ok: bool,
    /// Peak resident set size, KiB (`VmHWM`).
    pub peak_rss_kib: u64,
    /// The binary's size, bytes.
    pub binary_bytes: u64,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum ColdStartError {
    /// Setting up the runtime API or the process.
    #[error("cold start of {binary}: {what}")]
    Io {
        /// The binary.
        binary: String,
        /// What went wrong.
        what: String,
    },
}

#[cfg(test)]
mod tests;
