//! Not vacuous: each property catches a deliberately broken protocol, with a
//! counterexample; and what the model found in the real code, pinned. (The two-region
//! model's: `global_mutations.rs`.)

use outbox_model::props::{
    EFFECT_ONCE, ENDS, EXCLUSIVE_CLAIMS, FIFO_ORDER, NO_INDEX_ON_HAPPY_PATH, NO_STALE_FENCE,
    NOTHING_PHANTOM, REDRIVE_STANDS, SENT_ONCE, SETTLES, TERMINAL,
};
use outbox_model::{Consumer, Home, Kind, Mutation, OutboxModel, Params, Txn, find};

fn caught(params: Params, property: &'static str) -> usize {
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
    len
}

/// Every property holds on `params`, exhaustively.
fn holds(params: Params) {
    let report = outbox_model::check(OutboxModel::new(params.clone()), 2);
    println!(
        "{:?}: {} unique states, max depth {}, {:.1?}",
        params.txns, report.unique, report.max_depth, report.elapsed
    );
    assert!(report.failures().is_empty(), "{:#?}", report.failures());
}

fn one(txn: Txn) -> Params {
    Params {
        txns: vec![txn],
        crashes: 0,
        faults: 0,
        ..Params::default()
    }
}

#[test]
fn marking_sent_before_publishing_loses_a_message_on_a_crash() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..one(Txn::library(0, 1))
    };
    caught(p.mutated(Mutation::MarkBeforePublish), SETTLES);
}

#[test]
fn claims_without_a_lease_let_two_sweepers_hold_one_item() {
    let p = Params {
        sweepers: 2,
        ..one(Txn::library_indexed(0, 1))
    };
    caught(p.mutated(Mutation::NoLease), EXCLUSIVE_CLAIMS);
}

#[test]
fn a_consumer_keyed_on_the_sqs_message_id_applies_a_republished_message_twice() {
    let p = Params {
        crashes: 1,
        ..one(Txn::library(0, 1))
    };
    caught(p.mutated(Mutation::ConsumerKeysOnSqsId), EFFECT_ONCE);
}

#[test]
fn without_recovery_a_minimal_producers_discarded_message_is_lost() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..one(Txn::minimal(0, 1))
    };
    caught(p.mutated(Mutation::NoRecovery), SETTLES);
}

#[test]
fn without_the_hold_back_a_later_message_overtakes_a_failed_one_on_fifo() {
    let p = Params {
        fifo: true,
        faults: 1,
        ..one(Txn::library(0, 2))
    };
    caught(p.mutated(Mutation::NoAggregateBlocking), FIFO_ORDER);
}

#[test]
fn an_unconditional_sent_mark_revives_a_failed_item() {
    let p = Params {
        max_attempts: 0,
        ..one(Txn::library_indexed(0, 1))
    };
    caught(p.mutated(Mutation::UnconditionalMark), TERMINAL);
}

/// A publisher that trusts the stream image publishes what moto's quirk shows; the
/// status read finds no such item in the table and skips it.
#[test]
fn a_stream_that_shows_rolled_back_writes_publishes_phantoms_without_the_status_read() {
    let p = one(Txn::library(0, 1).or_roll_back()).mutated(Mutation::StreamShowsRolledBack);
    holds(p.clone());
    caught(p.mutated(Mutation::NoStatusRead), NOTHING_PHANTOM);
}

#[test]
fn failing_poison_before_its_copy_loses_the_copy_on_a_crash() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..one(Txn::library(0, 1).kinds(&[Kind::Refused]))
    };
    caught(p.mutated(Mutation::FailBeforeDeadLetter), SETTLES);
}

#[test]
fn before_this_branch_a_failed_mark_stranded_a_minimal_producers_poison() {
    let p = Params {
        faults: 1,
        ..one(Txn::minimal(0, 1).kinds(&[Kind::Refused]))
    };
    caught(p.mutated(Mutation::StrandUnindexed), SETTLES);
}

#[test]
fn before_this_branch_a_failed_adoption_stranded_a_published_minimal_message() {
    let p = Params {
        faults: 2,
        ..one(Txn::minimal(0, 1))
    };
    caught(p.mutated(Mutation::StrandUnindexed), SETTLES);
}

/// Found in the real code, fixed by the order fence: a sweep that cannot claim an
/// earlier message of an aggregate (its claim takes effect, the answer is lost) still
/// published the later one. The fence finds the earlier one pending.
#[test]
fn one_failed_claim_no_longer_lets_a_later_message_overtake_on_fifo() {
    let p = Params {
        fifo: true,
        faults: 1,
        ..one(Txn::library_indexed(0, 2))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoOrderFence), FIFO_ORDER);
}

/// Documented in `IdempotentEffects`: a crash between the effect and its
/// `COMPLETED` record runs the effect again once the lock expires.
#[test]
fn known_limit_a_side_effect_runs_again_after_a_crash_before_completed() {
    let p = Params {
        crashes: 1,
        consumer: Consumer::SideEffect,
        ..one(Txn::library(0, 1))
    };
    caught(p, EFFECT_ONCE);
}

/// Found in the real code (issue 22, defect 8), fixed by conditioning a sweep's
/// `FAILED` mark on its claim: a sweep claims an item another worker then fails; the
/// operator redrives it; a second sweep claims it while the first still acts on it.
/// The first's claim is no longer current (the redrive rewrote `SweepDueAt`), so its
/// `FAILED` mark no longer lands on the redriven message. Before the fix it did: the
/// redrive was undone by an attempt claimed before it.
#[test]
fn a_redrive_during_an_attempt_is_not_undone_by_it() {
    let p = Params {
        sweepers: 2,
        redrives: 1,
        ..one(Txn::library_indexed(0, 1).kinds(&[Kind::Unroutable]))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::UnclaimedSweepMark), REDRIVE_STANDS);
}

/// Issue 22, defect 1, fixed by charging the attempt: every read of the order fence
/// fails (a lasting `AccessDenied`, more pending keys than it reads), so it never can
/// tell whether an earlier message is pending. The message is held, charged an
/// attempt with the reason, and ends `FAILED` with its dead-letter copy. Before the
/// fix it was deferred like a message behind a known one, its attempt given back at
/// every sweep: never sent, never `FAILED`.
#[test]
fn a_fence_that_never_can_tell_ends_the_message_failed_instead_of_parking_it() {
    let p = Params {
        fifo: true,
        fence_reads_fail: true,
        ..one(Txn::library(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::FenceParksWhenUnread), ENDS);
}

/// The same for a minimal producer's aggregate (its partition is read) and for two
/// messages of one aggregate: the earliest is charged, the later one waits behind it,
/// and both end `FAILED`.
#[test]
fn a_fence_that_never_can_tell_parks_no_message_of_an_aggregate() {
    holds(Params {
        fifo: true,
        fence_reads_fail: true,
        ..one(Txn::minimal(0, 1))
    });
    let p = Params {
        fifo: true,
        fence_reads_fail: true,
        ..one(Txn::library(0, 2))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::FenceParksWhenUnread), ENDS);
}

/// Found by the model, fixed: the index lags the table's writes too (a message just
/// committed is not listed yet). The first message's fence read fails, so it was
/// held (`OrderUnknown`) without being reported and the mapping moved on; the next
/// batch's fence read an index that did not list the first message yet, and sent the
/// second one before it. Reported for retry now, the first message keeps its shard's
/// later records behind it.
#[test]
fn an_index_that_does_not_list_a_new_message_yet_lets_no_later_one_overtake() {
    let p = Params {
        txns: vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)],
        fifo: true,
        batch_size: 1,
        index_lag: true,
        index_lags_writes: true,
        faults: 1,
        ..one(Txn::library_indexed(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::UnknownNotReported), FIFO_ORDER);
}

/// Issue 22, defect 3, fixed by the fence's consistent confirmation: the stream
/// publisher sends and marks the first message of a FIFO aggregate; the next batch's
/// fence reads the index, which still lists it. Fenced behind it, the second message
/// went to the sweeper; confirmed `SENT` by a consistent read, it fences nothing.
#[test]
fn a_lagging_index_no_longer_holds_the_next_fifo_message_behind_a_sent_one() {
    let p = Params {
        txns: vec![Txn::library_indexed(0, 1), Txn::library_indexed(0, 1)],
        fifo: true,
        batch_size: 1,
        index_lag: true,
        ..one(Txn::library_indexed(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoConsistentConfirm), NO_STALE_FENCE);
}

/// The fence holds through discards and recovery too, without stranding anything:
/// a minimal producer's aggregate, read from its partition.
#[test]
fn the_order_fence_keeps_fifo_order_through_discards() {
    holds(Params {
        txns: vec![Txn::minimal(0, 1), Txn::minimal(0, 1)],
        fifo: true,
        esm_retries: 0,
        crashes: 1,
        faults: 1,
        ..Params::default()
    });
}

/// Found in the real code, fixed by the order fence: after the mapping discarded an
/// earlier message's batch, the stream publisher sent the later message while the
/// earlier one waited for recovery. Now the later one waits for the sweeper.
#[test]
fn a_discard_no_longer_lets_a_later_message_overtake_on_fifo() {
    let p = Params {
        txns: vec![Txn::minimal(0, 1), Txn::minimal(0, 1)],
        fifo: true,
        batch_size: 1,
        esm_retries: 0,
        crashes: 1,
        ..one(Txn::minimal(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoOrderFence), FIFO_ORDER);
}

/// The same with the library's producer: indexing at commit, its aggregate is read
/// from the index; by default (nothing in the index at commit) the fence reads the
/// aggregate's partition, as a minimal producer's.
#[test]
fn a_discard_of_a_library_message_lets_no_later_one_overtake_on_fifo() {
    for txn in [Txn::library_indexed(0, 1), Txn::library(0, 1)] {
        let p = Params {
            txns: vec![txn.clone(), txn],
            fifo: true,
            batch_size: 1,
            esm_retries: 0,
            crashes: 1,
            faults: 0,
            ..Params::default()
        };
        holds(p.clone());
        caught(p.mutated(Mutation::NoOrderFence), FIFO_ORDER);
    }
}

/// Issue 22, defect 2, fixed by the status read: the publisher crashes after a
/// message went out and was marked `SENT`, so Lambda delivers the batch again (whole,
/// then bisected); a publisher that classifies from the stream image alone sends it
/// again. The status read finds it `SENT` and skips it.
#[test]
fn a_batch_delivered_again_after_a_crash_sends_no_sent_message_again() {
    let p = Params {
        crashes: 1,
        ..one(Txn::library(0, 2))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoStatusRead), SENT_ONCE);
}

/// The same after a partial batch response: a poison message's dead-letter copy
/// (or its `FAILED` mark) fails, so it is reported and Lambda delivers the batch
/// again from it — with the later message, already sent and marked `SENT`.
#[test]
fn a_batch_delivered_again_from_its_lowest_reported_record_sends_no_sent_message_again() {
    let p = Params {
        faults: 1,
        ..one(Txn::library(0, 2).kinds(&[Kind::Refused, Kind::Good]))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoStatusRead), SENT_ONCE);
}

/// Why `SENT_ONCE` excepts a race, and only a race: a delivery that read its message
/// `PENDING` before a sweep sent and marked it still sends it (the code's documented
/// limit: consumers deduplicate on the `MessageId`). Without the exception the
/// property would fail on the code; with it, the monitor stays clear.
#[test]
fn known_limit_a_delivery_that_read_before_a_sweep_marked_sends_again() {
    use outbox_model::Action::{Commit, Deliver, Step, Sweep, Tick};
    use outbox_model::Fault::None as Ok;
    use stateright::Model;
    let model = OutboxModel::new(one(Txn::library_indexed(0, 1)));
    let mut s = model.init_states().remove(0);
    let steps = [
        Commit(0),
        Tick,        // m0 is due in the sweeper index
        Deliver(0),  // invocation #0: the stream publisher
        Step(0, Ok), // its status read: m0 PENDING
        Sweep,       // invocation #1
        Step(1, Ok), // query
        Step(1, Ok), // claim m0
        Step(1, Ok), // send m0
        Step(1, Ok), // mark m0 SENT
        Step(0, Ok), // the stream publisher sends m0, as it read it
    ];
    for action in steps {
        let mut enabled = Vec::new();
        model.actions(&s, &mut enabled);
        assert!(enabled.contains(&action), "{action:?} is not enabled");
        s = model.next_state(&s, action).expect("a next state");
    }
    let copies = s.queue.iter().filter(|c| c.msg == 0).count();
    assert_eq!(copies, 2, "the race sends m0 twice");
    assert!(
        !s.sent_after_sent,
        "a send after a read that came first is the race"
    );
}

/// Issue 36, finding 1, fixed in `publish::plan`: one transaction's stream records
/// reach the publisher in any order (AWS: they "might appear at different times and
/// could be interleaved"); a batch of [A2, A1] was sent A2, A1 — `plan` kept stream
/// order, the fence ignores siblings in the same batch — at factor 1 with no fault.
/// `plan` now orders each aggregate's messages by `(CreatedAt, MessageId)`, as the
/// sweeper does; `PlanKeepsStreamOrder` restores the code before.
#[test]
fn one_transactions_records_out_of_order_are_sent_in_write_order() {
    let p = Params {
        fifo: true,
        stream_any_order: true,
        ..one(Txn::library(0, 2))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::PlanKeepsStreamOrder), FIFO_ORDER);
}

/// Issue 36, finding 1 across batches, fixed by `Follows`: with the records in any
/// order and a batch of one, A2's batch runs first and its fence's index read does not
/// list A1's write yet; A2 went first. The library now names A1 on A2 (`Follows`) and
/// the fence asks it in its consistent status read; `NoFollows` restores the code
/// before.
#[test]
fn a_transactions_later_message_alone_in_a_batch_waits_for_the_one_it_follows() {
    let p = Params {
        fifo: true,
        stream_any_order: true,
        batch_size: 1,
        index_lag: true,
        index_lags_writes: true,
        ..one(Txn::library_indexed(0, 2))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::NoFollows), FIFO_ORDER);
}

/// Issue 36, finding 5, fixed in the claim: `HomeRegion` written as `""` or padded
/// (`" us-east-1 "`) in a single-region deployment. The publisher's `FilterCriteria`
/// drop the record (`HomeRegion.S` is neither the region nor absent); the sweeper's
/// `HomeRegions::owns` trims and calls the item its own, but the claim's condition
/// `(#home = :home OR attribute_not_exists(#home))` refused it at every sweep: never
/// `SENT`, never `FAILED` (`ENDS` fails at the horizon). A refused claim is now made
/// again on the exact value it returned (`HomeRegions::exact_ownership`);
/// `ClaimRefusesOddHome` restores the code before.
#[test]
fn an_empty_or_padded_home_region_no_longer_parks_a_message() {
    for home in [Home::Empty, Home::Padded] {
        let p = one(Txn::library_indexed(0, 1).home(home));
        holds(p.clone());
        caught(p.mutated(Mutation::ClaimRefusesOddHome), ENDS);
    }
}

/// The same with `NULL` (boto3's `None`): the filter passes it (`HomeRegion.S` does
/// not exist), so it parked only once the stream path could not finish it — a
/// crashed invocation whose record is then discarded.
#[test]
fn a_null_home_region_no_longer_parks_a_message_the_stream_path_could_not_finish() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..one(Txn::library(0, 1).home(Home::Null))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::ClaimRefusesOddHome), ENDS);
}

/// Issue 38, item 1: on the happy path a message is written once by its producer and
/// marked once by the publisher; it enters the sweeper index only when something went
/// wrong for it. The producer as it was (the index keys at commit) writes the index
/// for every message; the producer set to do so (`Txn::library_indexed`) does it by
/// design, and the property excuses it.
#[test]
fn a_producer_that_indexes_at_commit_writes_the_index_on_the_happy_path() {
    let p = one(Txn::library(0, 1));
    holds(p.clone());
    holds(one(Txn::library_indexed(0, 1)));
    caught(
        p.mutated(Mutation::ProducerIndexesAtCommit),
        NO_INDEX_ON_HAPPY_PATH,
    );
}

/// Issue 38: the recovery function adopts every pending item of a discarded range
/// that is outside the index, the library's too. One that skips the library's items
/// (its comment assumed the library indexed them at commit) leaves a discarded
/// library message `PENDING`.
#[test]
fn a_recovery_that_skips_library_items_leaves_a_discarded_message_behind() {
    let p = Params {
        crashes: 1,
        esm_retries: 0,
        ..one(Txn::library(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::RecoverySkipsLibraryItems), ENDS);
}

/// Issue 38: the publisher adopts the library's messages it could not finish (a
/// `SENT` mark that did not land, a hold-back), as a minimal producer's. One that
/// adopts only a minimal producer's leaves a library message `PENDING`.
#[test]
fn a_publisher_that_adopts_no_library_message_leaves_one_behind() {
    let p = Params {
        faults: 1,
        ..one(Txn::library(0, 1))
    };
    holds(p.clone());
    caught(p.mutated(Mutation::PublisherSkipsLibraryItems), ENDS);
}
