//! The outage: a region crashes, the operator fails its messages over into the other
//! region (`outbox-ops failover`), the region comes back once replication caught up,
//! and the operator fails back (`outbox-ops failback`).

use super::{GAction, GItem, GState, GlobalModel, Life, exact_region, other};
use crate::params::Mutation;
use crate::state::Status;
use dynamodb_outbox_core::HomeRegions;

impl GlobalModel {
    /// The operator's and the outage's steps enabled in `s`.
    pub(super) fn outage_actions(&self, s: &GState, actions: &mut Vec<GAction>) {
        if self.params.move_default_home && s.life != Life::Up && s.home_moves < 2 {
            for r in [super::A, super::B] {
                let to = other(s.default_home[usize::from(r)]);
                if self.may_move_default_home(s, r, to) {
                    actions.push(GAction::MoveDefaultHome(r, to));
                }
            }
        }
        match s.life {
            Life::Up => {
                for r in [super::A, super::B] {
                    if self.params.crash.may_crash(r) {
                        actions.push(GAction::Crash(r));
                    }
                }
            }
            Life::Down(failed) => self.while_down(s, failed, actions),
            Life::Back(failed) => self.once_back(s, failed, actions),
        }
    }

    /// While `failed` is down: the failover, the failback as first written (in the
    /// recovered region's copy, before its functions start), the recovery.
    fn while_down(&self, s: &GState, failed: u8, actions: &mut Vec<GAction>) {
        let p = &self.params;
        let survivor = other(failed);
        for m in 0..self.n() {
            if self.rehomes(s.copies[usize::from(survivor)][usize::from(m)], failed) {
                actions.push(GAction::Failover(m));
            }
        }
        let caught_up = s.in_flight.iter().all(|w| w.to != failed);
        let mut returning = false;
        if self.fails_back_in_recovered_region() && caught_up {
            for m in 0..self.n() {
                if Self::returns(s.copies[usize::from(failed)][usize::from(m)], failed) {
                    returning = true;
                    actions.push(GAction::Failback(m));
                }
            }
        }
        let ready = (caught_up && !returning) || p.has(Mutation::RecoverBeforeCatchUp);
        if p.recover && ready && self.runbook_allows(s, Life::Back(failed), s.default_home) {
            actions.push(GAction::Recover);
        }
    }

    /// Once `failed` is back: the failback, in the survivor's copy, of what no sweep
    /// there holds.
    fn once_back(&self, s: &GState, failed: u8, actions: &mut Vec<GAction>) {
        let p = &self.params;
        if !p.failback || self.fails_back_in_recovered_region() {
            return;
        }
        let survivor = other(failed);
        for m in 0..self.n() {
            let item = s.copies[usize::from(survivor)][usize::from(m)];
            // The failback holds each entry to the due time it read, a settle (the
            // longest lease) later: a sweep that holds or takes a claim meanwhile moves
            // it. Compared with the operator's clock instead, as before issue 36's
            // finding 7 was fixed, an operator ahead by more than a lease took it.
            let clock = p.operator_clock_ahead && p.has(Mutation::FailbackComparesOperatorClock);
            let free =
                !Self::claimed(s, survivor, m) || p.has(Mutation::FailbackIgnoresClaim) || clock;
            if Self::returns(item, failed) && free {
                actions.push(GAction::Failback(m));
            }
        }
    }

    /// The runbook as first written: the failback in the recovered region's copy,
    /// before its functions start (`FailbackFromRecoveredRegion`).
    fn fails_back_in_recovered_region(&self) -> bool {
        self.params.failback && self.params.has(Mutation::FailbackFromRecoveredRegion)
    }

    /// Whether the failover out of `failed` re-homes an item the survivor's copy shows
    /// as `item`: `Status = PENDING AND` the failed region's (its `HomeRegion`, or
    /// none and it is the default home: `--default-home`).
    fn rehomes(&self, item: GItem, failed: u8) -> bool {
        let p = &self.params;
        // `outbox-ops failover`'s condition: `#home = :from`, or also
        // `attribute_not_exists(#home)` out of the default home (`--default-home`).
        let named = exact_region(item.home) == Some(failed);
        let failed_regions = if p.has(Mutation::FailoverIgnoresDefaultHome) {
            named
        } else if p.has(Mutation::FailoverTakesDefaultHomes) {
            named || item.home.is_none()
        } else {
            named
                || (item.home.is_none() && failed == super::DEFAULT_HOME)
                || self.odd_home(item, failed)
        };
        let status = item.status == Status::Pending
            || (p.has(Mutation::UnconditionalFailover) && item.status != Status::Absent);
        failed_regions && status
    }

    /// Whether a failover refused on `item`'s odd `HomeRegion` (`NULL`, empty, padded)
    /// is made again on that exact value: when the failed region owned it
    /// (`HomeRegions::exact_ownership` of `HomeSeen`, as `outbox-ops failover` asks it).
    /// `FailoverRefusesOddHome`: not, as before the model found it.
    fn odd_home(&self, item: GItem, failed: u8) -> bool {
        !self.params.has(Mutation::FailoverRefusesOddHome)
            && HomeRegions::in_region(super::aws_region(failed))
                .default_home(super::aws_region(super::DEFAULT_HOME))
                .exact_ownership(&super::home_seen(item.home))
                .is_some()
    }

    /// Whether region `r`'s sweep holds a claim on `m` (`SweepDueAt` is its lease).
    fn claimed(s: &GState, r: u8, m: u8) -> bool {
        s.sweeper[usize::from(r)].is_some_and(|sw| sw.msg == m)
    }

    /// Whether the failback to `to` returns `item` (`Status = PENDING AND HomeRegion =
    /// the survivor AND FailedOverFrom = to`).
    fn returns(item: GItem, to: u8) -> bool {
        item.status == Status::Pending && item.home == Some(other(to)) && item.failed_over
    }

    /// Region `r` crashes: its invocations vanish.
    pub(super) fn crash(s: &mut GState, r: u8) {
        s.life = Life::Down(r);
        s.publisher[usize::from(r)] = None;
        s.sweeper[usize::from(r)] = None;
    }

    /// The operator re-homes `m` into the surviving region, in its copy.
    pub(super) fn fail_over(&self, s: &mut GState, m: u8) {
        let Some(failed) = Self::failed_region(s) else {
            return;
        };
        let survivor = other(failed);
        let item = s.copies[usize::from(survivor)][usize::from(m)];
        let acted = (s.published[usize::from(m)] | s.dead_lettered[usize::from(m)]) & (1 << failed);
        if item.status == Status::Pending && acted != 0 {
            s.excused |= 1 << m;
        }
        let rehomed = GItem {
            status: Status::Pending,
            home: Some(survivor),
            failed_over: true,
            stamp: 0,
        };
        self.write(s, survivor, m, rehomed);
    }

    /// Whether the operator may set running region `r`'s default home to `to` now, as
    /// the runbook orders the change (docs/global-tables.md, "Moving the default home"):
    /// after it, no two running regions own the items without `HomeRegion`; and a region
    /// takes them (`to == r`) from a running one only once the old owner's writes have
    /// replicated into it. `DefaultHomeMovedInAnyOrder`: whenever `r` runs.
    fn may_move_default_home(&self, s: &GState, r: u8, to: u8) -> bool {
        if !Self::up(s, r) {
            return false;
        }
        let mut homes = s.default_home;
        homes[usize::from(r)] = to;
        let caught_up = s.in_flight.iter().all(|w| w.to != r);
        let taken_from_a_running_region = to == r && Self::up(s, other(r));
        self.runbook_allows(s, s.life, homes) && (caught_up || !taken_from_a_running_region)
    }

    /// Whether the runbook lets the operator bring about `life` with the default homes
    /// `homes`: no invocation started under a setting since changed still runs
    /// (`GState::unsettled`: the operator waits a function timeout), and at most one
    /// running region owns the items without `HomeRegion`.
    fn runbook_allows(&self, s: &GState, life: Life, homes: [u8; 2]) -> bool {
        if self.params.has(Mutation::DefaultHomeMovedInAnyOrder) {
            return true;
        }
        let owners = [super::A, super::B]
            .into_iter()
            .filter(|&r| life != Life::Down(r) && homes[usize::from(r)] == r)
            .count();
        s.unsettled == 0 && owners <= 1
    }

    /// Clears the regions none of whose invocations runs any more from
    /// `GState::unsettled`.
    pub(super) fn settle(s: &mut GState) {
        for r in [super::A, super::B] {
            let ri = usize::from(r);
            if s.publisher[ri].is_none() && s.sweeper[ri].is_none() {
                s.unsettled &= !(1 << r);
            }
        }
    }

    /// The operator sets region `r`'s default home to `to`. The survivor taking it, while
    /// the failed region is down or after it came back, is a failover of the items
    /// without `HomeRegion`: what the failed region published or dead-lettered and the
    /// survivor's copy still shows `PENDING` (its mark lost in the crash, or not
    /// replicated) may go again, the duplicate a failover allows (`GState::excused`).
    pub(super) fn move_default_home(&self, s: &mut GState, r: u8, to: u8) {
        if Self::failed_region(s) == Some(other(r)) && to == r {
            let failed = other(r);
            for m in 0..self.n() {
                let item = s.copies[usize::from(r)][usize::from(m)];
                let acted =
                    (s.published[usize::from(m)] | s.dead_lettered[usize::from(m)]) & (1 << failed);
                let unhomed = super::home_text(item.home).is_none_or(|h| h.trim().is_empty());
                if item.status == Status::Pending && unhomed && acted != 0 {
                    s.excused |= 1 << m;
                }
            }
        }
        s.default_home[usize::from(r)] = to;
        s.home_moves += 1;
        s.unsettled |= 1 << r;
    }

    /// The failed region's functions start again.
    pub(super) fn recover(s: &mut GState) {
        if let Life::Down(failed) = s.life {
            s.life = Life::Back(failed);
        }
    }

    /// The operator returns `m` to the recovered region (in the survivor's copy; in the
    /// recovered region's with `FailbackFromRecoveredRegion`).
    pub(super) fn fail_back(&self, s: &mut GState, m: u8) {
        let Some(failed) = Self::failed_region(s) else {
            return;
        };
        let at = if self.params.has(Mutation::FailbackFromRecoveredRegion) {
            failed
        } else {
            other(failed)
        };
        let item = s.copies[usize::from(at)][usize::from(m)];
        let back = GItem {
            home: Some(failed),
            failed_over: false,
            ..item
        };
        self.write(s, at, m, back);
    }
}
