//! Global tables (issue 25, `docs/global-tables.md`): the outbox table replicated in two
//! regions, `A` and `B`, with asynchronous replication and last-writer-wins per item,
//! the outbox deployed in each, a crash of either region (at most one a run), the
//! operator's failover into the other and, optionally, the failed region's recovery and
//! the failback.
//!
//! A separate model from [`crate::OutboxModel`] (whose state spaces do not grow): what
//! one region's publisher and sweeper do inside their region — batches, faults, the
//! order fence, the event source mapping's retries — that model checks; this one keeps
//! of each function the calls that decide *which region* publishes or gives up on a
//! message: the stream publisher's filter on the `INSERT` image and its status read, a
//! sweep's claim (conditional on ownership), the send, the conditional `SENT` mark, a
//! poison message's dead-letter copy and conditional `FAILED` mark, the failover's and
//! the failback's conditional re-homes.
//!
//! - **Replicas** (`replica.rs`). Each region holds its own copy of each item
//!   ([`GItem`]). A write applies to the local copy at once and is replicated later as
//!   a separate step ([`GAction::Replicate`]), in any order across items and writes
//!   (reordered, delayed); the copy keeps the write with the later timestamp (last
//!   writer wins, whole item). Timestamps are one clock for both regions (a write made
//!   after another in the run has the later one; a clock skew that lets an earlier
//!   write win is left out), kept as ranks so that equal situations are one state.
//! - **Streams.** A region's stream carries an `INSERT` when an item first lands in its
//!   copy, by a local commit or a replicated write, with the image that landed. A
//!   re-home is a `MODIFY`: no publisher sees it, the sweeper does.
//! - **Ownership** ([`owner`]): the item's `HomeRegion`, else the default home region
//!   (`A`, which the operator may move: `GlobalParams::move_default_home`): the model
//!   calls `dynamodb_outbox_core::HomeRegions::owns`. The stream publisher's
//!   `FilterCriteria` keep its region's images and those without `HomeRegion`; it
//!   publishes only what its status read finds `PENDING` *and owned* in its copy; a
//!   sweep claims only what its copy shows `PENDING` and owned (one conditional write).
//! - **Poison** (`attempt.rs`): a message a region's destination refuses
//!   ([`GMsg::refused_in`], [`GMsg::poison`]) is judged by the library's
//!   `policy::judge_entry` (a permanent refusal: poison), copied to that region's
//!   dead-letter queue (`policy::judge_dead_letter` on the copy's answer) and marked
//!   `FAILED` (conditional: `Status = PENDING`), by whichever path sent it, as the
//!   single-region model's publish path does.
//! - **A crash** ([`GAction::Crash`]) of either region (as [`Crash`] allows, at most
//!   one a run) stops its functions (their invocations vanish; its stream's checkpoint
//!   stays); its writes already made replicate later or not before the failover (any
//!   order). Producers there stop too.
//! - **Failover** (`ops.rs`, [`GAction::Failover`]): per item, in the surviving
//!   region's copy, a conditional write `Status = PENDING AND` owned by the failed
//!   region (its `HomeRegion`, or none when it is the default home: `outbox-ops
//!   failover --default-home`) → `HomeRegion` = the survivor, `FailedOverFrom` = the
//!   failed region, due now. The operator runs it while the region is down and the
//!   survivor's copy shows such an item (a late replicated `INSERT` is re-homed by
//!   running it again).
//! - **Recovery** ([`GAction::Recover`]): the failed region's functions start again
//!   once replication into it has caught up (the runbook's step); its stream mapping
//!   resumes at its checkpoint. **Failback** ([`GAction::Failback`]): per item, in the
//!   survivor's copy, `Status = PENDING AND HomeRegion = survivor AND FailedOverFrom =
//!   recovered AND` no claim (`SweepDueAt <= now`) → `HomeRegion` = the recovered
//!   region.
//! - **The consumer** applies a message's effect with a processed-message marker keyed
//!   by its `MessageId`, which every region's copy of the item carries (the producer
//!   wrote it; re-homes keep it): one transaction, so a second copy is a duplicate. Its
//!   concurrency and crashes are the single-region model's.
//!
//! Left out: faults and crashes of single invocations (the single-region model's), a
//! region's second sweeper, time (a claim's lease is current while its sweep runs: it
//! ends when the sweep does), the attempt limit (`policy::exhausted`: a message that
//! fails transiently until it is used up takes the same dead-letter path as a refused
//! one, after the same claim; the single-region model counts attempts), a redrive.

mod attempt;
mod fence;
mod ops;
pub mod props;
mod replica;
mod run;
mod step;

pub use crate::trace::{check, find};
pub use run::describe;

use crate::params::{Mutation, Params, Txn};
use crate::state::{Status, TxnState};
use dynamodb_outbox_core::HomeRegions;
use dynamodb_outbox_core::home::HomeSeen;

/// Region `A`: the default home region (of items without `HomeRegion`).
pub const A: u8 = 0;
/// Region `B`.
pub const B: u8 = 1;
/// The default home region both deployments are deployed with
/// (`OUTBOX_DEFAULT_HOME_REGION`); the operator may move it at run time
/// (`GlobalParams::move_default_home`, `GState::default_home`).
pub const DEFAULT_HOME: u8 = A;

/// The other region.
pub fn other(r: u8) -> u8 {
    1 - r
}

/// A region's name in traces.
pub fn region_name(r: u8) -> &'static str {
    if r == A { "A" } else { "B" }
}

/// A region's name as its deployment knows it (`OUTBOX_REGION`).
pub fn aws_region(r: u8) -> &'static str {
    if r == A { "us-east-1" } else { "eu-west-1" }
}

/// `HomeRegion` codes beyond the regions `A` and `B` (`GItem::home`): odd shapes a
/// producer that is not the library may write (issue 36, finding 5): `NULL`.
pub const HOME_NULL: u8 = 2;
/// `""`.
pub const HOME_EMPTY: u8 = 3;
/// The region's name padded with spaces: `HOME_PADDED + r` (`" us-east-1 "`).
pub const HOME_PADDED: u8 = 4;

/// The string `HomeRegions::owns` is given for `home` (a `NULL` is no string).
pub fn home_text(home: Option<u8>) -> Option<String> {
    match home? {
        h if h == A || h == B => Some(aws_region(h).to_owned()),
        HOME_NULL => None,
        HOME_EMPTY => Some(String::new()),
        h => Some(format!(" {} ", aws_region(h - HOME_PADDED))),
    }
}

/// What the real `HomeSeen::of` reads of `home`.
pub fn home_seen(home: Option<u8>) -> HomeSeen {
    match home {
        None => HomeSeen::Absent,
        Some(HOME_NULL) => HomeSeen::Other("NULL"),
        h => HomeSeen::Text(home_text(h).unwrap_or_default()),
    }
}

/// The region `home` names exactly (what a condition `#home = :region` or a filter
/// `HomeRegion.S = [region]` matches).
pub fn exact_region(home: Option<u8>) -> Option<u8> {
    home.filter(|&h| h == A || h == B)
}

/// The region that owns an item whose `HomeRegion` is `home` (`None`: the attribute is
/// absent, a minimal producer's item), as the library decides it: the region whose
/// deployment's `HomeRegions::owns` says so (both deployments set the same default
/// home).
pub fn owner(home: Option<u8>) -> u8 {
    let owns = |r: u8| {
        HomeRegions::in_region(aws_region(r))
            .default_home(aws_region(DEFAULT_HOME))
            .owns(home_text(home).as_deref())
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
    /// The regions whose destination refuses it for good (bit per region): poison
    /// there.
    pub refused: u8,
    /// It is committed only once the failed region runs again (a new message after an
    /// outage).
    pub after_outage: bool,
    /// The `HomeRegion` it is written with, when not the library's or none: an odd
    /// shape (`HOME_NULL`, `HOME_EMPTY`, `HOME_PADDED + region`).
    pub odd_home: Option<u8>,
}

impl GMsg {
    /// Committed in `region` by the library's producer.
    pub fn library(region: u8) -> Self {
        GMsg {
            region,
            homed: true,
            may_roll_back: false,
            refused: 0,
            after_outage: false,
            odd_home: None,
        }
    }

    /// Committed in `region` by a minimal producer (no `HomeRegion`).
    pub fn minimal(region: u8) -> Self {
        GMsg {
            homed: false,
            ..GMsg::library(region)
        }
    }

    /// Written with `HomeRegion` in this odd shape (`Home::Null`, `Empty`, `Padded`: its
    /// own region padded).
    pub fn home_shape(mut self, home: crate::params::Home) -> Self {
        use crate::params::Home;
        self.odd_home = match home {
            Home::Null => Some(HOME_NULL),
            Home::Empty => Some(HOME_EMPTY),
            Home::Padded => Some(HOME_PADDED + self.region),
            Home::Absent | Home::Region => None,
        };
        self.homed = home == Home::Region;
        self
    }

    /// Committed only once the failed region is back.
    pub fn after_outage(mut self) -> Self {
        self.after_outage = true;
        self
    }

    /// Its transaction may also roll back.
    pub fn or_roll_back(mut self) -> Self {
        self.may_roll_back = true;
        self
    }

    /// Region `r`'s destination refuses it (a permanent error: a message too large for
    /// it, a schema it rejects): poison when `r` sends it.
    pub fn refused_in(mut self, r: u8) -> Self {
        self.refused |= 1 << r;
        self
    }

    /// Both regions' destinations refuse it.
    pub fn poison(self) -> Self {
        self.refused_in(A).refused_in(B)
    }

    /// Whether region `r`'s destination refuses it.
    pub fn refused_by(&self, r: u8) -> bool {
        self.refused & (1 << r) != 0
    }
}

/// Which region may crash in a run (at most one does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Crash {
    /// Neither.
    Never,
    /// This one.
    Of(u8),
    /// Either (the runs where `A` crashes and those where `B` does).
    Either,
}

impl Crash {
    /// Whether region `r` may crash.
    pub fn may_crash(self, r: u8) -> bool {
        match self {
            Crash::Never => false,
            Crash::Of(c) => c == r,
            Crash::Either => true,
        }
    }
}

/// One two-region instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlobalParams {
    /// The messages.
    pub msgs: Vec<GMsg>,
    /// The region that may crash (and the operator fail over into the other).
    pub crash: Crash,
    /// After a crash, the failed region may come back.
    pub recover: bool,
    /// After it came back, the operator may fail back.
    pub failback: bool,
    /// The messages are one aggregate's, committed in order, routed to FIFO
    /// destinations: each region's stream publisher and sweep read the aggregate's
    /// pending messages first and hold a message behind an earlier one still pending
    /// (the order fence, `global/fence.rs`), and the property *per-aggregate order on
    /// FIFO* is checked across both regions' destinations.
    pub fifo: bool,
    /// The operator's machine runs ahead of the regions' clocks by more than a lease
    /// (issue 36, finding 7): a failback that compared `SweepDueAt` with the operator's
    /// `now` (`Mutation::FailbackComparesOperatorClock`) took a message a sweep of the
    /// surviving region still held; the failback now holds the entry to the due time
    /// it read, on no one's clock.
    pub operator_clock_ahead: bool,
    /// The operator may change `OUTBOX_DEFAULT_HOME_REGION` on a running region's
    /// functions while the other region is down or after (the runbook's step when the
    /// default home fails), twice at most a run, in the runbook's order
    /// (`GlobalModel::may_move_default_home`; `Mutation::DefaultHomeMovedInAnyOrder`:
    /// in any order). The stream filter does not depend on it (issue 36, finding 9;
    /// `Mutation::FilterNamesDefaultHome`: it did).
    pub move_default_home: bool,
    /// Deliberate bugs.
    pub mutations: Vec<Mutation>,
}

impl Default for GlobalParams {
    fn default() -> Self {
        GlobalParams {
            msgs: vec![GMsg::library(A), GMsg::library(B)],
            crash: Crash::Of(A),
            recover: false,
            failback: false,
            fifo: false,
            operator_clock_ahead: false,
            move_default_home: false,
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
    /// `FailedOverFrom` is set (to the region other than `home`: there are two).
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

/// The next call of an invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// The stream publisher's status read (`BatchGetItem`, consistent, local copy) and,
    /// when it found the item `PENDING` and its region's, the send to the destination.
    Send,
    /// The conditional `SENT` mark (`Status = PENDING`) in the local copy.
    Mark,
    /// The send was refused for good: the copy to the region's dead-letter queue.
    DeadLetter,
    /// The conditional `FAILED` mark (`Status = PENDING`) in the local copy.
    MarkFailed,
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

/// Where the run is in the outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Life {
    /// Both regions run.
    Up,
    /// This region crashed: no publisher, sweeper or producer runs there.
    Down(u8),
    /// This region crashed and runs again.
    Back(u8),
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
    /// The outage.
    pub life: Life,
    /// Monitor: the regions that published each message (bit per region).
    pub published: Vec<u8>,
    /// Monitor: the regions that copied each message to their dead-letter queue (bit
    /// per region).
    pub dead_lettered: Vec<u8>,
    /// Copies the destination accepted, per message.
    pub sends: Vec<u8>,
    /// Effects applied, per message (the consumer's marker makes a second copy a
    /// duplicate).
    pub effects: Vec<u8>,
    /// Monitor: messages a failover re-homed while the survivor's copy showed them
    /// `PENDING` after the failed region had published them or copied them to its
    /// dead-letter queue (its `SENT` or `FAILED` mark had not replicated): the survivor
    /// may publish or dead-letter them again, the duplicate a failover allows (bit per
    /// message).
    pub excused: u32,
    /// Monitor: messages both regions published, the second time as `excused` allows.
    pub failover_duplicates: u32,
    /// Monitor: messages some region marked `FAILED` (bit per message).
    pub failed_marks: u32,
    /// Monitor: a region published a message its copy did not show as its own.
    pub foreign: bool,
    /// Monitor: a second region published a message other than as `excused` allows.
    pub twice: bool,
    /// Monitor: a second region copied a message to its dead-letter queue other than
    /// as `excused` allows.
    pub twice_dead: bool,
    /// Monitor: a message was published after a `FAILED` mark, other than as `excused`
    /// allows.
    pub sent_after_failed: bool,
    /// Each region's functions' default home region now (`OUTBOX_DEFAULT_HOME_REGION`).
    pub default_home: [u8; 2],
    /// Changes of a default home made so far (`GlobalParams::move_default_home`).
    pub home_moves: u8,
    /// Regions whose default home changed while one of their invocations ran, until
    /// none runs (bit per region): the operator waits for them before the next step.
    pub unsettled: u8,
    /// Monitor: a region's stream filter dropped an `INSERT` of an item that region
    /// owned then, `HomeRegion` absent, `NULL` or exactly a region (issue 36, finding 9).
    pub unstreamed: bool,
    /// Monitor (`GlobalParams::fifo`): a message was first accepted, by either
    /// region's destination, after a later message of its aggregate.
    pub overtaken: bool,
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
    /// A region's sweep makes its next call (a `SENT` mark; a dead-letter copy, a
    /// `FAILED` mark).
    Sweep(u8),
    /// This region crashes.
    Crash(u8),
    /// The operator re-homes message `n` into the surviving region (conditional write
    /// in its copy).
    Failover(u8),
    /// The failed region's functions start again.
    Recover,
    /// The operator sets region `r`'s functions' default home region to the second.
    MoveDefaultHome(u8, u8),
    /// The operator returns message `n` to the recovered region (conditional write in
    /// the survivor's copy).
    Failback(u8),
}

/// The two-region model, for stateright.
#[derive(Debug, Clone)]
pub struct GlobalModel {
    /// What is explored.
    pub params: GlobalParams,
    /// The messages as the real code sees them (one aggregate, a transaction each), for
    /// the order fence's decisions.
    pub fixture: crate::fixture::Fixture,
}

impl GlobalModel {
    /// The model of `params`.
    pub fn new(params: GlobalParams) -> Self {
        let txns = params
            .msgs
            .iter()
            .map(|m| {
                // This model's sweeps claim every pending item they own (it keeps no
                // index): the fence's reads are those of a producer indexing at commit.
                if m.homed {
                    Txn::library_indexed(0, 1)
                } else {
                    Txn::minimal(0, 1)
                }
            })
            .collect();
        let fixture = crate::fixture::Fixture::new(&Params {
            txns,
            fifo: true,
            ..Params::default()
        });
        GlobalModel { params, fixture }
    }

    fn n(&self) -> u8 {
        u8::try_from(self.params.msgs.len()).unwrap_or(0)
    }

    /// Whether region `r`'s functions run.
    pub fn up(s: &GState, r: u8) -> bool {
        s.life != Life::Down(r)
    }

    /// The region that crashed in this run, if one did.
    pub fn failed_region(s: &GState) -> Option<u8> {
        match s.life {
            Life::Up => None,
            Life::Down(f) | Life::Back(f) => Some(f),
        }
    }

    /// Whether message `m` committed.
    pub fn committed(s: &GState, m: u8) -> bool {
        s.txns[usize::from(m)] == TxnState::Committed
    }

    /// Whether region `r`'s functions act on an item whose `HomeRegion` is `home`
    /// (without the filter, `PublishOnEveryReplica`, on every item).
    fn acts_on(&self, s: &GState, r: u8, home: Option<u8>) -> bool {
        self.params.has(Mutation::PublishOnEveryReplica) || Self::owns(s, r, home)
    }

    /// Whether region `r`'s functions own an item whose `HomeRegion` is `home` now, as
    /// `HomeRegions::owns` decides with `r`'s `OUTBOX_DEFAULT_HOME_REGION` of the moment
    /// (`GState::default_home`).
    pub fn owns(s: &GState, r: u8, home: Option<u8>) -> bool {
        Self::regions(s, r).owns(home_text(home).as_deref())
    }

    /// Region `r`'s functions' `HomeRegions` now.
    fn regions(s: &GState, r: u8) -> HomeRegions {
        HomeRegions::in_region(aws_region(r))
            .default_home(aws_region(s.default_home[usize::from(r)]))
    }

    /// Whether region `r`'s sweep's claim accepts an item whose `HomeRegion` is
    /// `home`: the general ownership condition (`#home = :region`, or also
    /// `attribute_not_exists(#home)` in the default home), else — the fix of issue 36's
    /// finding 5 — once more on the exact value a refusal returned, when `r` owns it
    /// (`HomeRegions::exact_ownership`); `ClaimRefusesOddHome`: the first alone.
    fn claim_accepts(&self, s: &GState, r: u8, home: Option<u8>) -> bool {
        let regions = Self::regions(s, r);
        let general = exact_region(home) == Some(r)
            || (home.is_none() && regions.home_of_unhomed() == Some(aws_region(r)));
        general
            || (!self.params.has(Mutation::ClaimRefusesOddHome)
                && regions.exact_ownership(&home_seen(home)).is_some())
    }

    /// Whether region `r`'s publisher's `FilterCriteria` pass an `INSERT` whose image
    /// has `HomeRegion` `home`: `HomeRegion.S` = `r`, or no `HomeRegion.S` (absent or
    /// `NULL`) in every region, whatever the default home — the publisher decides whose
    /// those are from its setting of the moment (issue 36, finding 9). With
    /// `FilterNamesDefaultHome`, as before: the second clause only in the default home
    /// the stacks were deployed with (`DEFAULT_HOME`), whatever the setting is now.
    fn filter_passes(&self, r: u8, home: Option<u8>) -> bool {
        let string = home_text(home).is_some();
        let deployed_home = !self.params.has(Mutation::FilterNamesDefaultHome) || r == DEFAULT_HOME;
        let unhomed = !string && deployed_home;
        self.params.has(Mutation::PublishOnEveryReplica) || exact_region(home) == Some(r) || unhomed
    }

    /// Whether the filter is meant to pass `home` to its owner: absent, `NULL`, or exactly
    /// a region's name (`""` and padded names are dropped by every filter and left to the
    /// sweep: finding 5).
    fn filterable(home: Option<u8>) -> bool {
        home_text(home).is_none() || exact_region(home).is_some()
    }

    /// Whether region `r` doing to `m` what the other region already did is the
    /// duplicate a failover allows: `r` survived and the failover found `m` `PENDING`
    /// in its copy after the failed region had acted on it.
    fn excused(s: &GState, r: u8, m: u8) -> bool {
        Self::failed_region(s) == Some(other(r)) && s.excused & (1 << m) != 0
    }

    /// Whether nothing can happen any more.
    pub fn quiescent(&self, s: &GState) -> bool {
        use stateright::Model;
        let mut actions = Vec::new();
        self.actions(s, &mut actions);
        actions.is_empty()
    }
}
