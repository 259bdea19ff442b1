//! Not vacuous, on two regions: each property of the two-region model (a global
//! table, the outbox in both regions, a crash, the failover) catches a deliberately
//! broken protocol, with a counterexample; and what it found in the real code, pinned.

use outbox_model::global::props::{
    DEAD_LETTER_IFF_FAILED, FAILED_STAYS_UNSENT, ONE_DEAD_LETTER, ONE_REGION, OWNER_PUBLISHES,
    OWNER_STREAMED,
};
use outbox_model::global::{A, B, Crash, GMsg, GlobalModel, GlobalParams};
use outbox_model::props::{ENDS, FIFO_ORDER};
use outbox_model::{Home, Mutation};

/// The two-region model: `params` mutated is caught by `property`; returns the length
/// of the counterexample (breadth first: near the shortest).
fn caught_globally(params: GlobalParams, property: &'static str) -> usize {
    let report = outbox_model::global::find(GlobalModel::new(params.clone()), 1, property);
    let Some((len, trace)) = report.discovery(property) else {
        panic!(
            "{:?} was not caught by `{property}` ({} states)",
            params.mutations, report.unique
        );
    };
    println!(
        "{:?} caught by `{property}` in {len} steps ({} states):\n{trace}",
        params.mutations, report.unique
    );
    len
}

/// Every two-region property holds on `params`, exhaustively.
fn holds_globally(params: GlobalParams) {
    let report = outbox_model::global::check(GlobalModel::new(params.clone()), 2);
    println!(
        "{:?}: {} unique states, max depth {}, {:.1?}",
        params.msgs, report.unique, report.max_depth, report.elapsed
    );
    assert!(report.failures().is_empty(), "{:#?}", report.failures());
}

/// Issue 25: without the ownership filter every replica's stream publishes every
/// message (a replicated `INSERT` too) and every sweeper sweeps every item. No crash
/// needed: B publishes A's message.
#[test]
fn global_publishing_on_every_replica_publishes_a_message_in_both_regions() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Never,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    let p = p.mutated(Mutation::PublishOnEveryReplica);
    caught_globally(p.clone(), OWNER_PUBLISHES);
    caught_globally(p, ONE_REGION);
}

/// The same for a minimal producer's message committed in B: it is A's (the default
/// home), and only A publishes it.
#[test]
fn global_a_message_without_home_region_is_published_by_the_default_home_only() {
    let p = GlobalParams {
        msgs: vec![GMsg::minimal(B)],
        crash: Crash::Never,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::PublishOnEveryReplica), ONE_REGION);
}

/// Issue 25: a failover that re-homes A's items whatever their status in B's copy
/// re-homes one A sent and whose `SENT` mark had replicated: B publishes it again, a
/// duplicate no failover allows. The conditional re-home (`Status = PENDING`) leaves
/// it `SENT`; what it re-homes is only what B's copy shows `PENDING` — the duplicate a
/// failover allows when A's mark had not replicated.
#[test]
fn global_a_failover_without_the_conditional_re_home_publishes_a_sent_message_again() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::UnconditionalFailover), ONE_REGION);
}

/// Found by the model: a failback conditional on `Status = PENDING` and the failover
/// alone (the spec's first draft) races B's sweep, which claimed the message before
/// and sends it after A took it back: both regions publish it, no failover between.
/// Conditional also on no claim (`SweepDueAt <= now`), it waits for the sweep.
#[test]
fn global_a_failback_waits_for_the_surviving_regions_claim() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        failback: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::FailbackIgnoresClaim), ONE_REGION);
}

/// Found by the model: after a failover, the recovered region's stream mapping resumes
/// at its checkpoint, with `INSERT`s whose image says the message is A's. Deciding
/// ownership from the image alone, A publishes what B now owns; the status read's
/// `HomeRegion` skips it.
#[test]
fn global_a_recovered_region_does_not_publish_its_stream_backlog_that_failed_over() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::OwnershipFromImage), OWNER_PUBLISHES);
}

/// The runbook's step, checked: A's functions start again only once the failover's
/// re-homes have replicated to A. Before that, A's copy still shows its own what B
/// owns, and both publish it.
#[test]
fn global_a_region_that_comes_back_before_replication_caught_up_publishes_what_b_owns() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        ..GlobalParams::default()
    };
    caught_globally(p.mutated(Mutation::RecoverBeforeCatchUp), ONE_REGION);
}

/// The runbook as first written (docs/global-tables.md, step 5): fail back against
/// the recovered region, before its functions start, with the stream publisher
/// deciding ownership from the record's image. The order of the steps keeps A's
/// backlog from publishing what B owns, but not the race with B's sweep: B claims and
/// sends a failed-over message, the failback in A's copy (which does not see B's claim
/// yet, or at all) returns it to A, and A publishes it too — two regions, no failover
/// between. Failing back in B's copy, conditional on no claim there, serialises the
/// failback with B's claims (`global_a_failback_waits_for_the_surviving_regions_claim`).
#[test]
fn global_known_limit_a_failback_in_the_recovered_region_races_the_surviving_sweep() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        failback: true,
        ..GlobalParams::default()
    }
    .mutated(Mutation::OwnershipFromImage)
    .mutated(Mutation::FailbackFromRecoveredRegion);
    caught_globally(p, ONE_REGION);
}

/// A region that crashes, and a message of its own committed there.
fn outage_of(failed: u8) -> GlobalParams {
    GlobalParams {
        msgs: vec![GMsg::library(failed)],
        crash: Crash::Of(failed),
        ..GlobalParams::default()
    }
}

/// The crash mutants, mirrored: whichever region crashes (`A`, the default home, or
/// `B`), the same bug is caught by the same property.
#[test]
fn global_the_crash_mutants_are_caught_whichever_region_crashes() {
    for failed in [A, B] {
        let p = outage_of(failed);
        holds_globally(p.clone());
        caught_globally(
            p.clone().mutated(Mutation::UnconditionalFailover),
            ONE_REGION,
        );
        let back = GlobalParams {
            recover: true,
            ..p.clone()
        };
        holds_globally(back.clone());
        caught_globally(
            back.clone().mutated(Mutation::OwnershipFromImage),
            OWNER_PUBLISHES,
        );
        caught_globally(
            back.clone().mutated(Mutation::RecoverBeforeCatchUp),
            ONE_REGION,
        );
        let failback = GlobalParams {
            failback: true,
            ..back
        };
        holds_globally(failback.clone());
        caught_globally(
            failback.clone().mutated(Mutation::FailbackIgnoresClaim),
            ONE_REGION,
        );
        caught_globally(
            failback
                .mutated(Mutation::OwnershipFromImage)
                .mutated(Mutation::FailbackFromRecoveredRegion),
            ONE_REGION,
        );
    }
}

/// Poison in two regions: a sweep that gives up on poison (copy, `FAILED` mark)
/// before it checks whose the item is dead-letters `A`'s message in `B` while `A`
/// dead-letters it too. No crash needed.
#[test]
fn global_a_sweep_that_gives_up_before_checking_ownership_dead_letters_in_both_regions() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A).poison()],
        crash: Crash::Never,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::PoisonBeforeOwnership), ONE_DEAD_LETTER);
}

/// A failover that re-homes whatever status the survivor's copy shows re-homes a
/// message the failed region marked `FAILED` (the mark had replicated): the survivor,
/// whose destination takes it, publishes it after all.
#[test]
fn global_a_failover_without_the_conditional_re_home_publishes_a_failed_message() {
    for failed in [A, B] {
        let p = GlobalParams {
            msgs: vec![GMsg::library(failed).refused_in(failed)],
            crash: Crash::Of(failed),
            ..GlobalParams::default()
        };
        holds_globally(p.clone());
        caught_globally(
            p.mutated(Mutation::UnconditionalFailover),
            FAILED_STAYS_UNSENT,
        );
    }
}

/// The same with poison both destinations refuse: the survivor copies it to its
/// dead-letter queue again, though the failed region's `FAILED` mark had replicated.
#[test]
fn global_a_failover_without_the_conditional_re_home_dead_letters_a_failed_message_again() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A).poison()],
        crash: Crash::Of(A),
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::UnconditionalFailover), ONE_DEAD_LETTER);
}

/// The single-region model's `FailBeforeDeadLetter`, across regions: the region marks
/// its poison `FAILED` before the copy and crashes between them; the mark replicates,
/// so the failover leaves the message: `FAILED`, with no copy anywhere.
#[test]
fn global_failing_poison_before_its_copy_loses_the_copy_when_the_region_crashes() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A).poison()],
        crash: Crash::Of(A),
        ..GlobalParams::default()
    };
    caught_globally(
        p.mutated(Mutation::FailBeforeDeadLetter),
        DEAD_LETTER_IFF_FAILED,
    );
}

/// The failover out of `B` (not the default home) takes the items without
/// `HomeRegion` too, which are `A`'s: `A` re-homes into itself, marked failed over
/// from `B`, a minimal producer's message it is publishing; after `B` came back, the
/// failback returns it to `B`, which publishes it again — no failover allows that.
#[test]
fn global_a_failover_that_takes_the_default_homes_items_lets_the_failback_publish_them_again() {
    let p = GlobalParams {
        msgs: vec![GMsg::minimal(B)],
        crash: Crash::Of(B),
        recover: true,
        failback: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(p.mutated(Mutation::FailoverTakesDefaultHomes), ONE_REGION);
}

/// The failover out of `A` (the default home) without `--default-home` misses a
/// minimal producer's message, which is `A`'s: nobody publishes it while `A` is down.
#[test]
fn global_a_failover_that_ignores_the_default_home_strands_a_minimal_producers_message() {
    for region in [A, B] {
        let p = GlobalParams {
            msgs: vec![GMsg::minimal(region)],
            crash: Crash::Of(A),
            ..GlobalParams::default()
        };
        holds_globally(p.clone());
        caught_globally(p.mutated(Mutation::FailoverIgnoresDefaultHome), ENDS);
    }
}

/// Issue 36, finding 3, fixed in `Pending::confirm`: A1 is committed in `A`, `A` fails
/// before publishing it, the failover re-homes it into `B`; `A` comes back and A2 is
/// committed there. `A`'s fence lists A1 and confirms it by a consistent read, which
/// answers `PENDING_ELSEWHERE` (pending, homed in `B`): taken as finished, A2 was sent
/// before `B` sent A1. Any status but `SENT`, `FAILED` or gone fences now;
/// `FenceTrustsPendingElsewhereAsDone` restores the code before.
#[test]
fn global_a_message_pending_in_the_other_region_still_fences_its_aggregate() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A), GMsg::library(A).after_outage()],
        crash: Crash::Of(A),
        recover: true,
        fifo: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(
        p.mutated(Mutation::FenceTrustsPendingElsewhereAsDone),
        FIFO_ORDER,
    );
}

/// Issue 36, finding 7, fixed in `outbox-ops failback`: the failback's condition
/// compared `SweepDueAt` with the operator's clock; a machine ahead by more than a
/// lease took back a message the survivor's sweep had claimed and was sending, and
/// both regions published it. It now holds each entry to the due time it read, a
/// settle later; `FailbackComparesOperatorClock` restores the code before.
#[test]
fn global_an_operator_clock_ahead_no_longer_lets_the_failback_race_the_surviving_sweep() {
    let p = GlobalParams {
        msgs: vec![GMsg::library(A)],
        crash: Crash::Of(A),
        recover: true,
        failback: true,
        operator_clock_ahead: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(
        p.mutated(Mutation::FailbackComparesOperatorClock),
        ONE_REGION,
    );
}

/// Issue 36, finding 5 on two regions: `HomeRegion` written `NULL`, `""` or padded by
/// a producer in `A`. Exactly one region owns it (`HomeRegions::owns` trims, and
/// takes a `NULL` or `""` as no home: the default home's); its filter drops `""` and
/// padded, and its sweep claims it on the exact value the general condition refused.
/// `ClaimRefusesOddHome` (the claim before the fix) parks `""` and padded ones (a
/// `NULL` passes the default home's filter, and this model's stream path does not
/// fail).
#[test]
fn global_an_odd_home_region_is_published_once_by_the_region_that_owns_it() {
    for shape in [Home::Null, Home::Empty, Home::Padded] {
        let p = GlobalParams {
            msgs: vec![GMsg::minimal(A).home_shape(shape), GMsg::library(B)],
            crash: Crash::Never,
            ..GlobalParams::default()
        };
        holds_globally(p.clone());
        if shape != Home::Null {
            caught_globally(p.mutated(Mutation::ClaimRefusesOddHome), ENDS);
        }
    }
}

/// Found by the model, fixed in `outbox-ops failover`: its condition (`#home = :from`,
/// or also `attribute_not_exists(#home)` out of the default home) refused a
/// `HomeRegion` the failed region owns as `NULL`, `""` or padded, so the failover
/// left the message behind, waiting for the failed region. A refused failover is now
/// made again on the exact value; `FailoverRefusesOddHome` restores the code before.
#[test]
fn global_a_failover_takes_a_message_with_an_odd_home_region() {
    for shape in [Home::Null, Home::Empty, Home::Padded] {
        let p = GlobalParams {
            msgs: vec![GMsg::minimal(A).home_shape(shape)],
            crash: Crash::Of(A),
            ..GlobalParams::default()
        };
        holds_globally(p.clone());
        caught_globally(p.mutated(Mutation::FailoverRefusesOddHome), ENDS);
    }
}

/// Issue 36, finding 9, fixed in the stacks: the runbook moves the default home at run
/// time (`OUTBOX_DEFAULT_HOME_REGION`), and the publishers' stream filters no longer
/// name it — every region's passes the inserts without `HomeRegion` and its publisher
/// decides whose they are from its setting of the moment. `A`, the default home,
/// crashes; the operator makes `B` the default home, and restores it before `A` starts
/// again (or, once both run, moves it in the runbook's order); a minimal producer
/// commits in `B` during the outage and after it. `FilterNamesDefaultHome` restores the
/// filter rendered at deploy time: `B`'s publisher never receives the insert it owns
/// (only the sweep finds it). `DefaultHomeMovedInAnyOrder` lets the operator start `A`
/// again while `B` still owns them, or make `B` their owner while `A` does: both
/// publish one (before the fix the model found this, the finding's "both regions").
#[test]
fn global_a_default_home_moved_at_run_time_is_streamed_to_its_one_owner() {
    let p = GlobalParams {
        msgs: vec![GMsg::minimal(B), GMsg::minimal(B).after_outage()],
        crash: Crash::Of(A),
        recover: true,
        move_default_home: true,
        ..GlobalParams::default()
    };
    holds_globally(p.clone());
    caught_globally(
        p.clone().mutated(Mutation::FilterNamesDefaultHome),
        OWNER_STREAMED,
    );
    caught_globally(p.mutated(Mutation::DefaultHomeMovedInAnyOrder), ONE_REGION);
}
