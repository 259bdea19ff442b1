//! `Publisher::process` as a step machine: one step per call it makes, so a crash can
//! fall between any two. Every decision between the calls is the real code's: the
//! plan (`dynamodb_outbox_core::publish::plan`), the order fence's reads, confirmation
//! and decision (`policy::fence_reads`, `to_confirm`, `fenced`: `crate::fence`), the verdict on a call and on each entry
//! (`policy::judge_call`, `policy::judge_entry`), on a dead-letter copy
//! (`policy::judge_dead_letter`). What the model writes itself is the order of the
//! calls — the code's `process` runs them in this order: the fence's reads and its
//! confirmation, rounds,
//! dead-letter copies, `FAILED` marks, `SENT` marks, adoptions —, what the reads
//! return (the state's pending items, as the index or the partition shows them), and
//! the hold-back of an aggregate that failed earlier in the batch (a few lines inside
//! the async `dispatch_round`).

use crate::model::{Fault, OutboxModel};
use crate::params::{Kind, Mutation};
use crate::state::{Out, Phase, Publish, State, Status, Work, bit};
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::policy::{
    CallVerdict, DeadLetterVerdict, EntryVerdict, Member, fence_reads, judge_call,
    judge_dead_letter, judge_entry,
};
use dynamodb_outbox_core::ports::EntryResult;
use dynamodb_outbox_core::publish::WorkItem;
use std::collections::BTreeSet;

impl OutboxModel {
    /// A publish of `works`, planned by the real `plan` from `items`; `read`: the
    /// messages the invocation read `PENDING` from the table (a sweep's claims).
    pub fn start_publish(&self, works: Vec<Work>, items: &[WorkItem], read: u32) -> Publish {
        let mut p = Publish {
            outcome: vec![Out::Open; works.len()],
            items: works,
            rounds: Vec::new(),
            phase: Phase::Status,
            poison: Vec::new(),
            to_fail: Vec::new(),
            sent: Vec::new(),
            failed_aggs: 0,
            adopt: Vec::new(),
            read,
            claim: None,
            found: Vec::new(),
            switching: BTreeSet::new(),
        };
        let all: Vec<u8> = (0..p.items.len())
            .filter_map(|i| u8::try_from(i).ok())
            .collect();
        self.plan_positions(&mut p, items, &all);
        p
    }

    /// Plans the items at `positions` (`items[i]` is position `positions[i]`'s work)
    /// with the real `plan`, and moves to the first call.
    pub(crate) fn plan_positions(&self, p: &mut Publish, items: &[WorkItem], positions: &[u8]) {
        let (rounds, poison) = self.fixture.plan(items);
        let at = |i: u8| positions[usize::from(i)];
        p.rounds = rounds
            .into_iter()
            .map(|round| round.into_iter().map(at).collect())
            .collect();
        if self.params.has(Mutation::PlanKeepsStreamOrder) {
            // The same slots, filled in batch (stream) order: a model batch holds one
            // aggregate, so this is the plan before issue 36's finding 1 was fixed.
            let mut in_order: Vec<u8> = p.rounds.iter().flatten().copied().collect();
            in_order.sort_unstable();
            let mut next = in_order.into_iter();
            for slot in p.rounds.iter_mut().flatten() {
                *slot = next.next().unwrap_or(*slot);
            }
        }
        p.poison = poison.into_iter().map(at).collect();
        p.phase = if self.fences(p) {
            Phase::Fence
        } else {
            self.after_fence(p)
        };
    }

    pub(crate) fn after_fence(&self, p: &mut Publish) -> Phase {
        if self.params.has(Mutation::MarkBeforePublish) && !p.rounds.is_empty() {
            Phase::PreMark(0)
        } else {
            self.after_round(p, 0)
        }
    }

    /// The planned positions and what the fence sees of each.
    pub(crate) fn members(&self, p: &Publish) -> (Vec<u8>, Vec<Member>) {
        p.rounds
            .iter()
            .flatten()
            .filter(|&&pos| !p.items[usize::from(pos)].poison)
            .filter_map(|&pos| {
                let msg = &self.fixture.msgs[usize::from(p.items[usize::from(pos)].msg)];
                Some((pos, msg.member.clone()?))
            })
            .unzip()
    }

    /// Whether the publish reads pending messages first (a FIFO route).
    fn fences(&self, p: &Publish) -> bool {
        !self.params.has(Mutation::NoOrderFence) && !fence_reads(&self.members(p).1).is_empty()
    }

    fn after_round(&self, p: &mut Publish, next: usize) -> Phase {
        if next < p.rounds.len() {
            return Phase::Round(u8::try_from(next).unwrap_or(u8::MAX));
        }
        if p.poison.is_empty() {
            return self.after_dead_letter(p);
        }
        if self.params.has(Mutation::FailBeforeDeadLetter) {
            Phase::PreFail(0)
        } else {
            Phase::DeadLetter
        }
    }

    fn after_dead_letter(&self, p: &mut Publish) -> Phase {
        if !p.to_fail.is_empty() {
            Phase::MarkFailed(0)
        } else {
            self.after_fail_marks(p)
        }
    }

    fn after_fail_marks(&self, p: &mut Publish) -> Phase {
        if !p.sent.is_empty() && !self.params.has(Mutation::MarkBeforePublish) {
            Phase::MarkSent(0)
        } else {
            self.after_sent_marks(p)
        }
    }

    fn after_sent_marks(&self, p: &mut Publish) -> Phase {
        p.adopt = self.adoptable(p);
        if p.adopt.is_empty() {
            Phase::Done
        } else {
            Phase::Adopt(0)
        }
    }

    /// Whether the current step of `p` makes a call (which can fail), and whether that
    /// call writes (so it can take effect with its answer lost).
    pub fn publish_call(&self, p: &Publish) -> (bool, bool) {
        match p.phase {
            Phase::Round(r) => {
                let live = p.rounds[usize::from(r)]
                    .iter()
                    .any(|&pos| !self.deferred(p, pos) && !self.blocked(p, pos));
                (live, live)
            }
            Phase::Fence | Phase::Confirm | Phase::Status => (true, false),
            Phase::DeadLetter => (true, true),
            Phase::Done => (false, false),
            _ => (true, true),
        }
    }

    fn blocked(&self, p: &Publish, pos: u8) -> bool {
        let msg = p.items[usize::from(pos)].msg;
        let agg = self.fixture.msgs[usize::from(msg)].aggregate;
        !self.params.has(Mutation::NoAggregateBlocking) && p.failed_aggs & (1 << agg) != 0
    }

    /// Whether the fence holds `pos` (behind a known earlier message, or because it
    /// could not tell).
    fn deferred(&self, p: &Publish, pos: u8) -> bool {
        matches!(p.outcome[usize::from(pos)], Out::Deferred(_) | Out::Unknown)
    }

    /// Takes one step of `p`.
    pub fn publish_step(&self, s: &mut State, p: &mut Publish, fault: Fault) {
        match p.phase {
            Phase::Status => self.status_step(s, p, fault),
            Phase::Fence => self.fence_step(s, p, fault),
            Phase::Confirm => self.confirm_step(s, p, fault),
            Phase::PreMark(k) => {
                let all: Vec<u8> = p.rounds.iter().flatten().copied().collect();
                let pos = all[usize::from(k)];
                if fault != Fault::Fail {
                    self.mark_sent(s, p.items[usize::from(pos)].msg);
                }
                p.phase = if usize::from(k) + 1 < all.len() {
                    Phase::PreMark(k + 1)
                } else {
                    self.after_round(p, 0)
                };
            }
            Phase::Round(r) => {
                self.send_round(s, p, usize::from(r), fault);
                p.phase = self.after_round(p, usize::from(r) + 1);
            }
            Phase::PreFail(k) => {
                let pos = p.poison[usize::from(k)];
                if fault != Fault::Fail {
                    self.mark_failed(s, p.items[usize::from(pos)].msg, p.claim);
                }
                p.outcome[usize::from(pos)] = Out::Dead;
                p.phase = if usize::from(k) + 1 < p.poison.len() {
                    Phase::PreFail(k + 1)
                } else {
                    Phase::DeadLetter
                };
            }
            Phase::DeadLetter => {
                let result: EntryResult = match fault {
                    Fault::None | Fault::Stale => Ok(()),
                    Fault::Fail | Fault::Lost => Err(Failure::transient("Throttled")),
                };
                for &pos in &p.poison.clone() {
                    let msg = p.items[usize::from(pos)].msg;
                    if fault != Fault::Fail {
                        s.dlq |= bit(msg);
                    }
                    match judge_dead_letter(result.clone(), "poison") {
                        DeadLetterVerdict::MarkFailed { .. } => {
                            if !self.params.has(Mutation::FailBeforeDeadLetter) {
                                p.to_fail.push(pos);
                            }
                        }
                        DeadLetterVerdict::Retry(_) => p.outcome[usize::from(pos)] = Out::Retry,
                    }
                }
                p.phase = self.after_dead_letter(p);
            }
            Phase::MarkFailed(k) => {
                let pos = p.to_fail[usize::from(k)];
                if fault != Fault::Fail {
                    self.mark_failed(s, p.items[usize::from(pos)].msg, p.claim);
                }
                let marked = fault == Fault::None;
                // `mark_all_failed`: the copy is safe; a mark that failed is reported
                // for retry (before this branch it was not: `StrandUnindexed`).
                p.outcome[usize::from(pos)] =
                    if marked || self.params.has(Mutation::StrandUnindexed) {
                        Out::Dead
                    } else {
                        Out::Retry
                    };
                p.phase = if usize::from(k) + 1 < p.to_fail.len() {
                    Phase::MarkFailed(k + 1)
                } else {
                    self.after_fail_marks(p)
                };
            }
            Phase::MarkSent(k) => {
                let pos = p.sent[usize::from(k)];
                let changed =
                    fault != Fault::Fail && self.mark_sent(s, p.items[usize::from(pos)].msg);
                let marked = fault == Fault::None && changed;
                p.outcome[usize::from(pos)] = Out::Sent(marked);
                p.phase = if usize::from(k) + 1 < p.sent.len() {
                    Phase::MarkSent(k + 1)
                } else {
                    self.after_sent_marks(p)
                };
            }
            Phase::Adopt(k) => {
                let pos = p.adopt[usize::from(k)];
                let msg = p.items[usize::from(pos)].msg;
                if fault != Fault::Fail {
                    let item = &mut s.items[usize::from(msg)];
                    if item.status == Status::Pending && item.due.is_none() {
                        item.due = Some(s.now + 1);
                    }
                }
                if fault != Fault::None
                    && matches!(
                        p.outcome[usize::from(pos)],
                        Out::Sent(false) | Out::Deferred(_) | Out::Unknown
                    )
                    && !self.params.has(Mutation::StrandUnindexed)
                {
                    // `adopt_unfinished`: an item the index could not take is reported
                    // for retry, so the stream brings it back.
                    p.outcome[usize::from(pos)] = Out::Retry;
                }
                p.phase = if usize::from(k) + 1 < p.adopt.len() {
                    Phase::Adopt(k + 1)
                } else {
                    Phase::Done
                };
            }
            Phase::Done => {}
        }
    }

    fn adoptable(&self, p: &Publish) -> Vec<u8> {
        (0..p.items.len())
            .filter(|&i| {
                let w = p.items[i];
                let msg = &self.fixture.msgs[usize::from(w.msg)];
                let skipped = msg.library && self.params.has(Mutation::PublisherSkipsLibraryItems);
                !w.poison
                    && !msg.indexed
                    && !skipped
                    && matches!(
                        p.outcome[i],
                        Out::Retry
                            | Out::Blocked
                            | Out::Deferred(_)
                            | Out::Unknown
                            | Out::Sent(false)
                    )
            })
            .filter_map(|i| u8::try_from(i).ok())
            .collect()
    }

    fn send_round(&self, s: &mut State, p: &mut Publish, r: usize, fault: Fault) {
        let mut live = Vec::new();
        for &pos in &p.rounds[r] {
            if self.deferred(p, pos) {
                continue;
            }
            if self.blocked(p, pos) {
                p.outcome[usize::from(pos)] = Out::Blocked;
                let agg = self.fixture.msgs[usize::from(p.items[usize::from(pos)].msg)].aggregate;
                p.failed_aggs |= 1 << agg;
            } else {
                live.push(pos);
            }
        }
        if live.is_empty() {
            return;
        }
        let refused = |pos: u8| {
            self.fixture.msgs[usize::from(p.items[usize::from(pos)].msg)].kind == Kind::Refused
        };
        let answer: Result<Vec<EntryResult>, Failure> = match fault {
            Fault::None | Fault::Stale => Ok(live
                .iter()
                .map(|&pos| {
                    if refused(pos) {
                        Err(Failure::permanent("InvalidParameterValue"))
                    } else {
                        Ok(())
                    }
                })
                .collect()),
            Fault::Fail | Fault::Lost => Err(Failure::transient("Throttled")),
        };
        if fault != Fault::Fail {
            for &pos in &live {
                if !refused(pos) {
                    let msg = p.items[usize::from(pos)].msg;
                    self.note_sent_again(s, p, msg);
                    self.accept(s, msg);
                }
            }
        }
        let results = match judge_call(answer, &self.fixture.dest, live.len()) {
            CallVerdict::Answered(results) => results,
            CallVerdict::Every(f) => vec![Err(f); live.len()],
            CallVerdict::OneByOne => vec![Err(Failure::transient("split")); live.len()],
        };
        for (pos, result) in live.into_iter().zip(results) {
            let w = p.items[usize::from(pos)];
            match judge_entry(result) {
                EntryVerdict::Sent => p.sent.push(pos),
                EntryVerdict::Poison { .. } if !w.poison => p.poison.push(pos),
                EntryVerdict::Poison { .. } => p.outcome[usize::from(pos)] = Out::Retry,
                EntryVerdict::Retry { .. } => {
                    let agg = self.fixture.msgs[usize::from(w.msg)].aggregate;
                    p.failed_aggs |= 1 << agg;
                    p.outcome[usize::from(pos)] = Out::Retry;
                }
            }
        }
    }
}
