//! Global tables (issue 25, `docs/global-tables.md`): the outbox table replicated in two
//! regions, `A` and `B`, with asynchronous replication and last-writer-wins per item,
//! the outbox deployed in each, a crash of region `A`, the operator's failover into
//! `B` and, optionally, `A`'s recovery and the failback.
//!
//! A separate model from [`crate::OutboxModel`] (whose state spaces do not grow): what
//! one region's publisher and sweeper do inside their region — batches, faults, the
//! order fence, the event source mapping's retries — that model checks; this one keeps
//! of each function the calls that decide *which region* publishes: the stream
//! publisher's filter on the `INSERT` image and its status read, a sweep's claim
//! (conditional on ownership), the send, the conditional `SENT` mark, the failover's and
//! the failback's conditional re-homes.
//!
//! - **Replicas.** Each region holds its own copy of each item ([`GItem`]). A write
//!   applies to the local copy at once and is replicated later as a separate step
//!   ([`GAction::Replicate`]), in any order across items and writes (reordered,
//!   delayed); the copy keeps the write with the later timestamp (last writer wins,
//!   whole item). Timestamps are one clock for both regions (a write made after another
//!   in the run has the later one; a clock skew that lets an earlier write win is left
//!   out), kept as ranks so that equal situations are one state.
//! - **Streams.** A region's stream carries an `INSERT` when an item first lands in its
//!   copy, by a local commit or a replicated write, with the image that landed. A
//!   re-home is a `MODIFY`: no publisher sees it, the sweeper does.
//! - **Ownership** ([`owner`]): the item's `HomeRegion`, else the default home region
//!   (`A`): the model calls `dynamodb_outbox_core::HomeRegions::owns`. The stream publisher
//!   keeps only owned images (its `FilterCriteria`) and publishes only what its status
//!   read finds `PENDING` *and owned* in its copy; a sweep claims only what its copy
//!   shows `PENDING` and owned (one conditional write).
//! - **A crash of `A`** stops its functions (their invocations vanish; its stream's
//!   checkpoint stays); its writes already made replicate later or not before the
//!   failover (any order). Producers in `A` stop too.
//! - **Failover** ([`GAction::Failover`]): per item, in `B`'s copy, a conditional write
//!   `Status = PENDING AND` owned by `A` → `HomeRegion = B`, `FailedOverFrom = A`, due
//!   now. The operator runs it while `A` is down and `B`'s copy shows such an item (a
//!   late replicated `INSERT` of `A`'s is re-homed by running it again).
//! - **Recovery** ([`GAction::Recover`]): `A`'s functions start again once replication
//!   from `B` has caught up (the runbook's step); its stream mapping resumes at its
//!   checkpoint. **Failback** ([`GAction::Failback`]): per item, in `B`'s copy,
//!   `Status = PENDING AND HomeRegion = B AND FailedOverFrom = A AND` no claim
//!   (`SweepDueAt <= now`) → `HomeRegion = A`.
//! - **The consumer** applies a message's effect with a processed-message marker keyed
//!   by its `MessageId`, which every region's copy of the item carries (the producer
//!   wrote it; re-homes keep it): one transaction, so a second copy is a duplicate. Its
//!   concurrency and crashes are the single-region model's.
//!
//! Left out: faults and crashes of single invocations (the single-region model's), a
//! region's second sweeper, time (a claim's lease is current while its sweep runs: it
//! ends when the sweep does), `FAILED` (every message is good), crashes of `B`.

pub mod props;
mod run;

pub use run::{check, describe, find};

use crate::params::Mutation;
use crate::state::{Status, TxnState};
use dynamodb_outbox_core::HomeRegions;
use stateright::{Model, Property};

/// The region that may crash, and the default home region (of items without
/// `HomeRegion`).
pub const A: u8 = 0;
/// The surviving region.
pub const B: u8 = 1;
/// The default home region (`OUTBOX_DEFAULT_HOME_REGION`, the same in both
/// deployments).
pub const DEFAULT_HOME: u8 = A;

/// A region's name in traces.
pub fn region_name(r: u8) -> &'static str {
    if r == A { "A" } else { "B" }
}

/// A region's name as its deployment knows it (`OUTBOX_REGION`).
pub fn aws_region(r: u8) -> &'static str {
    if r == A { "us-east-1" } else { "eu-west-1" }
}

/// The region that owns an item whose `HomeRegion` is `home` (`None`: the attribute is
/// absent, a minimal producer's item), as the library decides it: the region whose
/// deployment's `HomeRegions::owns` says so (both deployments set the same default
/// home).
pub fn owner(home: Option<u8>) -> u8 {
    let owns = |r: u8| {
        HomeRegions::in_region(aws_region(r))
            .default_home(aws_region(DEFAULT_HOME))
            .owns(home.map(aws_region))
    };
    if owns(A) { A } else { B }
}

/// One message: its own transaction, committed in `region`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GMsg {
    /// The region whose producer commits it.
    pub region: u8,
    /// The library's producer writes `HomeRegion` (the region it commits in); a minimal
    /// producer does not, so the item is the default home's.
    pub homed: bool,
    /// Its transaction may roll back too.
    pub may_roll_back: bool,
}

impl GMsg {
    /// Committed in `region` by the library's producer.
    pub fn library(region: u8) -> Self {
        GMsg {
            region,
            homed: true,
            may_roll_back: false,
        }
    }

    /// Committed in `region` by a minimal producer (no `HomeRegion`).
    pub fn minimal(region: u8) -> Self {
        GMsg {
            homed: false,
            ..GMsg::library(region)
        }
    }

    /// Its transaction may also roll back.
    pub fn or_roll_back(mut self) -> Self {
        self.may_roll_back = true;
        self
    }
}

/// One two-region instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlobalParams {
    /// The messages.
    pub msgs: Vec<GMsg>,
    /// Region `A` may crash (and the operator fail over into `B`).
    pub crash: bool,
    /// After a crash, `A` may come back.
    pub recover: bool,
    /// After `A` came back, the operator may fail back.
    pub failback: bool,
    /// Deliberate bugs.
    pub mutations: Vec<Mutation>,
}

impl Default for GlobalParams {
    fn default() -> Self {
        GlobalParams {
            msgs: vec![GMsg::library(A), GMsg::library(B)],
            crash: true,
            recover: false,
            failback: false,
            mutations: Vec::new(),
        }
    }
}

impl GlobalParams {
    /// With this mutation too.
    pub fn mutated(mut self, m: Mutation) -> Self {
        self.mutations.push(m);
        self
    }

    /// Whether `m` is in force.
    pub fn has(&self, m: Mutation) -> bool {
        self.mutations.contains(&m)
    }
}

/// One region's copy of an outbox item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GItem {
    /// `Status` (`Absent`: not in this copy yet).
    pub status: Status,
    /// `HomeRegion` (`None`: absent).
    pub home: Option<u8>,
    /// `FailedOverFrom` is set (to `A`).
    pub failed_over: bool,
    /// The write's timestamp (a rank among the state's timestamps; 0: never written).
    pub stamp: u8,
}

const ABSENT: GItem = GItem {
    status: Status::Absent,
    home: None,
    failed_over: false,
    stamp: 0,
};

/// A write on its way to the other region's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InFlight {
    /// The region it goes to.
    pub to: u8,
    /// The item.
    pub msg: u8,
    /// The item as written: status, home, failed over, timestamp.
    pub item: (u8, Option<u8>, bool, u8),
}

fn pack(i: GItem) -> (u8, Option<u8>, bool, u8) {
    let s = match i.status {
        Status::Absent => 0,
        Status::Pending => 1,
        Status::Sent => 2,
        Status::Failed => 3,
        Status::Deleted => 4,
    };
    (s, i.home, i.failed_over, i.stamp)
}

fn unpack((s, home, failed_over, stamp): (u8, Option<u8>, bool, u8)) -> GItem {
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

/// The next call of an invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// The stream publisher's status read (`BatchGetItem`, consistent, local copy) and,
    /// when it found the item `PENDING` and its region's, the send to the destination.
    Send,
    /// The conditional `SENT` mark (`Status = PENDING`) in the local copy.
    Mark,
}

/// A region's running invocation: the stream publisher on one record, or a sweep that
/// claimed one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Running {
    /// Its message.
    pub msg: u8,
    /// Its next call.
    pub call: Call,
}

/// Region `A`'s functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Life {
    /// Running.
    Up,
    /// Crashed: no publisher, sweeper or producer runs there.
    Down,
    /// Running again after a crash.
    Back,
}

/// The two regions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GState {
    /// Each message's transaction.
    pub txns: Vec<TxnState>,
    /// Each region's copy of each item.
    pub copies: [Vec<GItem>; 2],
    /// Replicated writes not yet applied, sorted (their order is not an order).
    pub in_flight: Vec<InFlight>,
    /// Each region's stream: `(message, HomeRegion of the INSERT image)`.
    pub streams: [Vec<(u8, Option<u8>)>; 2],
    /// Each region's stream mapping's checkpoint.
    pub next: [u8; 2],
    /// Each region's stream publisher invocation.
    pub publisher: [Option<Running>; 2],
    /// Each region's sweep (one claimed item at a time).
    pub sweeper: [Option<Running>; 2],
    /// Region `A`'s functions.
    pub a: Life,
    /// Monitor: the regions that published each message (bit per region).
    pub published: Vec<u8>,
    /// Copies the destination accepted, per message.
    pub sends: Vec<u8>,
    /// Effects applied, per message (the consumer's marker makes a second copy a
    /// duplicate).
    pub effects: Vec<u8>,
    /// Monitor: messages a failover re-homed while `B`'s copy showed them `PENDING`
    /// after `A` had published them (its `SENT` mark had not replicated): `B` may
    /// publish them again, the duplicate a failover allows (bit per message).
    pub excused: u32,
    /// Monitor: messages both regions published, the second time as `excused` allows.
    pub failover_duplicates: u32,
    /// Monitor: a region published a message its copy did not show as its own.
    pub foreign: bool,
    /// Monitor: a second region published a message other than as `excused` allows.
    pub twice: bool,
}

/// One step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GAction {
    /// The producer of message `n`'s region commits it.
    Commit(u8),
    /// Message `n`'s transaction rolls back.
    RollBack(u8),
    /// In-flight write `n` reaches the other region's copy.
    Replicate(u8),
    /// A region's stream mapping takes its next record (dropped by the filter, or
    /// handed to the publisher).
    Deliver(u8),
    /// A region's stream publisher makes its next call.
    Publish(u8),
    /// A region's sweep claims message `n` (a conditional write in its copy:
    /// `PENDING` and its own) and sends it.
    Claim(u8, u8),
    /// A region's sweep marks its message `SENT`.
    Sweep(u8),
    /// Region `A` crashes.
    Crash,
    /// The operator re-homes message `n` into `B` (conditional write in `B`'s copy).
    Failover(u8),
    /// Region `A`'s functions start again.
    Recover,
    /// The operator returns message `n` to `A` (conditional write in `B`'s copy).
    Failback(u8),
}

/// The two-region model, for stateright.
#[derive(Debug, Clone)]
pub struct GlobalModel {
    /// What is explored.
    pub params: GlobalParams,
}

impl GlobalModel {
    /// The model of `params`.
    pub fn new(params: GlobalParams) -> Self {
        GlobalModel { params }
    }

    fn n(&self) -> u8 {
        u8::try_from(self.params.msgs.len()).unwrap_or(0)
    }

    /// Whether region `r`'s functions run.
    pub fn up(s: &GState, r: u8) -> bool {
        r == B || s.a != Life::Down
    }

    /// Whether message `m` committed.
    pub fn committed(s: &GState, m: u8) -> bool {
        s.txns[usize::from(m)] == TxnState::Committed
    }

    /// Whether region `r`'s functions act on an item whose `HomeRegion` is `home`
    /// (without the filter, `PublishOnEveryReplica`, on every item).
    fn acts_on(&self, r: u8, home: Option<u8>) -> bool {
        self.params.has(Mutation::PublishOnEveryReplica) || owner(home) == r
    }

    /// A write of `item` to region `r`'s copy of `m`: a new timestamp, an `INSERT` on
    /// `r`'s stream if the item was not there, and its replication on its way.
    fn write(&self, s: &mut GState, r: u8, m: u8, mut item: GItem) {
        item.stamp = Self::next_stamp(s);
        let old = s.copies[usize::from(r)][usize::from(m)];
        if old.status == Status::Absent {
            self.on_stream(s, r, m, item.home);
        }
        s.copies[usize::from(r)][usize::from(m)] = item;
        let w = InFlight {
            to: 1 - r,
            msg: m,
            item: pack(item),
        };
        let at = s.in_flight.binary_search(&w).unwrap_or_else(|i| i);
        s.in_flight.insert(at, w);
    }

    /// An `INSERT` of `m` whose image has `HomeRegion` `home` lands on region `r`'s
    /// stream; the mapping's `FilterCriteria` passes only `r`'s own (all of them
    /// without the filter, `PublishOnEveryReplica`), so the others never reach a
    /// publisher (and take no step here).
    fn on_stream(&self, s: &mut GState, r: u8, m: u8, home: Option<u8>) {
        if self.acts_on(r, home) {
            s.streams[usize::from(r)].push((m, home));
        }
    }

    fn next_stamp(s: &GState) -> u8 {
        let copies = s.copies.iter().flatten().map(|i| i.stamp);
        let flying = s.in_flight.iter().map(|w| w.item.3);
        copies.chain(flying).max().unwrap_or(0) + 1
    }

    /// Timestamps are only compared: keep their ranks, so that runs that differ only in
    /// how many writes came before are one state.
    fn normalise(s: &mut GState) {
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

    /// Region `r`'s conditional `SENT` mark (`Status = PENDING`) in its copy.
    fn mark_sent(&self, s: &mut GState, r: u8, m: u8) {
        let item = s.copies[usize::from(r)][usize::from(m)];
        if item.status == Status::Pending {
            self.write(
                s,
                r,
                m,
                GItem {
                    status: Status::Sent,
                    ..item
                },
            );
        }
    }

    /// Region `r` sends `m`; the destination accepts it, the consumer applies it once.
    fn send(s: &mut GState, r: u8, m: u8) {
        let mine = owner(s.copies[usize::from(r)][usize::from(m)].home) == r;
        if !mine {
            s.foreign = true;
        }
        let other = 1 - r;
        if s.published[usize::from(m)] & (1 << other) != 0 {
            let allowed = other == A && r == B && s.excused & (1 << m) != 0;
            if allowed {
                s.failover_duplicates |= 1 << m;
            } else {
                s.twice = true;
            }
        }
        s.published[usize::from(m)] |= 1 << r;
        s.sends[usize::from(m)] = s.sends[usize::from(m)].saturating_add(1);
        if s.effects[usize::from(m)] == 0 {
            s.effects[usize::from(m)] = 1;
        }
    }

    /// Whether region `r`'s sweep holds a claim on `m` (`SweepDueAt` is its lease).
    fn claimed(s: &GState, r: u8, m: u8) -> bool {
        s.sweeper[usize::from(r)].is_some_and(|sw| sw.msg == m)
    }

    /// Whether the failback returns `item` (`Status = PENDING AND HomeRegion = B AND
    /// FailedOverFrom = A`).
    fn returns(item: GItem) -> bool {
        item.status == Status::Pending && item.home == Some(B) && item.failed_over
    }

    /// Whether nothing can happen any more.
    pub fn quiescent(&self, s: &GState) -> bool {
        let mut actions = Vec::new();
        self.actions(s, &mut actions);
        actions.is_empty()
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
            a: Life::Up,
            published: vec![0; n],
            sends: vec![0; n],
            effects: vec![0; n],
            excused: 0,
            failover_duplicates: 0,
            foreign: false,
            twice: false,
        }]
    }

    fn actions(&self, s: &GState, actions: &mut Vec<GAction>) {
        let u = |i: usize| u8::try_from(i).unwrap_or(u8::MAX);
        for m in 0..self.n() {
            let msg = self.params.msgs[usize::from(m)];
            if s.txns[usize::from(m)] == TxnState::Open && Self::up(s, msg.region) {
                actions.push(GAction::Commit(m));
                if msg.may_roll_back {
                    actions.push(GAction::RollBack(m));
                }
            }
        }
        for i in 0..s.in_flight.len() {
            actions.push(GAction::Replicate(u(i)));
        }
        for r in [A, B] {
            if !Self::up(s, r) {
                continue;
            }
            let ri = usize::from(r);
            match s.publisher[ri] {
                Some(_) => actions.push(GAction::Publish(r)),
                None if usize::from(s.next[ri]) < s.streams[ri].len() => {
                    actions.push(GAction::Deliver(r));
                }
                None => {}
            }
            match s.sweeper[ri] {
                Some(_) => actions.push(GAction::Sweep(r)),
                None => {
                    for m in 0..self.n() {
                        let item = s.copies[ri][usize::from(m)];
                        if item.status == Status::Pending && self.acts_on(r, item.home) {
                            actions.push(GAction::Claim(r, m));
                        }
                    }
                }
            }
        }
        let p = &self.params;
        match s.a {
            Life::Up if p.crash => actions.push(GAction::Crash),
            Life::Down => {
                for m in 0..self.n() {
                    let item = s.copies[usize::from(B)][usize::from(m)];
                    let rehome = owner(item.home) == A
                        && (item.status == Status::Pending
                            || (p.has(Mutation::UnconditionalFailover)
                                && item.status != Status::Absent));
                    if rehome {
                        actions.push(GAction::Failover(m));
                    }
                }
                let caught_up = s.in_flight.iter().all(|w| w.to != A);
                let from_a = p.failback && p.has(Mutation::FailbackFromRecoveredRegion);
                let mut returning = false;
                if from_a && caught_up {
                    for m in 0..self.n() {
                        if Self::returns(s.copies[usize::from(A)][usize::from(m)]) {
                            returning = true;
                            actions.push(GAction::Failback(m));
                        }
                    }
                }
                let ready = (caught_up && !returning) || p.has(Mutation::RecoverBeforeCatchUp);
                if p.recover && ready {
                    actions.push(GAction::Recover);
                }
            }
            Life::Back if p.failback && !p.has(Mutation::FailbackFromRecoveredRegion) => {
                for m in 0..self.n() {
                    let item = s.copies[usize::from(B)][usize::from(m)];
                    let free = !Self::claimed(s, B, m) || p.has(Mutation::FailbackIgnoresClaim);
                    if Self::returns(item) && free {
                        actions.push(GAction::Failback(m));
                    }
                }
            }
            _ => {}
        }
    }

    fn next_state(&self, last: &GState, action: GAction) -> Option<GState> {
        let mut s = last.clone();
        match action {
            GAction::Commit(m) => {
                s.txns[usize::from(m)] = TxnState::Committed;
                let msg = self.params.msgs[usize::from(m)];
                let item = GItem {
                    status: Status::Pending,
                    home: msg.homed.then_some(msg.region),
                    failed_over: false,
                    stamp: 0,
                };
                self.write(&mut s, msg.region, m, item);
            }
            GAction::RollBack(m) => s.txns[usize::from(m)] = TxnState::RolledBack,
            GAction::Replicate(i) => {
                let w = s.in_flight.remove(usize::from(i));
                let incoming = unpack(w.item);
                let here = &mut s.copies[usize::from(w.to)][usize::from(w.msg)];
                if incoming.stamp > here.stamp {
                    let inserted = here.status == Status::Absent;
                    *here = incoming;
                    if inserted {
                        self.on_stream(&mut s, w.to, w.msg, incoming.home);
                    }
                }
            }
            GAction::Deliver(r) => {
                let ri = usize::from(r);
                let (m, _) = s.streams[ri][usize::from(s.next[ri])];
                s.publisher[ri] = Some(Running {
                    msg: m,
                    call: Call::Send,
                });
            }
            GAction::Publish(r) => {
                let ri = usize::from(r);
                let run = s.publisher[ri]?;
                let m = run.msg;
                match run.call {
                    Call::Send => {
                        let item = s.copies[ri][usize::from(m)];
                        let owned = self.acts_on(r, item.home)
                            || self.params.has(Mutation::OwnershipFromImage);
                        if item.status == Status::Pending && owned {
                            Self::send(&mut s, r, m);
                            s.publisher[ri] = Some(Running {
                                msg: m,
                                call: Call::Mark,
                            });
                        } else {
                            s.publisher[ri] = None;
                            s.next[ri] += 1;
                        }
                    }
                    Call::Mark => {
                        self.mark_sent(&mut s, r, m);
                        s.publisher[ri] = None;
                        s.next[ri] += 1;
                    }
                }
            }
            GAction::Claim(r, m) => {
                Self::send(&mut s, r, m);
                s.sweeper[usize::from(r)] = Some(Running {
                    msg: m,
                    call: Call::Mark,
                });
            }
            GAction::Sweep(r) => {
                let ri = usize::from(r);
                let run = s.sweeper[ri]?;
                self.mark_sent(&mut s, r, run.msg);
                s.sweeper[ri] = None;
            }
            GAction::Crash => {
                s.a = Life::Down;
                s.publisher[usize::from(A)] = None;
                s.sweeper[usize::from(A)] = None;
            }
            GAction::Failover(m) => {
                let item = s.copies[usize::from(B)][usize::from(m)];
                if item.status == Status::Pending && s.published[usize::from(m)] & (1 << A) != 0 {
                    s.excused |= 1 << m;
                }
                let rehomed = GItem {
                    status: Status::Pending,
                    home: Some(B),
                    failed_over: true,
                    stamp: 0,
                };
                self.write(&mut s, B, m, rehomed);
            }
            GAction::Recover => s.a = Life::Back,
            GAction::Failback(m) => {
                let at = if self.params.has(Mutation::FailbackFromRecoveredRegion) {
                    A
                } else {
                    B
                };
                let item = s.copies[usize::from(at)][usize::from(m)];
                let back = GItem {
                    home: Some(A),
                    failed_over: false,
                    ..item
                };
                self.write(&mut s, at, m, back);
            }
        }
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
