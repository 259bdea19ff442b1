//! # Fault injection for the outbox's own tests, demo and chaos benchmark
//!
//! The failures that break outboxes are the ones AWS and Lambda really produce:
//! throttling, 5xx answers, timeouts, reset connections, a request that took effect
//! while its caller saw an error, and a function that dies between two steps. This
//! crate produces them where they happen — at the AWS SDK's HTTP layer — so every
//! call any of our functions makes (DynamoDB, SQS, SNS, EventBridge) can fail, and
//! the code above it cannot tell an injected failure from a real one. A crash is a
//! real process abort: Lambda (or the local AWS) sees the invocation die.
//!
//! Two rules of AWS the local AWS is kinder about are produced here too:
//!
//! - **A lagging index** ([`Fault::IndexLag`], `index_lag` in a plan): an eventually
//!   consistent first page of a global secondary index (a `Query` with `IndexName`,
//!   a PartiQL `SELECT` from `"table"."index"`) still lists, when the rule fires, the
//!   items the index listed up to [`INDEX_LAG_MAX_MS`] (10 s) before, for the partition
//!   values it reads, that it no longer lists — a message marked `SENT` since
//!   ([`lag`]; what was listed is kept in files every process shares, [`remembered`]).
//!   Table reads, consistent reads and next pages never lag.
//! - **Lambda's stream redelivery** ([`replay`]): the local AWS ignores partial batch
//!   responses; with `OUTBOX_FAULTS_REDELIVER=<retries>[:<share>]` the publisher
//!   hands its own handler the records from the lowest one it reported, as the next
//!   invocation would get them, up to `<retries>` times, and after a `<share>` of
//!   successful batches a drawn suffix of the batch again (an answer the mapping
//!   never got). Each is logged as [`replay::REPLAY_LOG`], with counts only.
//! - **Concurrent batches of one shard** ([`parallel`]): the local AWS keeps a
//!   mapping's `ParallelizationFactor` but runs one batch per shard at a time; with
//!   `OUTBOX_FAULTS_PARALLEL=<factor>` the publisher splits each batch as AWS may
//!   (records of one item together and in order, different items — even of one
//!   aggregate — apart) and runs the parts as concurrent invocations, each
//!   redelivered on its own. Each split is logged as [`parallel::SPLIT_LOG`].
//!   [`stream`] runs the publisher's handler through both.
//!
//! The binaries compile it in only with their `fault-injection` cargo feature, which
//! refuses to build in release mode; it is switched on at run time by the
//! `OUTBOX_FAULTS` variable (see [`FaultPlan`]), `OUTBOX_FAULTS_SEED` (optional,
//! for a repeatable sequence; each process mixes in its id, as the local AWS runs
//! every invocation in a new process) and, in the publisher, `OUTBOX_FAULTS_REDELIVER`
//! and `OUTBOX_FAULTS_PARALLEL`.
//! Without them nothing changes.
#![warn(missing_docs)]

mod http;
pub mod lag;
pub mod parallel;
mod plan;
pub mod remembered;
pub mod replay;
pub mod stream;

pub use http::FaultyHttpClient;
pub use plan::{Fault, FaultPlan, INDEX_LAG_MAX_MS, PlanError, Rule};

/// The variable holding the plan.
pub const FAULTS_VAR: &str = "OUTBOX_FAULTS";
/// The variable holding the random seed.
pub const SEED_VAR: &str = "OUTBOX_FAULTS_SEED";

/// Wraps the HTTP client of `config` with the plan in `OUTBOX_FAULTS`, when it is set;
/// returns `config` unchanged otherwise. A malformed plan is an error naming the rule.
pub fn from_env(config: aws_config::SdkConfig) -> Result<aws_config::SdkConfig, PlanError> {
    let Some(text) = std::env::var(FAULTS_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(config);
    };
    let plan: FaultPlan = text.parse()?;
    // Mixed with the process id: the local AWS starts a process per invocation, and
    // the same seed in each would draw the same fault for the n-th call of every one.
    let seed = std::env::var(SEED_VAR)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| per_process(s, std::process::id()));
    tracing::warn!(plan = %text, "fault injection is on: this build is for tests only");
    Ok(with_plan(config, plan, seed))
}

/// A process's own seed from the configured one: repeatable for a given process id,
/// different between processes.
fn per_process(seed: u64, pid: u32) -> u64 {
    seed ^ u64::from(pid).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Wraps the HTTP client of `config` so that requests fail as `plan` says.
pub fn with_plan(
    config: aws_config::SdkConfig,
    plan: FaultPlan,
    seed: Option<u64>,
) -> aws_config::SdkConfig {
    // Without a client of its own, an SDK client builds the default HTTPS client;
    // build the same one here to wrap it.
    let inner = config.http_client().unwrap_or_else(|| {
        aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .build_https()
    });
    config
        .into_builder()
        .http_client(FaultyHttpClient::new(inner, plan, seed))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_draws_its_own_sequence_from_one_seed() {
        assert_eq!(per_process(7, 100), per_process(7, 100), "repeatable");
        assert_ne!(per_process(7, 100), per_process(7, 101));
    }
}
