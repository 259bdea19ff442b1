//! What a region's invocation (its stream publisher on one record, or its sweep on
//! one claimed item) does with a message: the send, and after it the conditional
//! `SENT` mark, or, when the destination refused it for good, the dead-letter copy
//! and the conditional `FAILED` mark. The verdicts are the library's
//! (`policy::judge_entry`, `policy::judge_dead_letter`), as in the single-region
//! model's publish path; the order of the copy and the mark is the code's (the copy
//! first: `Mutation::FailBeforeDeadLetter` swaps them).

use super::{Call, GItem, GState, GlobalModel, Running, other};
use crate::params::Mutation;
use crate::state::Status;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::policy::{
    DeadLetterVerdict, EntryVerdict, judge_dead_letter, judge_entry,
};
use dynamodb_outbox_core::ports::EntryResult;

impl GlobalModel {
    /// Region `r` sends `m`: what its destination answers, judged by the library, and
    /// the invocation's next call.
    pub(super) fn attempt(&self, s: &mut GState, r: u8, m: u8) -> Call {
        let answer: EntryResult = if self.params.msgs[usize::from(m)].refused_by(r) {
            Err(Failure::permanent("InvalidParameterValue"))
        } else {
            Ok(())
        };
        match judge_entry(answer) {
            EntryVerdict::Sent => {
                self.accepted(s, r, m);
                Call::Mark
            }
            // No retryable answer in this model: a refusal is poison.
            EntryVerdict::Poison { .. } | EntryVerdict::Retry { .. } => self.first_poison_call(),
        }
    }

    fn first_poison_call(&self) -> Call {
        if self.params.has(Mutation::FailBeforeDeadLetter) {
            Call::MarkFailed
        } else {
            Call::DeadLetter
        }
    }

    /// Region `r`'s invocation on `run` makes its next call; what it calls next, if
    /// anything.
    pub(super) fn finish(&self, s: &mut GState, r: u8, run: Running) -> Option<Running> {
        let m = run.msg;
        let next = match run.call {
            Call::Send => {
                let item = s.copies[usize::from(r)][usize::from(m)];
                let owned =
                    self.acts_on(s, r, item.home) || self.params.has(Mutation::OwnershipFromImage);
                // Held by the order fence: deferred for the sweeper, not reported.
                let go = item.status == Status::Pending && owned && !self.fenced_in(s, r, m);
                go.then(|| self.attempt(s, r, m))
            }
            Call::Mark => {
                self.mark(s, r, m, Status::Sent);
                None
            }
            Call::DeadLetter => {
                Self::dead_letter(s, r, m);
                // The copy landed: the library marks the item `FAILED` next.
                let verdict = judge_dead_letter(Ok(()), "poison");
                let mark = matches!(verdict, DeadLetterVerdict::MarkFailed { .. });
                let failed_first = self.params.has(Mutation::FailBeforeDeadLetter);
                (mark && !failed_first).then_some(Call::MarkFailed)
            }
            Call::MarkFailed => {
                self.mark(s, r, m, Status::Failed);
                self.params
                    .has(Mutation::FailBeforeDeadLetter)
                    .then_some(Call::DeadLetter)
            }
        };
        next.map(|call| Running { msg: m, call })
    }

    /// Region `r`'s conditional mark (`Status = PENDING`) of `m` as `status` in its copy.
    fn mark(&self, s: &mut GState, r: u8, m: u8, status: Status) {
        let item = s.copies[usize::from(r)][usize::from(m)];
        if item.status != Status::Pending {
            return;
        }
        if status == Status::Failed {
            s.failed_marks |= 1 << m;
        }
        self.write(s, r, m, GItem { status, ..item });
    }

    /// Region `r`'s destination accepted `m`; the consumer applies it once.
    fn accepted(&self, s: &mut GState, r: u8, m: u8) {
        let mi = usize::from(m);
        if !Self::owns(s, r, s.copies[usize::from(r)][mi].home) {
            s.foreign = true;
        }
        let second = s.published[mi] & (1 << other(r)) != 0;
        if second && Self::excused(s, r, m) {
            s.failover_duplicates |= 1 << m;
        } else if second {
            s.twice = true;
        }
        if s.failed_marks & (1 << m) != 0 && !Self::excused(s, r, m) {
            s.sent_after_failed = true;
        }
        let later = (m + 1..u8::try_from(s.published.len()).unwrap_or(0))
            .any(|j| s.published[usize::from(j)] != 0);
        if self.params.fifo && s.published[mi] == 0 && later {
            s.overtaken = true;
        }
        s.published[mi] |= 1 << r;
        s.sends[mi] = s.sends[mi].saturating_add(1);
        if s.effects[mi] == 0 {
            s.effects[mi] = 1;
        }
    }

    /// Region `r` copies `m` to its dead-letter queue.
    fn dead_letter(s: &mut GState, r: u8, m: u8) {
        let mi = usize::from(m);
        let second = s.dead_lettered[mi] & (1 << other(r)) != 0;
        if second && !Self::excused(s, r, m) {
            s.twice_dead = true;
        }
        s.dead_lettered[mi] |= 1 << r;
    }
}
