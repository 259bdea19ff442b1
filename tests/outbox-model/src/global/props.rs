//! The two-region properties. The liveness ones are checked where runs end, as in the
//! single-region model: every run of this model ends (each action commits, applies or
//! drops a record or an in-flight write, or moves an invocation, a crash, a failover or
//! a failback on, and an item is re-homed at most once each way), so "eventually" is
//! "in every state where nothing can happen any more".

use super::{A, B, GState, GlobalModel};
use crate::props::{EFFECT_ONCE, ENDS, FIFO_ORDER, NOTHING_PHANTOM, SETTLES, SOME_END};
use crate::state::Status;
use stateright::Property;

/// No region publishes a message that its own copy does not show as its own at that
/// moment (`HomeRegion`, else the default home).
pub const OWNER_PUBLISHES: &str = "no region publishes a message it does not own";
/// A region's stream filter passes every `INSERT` of an item that region owns at
/// that moment (`HomeRegion` absent, `NULL` or exactly its name; `""` and padded names
/// are left to the sweep, finding 5): the stream is the owner's path, the sweep's
/// backstop scan the last resort for a minimal producer's item (issue 36, finding 9).
pub const OWNER_STREAMED: &str = "a region's stream filter passes every INSERT it owns";
/// No message is published by both regions, except the duplicate a failover allows:
/// the failed region published it, and the survivor's copy still showed it `PENDING`
/// when the failover re-homed it (the `SENT` mark had not replicated); then the
/// survivor publishes it once more.
pub const ONE_REGION: &str = "no message published by two regions outside a failover";
/// No message is copied to the dead-letter queue by both regions, except as a failover
/// allows (the failed region's `FAILED` mark had not replicated when the failover
/// re-homed the message, and the survivor's destination refuses it too).
pub const ONE_DEAD_LETTER: &str =
    "no message copied to the dead-letter queue by two regions outside a failover";
/// No destination accepts a message after some region marked it `FAILED`, except as a
/// failover allows (the mark had not replicated to the survivor when the failover
/// re-homed the message).
pub const FAILED_STAYS_UNSENT: &str = "a FAILED message is never published afterwards";
/// When nothing can happen any more, a message has a dead-letter copy if and only if
/// it is `FAILED`, except one the failover re-homed after the failed region's copy
/// (the survivor then publishes it: `SENT`, with the copy).
pub const DEAD_LETTER_IFF_FAILED: &str = "a dead-letter copy exists iff the message is FAILED";
/// When nothing can happen any more, both regions' copies of every item are the same
/// write (last writer wins converges).
pub const CONVERGES: &str = "the replicas converge";
/// Some run has the duplicate a failover allows (so the exception is not vacuous on
/// an instance with a crash).
pub const FAILOVER_DUPLICATES: &str = "a failover publishes again what the failed region published";
/// Some run marks a message `FAILED` (so the properties of poison are not vacuous on
/// an instance with poison).
pub const SOME_FAILED: &str = "some run marks a message FAILED";

fn msgs(m: &GlobalModel) -> impl Iterator<Item = u8> {
    0..u8::try_from(m.params.msgs.len()).unwrap_or(0)
}

fn nothing_phantom(m: &GlobalModel, s: &GState) -> bool {
    msgs(m).all(|i| {
        let i_ = usize::from(i);
        let touched = s.sends[i_] > 0 || s.effects[i_] > 0 || s.dead_lettered[i_] != 0;
        !touched || GlobalModel::committed(s, i)
    })
}

fn effect_once(_: &GlobalModel, s: &GState) -> bool {
    s.effects.iter().all(|e| *e <= 1)
}

fn owner_publishes(_: &GlobalModel, s: &GState) -> bool {
    !s.foreign
}

fn owner_streamed(_: &GlobalModel, s: &GState) -> bool {
    !s.unstreamed
}

fn one_region(_: &GlobalModel, s: &GState) -> bool {
    !s.twice
}

fn one_dead_letter(_: &GlobalModel, s: &GState) -> bool {
    !s.twice_dead
}

fn fifo_order(_: &GlobalModel, s: &GState) -> bool {
    !s.overtaken
}

fn failed_stays_unsent(_: &GlobalModel, s: &GState) -> bool {
    !s.sent_after_failed
}

/// Whether some region's copy of `m` shows it `status`.
fn is_somewhere(s: &GState, m: u8, status: Status) -> bool {
    s.copies.iter().any(|c| c[usize::from(m)].status == status)
}

/// Whether `m` is `SENT` or `FAILED` in some region's copy.
fn finished_somewhere(s: &GState, m: u8) -> bool {
    is_somewhere(s, m, Status::Sent) || is_somewhere(s, m, Status::Failed)
}

fn ends(m: &GlobalModel, s: &GState) -> bool {
    let ended = |i: u8| !GlobalModel::committed(s, i) || finished_somewhere(s, i);
    msgs(m).all(ended) || !m.quiescent(s)
}

fn copied_iff_failed(s: &GState, i: u8) -> bool {
    let copied = s.dead_lettered[usize::from(i)] != 0;
    let failed = is_somewhere(s, i, Status::Failed);
    let republished = s.excused & (1 << i) != 0 && is_somewhere(s, i, Status::Sent);
    copied == failed || (copied && republished)
}

fn dead_letter_iff_failed(m: &GlobalModel, s: &GState) -> bool {
    msgs(m).all(|i| copied_iff_failed(s, i)) || !m.quiescent(s)
}

/// A committed message is `SENT` with its effect applied once, or `FAILED` with a
/// dead-letter copy (its effect applied at most once: the failed region may have
/// published it before the survivor gave up on it); nothing is left of a rolled-back
/// one.
fn settled(s: &GState, i: u8) -> bool {
    let effects = s.effects[usize::from(i)];
    if !GlobalModel::committed(s, i) {
        return effects == 0
            && s.copies
                .iter()
                .all(|c| c[usize::from(i)].status == Status::Absent);
    }
    let sent = is_somewhere(s, i, Status::Sent) && effects == 1;
    let failed = is_somewhere(s, i, Status::Failed) && s.dead_lettered[usize::from(i)] != 0;
    sent || failed
}

fn settles(m: &GlobalModel, s: &GState) -> bool {
    msgs(m).all(|i| settled(s, i)) || !m.quiescent(s)
}

fn converges(m: &GlobalModel, s: &GState) -> bool {
    s.copies[usize::from(A)] == s.copies[usize::from(B)] || !m.quiescent(s)
}

fn some_end(m: &GlobalModel, s: &GState) -> bool {
    msgs(m).all(|i| settled(s, i)) && m.quiescent(s)
}

fn failover_duplicates(_: &GlobalModel, s: &GState) -> bool {
    s.failover_duplicates != 0
}

fn some_failed(_: &GlobalModel, s: &GState) -> bool {
    s.failed_marks != 0
}

/// Every property.
pub fn all() -> Vec<Property<GlobalModel>> {
    vec![
        Property::always(NOTHING_PHANTOM, nothing_phantom),
        Property::always(EFFECT_ONCE, effect_once),
        Property::always(OWNER_PUBLISHES, owner_publishes),
        Property::always(OWNER_STREAMED, owner_streamed),
        Property::always(ONE_REGION, one_region),
        Property::always(ONE_DEAD_LETTER, one_dead_letter),
        Property::always(FAILED_STAYS_UNSENT, failed_stays_unsent),
        Property::always(FIFO_ORDER, fifo_order),
        Property::always(ENDS, ends),
        Property::always(SETTLES, settles),
        Property::always(DEAD_LETTER_IFF_FAILED, dead_letter_iff_failed),
        Property::always(CONVERGES, converges),
        Property::sometimes(SOME_END, some_end),
        Property::sometimes(FAILOVER_DUPLICATES, failover_duplicates),
        Property::sometimes(SOME_FAILED, some_failed),
    ]
}
