//! The order fence on two regions (`GlobalParams::fifo`): before a region's stream
//! publisher or sweep sends a message of a FIFO aggregate, it reads the aggregate's
//! pending messages in its own copy (the sweeper index, for the library's items; the
//! partition, for a minimal producer's) and confirms what the index lists by a
//! consistent status read, whose answer for an item `PENDING` but homed in another
//! region is `PENDING_ELSEWHERE` (the adapter's `as_seen_here`). The decisions are the
//! code's: `policy::fence_reads`, `to_confirm`, `Pending::confirm`, `fenced`. A held
//! message is not sent: the stream publisher defers it (not reported), a sweep gives
//! its claim back.
//!
//! What the model writes itself: what the reads return — the region's copy as it is
//! (the index read is taken as caught up: the single-region model explores its lag).

use super::{GState, GlobalModel};
use crate::params::Mutation;
use crate::state::Status;
use dynamodb_outbox_core::policy::{
    CONFIRM_LIMIT, Pending, Scope, fence_reads, fenced, to_confirm,
};
use dynamodb_outbox_core::schema::PENDING_ELSEWHERE;
use std::collections::HashMap;

impl GlobalModel {
    /// Whether region `r`'s order fence holds `m` back now.
    pub(super) fn fenced_in(&self, s: &GState, r: u8, m: u8) -> bool {
        if !self.params.fifo {
            return false;
        }
        let msgs = &self.fixture.msgs;
        let Some(member) = msgs.get(usize::from(m)).and_then(|x| x.member.clone()) else {
            return false;
        };
        let copy = &s.copies[usize::from(r)];
        let members = vec![member];
        let reads = fence_reads(&members);
        let mut pending = Pending::default();
        for read in &reads {
            let partition = matches!(read.scope, Scope::Partition(_));
            let siblings = (0..msgs.len())
                .filter(|&j| j != usize::from(m) && copy[j].status == Status::Pending)
                .filter_map(|j| msgs[j].as_sibling(Some(0), partition))
                .collect();
            pending.found(read, siblings, true);
        }
        let asked = to_confirm(&members, &pending, CONFIRM_LIMIT);
        let statuses: HashMap<_, _> = asked
            .iter()
            .filter_map(|key| {
                let j = usize::from(self.fixture.by_key(key)?);
                let item = copy[j];
                let status = match item.status {
                    Status::Pending if self.acts_on(s, r, item.home) => "PENDING",
                    // Before issue 36's finding 3 was fixed the confirmation took any
                    // status but `PENDING` as finished: as `SENT`.
                    Status::Pending
                        if self.params.has(Mutation::FenceTrustsPendingElsewhereAsDone) =>
                    {
                        "SENT"
                    }
                    Status::Pending => PENDING_ELSEWHERE,
                    Status::Sent => "SENT",
                    Status::Failed => "FAILED",
                    Status::Absent | Status::Deleted => return None,
                };
                Some((key.clone(), Some(status.to_owned())))
            })
            .collect();
        pending.confirm(&asked, &statuses);
        fenced(&members, &pending)
            .first()
            .is_some_and(Option::is_some)
    }
}
