//! Issue 36, item 2: the order fence of sequenced messages (`Txn::sequenced`: the
//! aggregate's version in the sort key, `Scope::Sequence`) under what AWS may do. Each
//! situation in which `findings.rs` finds the unsequenced fence overtaken holds here:
//! the fence reads the item just before the batch in the aggregate's key range,
//! strongly consistently, whatever the stream's order, the parallelization factor or
//! the index's lag. (The findings stay open for messages without a sequence.) And the
//! mutants of that read the model must catch.

use outbox_model::props::{FIFO_ORDER, NO_STALE_FENCE, SETTLES, SOME_END};
use outbox_model::{Mutation, OutboxModel, Params, Txn, find};

/// `n` sequenced transactions of one message each, on aggregate 0, FIFO, no crash
/// nor fault, the index lagging marks and writes.
fn sequenced(n: usize) -> Params {
    Params {
        txns: vec![Txn::library(0, 1).sequenced(); n],
        fifo: true,
        index_lag: true,
        index_lags_writes: true,
        crashes: 0,
        faults: 0,
        ..Params::default()
    }
}

/// Every property holds on `params`, exhaustively, and some run settles everything.
fn holds(name: &str, params: Params) {
    let params_consumers = params.consumers;
    let report = outbox_model::check(OutboxModel::new(params), 2);
    println!(
        "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
        report.states, report.unique, report.max_depth, report.elapsed
    );
    assert!(
        params_consumers == 0 || report.discovery(SOME_END).is_some(),
        "{name}: no run settles every message: the check is vacuous"
    );
    // Without a consumer no effect is applied: `SETTLES` cannot hold, `ENDS` is checked.
    let failures: Vec<String> = report
        .failures()
        .into_iter()
        .filter(|f| params_consumers > 0 || !f.starts_with(SETTLES))
        .collect();
    assert!(failures.is_empty(), "{name}: {}", failures.join("\n"));
}

fn caught(params: Params, property: &'static str) {
    let report = find(OutboxModel::new(params.clone()), 1, property);
    let Some((len, trace)) = report.discovery(property) else {
        panic!(
            "{:?} was not caught by `{property}` ({} states)",
            params.mutations, report.unique
        );
    };
    println!(
        "{:?} caught by `{property}` in {len} steps:\n{trace}",
        params.mutations
    );
}

/// Finding 2's situation (`finding_2_open_…`): A1 and A2 in concurrent batches of one
/// shard (factor 2), A2's first, its fence's index read not yet listing A1. The
/// sequence read finds A1 just below A2, pending: A2 waits for the sweeper.
#[test]
fn finding_2_holds_for_sequenced_messages_at_factor_2() {
    holds(
        "factor 2, index lagging",
        Params {
            parallelization: 2,
            ..sequenced(2)
        },
    );
    // The same with the producer indexing at commit: the index lists them from the
    // start (lagging), the sweeper races the stream path.
    holds(
        "factor 2, index lagging, indexed at commit",
        Params {
            txns: vec![Txn::library_indexed(0, 1).sequenced(); 2],
            parallelization: 2,
            ..sequenced(2)
        },
    );
}

/// Finding 2's narrow variant (`finding_2_narrow_open_…`) at factor 1: A0's `SENT`
/// mark fails, A1 is deferred and not reported (`DeferredNotReported`: the code today,
/// and after the fix the code before it), A2's batch runs while the index does not list
/// A1: its sequence read does.
#[test]
fn finding_2_narrow_holds_for_sequenced_messages_when_a_deferred_one_is_not_reported() {
    holds(
        "factor 1, deferred not reported, a faulty call",
        Params {
            batch_size: 1,
            faults: 1,
            consumers: 0,
            ..sequenced(3)
        }
        .mutated(Mutation::DeferredNotReported),
    );
}

/// The discard at factor 1 (`finding_2_open_at_factor_1_…`): A0's batch is discarded
/// after a crash, A1's fence reads A0 in the table, not the lagging index.
#[test]
fn a_discarded_sequenced_message_is_not_overtaken_behind_an_index_lagging_writes() {
    holds(
        "factor 1, a discard, index lagging",
        Params {
            batch_size: 1,
            esm_retries: 0,
            crashes: 1,
            ..sequenced(2)
        },
    );
}

/// Two transactions' records reversed (`finding_open_two_transactions_…`): A2's record
/// first, alone in its batch, the index without A1: the sequence read has it.
#[test]
fn two_sequenced_transactions_records_reversed_keep_their_order() {
    holds(
        "records in any order, index lagging",
        Params {
            stream_any_order: true,
            batch_size: 1,
            ..sequenced(2)
        },
    );
}

/// One transaction's two messages share a sequence (positions 0 and 1): in concurrent
/// batches, records in any order, the index lagging.
#[test]
fn one_sequenced_transactions_messages_keep_their_order_at_factor_2() {
    holds(
        "one transaction, factor 2, records in any order, index lagging",
        Params {
            txns: vec![Txn::library(0, 2).sequenced()],
            parallelization: 2,
            stream_any_order: true,
            ..sequenced(0)
        },
    );
}

/// A read that stops at the batch's lowest member does not see the message just
/// before it: at factor 2, with an index that keeps up, A2's batch runs first and goes.
#[test]
fn a_sequence_read_that_stops_at_the_lowest_member_is_overtaken() {
    let p = Params {
        parallelization: 2,
        index_lag: false,
        index_lags_writes: false,
        ..sequenced(2)
    };
    holds("factor 2", p.clone());
    caught(p.mutated(Mutation::SequenceReadStopsAtLowest), FIFO_ORDER);
}

/// The same range read from the index: it does not list A1 yet, so A2 overtakes it; and
/// it still lists A1 once `SENT`, so A2 is held behind a finished message.
#[test]
fn a_sequence_read_from_the_index_is_overtaken_and_fences_behind_sent_messages() {
    let p = Params {
        parallelization: 2,
        ..sequenced(2)
    };
    caught(p.mutated(Mutation::SequenceReadFromIndex), FIFO_ORDER);
    // Held behind a finished message: an index that lists it (the producer indexing
    // at commit; the default producer's messages enter the index only when the
    // stream path cannot finish them).
    let q = Params {
        txns: vec![Txn::library_indexed(0, 1).sequenced(); 2],
        batch_size: 1,
        index_lags_writes: false,
        ..sequenced(2)
    };
    holds("factor 1, index lagging marks", q.clone());
    caught(q.mutated(Mutation::SequenceReadFromIndex), NO_STALE_FENCE);
}

/// A1 without a sequence, then A2 with one — a producer that starts giving the
/// aggregate's version while A1 is pending. A2's range read finds nothing below A2 in
/// the sequenced range, so the fence reads the aggregate's other pending messages too
/// (`switch_over_reads`): A2 waits for A1 at factor 2. Without that read (the code
/// before it) A2's batch runs first and goes before A1.
#[test]
fn a_first_sequenced_message_waits_for_a_pending_one_without_a_sequence() {
    let p = Params {
        txns: vec![Txn::library(0, 1), Txn::library(0, 1).sequenced()],
        parallelization: 2,
        ..sequenced(0)
    };
    holds("switch-over at factor 2", p.clone());
    caught(p.mutated(Mutation::NoSwitchOverRead), FIFO_ORDER);
}
