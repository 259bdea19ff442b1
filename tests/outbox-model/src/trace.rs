//! Running a check, and printing a counterexample one line per action.

use crate::fixture::Msg;
use crate::model::{Action, Fault, OutboxModel};
use crate::params::Consumer;
use crate::state::{Inv, Out, Phase, State, SweepPhase};
use stateright::{Checker, Expectation, HasDiscoveries, Model, Path};
use std::fmt::Write;
use std::time::{Duration, Instant};

fn name(m: &Msg, n: u8) -> String {
    format!("m{n}(agg {}, txn {})", m.aggregate, m.txn)
}

/// An action in words, without its state.
pub fn describe(model: &OutboxModel, action: &Action) -> String {
    let msg = |n: u8| {
        model
            .fixture
            .msgs
            .get(usize::from(n))
            .map_or(format!("m{n}"), |m| name(m, n))
    };
    match action {
        Action::Commit(t) => format!("producer commits txn {t}"),
        Action::RollBack(t) => format!("producer's txn {t} rolls back"),
        Action::Append(m) => format!("the INSERT record of {} reaches its shard", msg(*m)),
        Action::Deliver(s) => format!("stream mapping invokes the publisher on shard lane {s}"),
        Action::Step(i, f) => format!("invocation #{i} steps{}", fault(*f)),
        Action::Crash(i) => format!("invocation #{i} crashes"),
        Action::Sweep => "schedule starts a sweep".into(),
        Action::Recover(n, f) => format!("recovery reads on-failure record {n}{}", fault(*f)),
        Action::LoseOnFailure(n) => {
            format!("on-failure record {n} is LOST: it never reaches the recovery function")
        }
        Action::RecoveryGivesUp(n) => format!(
            "the recovery function FAILS on on-failure record {n} past its retries: the record goes to its dead-letter queue"
        ),
        Action::Trim(n) => format!(
            "the stream's RETENTION runs out before recovery reads on-failure record {n}: it finds nothing"
        ),
        Action::TrimShard(s) => format!(
            "the mapping of shard lane {s} stalls past the stream's RETENTION: its undelivered records are trimmed"
        ),
        Action::Backstop => {
            "the sweeper's backstop scan adopts the pending items outside the index".into()
        }
        Action::Receive(q) => format!("consumer receives sqs-{q}"),
        Action::Consume(c) => format!("consumer #{c} steps"),
        Action::ConsumerCrash(c) => format!("consumer #{c} crashes"),
        Action::Expire(m) => format!("TTL deletes {}", msg(*m)),
        Action::Redrive(m) => format!("operator redrives {}", msg(*m)),
        Action::Tick => "time passes".into(),
    }
}

fn fault(f: Fault) -> &'static str {
    match f {
        Fault::None => "",
        Fault::Fail => " — the call FAILS",
        Fault::Lost => " — the call takes effect but its answer is LOST",
        Fault::Stale => {
            " — the index LAGS: it still lists what a mark just removed, not yet what was just written"
        }
    }
}

/// What invocation `i` is about to do in `s`.
fn step_of(model: &OutboxModel, s: &State, i: u8) -> String {
    let msg = |n: u8| format!("m{n}");
    let pub_step = |p: &crate::state::Publish| -> String {
        let at = |pos: u8| msg(p.items[usize::from(pos)].msg);
        match p.phase {
            Phase::Status => "reads the current status of its records' items".into(),
            Phase::Fence => {
                "reads the pending messages of its FIFO aggregates (the order fence)".into()
            }
            Phase::Confirm => {
                "reads the current status of the pending siblings the index lists (the fence's confirmation)".into()
            }
            Phase::PreMark(k) => {
                let all: Vec<u8> = p.rounds.iter().flatten().copied().collect();
                format!("marks {} SENT before publishing", at(all[usize::from(k)]))
            }
            Phase::Round(r) => {
                let (held, live): (Vec<u8>, Vec<u8>) =
                    p.rounds[usize::from(r)].iter().partition(|&&q| {
                        matches!(p.outcome[usize::from(q)], Out::Deferred(_) | Out::Unknown)
                    });
                let list = |qs: &[u8]| qs.iter().map(|&q| at(q)).collect::<Vec<_>>().join(", ");
                match (live.is_empty(), held.is_empty()) {
                    (false, true) => format!("sends [{}]", list(&live)),
                    (false, false) => {
                        format!("sends [{}], not [{}] (held by the fence)", list(&live), list(&held))
                    }
                    _ => format!("sends nothing: [{}] held by the fence", list(&held)),
                }
            }
            Phase::PreFail(k) => format!(
                "marks {} FAILED before its copy",
                at(p.poison[usize::from(k)])
            ),
            Phase::DeadLetter => format!(
                "copies [{}] to the dead-letter queue",
                p.poison
                    .iter()
                    .map(|&q| at(q))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Phase::MarkFailed(k) => format!("marks {} FAILED", at(p.to_fail[usize::from(k)])),
            Phase::MarkSent(k) => format!("marks {} SENT", at(p.sent[usize::from(k)])),
            Phase::Adopt(k) => format!("adopts {} into the index", at(p.adopt[usize::from(k)])),
            Phase::Done => "returns".into(),
        }
    };
    match s.invs.get(usize::from(i)) {
        Some(Inv::Stream {
            shard,
            from,
            to,
            publish,
        }) => {
            let what = pub_step(publish);
            let _ = model;
            format!("publisher #{i} (shard {shard}, records {from}..{to}) {what}")
        }
        Some(Inv::Sweep(sw)) => {
            let what = match sw.phase {
                SweepPhase::Query => "queries the index".into(),
                SweepPhase::Claim(k) => {
                    let (m, due) = sw.keys[usize::from(sw.chunk_at) + usize::from(k)];
                    format!(
                        "claims {} (due {due}, lease until {})",
                        msg(m),
                        sw.lease_until
                    )
                }
                SweepPhase::Publish => sw.publish.as_ref().map_or("ends the chunk".into(), |p| {
                    if p.phase == Phase::Done {
                        "judges the attempts".into()
                    } else {
                        pub_step(p)
                    }
                }),
                SweepPhase::Reschedule(k) => {
                    let (m, due, attempted) = sw.resched[usize::from(k)];
                    let back = if attempted {
                        ""
                    } else {
                        " (held back: its claim's count given back)"
                    };
                    format!("reschedules {} to tick {due}{back}", msg(m))
                }
            };
            format!("sweeper #{i} {what}")
        }
        None => "?".into(),
    }
}

/// What consumer `c` is about to do in `s`.
fn consumer_step(model: &OutboxModel, s: &State, c: u8) -> String {
    let Some(con) = s.consumers.get(usize::from(c)) else {
        return "?".into();
    };
    let m = con.msg;
    let what = match (model.params.consumer, con.step) {
        (Consumer::Marker, 0) => format!("commits the effect of m{m} with its marker"),
        (Consumer::BusinessKey, 0) => format!("puts m{m}'s business item (the effect)"),
        (Consumer::SideEffect, 0) => format!("takes the IN_PROGRESS guard of m{m}"),
        (Consumer::SideEffect, 1) => format!("runs m{m}'s side effect"),
        (Consumer::SideEffect, 2) => format!("records m{m} COMPLETED"),
        _ => format!("deletes sqs-{} (m{m}) from the queue", con.sqs),
    };
    format!("consumer #{c} {what}")
}

/// The steps of `path` up to the first state where `property` is decided (violated,
/// for an `always` property; met, for a `sometimes` one). stateright keeps the last
/// discovery it makes, not the first, so its path can run on past the point.
fn cut<M: Explained>(
    model: &M,
    path: &Path<M::State, M::Action>,
    property: &str,
) -> Vec<(M::State, Option<M::Action>)> {
    let mut steps = path.clone().into_vec();
    let Some(p) = model.properties().into_iter().find(|p| p.name == property) else {
        return steps;
    };
    let decided = |s: &M::State| match p.expectation {
        Expectation::Sometimes => (p.condition)(model, s),
        _ => !(p.condition)(model, s),
    };
    if let Some(i) = steps.iter().position(|(s, _)| decided(s)) {
        steps.truncate(i + 1);
        if let Some(last) = steps.last_mut() {
            last.1 = None;
        }
    }
    steps
}

/// A model whose discoveries print as the steps that led to them: the single-region
/// model and the global table's share [`check`] and [`find`].
pub trait Explained:
    Model<
        State: Clone + std::hash::Hash + PartialEq + Send + Sync + 'static,
        Action: Clone + PartialEq,
    > + Send
    + Sync
    + 'static
{
    /// One line per action of `steps`, with what each step did.
    fn render(&self, steps: &[(Self::State, Option<Self::Action>)]) -> String;
}

impl Explained for OutboxModel {
    /// One line per action of `steps`, with the time and what each step did.
    fn render(&self, steps: &[(State, Option<Action>)]) -> String {
        let model = self;
        let mut out = String::new();
        let mut line = 0;
        for (state, action) in steps.iter().cloned() {
            let Some(action) = action else { continue };
            line += 1;
            let what = match action {
                Action::Step(i, f) => format!("{}{}", step_of(model, &state, i), fault(f)),
                Action::Crash(i) => format!("{} — CRASHES instead", step_of(model, &state, i)),
                Action::Consume(c) => consumer_step(model, &state, c),
                Action::ConsumerCrash(c) => {
                    format!("{} — CRASHES instead", consumer_step(model, &state, c))
                }
                Action::Receive(q) => {
                    let m = state
                        .queue
                        .iter()
                        .find(|x| x.sqs == q)
                        .map_or(u8::MAX, |x| x.msg);
                    format!("consumer receives sqs-{q} (m{m})")
                }
                other => describe(model, &other),
            };
            let _ = writeln!(out, "{line:>3}. t={} {what}", state.now);
        }
        let Some((last, _)) = steps.last() else {
            return out;
        };
        let _ = writeln!(
            out,
            "     end: items {:?}, effects {:?}, dlq {:#b}, consumer dlq {:#b}",
            last.items.iter().map(|i| i.status).collect::<Vec<_>>(),
            last.effects,
            last.dlq,
            last.consumer_dlq
        );
        out
    }
}

/// What a check found.
#[derive(Debug)]
pub struct Report {
    /// States generated.
    pub states: usize,
    /// Distinct states.
    pub unique: usize,
    /// Longest path.
    pub max_depth: usize,
    /// How long it took.
    pub elapsed: Duration,
    /// Each property with a discovery, and its path's length and rendering.
    pub discoveries: Vec<(&'static str, usize, String)>,
}

impl Report {
    /// The discovery of `property`, if any: its length and its rendering.
    pub fn discovery(&self, property: &str) -> Option<(usize, &str)> {
        self.discoveries
            .iter()
            .find(|d| d.0 == property)
            .map(|d| (d.1, d.2.as_str()))
    }

    /// Failures (discoveries of properties that must hold), rendered.
    pub fn failures(&self) -> Vec<String> {
        self.discoveries
            .iter()
            .filter(|d| {
                d.0 != crate::props::DUPLICATES_HAPPEN
                    && d.0 != crate::props::SOME_END
                    && d.0 != crate::global::props::FAILOVER_DUPLICATES
                    && d.0 != crate::global::props::SOME_FAILED
            })
            .map(|d| format!("{} ({} steps):\n{}", d.0, d.1, d.2))
            .collect()
    }
}

/// Checks `model` exhaustively (breadth first, so counterexamples are shortest).
pub fn check(model: impl Explained, threads: usize) -> Report {
    run(model, threads, HasDiscoveries::AllFailures)
}

/// Checks `model` until `property` has a discovery (or the space is exhausted).
pub fn find(model: impl Explained, threads: usize, property: &'static str) -> Report {
    run(model, threads, HasDiscoveries::AnyOf([property].into()))
}

fn run<M: Explained>(model: M, threads: usize, until: HasDiscoveries) -> Report {
    let start = Instant::now();
    let checker = model
        .checker()
        .threads(threads)
        .finish_when(until)
        .spawn_bfs()
        .join();
    let model = checker.model();
    let mut discoveries: Vec<(&'static str, usize, String)> = checker
        .discoveries()
        .into_iter()
        .map(|(name, path)| {
            let steps = cut(model, &path, name);
            (name, steps.len().saturating_sub(1), model.render(&steps))
        })
        .collect();
    discoveries.sort_by_key(|d| d.0);
    Report {
        states: checker.state_count(),
        unique: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        elapsed: start.elapsed(),
        discoveries,
    }
}
