//! A sweep as a step machine: query, claim each due key, publish what was claimed,
//! reschedule what failed, chunk by chunk. The decisions are the real code's: the
//! lease (`policy::Budget`), what a claimed item becomes (`policy::attempt_of`, which
//! calls `exhausted`), the publish order (`policy::order_attempts`), the verdict on
//! each outcome (`policy::judge_attempt`) and the next due times
//! (`policy::next_due_times`, which calls `backoff` and `jitter_of`).

use crate::fixture::TICK_MS;
use crate::model::{Fault, OutboxModel};
use crate::params::Home;
use crate::params::Mutation;
use crate::state::{Inv, Item, Phase, Publish, State, Status, Sweep, SweepPhase, Work, bit};
use dynamodb_outbox_core::policy::{
    AttemptVerdict, Budget, Retrying, attempt_of, judge_attempt, millis, next_due_times,
    order_attempts,
};
use dynamodb_outbox_core::ports::ClaimedItem;
use dynamodb_outbox_core::publish::{Outcome, Work as CodeWork, WorkItem};
use std::time::Duration;

/// The sweeper's first retry delay in the model (`OUTBOX_SWEEP_BASE_BACKOFF_SECONDS`).
pub const BASE_BACKOFF: Duration = Duration::from_secs(60);
/// The sweeper's longest retry delay in the model.
pub const MAX_BACKOFF: Duration = Duration::from_secs(120);
/// What is left of a sweep invocation when it starts (its deadline minus now).
pub const SWEEP_REMAINING_MS: i64 = 30_000;

/// Milliseconds to ticks, rounding up: a due time is never earlier in the model.
pub fn ticks(ms: i64) -> u8 {
    u8::try_from((ms + TICK_MS - 1).div_euclid(TICK_MS)).unwrap_or(u8::MAX)
}

impl OutboxModel {
    /// The smallest token no running sweep with the same lease (`lease_until`) has:
    /// only claims whose leases the ticks cannot tell apart need different tokens.
    pub(crate) fn free_token(s: &State, lease_until: u8) -> u8 {
        (1..=u8::MAX)
            .find(|t| {
                !s.invs.iter().any(
                    |i| matches!(i, Inv::Sweep(sw) if sw.token == *t && sw.lease_until == lease_until),
                )
            })
            .unwrap_or(u8::MAX)
    }

    /// Sweep `sw` has ended: the claims it left are no running sweep's (their leases
    /// still hold the items until they pass).
    pub(crate) fn sweep_gone(s: &mut State, sw: &Sweep) {
        for item in &mut s.items {
            if item.token == sw.token && item.due == Some(sw.lease_until) {
                item.token = 0;
            }
        }
    }

    /// A new sweep at `now`, its lease from the real `Budget`, its token free among
    /// the running sweeps of `s` (`State::invs`).
    pub fn start_sweep(&self, s: &State) -> Sweep {
        let now = s.now;
        let now_ms = i64::from(now) * TICK_MS;
        let deadline = u64::try_from(now_ms + SWEEP_REMAINING_MS).unwrap_or(0);
        let budget = Budget::until_deadline(deadline, now_ms);
        let lease_until = ticks(now_ms.saturating_add(millis(budget.lease)));
        Sweep {
            now,
            lease_until,
            keys: Vec::new(),
            chunk_at: 0,
            phase: SweepPhase::Query,
            claimed: Vec::new(),
            publish: None,
            resched: Vec::new(),
            token: Self::free_token(s, lease_until),
            superseded: 0,
        }
    }

    /// Whether the sweep's query may answer from a lagging index now: it has not yet
    /// taken a due message's write (`Params::index_lags_writes`).
    pub(crate) fn query_may_lag(&self, s: &State, sw: &Sweep) -> bool {
        self.params.index_lag
            && self.params.index_lags_writes
            && sw.phase == SweepPhase::Query
            && s.items.iter().enumerate().any(|(m, item)| {
                item.status == Status::Pending
                    && item.due.is_some_and(|d| d <= sw.now)
                    && u8::try_from(m).is_ok_and(|m| s.unlisted & bit(m) != 0)
            })
    }

    /// Whether a claim accepts an item whose `HomeRegion` is `home`. DynamoDB
    /// evaluates the claim's condition, so the model does: the general ownership
    /// condition (`HomeRegions::ownership_condition`, `#home = :home` holds for a
    /// string attribute exactly equal to the region — not padded, not a `NULL` —,
    /// `attribute_not_exists(#home)` only without the attribute); refused, the claim is
    /// made once more on the exact value the refusal returned when the deployment owns
    /// it (`HomeSeen::of`, `HomeRegions::exact_ownership`: issue 36's fix of finding
    /// 5), which nothing in this model changes between the two calls.
    /// `ClaimRefusesOddHome` makes the first call only, as before the fix.
    pub(crate) fn claim_accepts(&self, home: Home) -> bool {
        let regions = crate::fixture::regions();
        let Some((condition, region)) = regions.ownership_condition() else {
            return true;
        };
        let equal = home == Home::Region && region == crate::fixture::REGION;
        let general = match condition {
            "(#home = :home OR attribute_not_exists(#home))" => equal || home == Home::Absent,
            "#home = :home" => equal,
            other => panic!("the model does not know the claim's condition `{other}`"),
        };
        if general || self.params.has(Mutation::ClaimRefusesOddHome) {
            return general;
        }
        regions
            .exact_ownership(&crate::fixture::home_seen(home))
            .is_some()
    }

    /// Whether `item`'s `SweepDueAt` is still what `sw`'s claim wrote.
    fn claim_current(sw: &Sweep, item: &Item) -> bool {
        item.due == Some(sw.lease_until) && item.token == sw.token
    }

    fn chunk_len(&self, sw: &Sweep) -> usize {
        let rest = sw.keys.len().saturating_sub(usize::from(sw.chunk_at));
        rest.min(usize::from(self.params.chunk.max(1)))
    }

    /// Whether the sweep's current step is a call, and a send.
    pub fn sweep_call(&self, sw: &Sweep) -> (bool, bool) {
        match (&sw.phase, &sw.publish) {
            (SweepPhase::Publish, Some(p)) => self.publish_call(p),
            (SweepPhase::Publish, None) => (false, false),
            (SweepPhase::Query, _) => (true, false),
            _ => (true, true),
        }
    }

    /// Takes one step of `sw`; `false` when the sweep is over.
    pub fn sweep_step(&self, s: &mut State, sw: &mut Sweep, fault: Fault) -> bool {
        match sw.phase {
            SweepPhase::Query => {
                if matches!(fault, Fault::None | Fault::Stale) {
                    // A lagging index (`Fault::Stale`) does not list what it has not
                    // taken yet; what it still lists after a mark, a claim refuses.
                    let taken = |m: usize| {
                        fault != Fault::Stale
                            || u8::try_from(m).is_ok_and(|m| s.unlisted & bit(m) == 0)
                    };
                    let mut keys: Vec<(u8, u8)> = (0..s.items.len())
                        .filter(|&m| taken(m))
                        .filter_map(|m| {
                            let item = s.items[m];
                            let due = item.due.filter(|d| *d <= sw.now)?;
                            (item.status == Status::Pending)
                                .then(|| (u8::try_from(m).unwrap_or(u8::MAX), due))
                        })
                        .collect();
                    keys.sort_by_key(|(m, d)| (*d, *m));
                    sw.keys = keys;
                }
                self.next_chunk(sw, 0)
            }
            SweepPhase::Claim(k) => {
                let (msg, seen) = sw.keys[usize::from(sw.chunk_at) + usize::from(k)];
                if fault != Fault::Fail {
                    let lease = !self.params.has(Mutation::NoLease);
                    let owned = self.claim_accepts(self.fixture.msgs[usize::from(msg)].home);
                    let item = s.items[usize::from(msg)];
                    if item.status == Status::Pending && item.due == Some(seen) && !owned {
                        s.refused |= bit(msg);
                    }
                    let item = &mut s.items[usize::from(msg)];
                    if item.status == Status::Pending && item.due == Some(seen) && owned {
                        item.retry = item.retry.saturating_add(1);
                        if lease {
                            item.due = Some(sw.lease_until);
                            item.token = sw.token;
                        }
                        // An answer lost after the claim took effect: skipped.
                        if fault == Fault::None {
                            sw.claimed.push((msg, item.retry, item.error));
                        }
                    }
                }
                if usize::from(k) + 1 < self.chunk_len(sw) {
                    sw.phase = SweepPhase::Claim(k + 1);
                } else if sw.claimed.is_empty() {
                    return self.next_chunk(sw, self.chunk_len(sw));
                } else {
                    sw.publish = Some(self.publish_claimed(sw));
                    sw.phase = SweepPhase::Publish;
                }
                true
            }
            SweepPhase::Publish => {
                let Some(mut p) = sw.publish.take() else {
                    return self.next_chunk(sw, self.chunk_len(sw));
                };
                if p.phase != Phase::Done {
                    let before: Vec<Status> = s.items.iter().map(|i| i.status).collect();
                    self.publish_step(s, &mut p, fault);
                    Self::note_undone(s, sw, &before);
                    sw.publish = Some(p);
                    return true;
                }
                sw.resched = self.settle(sw, &p);
                if sw.resched.is_empty() {
                    self.next_chunk(sw, self.chunk_len(sw))
                } else {
                    sw.phase = SweepPhase::Reschedule(0);
                    true
                }
            }
            SweepPhase::Reschedule(k) => {
                let (msg, next, attempted) = sw.resched[usize::from(k)];
                if fault != Fault::Fail {
                    let item = &mut s.items[usize::from(msg)];
                    if item.status == Status::Pending && Self::claim_current(sw, item) {
                        item.due = Some(next);
                        item.token = 0;
                        item.error = true;
                        if !attempted {
                            item.retry = item.retry.saturating_sub(1);
                        }
                        if sw.superseded & crate::state::bit(msg) != 0 {
                            s.redrive_undone = true;
                        }
                    }
                }
                if usize::from(k) + 1 < sw.resched.len() {
                    sw.phase = SweepPhase::Reschedule(k + 1);
                    true
                } else {
                    self.next_chunk(sw, self.chunk_len(sw))
                }
            }
        }
    }

    fn next_chunk(&self, sw: &mut Sweep, done: usize) -> bool {
        sw.chunk_at = u8::try_from(usize::from(sw.chunk_at) + done).unwrap_or(u8::MAX);
        sw.claimed.clear();
        sw.publish = None;
        sw.resched.clear();
        if usize::from(sw.chunk_at) < sw.keys.len() {
            sw.phase = SweepPhase::Claim(0);
            true
        } else {
            false
        }
    }

    /// The claimed items as the code sees them: `attempt_of` each, `order_attempts`,
    /// then the plan.
    fn publish_claimed(&self, sw: &Sweep) -> Publish {
        let mut attempts: Vec<_> = sw
            .claimed
            .iter()
            .map(|&(msg, retry, error)| {
                let m = &self.fixture.msgs[usize::from(msg)];
                let claimed = ClaimedItem {
                    key: m.key.clone(),
                    last_error: error.then(|| "sending to sqs:orders failed: Throttled".into()),
                    message: m.decoded.clone().map(|mut d| {
                        d.retry_count = u32::from(retry);
                        d
                    }),
                };
                attempt_of(claimed, self.params.max_attempts)
            })
            .collect();
        order_attempts(&mut attempts);
        let works: Vec<Work> = attempts
            .iter()
            .map(|a| Work {
                msg: self.fixture.by_key(&a.key).unwrap_or(u8::MAX),
                poison: matches!(a.work, CodeWork::Poison(_)),
            })
            .collect();
        let items: Vec<WorkItem> = attempts
            .into_iter()
            .enumerate()
            .map(|(i, a)| WorkItem {
                id: i.to_string(),
                work: a.work,
            })
            .collect();
        let read = sw
            .claimed
            .iter()
            .fold(0, |read, c| read | crate::state::bit(c.0));
        let mut p = self.start_publish(works, &items, read);
        p.claim = Some((sw.lease_until, sw.token));
        p
    }

    /// The monitor of `REDRIVE_STANDS`: a message redriven since `sw` claimed it
    /// that this step of `sw` marked `FAILED` (`before`: the statuses before it).
    fn note_undone(s: &mut State, sw: &Sweep, before: &[Status]) {
        let undone = (0..s.items.len()).any(|m| {
            let redriven = u8::try_from(m).is_ok_and(|m| sw.superseded & crate::state::bit(m) != 0);
            redriven && before[m] == Status::Pending && s.items[m].status == Status::Failed
        });
        if undone {
            s.redrive_undone = true;
        }
    }

    /// `judge_attempt` on each outcome; the failed ones get `next_due_times`, not
    /// before what a fenced one waits behind.
    fn settle(&self, sw: &Sweep, p: &Publish) -> Vec<(u8, u8, bool)> {
        let mut failed = Vec::new();
        for (w, out) in p.items.iter().zip(&p.outcome) {
            let outcome = crate::delivery::outcome_of(*out);
            let not_before = match outcome {
                Outcome::Deferred { not_before } => not_before.unwrap_or(i64::MIN),
                _ => i64::MIN,
            };
            if let AttemptVerdict::Reschedule { attempted, .. } = judge_attempt(&outcome) {
                let retry = sw
                    .claimed
                    .iter()
                    .find(|c| c.0 == w.msg)
                    .map_or(0, |c| u32::from(c.1));
                failed.push((w.msg, retry, not_before, attempted));
            }
        }
        let now_ms = i64::from(sw.now) * TICK_MS;
        let retrying: Vec<Retrying<'_>> = failed
            .iter()
            .map(|(m, retry, not_before, attempted)| Retrying {
                key: &self.fixture.msgs[usize::from(*m)].key,
                attempt: *retry,
                attempted: *attempted,
                not_before: *not_before,
            })
            .collect();
        let dues = next_due_times(&retrying, now_ms, BASE_BACKOFF, MAX_BACKOFF);
        failed
            .iter()
            .zip(dues)
            .map(|((m, _, _, attempted), due)| (*m, ticks(due), *attempted))
            .collect()
    }
}
