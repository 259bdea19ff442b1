//! Issue 36: the model generates what AWS documents it may do — a transaction's stream
//! records in any order (`Params::stream_any_order`), concurrent batches of one shard
//! (`Params::parallelization`), a sweeper index that lags writes for the fence and the
//! sweep alike (`index_lags_writes`), `HomeRegion` in every shape (`Txn::home`), a
//! global table's replicas with the order fence (`GlobalParams::fifo`) — and on the
//! code as it was, it found the findings 1, 2, 3, 5, 7 and 9, and more. Findings 1, 3, 5,
//! 7 and 9 are fixed: their tests are mutants now (`mutations.rs`, `global_mutations.rs`);
//! what is left here is open. The order findings here (2, its narrow variant and the
//! two found beside it) are open for messages without a sequence; for sequenced ones
//! (`Txn::sequenced`, the fence's `Scope::Sequence`) the same situations hold:
//! `sequence.rs`.
//!
//! Finding 2's tests are of the producer indexing at commit (`Txn::library_indexed`):
//! their window is the index's lag after the commit. Issue 38's `known_limit_…` tests
//! say what only the backstop scan finds once the default producer writes nothing to
//! the index at commit.
//!
//! Each test here expects the counterexample on the unmutated model: it passes while
//! the finding is open and fails once the code is fixed. When a fix lands, its test
//! moves to `mutations.rs` / `global_mutations.rs` as a mutant (the switch named in
//! its doc restores the code before the fix): the property holds on the model, and
//! the mutant is caught.

use outbox_model::global::{A, Crash, GMsg, GlobalModel, GlobalParams};
use outbox_model::props::{ENDS, FIFO_ORDER};
use outbox_model::{Home, Mutation, OutboxModel, Params, Txn, find};

/// The counterexample to `property` on `params`, printed; its length.
fn found(params: Params, property: &'static str) -> usize {
    let report = find(OutboxModel::new(params.clone()), 1, property);
    let Some((len, trace)) = report.discovery(property) else {
        panic!(
            "no counterexample to `{property}` ({} states): is the finding fixed? Then make its \
             test a mutant (see this file's doc)",
            report.unique
        );
    };
    println!("`{property}` fails in {len} steps:\n{trace}");
    len
}

/// The same on the two-region model.
fn found_globally(params: GlobalParams, property: &'static str) -> usize {
    let report = outbox_model::global::find(GlobalModel::new(params), 1, property);
    let Some((len, trace)) = report.discovery(property) else {
        panic!(
            "no counterexample to `{property}` ({} states): is the finding fixed? Then make its \
             test a mutant (see this file's doc)",
            report.unique
        );
    };
    println!("`{property}` fails in {len} steps:\n{trace}");
    len
}

fn quiet(txns: Vec<Txn>) -> Params {
    Params {
        txns,
        crashes: 0,
        faults: 0,
        ..Params::default()
    }
}

/// Finding 2, open (not fixed in this first round): under a parallelization
/// factor of 2 the mapping keeps order per item only, so A1 and A2 of one aggregate
/// go to concurrent batches; A2's batch runs first, its fence reads the sweeper index,
/// which has not taken A1's write yet: nothing earlier is listed, A2 is sent, then A1.
/// Order on FIFO routes is not held under a factor above 1 (docs/protocol.md). (Two
/// transactions: within one, A2 names A1 in `Follows` and waits.)
#[test]
fn finding_2_open_a_factor_above_1_and_an_index_lagging_writes_let_a_later_message_overtake() {
    let p = Params {
        fifo: true,
        parallelization: 2,
        index_lag: true,
        index_lags_writes: true,
        ..quiet(vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)])
    };
    found(p, FIFO_ORDER);
}

/// Found by the model beside finding 3, open: the replicas take writes in any order,
/// so the survivor may hold A2 and not A1 when the failed region goes down; the
/// failover re-homes A2 and the survivor sends it (its fence cannot list a message its
/// copy does not have); the failed region, back, sends A1 after it. Per-aggregate order
/// across a failover holds only for what had replicated.
#[test]
fn finding_open_a_failover_lets_a_message_overtake_an_earlier_one_not_yet_replicated() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A), GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        fifo: true,
        ..GlobalParams::default()
    };
    found_globally(p, FIFO_ORDER);
}

/// Finding 2 at factor 1, open — found by the model, beside the narrow
/// variant: A0's batch is discarded (its invocation crashes, no retries left: an
/// on-failure record for the recovery function and the sweeper) and the mapping moves
/// on; A1's batch meets a fence whose index has not taken A0's write yet, finds nothing
/// earlier pending and sends A1; the sweeper sends A0 after it. The window is the
/// index's propagation delay after the commit; a `Follows` key written in one commit
/// does not cover two transactions.
#[test]
fn finding_2_open_at_factor_1_a_discarded_message_is_overtaken_behind_an_index_lagging_writes() {
    let p = Params {
        fifo: true,
        batch_size: 1,
        esm_retries: 0,
        crashes: 1,
        index_lag: true,
        index_lags_writes: true,
        ..quiet(vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)])
    };
    found(p, FIFO_ORDER);
}

/// Found by the model beside finding 2, open, at factor 1 and with no fault: two
/// transactions of one aggregate committed a moment apart; AWS orders stream records
/// per item only, so A2's record may come first, alone in its batch, while the index
/// has not taken A1's write: the fence finds nothing earlier and sends A2 first.
/// (`Follows` covers one transaction's messages, not two transactions.)
#[test]
fn finding_open_two_transactions_records_reversed_and_an_index_lagging_writes_let_a_later_message_overtake()
 {
    let p = Params {
        fifo: true,
        stream_any_order: true,
        batch_size: 1,
        index_lag: true,
        index_lags_writes: true,
        ..quiet(vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)])
    };
    found(p, FIFO_ORDER);
}

/// Finding 2's narrow variant at factor 1, open until a `Deferred` message is reported
/// for retry: A0's `SENT` mark fails; A1's batch is deferred behind it and not
/// reported, so the mapping moves on; the sweeper sends A0 again and marks it; A2's
/// batch meets a fence whose index has not taken A1's write (committed since time last
/// passed) and finds nothing earlier pending: A2 goes before A1. (Three transactions:
/// within one, `Follows` holds the later message. Mutant once fixed:
/// `DeferredNotReported`.)
#[test]
fn finding_2_narrow_open_a_deferred_message_not_reported_is_overtaken() {
    let p = Params {
        fifo: true,
        batch_size: 1,
        faults: 1,
        index_lag: true,
        index_lags_writes: true,
        // The consumer plays no part in the order the destination accepts.
        consumers: 0,
        ..quiet(vec![
            Txn::library_indexed(0, 1),
            Txn::library_indexed(0, 1),
            Txn::library_indexed(0, 1),
        ])
    };
    found(p, FIFO_ORDER);
}

/// Issue 38, item 1: a message outside the sweeper index at commit (the default
/// producer, as a minimal producer's) whose stream path cannot finish it — its
/// invocation crashes, the mapping discards the range — enters the index only through
/// the recovery function. When the on-failure record never reaches it (`lost`), when
/// it fails on the record past its retries (the record goes to its dead-letter queue),
/// or when the stream's retention ends before it reads the range (it finds nothing),
/// nothing outbox-only finds the message but the sweeper's backstop scan
/// (`OUTBOX_SWEEP_SCAN_MODE=backstop`; with it these hold: CI instance 14) or
/// `outbox-ops reconcile`. Without either it stays `PENDING`: the counterexample below, for each of
/// the three, and for the two producers that write nothing to the index at commit. A
/// producer indexing at commit (`Txn::library_indexed`) is the sweeper's from the
/// commit: the same faults leave nothing behind.
#[test]
fn known_limit_without_the_backstop_a_discarded_message_outside_the_index_is_left_pending() {
    type Fault = fn(&mut Params);
    let faults: [(&str, Fault); 3] = [
        ("is LOST", |p| p.on_failure_lost = 1),
        ("past its retries", |p| p.recovery_gives_up = 1),
        ("RETENTION runs out", |p| p.retention = 1),
    ];
    for (line, fault) in faults {
        let mut p = Params {
            esm_retries: 0,
            crashes: 1,
            ..quiet(vec![Txn::library(0, 1)])
        };
        fault(&mut p);
        for txn in [Txn::library(0, 1), Txn::minimal(0, 1)] {
            let p = Params {
                txns: vec![txn],
                ..p.clone()
            };
            let trace = counterexample(p.clone(), ENDS);
            assert!(trace.contains("CRASHES"), "a crash discards the range");
            assert!(trace.contains(line), "the fault `{line}` is on the path");
            assert!(
                trace.contains("items [Pending]"),
                "the message is left PENDING"
            );
            holds_with(Params {
                backstop: true,
                ..p
            });
        }
        holds_with(Params {
            txns: vec![Txn::library_indexed(0, 1)],
            ..p
        });
    }
}

/// Issue 38: the same when the mapping stalls (disabled, failing) past the stream's
/// retention: the records are trimmed unread, no on-failure record is written, and a
/// message outside the index at commit is found by the backstop scan only.
#[test]
fn known_limit_without_the_backstop_a_mapping_stalled_past_retention_leaves_a_message_pending() {
    let p = Params {
        mapping_stalls: 1,
        ..quiet(vec![Txn::library(0, 1)])
    };
    let trace = counterexample(p.clone(), ENDS);
    assert!(trace.contains("stalls past the stream's RETENTION"));
    assert!(trace.contains("items [Pending]"));
    holds_with(Params {
        backstop: true,
        ..p.clone()
    });
    holds_with(Params {
        txns: vec![Txn::library_indexed(0, 1)],
        ..p
    });
}

/// Issue 38: an `OutboxWriter` whose `home_region` is set to an empty or padded string
/// (it takes what it is given) writes a `HomeRegion` the publisher's stream filter
/// drops. Indexed at commit, the sweeper's claim takes it (issue 36, finding 5's fix:
/// `mutations.rs`, `an_empty_or_padded_home_region_…`); outside the index at commit,
/// no stream record reaches the publisher, so nothing adopts it: only the backstop
/// scan finds it (as for a minimal producer's message with such a `HomeRegion`).
#[test]
fn known_limit_an_odd_home_region_outside_the_index_is_found_by_the_backstop_only() {
    for home in [Home::Empty, Home::Padded] {
        let p = quiet(vec![Txn::library(0, 1).home(home)]);
        let trace = counterexample(p.clone(), ENDS);
        assert!(trace.contains("items [Pending]"));
        assert!(!trace.contains("invokes the publisher"), "filtered out");
        holds_with(Params {
            backstop: true,
            ..p
        });
    }
}

/// The counterexample to `property` on `params`, printed, as its rendering.
fn counterexample(params: Params, property: &'static str) -> String {
    let report = find(OutboxModel::new(params.clone()), 1, property);
    let Some((len, trace)) = report.discovery(property) else {
        panic!(
            "no counterexample to `{property}` on {params:?} ({} states): is the limit closed?",
            report.unique
        );
    };
    println!("`{property}` fails in {len} steps:\n{trace}");
    trace.to_owned()
}

/// Every property holds on `params` (but `SETTLES` without a consumer).
fn holds_with(params: Params) {
    let report = outbox_model::check(OutboxModel::new(params.clone()), 1);
    println!(
        "holds: {:?}: {} states explored, {} unique",
        params.txns, report.states, report.unique
    );
    let failures = report.failures();
    assert!(failures.is_empty(), "{params:?}: {}", failures.join("\n"));
}

/// Issue 38's design, window w1, ahead of the code: once the fence of an unsequenced
/// FIFO message reads the index shards only (design step (d) 1, `FenceReadsIndexOnly`;
/// today it reads an unindexed aggregate's partition), a message outside the index at
/// commit whose batch is discarded is invisible to the fence until recovery adopts it:
/// A0's invocation crashes, the mapping discards its range and moves on, A1's batch
/// finds nothing pending in the index and sends A1 first. Cross-transaction FIFO order
/// is then the sequenced messages' alone (`sequence.rs`); indexed at commit, the same
/// run holds (`mutations.rs`, `a_discard_of_a_library_message_…`).
#[test]
fn known_limit_w1_a_discarded_message_outside_the_index_is_overtaken_by_an_index_only_fence() {
    let p = Params {
        fifo: true,
        batch_size: 1,
        esm_retries: 0,
        crashes: 1,
        ..quiet(vec![Txn::library(0, 1), Txn::library(0, 1)])
    }
    .mutated(Mutation::FenceReadsIndexOnly);
    let trace = counterexample(p.clone(), FIFO_ORDER);
    assert!(trace.contains("CRASHES"), "A0's batch is discarded");
    let sent = trace.find("sends [m1]");
    let adopted = trace.find("recovery reads").or(trace.find("backstop"));
    assert!(
        sent.is_some() && (adopted.is_none() || sent < adopted),
        "A1 goes out before anyone adopts A0"
    );
    holds_with(Params {
        txns: vec![Txn::library_indexed(0, 1); 2],
        ..p.clone()
    });
    holds_with(Params {
        txns: vec![Txn::library(0, 1).sequenced(); 2],
        ..p
    });
}
