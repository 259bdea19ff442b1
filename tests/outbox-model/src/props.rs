//! The properties the protocol must keep, as stateright properties.
//!
//! The liveness property is checked at quiescence: every path of the model ends
//! (each action uses up a bounded resource or moves a bounded counter: transactions
//! decide once, records are consumed, claims count `RetryCount` up to the limit,
//! receives count up to `maxReceiveCount`, faults and crashes come from budgets, time
//! only passes while a timer lies ahead), so "eventually" is "in every state where
//! nothing can happen any more". This is stronger than stateright's `eventually`,
//! which can miss a path that joins one already seen. One counter is not bounded by
//! itself: a message held back behind an earlier one gets its claim's count back,
//! so it could wait forever if what it waits behind never settled. Time stops at a
//! horizon no correct run reaches, and `NO_LIVELOCK` fails at it: every run ends.

use crate::model::OutboxModel;
use crate::state::{Inv, Out, State, Status, SweepPhase, bit};
use stateright::Property;

/// Only committed messages are ever delivered, dead-lettered or applied.
pub const NOTHING_PHANTOM: &str = "nothing phantom";
/// `SENT` and `FAILED` are left only by a redrive (and `SENT` by TTL deletion).
pub const TERMINAL: &str = "terminal states stay terminal";
/// Each message's effect is applied at most once.
pub const EFFECT_ONCE: &str = "effect at most once";
/// On a FIFO destination, no message is first accepted after a later one of its
/// aggregate.
pub const FIFO_ORDER: &str = "per-aggregate order on FIFO";
/// No message is sent again after it was marked `SENT`, except by an invocation that
/// read it `PENDING` itself before the mark landed (two invocations racing: a
/// sweep's claim, or the stream path's status read, came first). A `SENT` mark that
/// landed with its answer lost needs no exception: every later read sees `SENT`.
pub const SENT_ONCE: &str = "no message sent again after SENT";
/// At most one sweep may still write an item under a current claim (the lease's
/// purpose); a claim an operator's redrive superseded is not current (its writes that
/// could end the message are conditional on the claim's lease: `REDRIVE_STANDS`).
pub const EXCLUSIVE_CLAIMS: &str = "claims are exclusive";
/// A redrive is never undone by an attempt claimed before it: no sweep marks `FAILED`
/// (or reschedules) a message redriven since its claim. Its `SENT` mark may land: a
/// message that was sent is sent.
pub const REDRIVE_STANDS: &str = "a redrive is never undone by an earlier claim";
/// No message is held back by the order fence behind earlier siblings none of which
/// is still `PENDING`, when every read the fence made answered: a lagging index's
/// listing is confirmed by a consistent read first.
pub const NO_STALE_FENCE: &str = "no message held back behind a sibling no longer pending";
/// Issue 38: no message enters the sweeper index unless something went wrong for it
/// — a faulty call or a crash of an invocation that held it, an outcome other than
/// sent (a retry, a hold-back, a deferral, a fence that could not tell, a mark that did
/// not land), a discard, a redrive — or the backstop scan found it. On the happy path a
/// message is written once by its producer and marked once by the publisher; only a
/// producer set to index at commit (`Producer::LibraryIndexedAtCommit`) writes the
/// index for every message.
pub const NO_INDEX_ON_HAPPY_PATH: &str = "no message indexed on the happy path";
/// When nothing can happen any more (fairness: every path ends, see the module's
/// doc), every committed message is `SENT` or `FAILED` — also when every read of the
/// order fence fails (`Params::fence_reads_fail`).
pub const ENDS: &str = "every committed message ends SENT or FAILED";
/// When nothing can happen any more, every committed message is `SENT` with its
/// effect applied once, or `FAILED` with a dead-letter copy.
pub const SETTLES: &str = "every committed message settles";
/// No run goes on until the horizon: every run ends (no livelock), which the
/// liveness check at quiescence relies on.
pub const NO_LIVELOCK: &str = "every run ends before the horizon";
/// A copy reaches a consumer twice (the model is not too tame).
pub const DUPLICATES_HAPPEN: &str = "duplicates reach the consumer";
/// Some path ends with every message settled (the liveness check is not vacuous).
pub const SOME_END: &str = "a run ends with every message settled";

fn msgs(m: &OutboxModel) -> impl Iterator<Item = u8> {
    0..u8::try_from(m.fixture.msgs.len()).unwrap_or(0)
}

fn nothing_phantom(m: &OutboxModel, s: &State) -> bool {
    msgs(m).all(|i| {
        let touched = (s.accepted | s.dlq) & bit(i) != 0 || s.effects[usize::from(i)] > 0;
        !touched || m.committed(s, i)
    })
}

fn terminal(_: &OutboxModel, s: &State) -> bool {
    !s.left_terminal
}

fn effect_once(_: &OutboxModel, s: &State) -> bool {
    s.effects.iter().all(|e| *e <= 1)
}

fn fifo_order(_: &OutboxModel, s: &State) -> bool {
    !s.overtaken
}

fn sent_once(_: &OutboxModel, s: &State) -> bool {
    !s.sent_after_sent
}

/// Whether sweep `sw` may still write item `m` under its claim: claimed and not yet
/// finished (sent and marked, or dead-lettered), or waiting for its reschedule.
fn holds(sw: &crate::state::Sweep, m: u8) -> bool {
    if !sw.claimed.iter().any(|c| c.0 == m) {
        return false;
    }
    match sw.phase {
        SweepPhase::Query => false,
        SweepPhase::Claim(_) => true,
        SweepPhase::Publish => sw.publish.as_ref().is_none_or(|p| {
            p.items
                .iter()
                .zip(&p.outcome)
                .any(|(w, o)| w.msg == m && !matches!(o, Out::Sent(_) | Out::Dead))
        }),
        SweepPhase::Reschedule(k) => sw.resched[usize::from(k)..].iter().any(|r| r.0 == m),
    }
}

fn exclusive_claims(m: &OutboxModel, s: &State) -> bool {
    msgs(m).all(|i| {
        let holders = s
            .invs
            .iter()
            .filter(
                |inv| matches!(inv, Inv::Sweep(sw) if sw.superseded & bit(i) == 0 && holds(sw, i)),
            )
            .count();
        holders <= 1
    })
}

fn redrive_stands(_: &OutboxModel, s: &State) -> bool {
    !s.redrive_undone
}

fn no_stale_fence(_: &OutboxModel, s: &State) -> bool {
    !s.stale_fence
}

fn no_index_on_happy_path(_: &OutboxModel, s: &State) -> bool {
    !s.indexed_untroubled
}

fn settles(m: &OutboxModel, s: &State) -> bool {
    msgs(m).all(|i| m.settled(s, i)) || !m.quiescent(s)
}

fn ends(m: &OutboxModel, s: &State) -> bool {
    let ended = |i: u8| {
        !m.committed(s, i)
            || matches!(
                s.items[usize::from(i)].status,
                Status::Sent | Status::Deleted | Status::Failed
            )
    };
    msgs(m).all(ended) || !m.quiescent(s)
}

fn some_end(m: &OutboxModel, s: &State) -> bool {
    msgs(m).all(|i| m.settled(s, i)) && m.quiescent(s)
}

fn no_livelock(_: &OutboxModel, s: &State) -> bool {
    s.now < crate::model::HORIZON
}

fn duplicates_happen(_: &OutboxModel, s: &State) -> bool {
    s.queue.iter().any(|c| c.receives > 1)
}

/// Every property.
pub fn all() -> Vec<Property<OutboxModel>> {
    vec![
        Property::always(NOTHING_PHANTOM, nothing_phantom),
        Property::always(TERMINAL, terminal),
        Property::always(EFFECT_ONCE, effect_once),
        Property::always(FIFO_ORDER, fifo_order),
        Property::always(SENT_ONCE, sent_once),
        Property::always(EXCLUSIVE_CLAIMS, exclusive_claims),
        Property::always(REDRIVE_STANDS, redrive_stands),
        Property::always(NO_STALE_FENCE, no_stale_fence),
        Property::always(NO_INDEX_ON_HAPPY_PATH, no_index_on_happy_path),
        Property::always(SETTLES, settles),
        Property::always(ENDS, ends),
        Property::always(NO_LIVELOCK, no_livelock),
        Property::sometimes(DUPLICATES_HAPPEN, duplicates_happen),
        Property::sometimes(SOME_END, some_end),
    ]
}
