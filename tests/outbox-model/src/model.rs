//! The model: every actor's enabled actions and what each does.

use crate::fixture::Fixture;
use crate::params::{Consumer as Strategy, Kind, Mutation, Params, Producer};
use crate::state::{
    Consumer, Copy, GuardKey, Inv, Item, Out, Phase, Record, Shard, State, Status, TxnState, Work,
    bit,
};
use aws_lambda_events::event::sqs::{SqsMessage, SqsMessageAttribute};
use dynamodb_outbox_core::publish::{Work as CodeWork, WorkItem};
use dynamodb_outbox_idempotency::marker::classify_cancellation;
use stateright::{Model, Property};

/// The tick no run of a correct protocol reaches: a held-back message given its
/// attempt back at every sweep could otherwise wait forever without using up a
/// bounded resource.
pub const HORIZON: u8 = 24;

/// What a call does when it goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// It works.
    None,
    /// It fails (throttled, 5xx, timeout before the service acted).
    Fail,
    /// The service acted (sent, wrote), but the answer was lost (a timeout after it
    /// acted): the caller sees a failure.
    Lost,
    /// A read of the sweeper index answers from before the latest marks (it still
    /// lists what they removed): `Params::index_lag`, not a fault of the budget.
    Stale,
}

/// One step of one actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The producer commits transaction `n`.
    Commit(u8),
    /// The producer's transaction `n` rolls back.
    RollBack(u8),
    /// The `INSERT` record of message `n`, committed, reaches its shard
    /// (`Params::stream_any_order`).
    Append(u8),
    /// The event source mapping invokes the publisher on a shard's next batch.
    Deliver(u8),
    /// Invocation `n` (publisher or sweeper) takes its next step.
    Step(u8, Fault),
    /// Invocation `n` crashes before its next step.
    Crash(u8),
    /// The schedule starts a sweep.
    Sweep,
    /// The recovery function handles on-failure record `n`.
    Recover(u8, Fault),
    /// On-failure record `n` never reaches the recovery function
    /// (`Params::on_failure_lost`).
    LoseOnFailure(u8),
    /// The recovery function fails on on-failure record `n` past its retries: the
    /// record goes to its dead-letter queue (`Params::recovery_gives_up`).
    RecoveryGivesUp(u8),
    /// The stream's retention runs out before the recovery function reads on-failure
    /// record `n`: its range is trimmed, the function finds nothing
    /// (`Params::retention`).
    Trim(u8),
    /// Shard lane `n`'s mapping stalled past the stream's retention: its undelivered
    /// records are trimmed, without an on-failure record (`Params::mapping_stalls`).
    TrimShard(u8),
    /// The sweeper's backstop scan adopts every committed `PENDING` item outside the
    /// index, due now (`Params::backstop`).
    Backstop,
    /// A consumer receives the copy with SQS id `n`.
    Receive(u8),
    /// Consumer invocation `n` takes its next step.
    Consume(u8),
    /// Consumer invocation `n` crashes before its next step.
    ConsumerCrash(u8),
    /// TTL deletes item `n`.
    Expire(u8),
    /// An operator redrives `FAILED` item `n`.
    Redrive(u8),
    /// Time passes.
    Tick,
}

/// The whole protocol, for stateright.
#[derive(Debug, Clone)]
pub struct OutboxModel {
    /// What is explored.
    pub params: Params,
    /// The messages, made by the real code.
    pub fixture: Fixture,
}

impl OutboxModel {
    /// The model of `params`.
    pub fn new(params: Params) -> Self {
        let fixture = Fixture::new(&params);
        OutboxModel { params, fixture }
    }

    fn msg(&self, m: u8) -> &crate::fixture::Msg {
        &self.fixture.msgs[usize::from(m)]
    }

    /// Whether message `m`'s transaction committed.
    pub fn committed(&self, s: &State, m: u8) -> bool {
        s.txns[usize::from(self.msg(m).txn)] == TxnState::Committed
    }

    /// Changes an item's status, noting any way out of a terminal state.
    fn set_status(&self, s: &mut State, m: u8, status: Status, redrive: bool) {
        let old = s.items[usize::from(m)].status;
        let terminal = matches!(old, Status::Sent | Status::Failed);
        let allowed =
            old == status || (old == Status::Sent && status == Status::Deleted) || redrive;
        if terminal && !allowed {
            s.left_terminal = true;
        }
        s.items[usize::from(m)].status = status;
    }

    /// The conditional `PENDING` → `SENT` update; whether it changed the item.
    pub fn mark_sent(&self, s: &mut State, m: u8) -> bool {
        let item = s.items[usize::from(m)];
        let pass = item.status == Status::Pending
            || (self.params.has(Mutation::UnconditionalMark)
                && matches!(item.status, Status::Failed | Status::Sent));
        if pass {
            self.set_status(s, m, Status::Sent, false);
            self.leave_index(s, m);
            let item = &mut s.items[usize::from(m)];
            item.expires = s.now.saturating_add(self.params.ttl);
        }
        pass
    }

    /// The conditional `PENDING` → `FAILED` update; a sweep's (`claim`: its lease and
    /// token) also only while its claim is current, `SweepDueAt` = its lease (before
    /// the fix of defect 8, `UnclaimedSweepMark`, not).
    pub fn mark_failed(&self, s: &mut State, m: u8, claim: Option<(u8, u8)>) {
        let item = s.items[usize::from(m)];
        let current = match claim {
            Some((lease, token)) => item.due == Some(lease) && item.token == token,
            None => true,
        };
        if item.status == Status::Pending
            && (current || self.params.has(Mutation::UnclaimedSweepMark))
        {
            self.set_status(s, m, Status::Failed, false);
            self.leave_index(s, m);
            s.items[usize::from(m)].error = true;
        }
    }

    /// A mark removes the item's sweeper index keys; a lagging index still lists it
    /// until time passes.
    fn leave_index(&self, s: &mut State, m: u8) {
        let item = &mut s.items[usize::from(m)];
        if let Some(due) = item.due.take()
            && self.params.index_lag
        {
            s.lagging.retain(|l| l.0 != m);
            s.lagging.push((m, due));
            s.lagging.sort_unstable();
        }
        item.token = 0;
    }

    /// The destination accepts a copy of `m` (FIFO: unless within its deduplication
    /// window).
    pub fn accept(&self, s: &mut State, m: u8) {
        if s.accepted & bit(m) == 0 {
            let agg = self.msg(m).aggregate;
            let later = (m + 1..u8::try_from(self.fixture.msgs.len()).unwrap_or(0))
                .any(|j| self.msg(j).aggregate == agg && s.accepted & bit(j) != 0);
            if later && self.params.fifo {
                s.overtaken = true;
            }
            s.accepted |= bit(m);
        }
        if self.params.fifo {
            if s.dedup.iter().any(|&(d, until)| d == m && s.now < until) {
                return;
            }
            s.dedup.retain(|&(d, _)| d != m);
            s.dedup
                .push((m, s.now.saturating_add(self.params.dedup_window)));
            s.dedup.sort_unstable();
        }
        s.queue.push(Copy {
            msg: m,
            sqs: s.sqs_ids,
            receives: 0,
            visible_at: s.now,
        });
        s.sqs_ids = s.sqs_ids.saturating_add(1);
    }

    /// Message `m`'s `INSERT` reaches its shard lane, if the publisher's
    /// `FilterCriteria` passes it (`fixture::stream_filter_passes`).
    fn append(&self, s: &mut State, m: u8) {
        if self.msg(m).streamed {
            let now = s.now;
            s.shards[usize::from(self.msg(m).lane)]
                .records
                .push((m, now));
        }
    }

    fn records_in(&self, s: &State, shard: u8, from: u8, to: u8) -> Vec<u8> {
        s.shards[usize::from(shard)].records[usize::from(from)..usize::from(to)]
            .iter()
            .map(|r| r.0)
            .collect()
    }

    /// The event source mapping's next invocation on `shard`: records past the
    /// maximum age are discarded (an on-failure record each run of them), the rest
    /// batched.
    fn deliver(&self, s: &mut State, shard: u8) {
        let now = s.now;
        let sh = &mut s.shards[usize::from(shard)];
        let start = sh.next;
        while usize::from(sh.next) < sh.records.len()
            && sh.records[usize::from(sh.next)].1 + self.params.max_record_age < now
        {
            sh.next += 1;
        }
        let (next, len) = (sh.next, u8::try_from(sh.records.len()).unwrap_or(u8::MAX));
        if next > start {
            sh.attempts = 0;
            s.on_failure.push((shard, start, next));
            self.trouble_range(s, (shard, start, next));
        }
        let sh = &mut s.shards[usize::from(shard)];
        if sh.next >= len {
            return;
        }
        let (from, to) = (
            sh.next,
            len.min(sh.next + sh.limit.min(self.params.batch_size)),
        );
        sh.busy = true;
        let msgs = self.records_in(s, shard, from, to);
        let works: Vec<Work> = msgs
            .iter()
            .map(|&m| Work {
                msg: m,
                poison: matches!(self.msg(m).work, CodeWork::Poison(_)),
            })
            .collect();
        let items: Vec<WorkItem> = msgs
            .iter()
            .enumerate()
            .map(|(i, &m)| WorkItem {
                id: i.to_string(),
                work: self.msg(m).work.clone(),
            })
            .collect();
        let publish = self.start_delivery(s, works, &items);
        s.invs.push(Inv::Stream {
            shard,
            from,
            to,
            publish,
        });
    }

    /// The mapping after an invocation: checkpoint at the lowest reported failure
    /// (`None`: the function failed as a whole, so bisect, or count a retry).
    /// Whether the handler's partial batch response reports a record with this
    /// outcome (`Outcome::needs_retry`, or the code before the overtaking gap was
    /// closed: `UnknownNotReported`).
    fn reported(&self, out: Out) -> bool {
        if out == Out::Unknown && self.params.has(Mutation::UnknownNotReported) {
            return false;
        }
        if matches!(out, Out::Deferred(_)) && self.params.has(Mutation::DeferredNotReported) {
            return false;
        }
        crate::delivery::outcome_of(out).needs_retry()
    }

    fn esm_after(&self, s: &mut State, shard: u8, from: u8, to: u8, failed: Option<Option<u8>>) {
        let batch = self.params.batch_size;
        let retries = self.params.esm_retries;
        let sh = &mut s.shards[usize::from(shard)];
        sh.busy = false;
        let discard_from = match failed {
            Some(None) => {
                sh.next = to;
                sh.attempts = 0;
                sh.limit = batch;
                None
            }
            Some(Some(pos)) => {
                sh.next = from + pos;
                sh.attempts += 1;
                (sh.attempts > retries).then_some(from + pos)
            }
            None if to - from > 1 => {
                // Bisection does not count against the retries.
                sh.limit = (to - from) / 2;
                None
            }
            None => {
                sh.attempts += 1;
                (sh.attempts > retries).then_some(from)
            }
        };
        if let Some(first) = discard_from {
            sh.next = to;
            sh.attempts = 0;
            sh.limit = batch;
            if !self.params.has(Mutation::NoRecovery) {
                s.on_failure.push((shard, first, to));
            }
            self.trouble_range(s, (shard, first, to));
        }
    }

    /// The recovery function: adopts the pending unindexed items of a discarded range,
    /// due now.
    fn recover(&self, s: &mut State, n: usize) {
        let (shard, from, to) = s.on_failure.remove(n);
        for m in self.records_in(s, shard, from, to) {
            if self.params.has(Mutation::RecoverySkipsLibraryItems) && self.msg(m).library {
                continue;
            }
            let now = s.now;
            let item = &mut s.items[usize::from(m)];
            if item.status == Status::Pending && item.due.is_none() {
                item.due = Some(now);
            }
        }
    }

    /// Notes trouble for the messages of a discarded range.
    fn trouble_range(&self, s: &mut State, (shard, from, to): (u8, u8, u8)) {
        for m in self.records_in(s, shard, from, to) {
            s.troubled |= bit(m);
        }
    }

    /// The messages invocation `inv` holds (bit per message).
    fn held_by(inv: &Inv) -> u32 {
        let of = |p: &crate::state::Publish| p.items.iter().fold(0, |b, w| b | bit(w.msg));
        match inv {
            Inv::Stream { publish, .. } => of(publish),
            Inv::Sweep(sw) => {
                sw.claimed.iter().fold(0, |b, c| b | bit(c.0)) | sw.publish.as_ref().map_or(0, of)
            }
        }
    }

    /// The messages of `inv` whose outcome so far is not a plain send (bit per
    /// message).
    fn troubled_outcomes(inv: &Inv) -> u32 {
        let p = match inv {
            Inv::Stream { publish, .. } => Some(publish),
            Inv::Sweep(sw) => sw.publish.as_ref(),
        };
        p.iter()
            .flat_map(|p| p.items.iter().zip(&p.outcome))
            .filter(|(_, o)| !matches!(o, Out::Open | Out::Sent(true) | Out::Finished))
            .fold(0, |b, (w, _)| b | bit(w.msg))
    }

    /// The monitor of `NO_INDEX_ON_HAPPY_PATH`: a message that entered the index
    /// between `last` and `s` though nothing went wrong for it, other than by the
    /// backstop scan or a producer that indexes at commit.
    fn note_index_entries(&self, last: &State, s: &mut State, action: Action) {
        if action == Action::Backstop {
            return;
        }
        for (m, (before, after)) in last.items.iter().zip(&s.items).enumerate() {
            let Ok(m) = u8::try_from(m) else { continue };
            let by_design = self.params.txns[usize::from(self.msg(m).txn)].producer
                == Producer::LibraryIndexedAtCommit;
            if before.due.is_none() && after.due.is_some() && s.troubled & bit(m) == 0 && !by_design
            {
                s.indexed_untroubled = true;
            }
        }
    }

    /// The consumer's idempotency key for a copy: `message_key` on the SQS message the
    /// consumer receives (its outbox `MessageId` attribute, else the SQS id).
    fn consumer_key(&self, m: u8, sqs: u8) -> GuardKey {
        match self.params.consumer {
            Strategy::BusinessKey => return GuardKey::Business(m),
            _ if self.params.has(Mutation::ConsumerKeysOnSqsId) => return GuardKey::Sqs(sqs),
            _ => {}
        }
        let mut msg = SqsMessage::default();
        msg.message_id = Some(format!("sqs-{sqs}"));
        for (name, value) in &self.msg(m).attributes {
            let mut attr = SqsMessageAttribute::default();
            attr.string_value = Some(value.text().to_owned());
            attr.data_type = Some(value.data_type().to_owned());
            msg.message_attributes.insert((*name).to_owned(), attr);
        }
        match dynamodb_outbox_idempotency::Delivery::open(&msg).message_id() {
            Ok(k) if k == self.msg(m).id => GuardKey::Outbox(m),
            _ => GuardKey::Sqs(sqs),
        }
    }

    fn ack(s: &mut State, sqs: u8) {
        s.queue.retain(|c| c.sqs != sqs);
    }

    /// One step of a consumer.
    fn consume(&self, s: &mut State, c: usize) {
        let mut con = s.consumers[c];
        let key = *con
            .key
            .get_or_insert_with(|| self.consumer_key(con.msg, con.sqs));
        let m = usize::from(con.msg);
        let mut finished = false;
        match (self.params.consumer, con.step) {
            (Strategy::Marker | Strategy::BusinessKey, 0) => {
                let duplicate = match s.record(key) {
                    // The marker's condition fails: the cancellation reasons name
                    // action 0 (the marker); `classify_cancellation` calls it a duplicate.
                    Some(_) => {
                        classify_cancellation(&[Some("ConditionalCheckFailed"), Some("None")])
                            == Some(Ok(()))
                    }
                    None => false,
                };
                if !duplicate {
                    s.effects[m] = s.effects[m].saturating_add(1);
                    s.set_record(key, Record::Done);
                }
                con.step = 1;
            }
            (Strategy::SideEffect, 0) => match s.record(key) {
                Some(Record::InProgress(until)) if until >= s.now => finished = true,
                Some(Record::Completed | Record::Done) => con.step = 3,
                _ => {
                    s.set_record(key, Record::InProgress(s.now));
                    con.step = 1;
                }
            },
            (Strategy::SideEffect, 1) => {
                s.effects[m] = s.effects[m].saturating_add(1);
                con.step = 2;
            }
            (Strategy::SideEffect, 2) => {
                s.set_record(key, Record::Completed);
                con.step = 3;
            }
            _ => {
                Self::ack(s, con.sqs);
                finished = true;
            }
        }
        if finished {
            s.consumers.remove(c);
        } else {
            s.consumers[c] = con;
        }
    }

    fn receivable(&self, s: &State, c: &Copy) -> bool {
        if c.visible_at > s.now || s.consumers.iter().any(|k| k.sqs == c.sqs) {
            return false;
        }
        if !self.params.fifo {
            return true;
        }
        let agg = self.msg(c.msg).aggregate;
        s.queue
            .iter()
            .find(|q| self.msg(q.msg).aggregate == agg)
            .map(|q| q.sqs)
            == Some(c.sqs)
    }

    fn receive(&self, s: &mut State, sqs: u8) {
        let Some(i) = s.queue.iter().position(|c| c.sqs == sqs) else {
            return;
        };
        let copy = &mut s.queue[i];
        copy.receives += 1;
        if copy.receives > self.params.max_receives {
            let m = copy.msg;
            s.queue.remove(i);
            s.consumer_dlq |= bit(m);
            return;
        }
        copy.visible_at = s.now + self.params.visibility;
        let msg = copy.msg;
        s.consumers.push(Consumer {
            sqs,
            msg,
            key: None,
            step: 0,
        });
    }

    fn timers_ahead(&self, s: &State) -> bool {
        let now = s.now;
        s.items
            .iter()
            .any(|i| i.status == Status::Pending && i.due.is_some_and(|d| d > now))
            || s.queue.iter().any(|c| c.visible_at > now)
            || s.guard
                .iter()
                .any(|(_, r)| matches!(r, Record::InProgress(until) if *until >= now))
    }

    /// Whether a shard's mapping has an undelivered record past its maximum age: the
    /// mapping acts on it (discards it) before time passes.
    fn mapping_overdue(&self, s: &State) -> bool {
        s.shards.iter().any(|sh| {
            !sh.busy
                && sh
                    .records
                    .get(usize::from(sh.next))
                    .is_some_and(|r| r.1 + self.params.max_record_age < s.now)
        })
    }

    /// Whether the backstop scan (`Params::backstop`) would adopt something now: a
    /// committed `PENDING` item outside the index, once the stream path has done what
    /// it does (no invocation runs, no on-failure record waits, every record reached
    /// its shard and was delivered).
    fn backstop_finds(&self, s: &State) -> bool {
        let stream_done = s.invs.is_empty()
            && s.on_failure.is_empty()
            && s.unstreamed == 0
            && s.shards
                .iter()
                .all(|sh| usize::from(sh.next) >= sh.records.len());
        self.params.backstop
            && stream_done
            && (0..s.items.len()).any(|m| {
                let item = s.items[m];
                item.status == Status::Pending
                    && item.due.is_none()
                    && u8::try_from(m).is_ok_and(|m| self.committed(s, m))
            })
    }

    fn txn_ready(&self, s: &State, t: usize) -> bool {
        let agg = self.params.txns[t].aggregate;
        s.txns[t] == TxnState::Open
            && (0..t).all(|e| self.params.txns[e].aggregate != agg || s.txns[e] != TxnState::Open)
    }

    fn step_faults(&self, s: &State, (call, writes): (bool, bool), out: &mut Vec<Fault>) {
        out.push(Fault::None);
        if call && s.faults > 0 {
            out.push(Fault::Fail);
            if writes {
                out.push(Fault::Lost);
            }
        }
    }

    /// Whether message `m` has reached its end: `SENT` with its effect applied once,
    /// or `FAILED` with a dead-letter copy; nothing for an uncommitted one.
    pub fn settled(&self, s: &State, m: u8) -> bool {
        let item = s.items[usize::from(m)];
        if !self.committed(s, m) {
            return item.status == Status::Absent && s.effects[usize::from(m)] == 0;
        }
        match item.status {
            Status::Sent | Status::Deleted => {
                self.msg(m).kind == Kind::Good && s.effects[usize::from(m)] == 1
            }
            Status::Failed => s.dlq & bit(m) != 0,
            Status::Absent | Status::Pending => false,
        }
    }

    /// Whether nothing can happen any more.
    pub fn quiescent(&self, s: &State) -> bool {
        let mut actions = Vec::new();
        self.actions(s, &mut actions);
        actions.is_empty()
    }
}

impl Model for OutboxModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let n = self.fixture.msgs.len();
        let shards = self
            .params
            .txns
            .iter()
            .map(|t| t.aggregate)
            .max()
            .map_or(0, |a| (a + 1) * self.params.parallelization.max(1));
        vec![State {
            now: 0,
            crashes: self.params.crashes,
            faults: self.params.faults,
            redrives: self.params.redrives,
            txns: vec![TxnState::Open; self.params.txns.len()],
            items: vec![
                Item {
                    status: Status::Absent,
                    retry: 0,
                    due: None,
                    error: false,
                    expires: 0,
                    token: 0,
                };
                n
            ],
            shards: vec![
                Shard {
                    records: Vec::new(),
                    next: 0,
                    attempts: 0,
                    limit: self.params.batch_size,
                    busy: false,
                };
                usize::from(shards)
            ],
            on_failure: Vec::new(),
            invs: Vec::new(),
            queue: Vec::new(),
            dedup: Vec::new(),
            sqs_ids: 0,
            dlq: 0,
            consumer_dlq: 0,
            accepted: 0,
            effects: vec![0; n],
            guard: Vec::new(),
            consumers: Vec::new(),
            left_terminal: false,
            overtaken: false,
            sent_after_sent: false,
            lagging: Vec::new(),
            stale_fence: false,
            redrive_undone: false,
            unlisted: 0,
            unstreamed: 0,
            refused: 0,
            on_failure_lost: self.params.on_failure_lost,
            gives_up: self.params.recovery_gives_up,
            trims: self.params.retention,
            stalls: self.params.mapping_stalls,
            troubled: 0,
            indexed_untroubled: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        // A run that reaches the horizon is a livelock (`NO_LIVELOCK`): it ends there,
        // so that the liveness properties judge what it left.
        if s.now >= HORIZON {
            return;
        }
        let u = |i: usize| u8::try_from(i).unwrap_or(u8::MAX);
        for t in 0..s.txns.len() {
            if self.txn_ready(s, t) {
                actions.push(Action::Commit(u(t)));
                if self.params.txns[t].may_roll_back {
                    actions.push(Action::RollBack(u(t)));
                }
            }
        }
        for m in 0..u8::try_from(self.fixture.msgs.len()).unwrap_or(0) {
            if s.unstreamed & bit(m) != 0 {
                actions.push(Action::Append(m));
            }
        }
        for (i, sh) in s.shards.iter().enumerate() {
            if !sh.busy && usize::from(sh.next) < sh.records.len() {
                actions.push(Action::Deliver(u(i)));
            }
        }
        let mut faults = Vec::new();
        for (i, inv) in s.invs.iter().enumerate() {
            let call = match inv {
                Inv::Stream { publish, .. } => self.publish_call(publish),
                Inv::Sweep(sw) => self.sweep_call(sw),
            };
            faults.clear();
            self.step_faults(s, call, &mut faults);
            let lags = match inv {
                Inv::Stream { publish, .. } => self.may_lag(s, publish),
                Inv::Sweep(sw) => {
                    self.query_may_lag(s, sw)
                        || sw.publish.as_ref().is_some_and(|p| self.may_lag(s, p))
                }
            };
            if lags {
                faults.push(Fault::Stale);
            }
            actions.extend(faults.iter().map(|f| Action::Step(u(i), *f)));
            if s.crashes > 0 {
                actions.push(Action::Crash(u(i)));
            }
        }
        let sweeps = s.invs.iter().filter(|i| matches!(i, Inv::Sweep(_))).count();
        let due = s
            .items
            .iter()
            .any(|i| i.status == Status::Pending && i.due.is_some_and(|d| d <= s.now));
        if due && sweeps < usize::from(self.params.sweepers) {
            actions.push(Action::Sweep);
        }
        for i in 0..s.on_failure.len() {
            actions.push(Action::Recover(u(i), Fault::None));
            if s.faults > 0 {
                actions.push(Action::Recover(u(i), Fault::Fail));
                actions.push(Action::Recover(u(i), Fault::Lost));
            }
            if s.on_failure_lost > 0 {
                actions.push(Action::LoseOnFailure(u(i)));
            }
            if s.gives_up > 0 {
                actions.push(Action::RecoveryGivesUp(u(i)));
            }
            if s.trims > 0 {
                actions.push(Action::Trim(u(i)));
            }
        }
        if s.stalls > 0 {
            for (i, sh) in s.shards.iter().enumerate() {
                if !sh.busy && usize::from(sh.next) < sh.records.len() {
                    actions.push(Action::TrimShard(u(i)));
                }
            }
        }
        if self.backstop_finds(s) {
            actions.push(Action::Backstop);
        }
        if s.consumers.len() < usize::from(self.params.consumers) {
            for c in &s.queue {
                if self.receivable(s, c) {
                    actions.push(Action::Receive(c.sqs));
                }
            }
        }
        for i in 0..s.consumers.len() {
            actions.push(Action::Consume(u(i)));
            if s.crashes > 0 {
                actions.push(Action::ConsumerCrash(u(i)));
            }
        }
        for (m, item) in s.items.iter().enumerate() {
            if item.status == Status::Sent && item.expires <= s.now {
                actions.push(Action::Expire(u(m)));
            }
            if item.status == Status::Failed && s.redrives > 0 {
                actions.push(Action::Redrive(u(m)));
            }
        }
        // Time passes only between invocations, while no on-failure record waits for
        // the recovery function (its queue's mapping invokes it within seconds), and
        // up to the horizon: a run still going there is a livelock (`NO_LIVELOCK`).
        // Nor while a committed record has yet to reach its shard (well under a second).
        // A sweep whose claim the item's own condition refused is followed by the next
        // one a period later: time passes for it too (`State::refused`). Nor past a
        // record's maximum age while its mapping has not acted on it: the mapping
        // delivers a record, or discards it once too old, well within that age (a
        // mapping stalled for longer is `Action::TrimShard`, the retention's fault).
        // Nor while the backstop scan would find something: a bounded scan reaches
        // each item within some sweeps; the model's ticks are that long.
        if s.invs.is_empty()
            && s.consumers.is_empty()
            && s.on_failure.is_empty()
            && s.unstreamed == 0
            && !self.mapping_overdue(s)
            && !self.backstop_finds(s)
            && s.now < HORIZON
            && (self.timers_ahead(s) || s.refused != 0)
        {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Commit(t) => {
                s.txns[usize::from(t)] = TxnState::Committed;
                for m in 0..u8::try_from(self.fixture.msgs.len()).unwrap_or(0) {
                    if self.msg(m).txn != t {
                        continue;
                    }
                    let indexed = self.msg(m).indexed;
                    s.items[usize::from(m)] = Item {
                        status: Status::Pending,
                        retry: 0,
                        due: indexed.then_some(s.now + 1),
                        error: false,
                        expires: 0,
                        token: 0,
                    };
                    if self.params.stream_any_order {
                        s.unstreamed |= bit(m);
                    } else {
                        self.append(&mut s, m);
                    }
                    if self.params.index_lags_writes && indexed {
                        s.unlisted |= bit(m);
                    }
                }
            }
            Action::Append(m) => {
                s.unstreamed &= !bit(m);
                self.append(&mut s, m);
            }
            Action::RollBack(t) => {
                s.txns[usize::from(t)] = TxnState::RolledBack;
                if self.params.has(Mutation::StreamShowsRolledBack) {
                    for m in 0..u8::try_from(self.fixture.msgs.len()).unwrap_or(0) {
                        if self.msg(m).txn == t {
                            self.append(&mut s, m);
                        }
                    }
                }
            }
            Action::Deliver(shard) => self.deliver(&mut s, shard),
            Action::Step(i, fault) => {
                let inv = s.invs.remove(usize::from(i));
                if matches!(fault, Fault::Fail | Fault::Lost) {
                    s.faults -= 1;
                    s.troubled |= Self::held_by(&inv);
                }
                match inv {
                    Inv::Stream {
                        shard,
                        from,
                        to,
                        mut publish,
                    } => {
                        if publish.phase == Phase::Done {
                            // The handler's partial batch response: every record
                            // whose outcome `needs_retry`; the mapping keeps the lowest.
                            let failed = publish
                                .outcome
                                .iter()
                                .position(|o| self.reported(*o))
                                .and_then(|p| u8::try_from(p).ok());
                            self.esm_after(&mut s, shard, from, to, Some(failed));
                        } else {
                            self.publish_step(&mut s, &mut publish, fault);
                            let inv = Inv::Stream {
                                shard,
                                from,
                                to,
                                publish,
                            };
                            s.troubled |= Self::troubled_outcomes(&inv);
                            s.invs.insert(usize::from(i), inv);
                        }
                    }
                    Inv::Sweep(mut sw) => {
                        if self.sweep_step(&mut s, &mut sw, fault) {
                            let inv = Inv::Sweep(sw);
                            s.troubled |= Self::troubled_outcomes(&inv);
                            s.invs.insert(usize::from(i), inv);
                        } else {
                            Self::sweep_gone(&mut s, &sw);
                        }
                    }
                }
            }
            Action::Crash(i) => {
                s.crashes -= 1;
                let inv = s.invs.remove(usize::from(i));
                s.troubled |= Self::held_by(&inv);
                match inv {
                    Inv::Stream {
                        shard, from, to, ..
                    } => self.esm_after(&mut s, shard, from, to, None),
                    Inv::Sweep(sw) => Self::sweep_gone(&mut s, &sw),
                }
            }
            Action::Sweep => {
                let sw = self.start_sweep(&s);
                s.invs.push(Inv::Sweep(sw));
            }
            Action::Recover(n, fault) => match fault {
                Fault::None | Fault::Stale => self.recover(&mut s, usize::from(n)),
                Fault::Lost => {
                    // The adoptions took effect; the record is reported and comes back.
                    s.faults -= 1;
                    let record = s.on_failure[usize::from(n)];
                    self.recover(&mut s, usize::from(n));
                    s.on_failure.push(record);
                }
                Fault::Fail => s.faults -= 1,
            },
            Action::LoseOnFailure(n) => {
                s.on_failure_lost -= 1;
                s.on_failure.remove(usize::from(n));
            }
            Action::RecoveryGivesUp(n) => {
                s.gives_up -= 1;
                s.on_failure.remove(usize::from(n));
            }
            Action::Trim(n) => {
                s.trims -= 1;
                s.on_failure.remove(usize::from(n));
            }
            Action::TrimShard(shard) => {
                s.stalls -= 1;
                let sh = &mut s.shards[usize::from(shard)];
                let range = (
                    shard,
                    sh.next,
                    u8::try_from(sh.records.len()).unwrap_or(u8::MAX),
                );
                sh.next = range.2;
                sh.attempts = 0;
                sh.limit = self.params.batch_size;
                self.trouble_range(&mut s, range);
            }
            Action::Backstop => {
                let now = s.now;
                for m in 0..s.items.len() {
                    let committed = u8::try_from(m).is_ok_and(|m| self.committed(&s, m));
                    let item = &mut s.items[m];
                    if committed && item.status == Status::Pending && item.due.is_none() {
                        item.due = Some(now);
                    }
                }
            }
            Action::Receive(sqs) => self.receive(&mut s, sqs),
            Action::Consume(c) => self.consume(&mut s, usize::from(c)),
            Action::ConsumerCrash(c) => {
                s.crashes -= 1;
                s.consumers.remove(usize::from(c));
            }
            Action::Expire(m) => self.set_status(&mut s, m, Status::Deleted, false),
            Action::Redrive(m) => {
                s.redrives -= 1;
                s.troubled |= bit(m);
                self.set_status(&mut s, m, Status::Pending, true);
                let now = s.now;
                let item = &mut s.items[usize::from(m)];
                item.retry = 0;
                item.due = Some(now);
                item.error = false;
                item.token = 0;
                s.lagging.retain(|l| l.0 != m);
                // Monitor: a claim of `m` made before the redrive is no longer current.
                for inv in &mut s.invs {
                    if let Inv::Sweep(sw) = inv
                        && sw.claimed.iter().any(|c| c.0 == m)
                    {
                        sw.superseded |= bit(m);
                    }
                }
            }
            Action::Tick => {
                s.now += 1;
                let now = s.now;
                s.dedup.retain(|&(_, until)| until > now);
                // The index has caught up.
                s.lagging.clear();
                s.unlisted = 0;
                s.refused = 0;
            }
        }
        self.note_index_entries(last, &mut s, action);
        Some(s)
    }

    fn format_action(&self, action: &Action) -> String {
        crate::trace::describe(self, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::props::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Txn;

    #[test]
    fn the_consumer_keys_on_the_outbox_id_the_publisher_attached() {
        let m = OutboxModel::new(Params {
            txns: vec![Txn::library(0, 1), Txn::minimal(0, 1)],
            ..Params::default()
        });
        assert_eq!(m.consumer_key(0, 7), GuardKey::Outbox(0));
        assert_eq!(m.consumer_key(1, 8), GuardKey::Outbox(1), "derived ids too");
        let broken = OutboxModel::new(m.params.clone().mutated(Mutation::ConsumerKeysOnSqsId));
        assert_eq!(broken.consumer_key(0, 7), GuardKey::Sqs(7));
    }
}
