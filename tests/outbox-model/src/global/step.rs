//! The model's steps: producers, replication, each region's stream publisher and
//! sweep, and the outage (`ops.rs`).

use super::{ABSENT, Call, GAction, GItem, GState, GlobalModel, Life, Running, describe, props};
use crate::params::Mutation;
use crate::state::{Status, TxnState};
use stateright::{Model, Property};

impl GlobalModel {
    fn producer_actions(&self, s: &GState, actions: &mut Vec<GAction>) {
        for m in 0..self.n() {
            let msg = self.params.msgs[usize::from(m)];
            // One aggregate's transactions commit in order (`GlobalParams::fifo`).
            let in_turn =
                !self.params.fifo || (0..m).all(|e| s.txns[usize::from(e)] != TxnState::Open);
            let in_time = !msg.after_outage || matches!(s.life, Life::Back(_));
            if s.txns[usize::from(m)] == TxnState::Open
                && Self::up(s, msg.region)
                && in_turn
                && in_time
            {
                actions.push(GAction::Commit(m));
                if msg.may_roll_back {
                    actions.push(GAction::RollBack(m));
                }
            }
        }
    }

    /// Region `r`'s stream publisher and sweep, when `r` is up.
    fn region_actions(&self, s: &GState, r: u8, actions: &mut Vec<GAction>) {
        if !Self::up(s, r) {
            return;
        }
        let ri = usize::from(r);
        match s.publisher[ri] {
            Some(_) => actions.push(GAction::Publish(r)),
            None if usize::from(s.next[ri]) < s.streams[ri].len() => {
                actions.push(GAction::Deliver(r));
            }
            None => {}
        }
        if s.sweeper[ri].is_some() {
            actions.push(GAction::Sweep(r));
            return;
        }
        for m in 0..self.n() {
            if self.claimable(s, r, m) {
                actions.push(GAction::Claim(r, m));
            }
        }
    }

    /// Whether region `r`'s sweep may claim `m`: its copy shows it `PENDING` and `r`'s
    /// (with `PoisonBeforeOwnership`, also anyone's that `r`'s destination refuses:
    /// a sweep that gives up on poison before it checks whose the item is).
    fn claimable(&self, s: &GState, r: u8, m: u8) -> bool {
        let item = s.copies[usize::from(r)][usize::from(m)];
        let poison_anyway = self.params.has(Mutation::PoisonBeforeOwnership)
            && self.params.msgs[usize::from(m)].refused_by(r);
        let ours = self.acts_on(s, r, item.home)
            && (self.params.has(Mutation::PublishOnEveryReplica)
                || self.claim_accepts(s, r, item.home));
        item.status == Status::Pending && (ours || poison_anyway)
    }

    fn commit(&self, s: &mut GState, m: u8) {
        s.txns[usize::from(m)] = TxnState::Committed;
        let msg = self.params.msgs[usize::from(m)];
        let item = GItem {
            status: Status::Pending,
            home: msg.odd_home.or(msg.homed.then_some(msg.region)),
            failed_over: false,
            stamp: 0,
        };
        self.write(s, msg.region, m, item);
    }

    /// Region `r`'s stream publisher makes its next call; once it is done with its
    /// record, the mapping's checkpoint moves past it.
    fn publish(&self, s: &mut GState, r: u8) {
        let ri = usize::from(r);
        let Some(run) = s.publisher[ri] else { return };
        s.publisher[ri] = self.finish(s, r, run);
        if s.publisher[ri].is_none() {
            s.next[ri] += 1;
        }
    }
}

impl Model for GlobalModel {
    type State = GState;
    type Action = GAction;

    fn init_states(&self) -> Vec<GState> {
        let n = self.params.msgs.len();
        vec![GState {
            txns: vec![TxnState::Open; n],
            copies: [vec![ABSENT; n], vec![ABSENT; n]],
            in_flight: Vec::new(),
            streams: [Vec::new(), Vec::new()],
            next: [0, 0],
            publisher: [None, None],
            sweeper: [None, None],
            life: Life::Up,
            published: vec![0; n],
            dead_lettered: vec![0; n],
            sends: vec![0; n],
            effects: vec![0; n],
            excused: 0,
            failover_duplicates: 0,
            failed_marks: 0,
            foreign: false,
            twice: false,
            twice_dead: false,
            sent_after_failed: false,
            overtaken: false,
            default_home: [super::DEFAULT_HOME; 2],
            home_moves: 0,
            unsettled: 0,
            unstreamed: false,
        }]
    }

    fn actions(&self, s: &GState, actions: &mut Vec<GAction>) {
        self.producer_actions(s, actions);
        for i in 0..s.in_flight.len() {
            actions.push(GAction::Replicate(u8::try_from(i).unwrap_or(u8::MAX)));
        }
        for r in [super::A, super::B] {
            self.region_actions(s, r, actions);
        }
        self.outage_actions(s, actions);
    }

    fn next_state(&self, last: &GState, action: GAction) -> Option<GState> {
        let mut s = last.clone();
        match action {
            GAction::Commit(m) => self.commit(&mut s, m),
            GAction::RollBack(m) => s.txns[usize::from(m)] = TxnState::RolledBack,
            GAction::Replicate(i) => self.replicate(&mut s, i),
            GAction::Deliver(r) => {
                let ri = usize::from(r);
                let (m, _) = s.streams[ri][usize::from(s.next[ri])];
                s.publisher[ri] = Some(Running {
                    msg: m,
                    call: Call::Send,
                });
            }
            GAction::Publish(r) => self.publish(&mut s, r),
            GAction::Claim(r, m) => {
                // Held by the order fence: the claim is given back (the sweep
                // reschedules it), nothing sent.
                if !self.fenced_in(&s, r, m) {
                    let call = self.attempt(&mut s, r, m);
                    s.sweeper[usize::from(r)] = Some(Running { msg: m, call });
                }
            }
            GAction::Sweep(r) => {
                let run = s.sweeper[usize::from(r)]?;
                s.sweeper[usize::from(r)] = self.finish(&mut s, r, run);
            }
            GAction::Crash(r) => Self::crash(&mut s, r),
            GAction::Failover(m) => self.fail_over(&mut s, m),
            GAction::Recover => Self::recover(&mut s),
            GAction::MoveDefaultHome(r, to) => self.move_default_home(&mut s, r, to),
            GAction::Failback(m) => self.fail_back(&mut s, m),
        }
        Self::settle(&mut s);
        Self::normalise(&mut s);
        Some(s)
    }

    fn format_action(&self, action: &GAction) -> String {
        describe(action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        props::all()
    }
}
