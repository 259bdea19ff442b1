//! The configurations the tests and the deep run check.

use crate::global::{A, B, Crash, GMsg, GlobalParams};
use crate::params::{Consumer, Kind, Params, Txn};

/// The bounded check CI runs: one small instance per concern.
pub fn ci() -> Vec<(&'static str, Params)> {
    vec![
        (
            "a transaction that may roll back, a crash and a faulty call, marker consumer",
            Params {
                txns: vec![Txn::library(0, 1).or_roll_back()],
                ..Params::default()
            },
        ),
        (
            "rollback and poison on one aggregate, a faulty call, marker consumer",
            Params {
                txns: vec![
                    Txn::library(0, 1).or_roll_back(),
                    Txn::library(0, 1).kinds(&[Kind::Refused]),
                ],
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "minimal producer, discards, recovery",
            Params {
                txns: vec![Txn::minimal(0, 2)],
                batch_size: 2,
                esm_retries: 0,
                ..Params::default()
            },
        ),
        (
            "two sweepers, exhausted attempts, business-key consumer",
            Params {
                txns: vec![Txn::library(0, 1)],
                sweepers: 2,
                max_attempts: 1,
                faults: 2,
                consumer: Consumer::BusinessKey,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, two messages of one aggregate, the order fence, a crash and a faulty call",
            Params {
                txns: vec![Txn::library(0, 2)],
                fifo: true,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, a minimal producer's aggregate through discards and recovery, a crash and a faulty call",
            Params {
                txns: vec![Txn::minimal(0, 1), Txn::minimal(0, 1)],
                fifo: true,
                esm_retries: 0,
                ..Params::default()
            },
        ),
        (
            "side-effect consumer, a faulty call",
            Params {
                txns: vec![Txn::library(0, 1)],
                crashes: 0,
                consumer: Consumer::SideEffect,
                consumers: 2,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, every fence read fails, two messages of one aggregate, a crash and a faulty call",
            Params {
                txns: vec![Txn::library(0, 2)],
                fifo: true,
                fence_reads_fail: true,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, an index lagging marks and writes, two transactions in separate batches, a faulty call (the producer indexing at commit)",
            Params {
                txns: vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)],
                fifo: true,
                batch_size: 1,
                index_lag: true,
                index_lags_writes: true,
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, one transaction's two messages whose records reach the stream in any order, a faulty call",
            Params {
                txns: vec![Txn::library(0, 2)],
                fifo: true,
                stream_any_order: true,
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "parallelization factor 2: one transaction's two messages in concurrent batches of its shard",
            Params {
                txns: vec![Txn::library(0, 2)],
                parallelization: 2,
                crashes: 0,
                faults: 0,
                ..Params::default()
            },
        ),
        (
            "a redrive during an attempt, two sweepers, a faulty call",
            Params {
                txns: vec![Txn::library(0, 1).kinds(&[Kind::Unroutable])],
                sweepers: 2,
                redrives: 1,
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "FIFO destination, sequenced messages: two transactions of one aggregate at parallelization factor 2, records in any order, an index lagging marks and writes",
            Params {
                txns: vec![
                    Txn::library(0, 1).sequenced(),
                    Txn::library(0, 1).sequenced(),
                ],
                fifo: true,
                parallelization: 2,
                stream_any_order: true,
                index_lag: true,
                index_lags_writes: true,
                crashes: 0,
                faults: 0,
                ..Params::default()
            },
        ),
        (
            "issue 38: a message outside the index at commit (the default producer) whose discarded range is lost on the way to recovery, given up on by recovery or past the stream's retention, or whose mapping stalls past it, a crash; the backstop scan",
            Params {
                txns: vec![Txn::library(0, 1)],
                esm_retries: 0,
                faults: 0,
                on_failure_lost: 1,
                recovery_gives_up: 1,
                retention: 1,
                mapping_stalls: 1,
                backstop: true,
                ..Params::default()
            },
        ),
        (
            "issue 38, FIFO: two transactions of one aggregate outside the index at commit, in separate batches, a discard whose on-failure record is lost or trimmed; the backstop scan",
            Params {
                txns: vec![Txn::library(0, 1), Txn::library(0, 1)],
                fifo: true,
                batch_size: 1,
                esm_retries: 0,
                faults: 0,
                on_failure_lost: 1,
                retention: 1,
                backstop: true,
                ..Params::default()
            },
        ),
        // `OutboxWriter::index_at_commit(true)`: the index from the commit, the sweeper
        // racing the stream path (the default producer's instances above cover it only
        // after an adoption).
        (
            "the producer indexing at commit: a transaction that may roll back, a crash and a faulty call",
            Params {
                txns: vec![Txn::library_indexed(0, 1).or_roll_back()],
                ..Params::default()
            },
        ),
        (
            "the producer indexing at commit, FIFO destination, two messages of one aggregate, the order fence, a crash and a faulty call",
            Params {
                txns: vec![Txn::library_indexed(0, 2)],
                fifo: true,
                ..Params::default()
            },
        ),
        // The largest CI instance (its own test, `single_region_17`, runs beside the
        // others).
        (
            "rollback and poison on one aggregate, a crash and a faulty call, marker consumer",
            Params {
                txns: vec![
                    Txn::library(0, 1).or_roll_back(),
                    Txn::library(0, 1).kinds(&[Kind::Refused]),
                ],
                ..Params::default()
            },
        ),
    ]
}

/// The deep run: larger instances (minutes, not seconds).
pub fn deep() -> Vec<(&'static str, Params)> {
    vec![
        (
            "undecodable and unroutable items, exhausted attempts, a redrive",
            Params {
                txns: vec![
                    Txn::minimal(0, 1).kinds(&[Kind::Undecodable]),
                    Txn::library(0, 1).kinds(&[Kind::Unroutable]),
                ],
                max_attempts: 1,
                redrives: 1,
                ..Params::default()
            },
        ),
        (
            "two aggregates, rollback, poison, a crash and a faulty call",
            Params {
                txns: vec![
                    Txn::library(0, 1).or_roll_back(),
                    Txn::library(1, 1).kinds(&[Kind::Refused]),
                ],
                ..Params::default()
            },
        ),
        (
            "mixed producers on one aggregate, discards, two sweepers",
            Params {
                txns: vec![
                    Txn::minimal(0, 1).kinds(&[Kind::Unroutable]),
                    Txn::library(0, 1),
                ],
                esm_retries: 0,
                sweepers: 2,
                ..Params::default()
            },
        ),
        (
            "FIFO, two transactions, two faults and a crash",
            Params {
                txns: vec![Txn::library(0, 1), Txn::library(0, 1)],
                fifo: true,
                faults: 2,
                ..Params::default()
            },
        ),
        (
            "FIFO, an index lagging marks and writes, two transactions in separate batches, a crash and a faulty call",
            Params {
                txns: vec![Txn::library(0, 1), Txn::library(0, 1)],
                fifo: true,
                batch_size: 1,
                index_lag: true,
                index_lags_writes: true,
                ..Params::default()
            },
        ),
        (
            "FIFO, every fence read fails, a minimal producer's aggregate, two sweepers, a redrive",
            Params {
                txns: vec![Txn::minimal(0, 1), Txn::minimal(0, 1)],
                fifo: true,
                fence_reads_fail: true,
                sweepers: 2,
                redrives: 1,
                ..Params::default()
            },
        ),
        (
            "FIFO, one transaction's two messages whose records reach the stream in any order, a crash and a faulty call",
            Params {
                txns: vec![Txn::library(0, 2)],
                fifo: true,
                stream_any_order: true,
                ..Params::default()
            },
        ),
        (
            "parallelization factor 2, one transaction's two messages in concurrent batches of its shard, a faulty call",
            Params {
                txns: vec![Txn::library(0, 2)],
                parallelization: 2,
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "side-effect consumer, two consumers, two faults",
            Params {
                txns: vec![Txn::library(0, 1)],
                crashes: 0,
                faults: 2,
                consumer: Consumer::SideEffect,
                consumers: 2,
                ..Params::default()
            },
        ),
        (
            "FIFO, sequenced messages: two transactions of one aggregate at parallelization factor 2, an index lagging marks and writes, a faulty call",
            Params {
                txns: vec![
                    Txn::library(0, 1).sequenced(),
                    Txn::library(0, 1).sequenced(),
                ],
                fifo: true,
                parallelization: 2,
                index_lag: true,
                index_lags_writes: true,
                crashes: 0,
                ..Params::default()
            },
        ),
        (
            "FIFO, two aggregates, one with sequenced messages (its fence reads its key range) and one without (the index), whose messages one sweep may claim together (the producer indexing at commit: without a fault nothing else reaches the sweeper)",
            Params {
                txns: vec![
                    Txn::library_indexed(0, 1).sequenced(),
                    Txn::library_indexed(1, 1),
                    Txn::library_indexed(0, 1).sequenced(),
                ],
                fifo: true,
                crashes: 0,
                faults: 0,
                ..Params::default()
            },
        ),
    ]
}

/// The two-region instances CI checks (`crate::global`): a global table, the outbox in
/// both regions, a crash of `A` or of either region, the failover into the other; the
/// failed region's recovery with the failback; poison refused in one region or in both.
/// Each has 20,000 to 90,000 unique states (docs/protocol.md lists them; a third
/// message multiplies them by some 300: see `global_deep`).
pub fn global_ci() -> Vec<(&'static str, GlobalParams)> {
    vec![
        (
            "two regions: a message committed in A, one without HomeRegion committed in B (A's: the default home) that may roll back, A crashes, failover",
            GlobalParams {
                msgs: vec![GMsg::library(A), GMsg::minimal(B).or_roll_back()],
                crash: Crash::Of(A),
                ..GlobalParams::default()
            },
        ),
        (
            "two regions: a message committed in each, either region crashes, failover, it comes back, failback",
            GlobalParams {
                msgs: vec![GMsg::library(A), GMsg::library(B)],
                crash: Crash::Either,
                recover: true,
                failback: true,
                ..GlobalParams::default()
            },
        ),
        (
            "two regions, poison: a message committed in A that A's destination refuses, one committed in B, either region crashes, failover",
            GlobalParams {
                msgs: vec![GMsg::library(A).refused_in(A), GMsg::library(B)],
                crash: Crash::Either,
                ..GlobalParams::default()
            },
        ),
        (
            "two regions, FIFO: one aggregate's message committed in A, A crashes, failover, A comes back, the aggregate's next message committed in A",
            GlobalParams {
                msgs: vec![GMsg::library(A), GMsg::library(A).after_outage()],
                crash: Crash::Of(A),
                recover: true,
                fifo: true,
                ..GlobalParams::default()
            },
        ),
        (
            "two regions, poison: a message without HomeRegion committed in B that both destinations refuse, one committed in B, either region crashes, failover",
            GlobalParams {
                msgs: vec![GMsg::minimal(B).poison(), GMsg::library(B)],
                crash: Crash::Either,
                ..GlobalParams::default()
            },
        ),
    ]
}

/// Larger two-region instances (minutes).
pub fn global_deep() -> Vec<(&'static str, GlobalParams)> {
    vec![(
        "two regions: a message committed in each, one without HomeRegion committed in B that A's destination refuses, a rollback, either region crashes, failover",
        GlobalParams {
            msgs: vec![
                GMsg::library(A),
                GMsg::library(B).or_roll_back(),
                GMsg::minimal(B).refused_in(A),
            ],
            crash: Crash::Either,
            ..GlobalParams::default()
        },
    )]
}
