//! The order fence of a publish (`publish::fence::deferred` in the core): its reads
//! (`policy::fence_reads`, one step, which can fail), the consistent status read of
//! the index siblings that would fence (`policy::to_confirm`, `Pending::confirm`:
//! a second step, which can fail too), and the real `fenced` on what they found. A
//! message the fence cannot tell about is `Out::Unknown` (`Outcome::OrderUnknown`,
//! charged an attempt), one behind a known earlier message `Out::Deferred`.
//!
//! What the model writes itself is what the reads return: from the table, the
//! pending items of the read's scope as the state holds them now; from the sweeper
//! index, the same, or (`Params::index_lag`, `Fault::Stale`) also the messages a
//! mark has just removed from it (`State::lagging`) and, with
//! `Params::index_lags_writes`, not yet the messages just written
//! (`State::unlisted`); from a sequenced aggregate's key range (`Scope::Sequence`),
//! the table as it is now, bounded as the adapter bounds it (`sequence_listed`). And
//! the monitor of `NO_STALE_FENCE`.

use crate::fixture::TICK_MS;
use crate::model::{Fault, OutboxModel};
use crate::params::Mutation;
use crate::state::{Listed, Out, Phase, Publish, State, Status, bit};
use crate::sweep::ticks;
use dynamodb_outbox_core::policy::{
    CONFIRM_LIMIT, FenceRead, Member, Pending, Scope, Sibling, fence_reads, fenced, predecessors,
    switch_over_reads, to_confirm,
};
use dynamodb_outbox_core::schema::{ItemKey, SEQUENCED_PREFIX};
use std::collections::{BTreeSet, HashMap};

impl OutboxModel {
    /// Whether `p` is about to read the sweeper index for the fence while the index
    /// still lists a message of one of the read's aggregates that a mark removed, or
    /// does not list one just written yet: then the read may lag (`Fault::Stale`).
    pub(crate) fn may_lag(&self, s: &State, p: &Publish) -> bool {
        let behind = !s.lagging.is_empty() || s.unlisted != 0;
        if !self.params.index_lag || p.phase != Phase::Fence || !behind {
            return false;
        }
        let members = self.members(p).1;
        let switching = self.switching(s, &members);
        self.reads(&members, &switching).iter().any(|read| {
            self.reads_index(read)
                && s.lagging
                    .iter()
                    .map(|l| l.0)
                    .chain((0..32).filter(|&m| s.unlisted & bit(m) != 0))
                    .any(|m| {
                        read.aggregates
                            .contains(&self.fixture.msgs[usize::from(m)].key.pk)
                    })
        })
    }

    /// The fence's reads: each returns the pending items of its scope (or fails: a
    /// faulty call, or `Params::fence_reads_fail`). When the index listed siblings
    /// that would fence, the consistent confirmation comes next; else the decision.
    pub(crate) fn fence_step(&self, s: &mut State, p: &mut Publish, fault: Fault) {
        let (positions, members) = self.members(p);
        let fails = fault == Fault::Fail || self.params.fence_reads_fail;
        p.switching = if fails {
            BTreeSet::new()
        } else {
            self.switching(s, &members)
        };
        let reads = self.reads(&members, &p.switching);
        p.found = reads
            .iter()
            .map(|read| {
                let fails = fault == Fault::Fail || self.params.fence_reads_fail;
                (!fails).then(|| self.listed(s, p, read, fault == Fault::Stale))
            })
            .collect();
        let pending = self.pending_of(&reads, &p.found);
        let confirm = !self.params.has(Mutation::NoConsistentConfirm)
            && !Self::to_ask(&members, &pending).0.is_empty();
        if confirm {
            p.phase = Phase::Confirm;
            return;
        }
        let witnesses = self.pending_now(s) | self.consistently_listed(&reads, &p.found);
        let unsure = p.found.iter().any(Option::is_none);
        self.decide(s, p, (&positions, &members), &pending, witnesses, unsure);
    }

    /// The consistent `BatchGetItem` of the messages FIFO members follow in their own
    /// transactions and of the index siblings that would fence, then the decision:
    /// the predecessors still pending fence, the index siblings no longer `PENDING` do
    /// not. When the read fails, the index's answer stands and every predecessor
    /// fences.
    pub(crate) fn confirm_step(&self, s: &mut State, p: &mut Publish, fault: Fault) {
        let (positions, members) = self.members(p);
        let reads = self.reads(&members, &p.switching);
        let mut pending = self.pending_of(&reads, &p.found);
        let (asked, followed, listed) = Self::to_ask(&members, &pending);
        let mut witnesses = self.consistently_listed(&reads, &p.found);
        if fault == Fault::None {
            let statuses: HashMap<_, _> = asked
                .iter()
                .filter_map(|key| {
                    let m = self.fixture.by_key(key)?;
                    let status = match s.items[usize::from(m)].status {
                        Status::Pending => "PENDING",
                        Status::Sent => "SENT",
                        Status::Failed => "FAILED",
                        Status::Absent | Status::Deleted => return None,
                    };
                    if status == "PENDING" {
                        witnesses |= bit(m);
                    }
                    Some((key.clone(), Some(status.to_owned())))
                })
                .collect();
            pending.confirm(&listed, &statuses);
            pending.add_predecessors(&followed, Some(&statuses));
        } else {
            pending.add_predecessors(&followed, None);
        }
        let unsure = fault != Fault::None || p.found.iter().any(Option::is_none);
        witnesses |= self.pending_now(s);
        self.decide(s, p, (&positions, &members), &pending, witnesses, unsure);
    }

    /// The fence's reads, as `publish::fence::read_pending` makes them: the batch's
    /// (`fence_reads`), then the switch-over reads of the aggregates in `switching`
    /// (`switch_over_reads`). One step here: the sequence read and the read after it
    /// see the same table (between them a message can only finish, never appear
    /// earlier: a later commit sorts above the members).
    fn reads(&self, members: &[Member], switching: &BTreeSet<String>) -> Vec<FenceRead> {
        let mut reads = fence_reads(members);
        if !switching.is_empty() && !self.params.has(Mutation::NoSwitchOverRead) {
            reads.extend(switch_over_reads(switching));
        }
        reads
    }

    /// The aggregates whose sequence read (`Scope::Sequence`) finds no item of theirs
    /// in the table below its lowest member in the sequenced range: the adapter's
    /// `PendingPage::no_earlier_sequence`.
    fn switching(&self, s: &State, members: &[Member]) -> BTreeSet<String> {
        fence_reads(members)
            .iter()
            .filter_map(|read| match &read.scope {
                Scope::Sequence {
                    aggregate, lowest, ..
                } => Some((aggregate, lowest)),
                _ => None,
            })
            .filter(|(aggregate, lowest)| {
                !(0..s.items.len()).any(|m| {
                    let key = &self.fixture.msgs[m].key;
                    let exists = !matches!(s.items[m].status, Status::Absent | Status::Deleted);
                    exists
                        && &key.pk == *aggregate
                        && key.sk.starts_with(SEQUENCED_PREFIX)
                        && key.sk.as_str() < lowest.as_str()
                })
            })
            .map(|(aggregate, _)| aggregate.clone())
            .collect()
    }

    /// What the fence's consistent status read asks, as the code's `confirm` makes it:
    /// the messages FIFO members follow in their own transactions
    /// (`policy::predecessors`), then the index siblings that would fence
    /// (`to_confirm`, within what is left of `CONFIRM_LIMIT`); and those two lists.
    fn to_ask(members: &[Member], pending: &Pending) -> (Vec<ItemKey>, Vec<ItemKey>, Vec<ItemKey>) {
        let followed = predecessors(members);
        let listed = to_confirm(
            members,
            pending,
            CONFIRM_LIMIT.saturating_sub(followed.len()),
        );
        let mut asked = followed.clone();
        asked.extend(listed.iter().filter(|k| !followed.contains(k)).cloned());
        (asked, followed, listed)
    }

    /// What `read` lists: the pending items of its aggregates that the status read
    /// did not find finished (`process_after`'s `finished`); from the index, the
    /// indexed ones with their due times, and when it lags, also what it still lists.
    fn listed(&self, s: &State, p: &Publish, read: &FenceRead, lag: bool) -> Listed {
        let finished = |m: u8| {
            p.items
                .iter()
                .zip(&p.outcome)
                .any(|(w, o)| w.msg == m && *o == Out::Finished)
        };
        if let Scope::Sequence {
            aggregate,
            lowest,
            highest,
            ..
        } = &read.scope
        {
            let mut listed = self.sequence_listed(s, (aggregate, lowest, highest), lag);
            listed.retain(|(m, _)| !finished(*m));
            return listed;
        }
        let partition = matches!(read.scope, Scope::Partition(_));
        let ours = |m: u8| {
            read.aggregates
                .contains(&self.fixture.msgs[usize::from(m)].key.pk)
        };
        let mut listed: Listed = (0..s.items.len())
            .filter_map(|i| u8::try_from(i).ok())
            .filter(|&m| ours(m) && !finished(m))
            .filter_map(|m| {
                let item = s.items[usize::from(m)];
                let shown = item.status == Status::Pending && (partition || item.due.is_some());
                shown.then_some((m, item.due))
            })
            .collect();
        if lag && !partition {
            listed.retain(|(m, _)| s.unlisted & bit(*m) == 0);
            for &(m, due) in &s.lagging {
                if ours(m) && !finished(m) && !listed.iter().any(|l| l.0 == m) {
                    listed.push((m, Some(due)));
                }
            }
            listed.sort_unstable();
        }
        listed
    }

    /// Whether `read` answers from the sweeper index (eventually consistent): the
    /// shards' read; a sequenced aggregate's only with `SequenceReadFromIndex`.
    fn reads_index(&self, read: &FenceRead) -> bool {
        match read.scope {
            Scope::Shards(_) => true,
            Scope::Sequence { .. } => self.params.has(Mutation::SequenceReadFromIndex),
            Scope::Partition(_) => false,
        }
    }

    /// What the read of a sequenced aggregate's key range returns, as the adapter's
    /// `sequence_read` (and the fake store's `sequence_range`) make it: the items of
    /// `aggregate` that exist in the table now (committed, not deleted by TTL) with a
    /// sequenced sort key up to `highest`, newest first, down to and including the
    /// first one below `lowest`; of those, the pending ones with their `SweepDueAt`.
    /// A strongly consistent read: the table as it is, whatever the index's lag. With
    /// `SequenceReadFromIndex` the same range of what the index lists instead (with
    /// `lag`, as it lags); with `SequenceReadStopsAtLowest` it ends at `lowest`.
    /// Always complete here: the adapter pages by the batch's members and one more
    /// (at least 2 items a page) within the batch's 16 pages shared by its reads, more
    /// than a model aggregate's few messages.
    fn sequence_listed(
        &self,
        s: &State,
        (aggregate, lowest, highest): (&str, &str, &str),
        lag: bool,
    ) -> Listed {
        let index = self.params.has(Mutation::SequenceReadFromIndex);
        // `(sort key, message, pending, SweepDueAt)` of each item the read can see.
        let seen = |m: u8| -> Option<(&str, u8, bool, Option<u8>)> {
            let msg = &self.fixture.msgs[usize::from(m)];
            let sk = msg.key.sk.as_str();
            if msg.key.pk != aggregate || !sk.starts_with(SEQUENCED_PREFIX) || sk > highest {
                return None;
            }
            let item = s.items[usize::from(m)];
            if !index {
                let exists = !matches!(item.status, Status::Absent | Status::Deleted);
                return exists.then_some((sk, m, item.status == Status::Pending, item.due));
            }
            if lag && let Some(&(_, due)) = s.lagging.iter().find(|l| l.0 == m) {
                return Some((sk, m, true, Some(due)));
            }
            let listed = item.status == Status::Pending
                && item.due.is_some()
                && !(lag && s.unlisted & bit(m) != 0);
            listed.then_some((sk, m, true, item.due))
        };
        let mut range: Vec<_> = (0..s.items.len())
            .filter_map(|m| u8::try_from(m).ok())
            .filter_map(seen)
            .collect();
        range.sort_unstable_by(|a, b| b.0.cmp(a.0));
        let below = range.iter().position(|r| r.0 < lowest);
        let end = match below {
            Some(at) if self.params.has(Mutation::SequenceReadStopsAtLowest) => at,
            Some(at) => at + 1,
            None => range.len(),
        };
        let mut listed: Listed = range[..end]
            .iter()
            .filter(|r| r.2)
            .map(|r| (r.1, r.3))
            .collect();
        listed.sort_unstable();
        listed
    }

    /// The code's `Pending` of what the reads found.
    fn pending_of(&self, reads: &[FenceRead], found: &[Option<Listed>]) -> Pending {
        let mut pending = Pending::default();
        for (read, found) in reads.iter().zip(found) {
            let Some(listed) = found else {
                pending.failed(read);
                continue;
            };
            let partition = matches!(read.scope, Scope::Partition(_));
            let sequence = matches!(read.scope, Scope::Sequence { .. });
            let siblings = listed
                .iter()
                .filter_map(|&(m, due)| {
                    let msg = &self.fixture.msgs[usize::from(m)];
                    if sequence {
                        // The adapter's `sequence_read`: key and due time, its place
                        // from the sequenced key.
                        return Some(Sibling {
                            key: msg.key.clone(),
                            due_at_ms: due.map(|t| i64::from(t) * TICK_MS),
                            order: None,
                        });
                    }
                    msg.as_sibling(due, partition)
                })
                .collect();
            pending.found(read, siblings, true);
        }
        pending
    }

    /// The messages a consistent read of the fence listed `PENDING` (a partition read,
    /// a sequenced aggregate's range).
    fn consistently_listed(&self, reads: &[FenceRead], found: &[Option<Listed>]) -> u32 {
        reads
            .iter()
            .zip(found)
            .filter(|(read, _)| !self.reads_index(read))
            .filter_map(|(_, found)| found.as_ref())
            .flatten()
            .fold(0, |acc, (m, _)| acc | bit(*m))
    }

    /// The messages `PENDING` in the table now.
    fn pending_now(&self, s: &State) -> u32 {
        (0..s.items.len())
            .filter(|&i| s.items[i].status == Status::Pending)
            .filter_map(|i| u8::try_from(i).ok())
            .fold(0, |acc, m| acc | bit(m))
    }

    /// The real `fenced` on what the reads found, and the outcome of each member it
    /// holds: `Unknown` when it could not tell (or, `FenceParksWhenUnread`, the code
    /// before the fix: deferred, its attempt given back), else `Deferred`. Also the
    /// monitor of `NO_STALE_FENCE`: a member held behind a known earlier message
    /// when every read answered, though no earlier sibling outside the batch is
    /// `PENDING` — neither in the table now nor as a consistent read of this fence
    /// found it (`witnesses`).
    fn decide(
        &self,
        s: &mut State,
        p: &mut Publish,
        (positions, members): (&[u8], &[Member]),
        pending: &Pending,
        witnesses: u32,
        unsure: bool,
    ) {
        let in_batch: Vec<u8> = positions
            .iter()
            .map(|&pos| p.items[usize::from(pos)].msg)
            .collect();
        for (&pos, fence) in positions.iter().zip(fenced(members, pending)) {
            let Some(f) = fence else { continue };
            let parks = self.params.has(Mutation::FenceParksWhenUnread);
            p.outcome[usize::from(pos)] = if f.cannot_tell && !parks {
                Out::Unknown
            } else {
                Out::Deferred(f.not_before.map(ticks))
            };
            let msg = p.items[usize::from(pos)].msg;
            let agg = self.fixture.msgs[usize::from(msg)].aggregate;
            let behind_pending = (0..msg).any(|j| {
                self.fixture.msgs[usize::from(j)].aggregate == agg
                    && !in_batch.contains(&j)
                    && witnesses & bit(j) != 0
            });
            if !f.cannot_tell && !unsure && !behind_pending {
                s.stale_fence = true;
            }
        }
        p.found.clear();
        p.phase = self.after_fence(p);
    }
}
