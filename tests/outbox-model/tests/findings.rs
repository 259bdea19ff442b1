//! Issue 36: the model generates what AWS documents it may do — a transaction's stream
//! records in any order (`Params::stream_any_order`), concurrent batches of one shard
//! (`Params::parallelization`), a sweeper index that lags writes for the fence and the
//! sweep alike (`index_lags_writes`), `HomeRegion` in every shape (`Txn::home`), a
//! global table's replicas with the order fence (`GlobalParams::fifo`) — and on the
//! code as it is, it finds the findings 1, 2, 3 and 5.
//!
//! Each test here expects the counterexample on the unmutated model: it passes while
//! the finding is open and fails once the code is fixed. When a fix lands, its test
//! moves to `mutations.rs` / `global_mutations.rs` as a mutant (the switch named in
//! its doc restores the code before the fix): the property holds on the model, and
//! the mutant is caught.

use outbox_model::global::{A, Crash, GMsg, GlobalModel, GlobalParams};
use outbox_model::props::{ENDS, FIFO_ORDER};
use outbox_model::{Home, OutboxModel, Params, Txn, find};

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

fn quiet(txns: Vec<Txn>) -> Params {
    Params {
        txns,
        crashes: 0,
        faults: 0,
        ..Params::default()
    }
}

/// Finding 1: one transaction's records reach the publisher as [A2, A1] — AWS says a
/// transaction's records "might appear at different times and could be interleaved" —
/// and `publish::plan` keeps stream order; the fence ignores siblings in the same
/// batch. A2 is sent before A1, at parallelization factor 1, with no fault at all.
/// (Fix: `plan` orders an aggregate's messages by `policy::order::order_key`;
/// mutant then: `PlanKeepsStreamOrder`.)
#[test]
fn finding_1_one_transactions_records_out_of_order_are_sent_out_of_order() {
    let p = Params {
        fifo: true,
        stream_any_order: true,
        ..quiet(vec![Txn::library(0, 2)])
    };
    found(p, FIFO_ORDER);
}

/// Finding 2, open (not fixed in this first round): under a parallelization
/// factor of 2 the mapping keeps order per item only, so A1 and A2 of one aggregate
/// go to concurrent batches; A2's batch runs first, its fence reads the sweeper index,
/// which has not taken A1's write yet: nothing earlier is listed, A2 is sent, then A1.
/// Order on FIFO routes is not held under a factor above 1 (docs/protocol.md).
#[test]
fn finding_2_open_a_factor_above_1_and_an_index_lagging_writes_let_a_later_message_overtake() {
    let p = Params {
        fifo: true,
        parallelization: 2,
        index_lag: true,
        index_lags_writes: true,
        ..quiet(vec![Txn::library(0, 2)])
    };
    found(p, FIFO_ORDER);
}

/// Finding 5: `HomeRegion` written as `""` or padded (`" us-east-1 "`) in a
/// single-region deployment. The publisher's `FilterCriteria` drops the record
/// (`HomeRegion.S` is neither the region nor absent); the sweeper's
/// `HomeRegions::owns` trims and calls the item its own, but the claim's condition
/// `(#home = :home OR attribute_not_exists(#home))` refuses it at every sweep: never
/// `SENT`, never `FAILED`. (Fix: the claim accepts the value the sweeper read;
/// mutant then: `ClaimRefusesOddHome`.)
#[test]
fn finding_5_an_empty_or_padded_home_region_parks_a_message_forever() {
    for home in [Home::Empty, Home::Padded] {
        found(quiet(vec![Txn::library(0, 1).home(home)]), ENDS);
    }
}

/// Finding 5, `NULL` (boto3's `None`): the filter passes it (`HomeRegion.S` does not
/// exist), so only a message the stream path cannot finish reaches the sweeper — a
/// crashed invocation whose record is then discarded — and parks there.
#[test]
fn finding_5_a_null_home_region_parks_a_message_the_stream_path_could_not_finish() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..quiet(vec![Txn::library(0, 1).home(Home::Null)])
    };
    found(p, ENDS);
}

/// Finding 3 (global tables): A1 is committed in `A`, `A` fails before publishing it,
/// the failover re-homes it into `B`; `A` comes back, A2 is committed there. `A`'s
/// fence lists A1 and confirms it by a consistent read, which answers
/// `PENDING_ELSEWHERE` (pending, homed in `B`) — taken as finished: A2 is sent before
/// `B` sends A1. (Fix: any status but `SENT`, `FAILED` or gone fences; mutant then:
/// `FenceTrustsPendingElsewhereAsDone`.)
#[test]
fn finding_3_a_message_pending_in_the_other_region_stops_fencing() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A), GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        fifo: true,
        ..GlobalParams::default()
    };
    let report = outbox_model::global::find(GlobalModel::new(p), 1, FIFO_ORDER);
    let Some((len, trace)) = report.discovery(FIFO_ORDER) else {
        panic!(
            "no counterexample to `{FIFO_ORDER}` ({} states): is finding 3 fixed?",
            report.unique
        );
    };
    println!("`{FIFO_ORDER}` fails in {len} steps:\n{trace}");
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
        ..quiet(vec![Txn::library(0, 1), Txn::library(0, 1)])
    };
    found(p, FIFO_ORDER);
}
