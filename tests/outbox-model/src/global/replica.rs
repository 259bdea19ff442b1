//! The replicas: a write lands in its region's copy at once and travels to the other
//! region's copy as a separate step, where the later timestamp wins (whole item).

use super::{GItem, GState, GlobalModel, InFlight, other};
use crate::state::Status;

/// An item as an in-flight write carries it.
pub(super) fn pack(i: GItem) -> (u8, Option<u8>, bool, u8) {
    let s = match i.status {
        Status::Absent => 0,
        Status::Pending => 1,
        Status::Sent => 2,
        Status::Failed => 3,
        Status::Deleted => 4,
    };
    (s, i.home, i.failed_over, i.stamp)
}

/// The item an in-flight write carries.
pub(super) fn unpack((s, home, failed_over, stamp): (u8, Option<u8>, bool, u8)) -> GItem {
    let status = match s {
        1 => Status::Pending,
        2 => Status::Sent,
        3 => Status::Failed,
        4 => Status::Deleted,
        _ => Status::Absent,
    };
    GItem {
        status,
        home,
        failed_over,
        stamp,
    }
}

impl GlobalModel {
    /// A write of `item` to region `r`'s copy of `m`: a new timestamp, an `INSERT` on
    /// `r`'s stream if the item was not there, and its replication on its way.
    pub(super) fn write(&self, s: &mut GState, r: u8, m: u8, mut item: GItem) {
        item.stamp = Self::next_stamp(s);
        let old = s.copies[usize::from(r)][usize::from(m)];
        if old.status == Status::Absent {
            self.on_stream(s, r, m, item.home);
        }
        s.copies[usize::from(r)][usize::from(m)] = item;
        let w = InFlight {
            to: other(r),
            msg: m,
            item: pack(item),
        };
        let at = s.in_flight.binary_search(&w).unwrap_or_else(|i| i);
        s.in_flight.insert(at, w);
    }

    /// In-flight write `i` reaches its copy: applied if it is the later write (an
    /// `INSERT` on that region's stream if the item was not there), dropped if not.
    pub(super) fn replicate(&self, s: &mut GState, i: u8) {
        let w = s.in_flight.remove(usize::from(i));
        let incoming = unpack(w.item);
        let here = &mut s.copies[usize::from(w.to)][usize::from(w.msg)];
        if incoming.stamp > here.stamp {
            let inserted = here.status == Status::Absent;
            *here = incoming;
            if inserted {
                self.on_stream(s, w.to, w.msg, incoming.home);
            }
        }
    }

    /// An `INSERT` of `m` whose image has `HomeRegion` `home` lands on region `r`'s
    /// stream; the mapping's `FilterCriteria` pass `r`'s own and those without
    /// `HomeRegion` (all of them without the filter, `PublishOnEveryReplica`), so the
    /// others never reach a publisher (and take no step here). A dropped one `r` owns
    /// is recorded (`GState::unstreamed`).
    fn on_stream(&self, s: &mut GState, r: u8, m: u8, home: Option<u8>) {
        if self.filter_passes(r, home) {
            s.streams[usize::from(r)].push((m, home));
        } else if Self::owns(s, r, home) && Self::filterable(home) {
            s.unstreamed = true;
        }
    }

    fn next_stamp(s: &GState) -> u8 {
        let copies = s.copies.iter().flatten().map(|i| i.stamp);
        let flying = s.in_flight.iter().map(|w| w.item.3);
        copies.chain(flying).max().unwrap_or(0) + 1
    }

    /// Timestamps are only compared: keep their ranks, so that runs that differ only in
    /// how many writes came before are one state.
    pub(super) fn normalise(s: &mut GState) {
        let mut all: Vec<u8> = s.copies.iter().flatten().map(|i| i.stamp).collect();
        all.extend(s.in_flight.iter().map(|w| w.item.3));
        all.push(0);
        all.sort_unstable();
        all.dedup();
        let rank = |t: u8| u8::try_from(all.binary_search(&t).unwrap_or(0)).unwrap_or(u8::MAX);
        for item in s.copies.iter_mut().flatten() {
            item.stamp = rank(item.stamp);
        }
        for w in &mut s.in_flight {
            w.item.3 = rank(w.item.3);
        }
        s.in_flight.sort_unstable();
    }
}
