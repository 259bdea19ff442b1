//! The two-region properties. The liveness ones are checked where runs end, as in the
//! single-region model: every run of this model ends (each action commits, applies or
//! drops a record or an in-flight write, or moves an invocation, a failover or a
//! failback on, and an item is re-homed at most once each way), so "eventually" is
//! "in every state where nothing can happen any more".

use super::{A, B, GState, GlobalModel};
use crate::props::{EFFECT_ONCE, ENDS, NOTHING_PHANTOM, SETTLES, SOME_END};
use crate::state::Status;
use stateright::Property;

/// No region publishes a message that its own copy does not show as its own at that
/// moment (`HomeRegion`, else the default home).
pub const OWNER_PUBLISHES: &str = "no region publishes a message it does not own";
/// No message is published by both regions, except the duplicate a failover allows:
/// `A` published it, and `B`'s copy still showed it `PENDING` when the failover
/// re-homed it (`A`'s `SENT` mark had not replicated); then `B` publishes it once more.
pub const ONE_REGION: &str = "no message published by two regions outside a failover";
/// When nothing can happen any more, both regions' copies of every item are the same
/// write (last writer wins converges).
pub const CONVERGES: &str = "the replicas converge";
/// Some run has the duplicate a failover allows (so the exception is not vacuous on
/// an instance with a crash).
pub const FAILOVER_DUPLICATES: &str = "a failover publishes again what the failed region published";

fn msgs(m: &GlobalModel) -> impl Iterator<Item = u8> {
    0..u8::try_from(m.params.msgs.len()).unwrap_or(0)
}

fn nothing_phantom(m: &GlobalModel, s: &GState) -> bool {
    msgs(m).all(|i| {
        let touched = s.sends[usize::from(i)] > 0 || s.effects[usize::from(i)] > 0;
        !touched || GlobalModel::committed(s, i)
    })
}

fn effect_once(_: &GlobalModel, s: &GState) -> bool {
    s.effects.iter().all(|e| *e <= 1)
}

fn owner_publishes(_: &GlobalModel, s: &GState) -> bool {
    !s.foreign
}

fn one_region(_: &GlobalModel, s: &GState) -> bool {
    !s.twice
}

/// Whether `m` is `SENT` in some region's copy.
fn sent_somewhere(s: &GState, m: u8) -> bool {
    s.copies
        .iter()
        .any(|c| matches!(c[usize::from(m)].status, Status::Sent | Status::Failed))
}

fn ends(m: &GlobalModel, s: &GState) -> bool {
    let ended = |i: u8| !GlobalModel::committed(s, i) || sent_somewhere(s, i);
    msgs(m).all(ended) || !m.quiescent(s)
}

fn settled(s: &GState, i: u8) -> bool {
    let effects = s.effects[usize::from(i)];
    if GlobalModel::committed(s, i) {
        sent_somewhere(s, i) && effects == 1
    } else {
        effects == 0
            && s.copies
                .iter()
                .all(|c| c[usize::from(i)].status == Status::Absent)
    }
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

/// Every property.
pub fn all() -> Vec<Property<GlobalModel>> {
    vec![
        Property::always(NOTHING_PHANTOM, nothing_phantom),
        Property::always(EFFECT_ONCE, effect_once),
        Property::always(OWNER_PUBLISHES, owner_publishes),
        Property::always(ONE_REGION, one_region),
        Property::always(ENDS, ends),
        Property::always(SETTLES, settles),
        Property::always(CONVERGES, converges),
        Property::sometimes(SOME_END, some_end),
        Property::sometimes(FAILOVER_DUPLICATES, failover_duplicates),
    ]
}
