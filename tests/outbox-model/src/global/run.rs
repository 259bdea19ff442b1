//! Running a two-region check, and printing a counterexample one line per action.

use super::{Call, GAction, GState, GlobalModel, region_name};
use crate::params::Mutation;
use crate::trace::Explained;
use std::fmt::Write;

/// A `HomeRegion` in traces.
fn home_name(home: Option<u8>) -> &'static str {
    match home {
        None => "-",
        Some(h) if h == super::A || h == super::B => region_name(h),
        Some(super::HOME_NULL) => "NULL",
        Some(super::HOME_EMPTY) => "\"\"",
        Some(h) if h == super::HOME_PADDED => "\" A \"",
        Some(_) => "\" B \"",
    }
}

/// An action in words.
pub fn describe(action: &GAction) -> String {
    let r = |r: &u8| region_name(*r);
    match action {
        GAction::Commit(m) => format!("producer commits m{m}"),
        GAction::RollBack(m) => format!("m{m}'s transaction rolls back"),
        GAction::Replicate(i) => format!("in-flight write {i} replicates"),
        GAction::Deliver(g) => format!("{}'s stream mapping takes its next record", r(g)),
        GAction::Publish(g) => format!("{}'s stream publisher steps", r(g)),
        GAction::Claim(g, m) => format!("{}'s sweeper claims and sends m{m}", r(g)),
        GAction::Sweep(g) => format!("{}'s sweeper steps", r(g)),
        GAction::Crash(g) => format!("region {} CRASHES", r(g)),
        GAction::Failover(m) => format!("operator fails m{m} over into the surviving region"),
        GAction::Recover => "the failed region's functions start again".into(),
        GAction::MoveDefaultHome(g, to) => format!(
            "operator sets {}'s OUTBOX_DEFAULT_HOME_REGION to {}",
            r(g),
            r(to)
        ),
        GAction::Failback(m) => format!("operator fails m{m} back to the recovered region"),
    }
}

fn item(s: &GState, r: u8, m: u8) -> String {
    let i = s.copies[usize::from(r)][usize::from(m)];
    let home = home_name(i.home);
    let over = if i.failed_over { ", failed over" } else { "" };
    format!("{:?} home {home}{over}", i.status)
}

/// Region `r`'s send of `m`, in words.
fn sends(model: &GlobalModel, r: u8, m: u8) -> &'static str {
    if model.params.msgs[usize::from(m)].refused_by(r) {
        "sends it: REFUSED, poison"
    } else {
        "SENDS it"
    }
}

/// The regions of a bit set, in words.
fn regions(bits: u8) -> &'static str {
    match bits {
        0 => "none",
        1 => "A",
        2 => "B",
        _ => "both",
    }
}

/// What `action` does in `s`, in words.
fn what(model: &GlobalModel, s: &GState, action: GAction) -> String {
    match action {
        GAction::Commit(m) => {
            let msg = model.params.msgs[usize::from(m)];
            let how = match (msg.odd_home, msg.homed) {
                (Some(h), _) => format!("with HomeRegion {}", home_name(Some(h))),
                (None, true) => "with HomeRegion".to_owned(),
                (None, false) => "without HomeRegion (minimal producer)".to_owned(),
            };
            format!("producer in {} commits m{m} {how}", region_name(msg.region))
        }
        GAction::Replicate(i) => s.in_flight.get(usize::from(i)).map_or("?".into(), |w| {
            let incoming = super::replica::unpack(w.item);
            let here = s.copies[usize::from(w.to)][usize::from(w.msg)];
            let verdict = if incoming.stamp > here.stamp {
                "applied"
            } else {
                "older: dropped (last writer wins)"
            };
            format!(
                "{}'s write of m{} ({:?} home {}{}) reaches {}: {verdict}",
                region_name(1 - w.to),
                w.msg,
                incoming.status,
                home_name(incoming.home),
                if incoming.failed_over {
                    ", failed over"
                } else {
                    ""
                },
                region_name(w.to)
            )
        }),
        GAction::Deliver(r) => {
            let ri = usize::from(r);
            let (m, home) = s.streams[ri][usize::from(s.next[ri])];
            format!(
                "{}'s stream mapping takes the INSERT of m{m} (image home {})",
                region_name(r),
                home_name(home)
            )
        }
        GAction::Publish(r) | GAction::Sweep(r) => {
            let run = if matches!(action, GAction::Publish(_)) {
                (s.publisher[usize::from(r)], "stream publisher")
            } else {
                (s.sweeper[usize::from(r)], "sweeper")
            };
            let (Some(inv), who) = run else {
                return "?".into();
            };
            let m = inv.msg;
            let call = match inv.call {
                Call::Send => format!(
                    "reads m{m} ({}) and, if PENDING and its own, {}",
                    item(s, r, m),
                    sends(model, r, m)
                ),
                Call::Mark => format!("marks m{m} SENT (its copy: {})", item(s, r, m)),
                Call::DeadLetter => format!("copies m{m} to its DEAD-LETTER queue"),
                Call::MarkFailed => format!("marks m{m} FAILED (its copy: {})", item(s, r, m)),
            };
            format!("{}'s {who} {call}", region_name(r))
        }
        GAction::Claim(r, m) => format!(
            "{}'s sweeper claims m{m} ({}) and {}",
            region_name(r),
            item(s, r, m),
            sends(model, r, m)
        ),
        GAction::Failover(m) | GAction::Failback(m) => {
            let failed = GlobalModel::failed_region(s).unwrap_or(super::A);
            let at = if matches!(action, GAction::Failback(_))
                && model.params.has(Mutation::FailbackFromRecoveredRegion)
            {
                failed
            } else {
                super::other(failed)
            };
            format!(
                "{} ({}'s copy: {})",
                describe(&action),
                region_name(at),
                item(s, at, m)
            )
        }
        other => describe(&other),
    }
}

impl Explained for GlobalModel {
    fn render(&self, steps: &[(GState, Option<GAction>)]) -> String {
        let model = self;
        let mut out = String::new();
        let mut line = 0;
        for (state, action) in steps {
            let Some(action) = action else { continue };
            line += 1;
            let _ = writeln!(out, "{line:>3}. {}", what(model, state, *action));
        }
        if let Some((last, _)) = steps.last() {
            let n = u8::try_from(model.params.msgs.len()).unwrap_or(0);
            let items: Vec<String> = (0..n)
                .map(|m| {
                    format!(
                        "m{m}: A {{{}}} B {{{}}} sent {}x, dead-lettered by {}",
                        item(last, super::A, m),
                        item(last, super::B, m),
                        last.sends[usize::from(m)],
                        regions(last.dead_lettered[usize::from(m)])
                    )
                })
                .collect();
            let _ = writeln!(out, "     end: {}", items.join("; "));
        }
        out
    }
}
