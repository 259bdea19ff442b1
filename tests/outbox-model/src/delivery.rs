//! A stream delivery, `Publisher::process_delivery`: the status read of the batch's
//! items (one strongly consistent `BatchGetItem`; a step, which can fail), the real
//! `judge_delivery` on what it found, then `process_after` on the items still
//! `PENDING` alone (planned again by the real `plan`), the finished ones left out of
//! the fence. Also the monitor of `SENT_ONCE`, and the code's `Outcome` of a model
//! outcome, for the code's judges.

use crate::model::{Fault, OutboxModel};
use crate::params::Mutation;
use crate::state::{Out, Phase, Publish, State, Status, Work, bit};
use dynamodb_outbox_core::policy::{READ_FAILED, cannot_tell_reason};
use dynamodb_outbox_core::publish::{CurrentStatuses, Delivery, Outcome, WorkItem};
use dynamodb_outbox_core::publish::{judge_delivery, status_keys};

/// What the code's `Outcome` of a work item is, for the code's judges
/// (`Outcome::needs_retry`, `policy::judge_attempt`).
pub fn outcome_of(out: Out) -> Outcome {
    match out {
        Out::Sent(marked) => Outcome::Sent { marked },
        Out::Dead => Outcome::DeadLettered {
            marked: true,
            reason: "poison".into(),
        },
        Out::Retry | Out::Open => Outcome::Retry {
            reason: "Throttled".into(),
        },
        Out::Unread => Outcome::Retry {
            reason: "could not read the message's current status".into(),
        },
        Out::Blocked => Outcome::Blocked,
        Out::Deferred(tick) => Outcome::Deferred {
            not_before: tick.map(|t| i64::from(t) * crate::fixture::TICK_MS),
        },
        Out::Finished => Outcome::AlreadyFinished,
        Out::Unknown => Outcome::OrderUnknown {
            reason: cannot_tell_reason(READ_FAILED),
        },
    }
}

impl OutboxModel {
    /// A delivery of stream records (`Publisher::process_delivery`): the status read
    /// comes first, then the publish of what is still `PENDING`. Without it
    /// (`NoStatusRead`, the code before the fix), every record is published, and
    /// what the invocation knows of its items is what they were when it was invoked
    /// (`SENT_ONCE` counts only a delivery that began after a `SENT` mark).
    pub fn start_delivery(&self, s: &State, works: Vec<Work>, items: &[WorkItem]) -> Publish {
        let pending_now = works
            .iter()
            .filter(|w| s.items[usize::from(w.msg)].status == Status::Pending)
            .fold(0, |read, w| read | bit(w.msg));
        let mut p = self.start_publish(works, items, pending_now);
        if !self.params.has(Mutation::NoStatusRead) {
            p.read = 0;
            p.rounds.clear();
            p.poison.clear();
            p.phase = Phase::Status;
        }
        p
    }

    /// The status read and `judge_delivery` on what it found: the items still
    /// `PENDING` are planned and published (`process_after` on them alone), the
    /// others skipped; a failed read publishes nothing and reports every item (the
    /// model's poison has keys too). The read returns the state's statuses: a
    /// strongly consistent `BatchGetItem`.
    pub(crate) fn status_step(&self, s: &State, p: &mut Publish, fault: Fault) {
        let items: Vec<WorkItem> = p
            .items
            .iter()
            .enumerate()
            .map(|(i, w)| WorkItem {
                id: i.to_string(),
                work: self.fixture.msgs[usize::from(w.msg)].work.clone(),
            })
            .collect();
        let current: Option<CurrentStatuses> = (fault == Fault::None).then(|| {
            status_keys(&items)
                .into_iter()
                .filter_map(|key| {
                    let m = self.fixture.by_key(&key)?;
                    let status = match s.items[usize::from(m)].status {
                        Status::Pending => "PENDING",
                        Status::Sent => "SENT",
                        Status::Failed => "FAILED",
                        Status::Absent | Status::Deleted => return None,
                    };
                    Some((key, Some(status.to_owned())))
                })
                .collect()
        });
        if fault == Fault::None {
            for w in &p.items {
                if s.items[usize::from(w.msg)].status == Status::Pending {
                    p.read |= bit(w.msg);
                }
            }
        }
        let verdicts = judge_delivery(&items, current.as_ref());
        let mut positions = Vec::new();
        let mut to_publish = Vec::new();
        for ((i, item), verdict) in items.into_iter().enumerate().zip(verdicts) {
            match verdict {
                Delivery::Publish => {
                    positions.push(u8::try_from(i).unwrap_or(u8::MAX));
                    to_publish.push(WorkItem {
                        id: i.to_string(),
                        work: item.work,
                    });
                }
                Delivery::Unread => p.outcome[i] = Out::Unread,
                Delivery::Settled { .. } | Delivery::Gone => p.outcome[i] = Out::Finished,
            }
        }
        self.plan_positions(p, &to_publish, &positions);
    }

    /// The monitor of `SENT_ONCE`: a send of `msg` that lands after its `SENT` mark
    /// (the item is `SENT`, or deleted by TTL after it) is a violation unless the
    /// sending invocation read the item `PENDING` itself — a claim or the status
    /// read, which then came before the mark: two invocations racing. `SENT` is never
    /// left but by TTL deletion (`TERMINAL`), so a read that found it `PENDING` was
    /// made before the mark.
    pub(crate) fn note_sent_again(&self, s: &mut State, p: &Publish, msg: u8) {
        let marked = matches!(
            s.items[usize::from(msg)].status,
            Status::Sent | Status::Deleted
        );
        if marked && p.read & bit(msg) == 0 {
            s.sent_after_sent = true;
        }
    }
}
