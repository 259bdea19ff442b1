//! How a sweep walks one chunk: in waves of at most [`WAVE_PER_AGGREGATE`] keys of
//! each aggregate, an aggregate leaving the chunk at its first message not finished.
//!
//! Why: a claim counts an attempt (so that a message that kills the sweeper while
//! it is being sent still runs out of attempts), and a sweep that dies before it
//! settles — a crash, a timeout, a lost answer to the write that gives a waiting
//! message its attempt back — leaves that count on every message it had claimed.
//! Claiming a whole backlog of one aggregate at once exposes all of it to every
//! failure of the sweep, though at most the messages up to its first failure can go:
//! a FIFO backlog goes one message per call. The 10,000-message chaos run lost 40
//! messages that way: deep in backlogs of some 200 per aggregate, they ran out of
//! attempts without ever being sent. In waves, a message is claimed only when every
//! earlier one of its aggregate in the chunk has gone, so what a failed sweep charges
//! is bounded by one wave per aggregate.

use crate::answers::DueKey;
use std::collections::{HashSet, VecDeque};

/// Most keys of one aggregate claimed at once: one SQS batch, or ten FIFO rounds.
pub const WAVE_PER_AGGREGATE: usize = 10;

/// The keys of a chunk still to claim, by aggregate, in the chunk's order.
#[derive(Debug, Default)]
pub struct Waves {
    queues: Vec<(String, VecDeque<DueKey>)>,
    per_aggregate: usize,
}

impl Waves {
    /// The waves of `keys` (a chunk, in due order), `per_aggregate` keys of each
    /// aggregate at a time.
    pub fn new(keys: &[DueKey], per_aggregate: usize) -> Self {
        let mut queues: Vec<(String, VecDeque<DueKey>)> = Vec::new();
        for d in keys {
            match queues.iter_mut().find(|(pk, _)| *pk == d.key.pk) {
                Some((_, q)) => q.push_back(d.clone()),
                None => queues.push((d.key.pk.clone(), VecDeque::from([d.clone()]))),
            }
        }
        Waves {
            queues,
            per_aggregate: per_aggregate.max(1),
        }
    }

    /// The next wave: the earliest `per_aggregate` keys left of each aggregate still
    /// going, in the chunk's order. Empty when nothing is left.
    pub fn next_wave(&mut self) -> Vec<DueKey> {
        let n = self.per_aggregate;
        self.queues
            .iter_mut()
            .flat_map(|(_, q)| {
                let take = q.len().min(n);
                q.drain(..take).collect::<Vec<_>>()
            })
            .collect()
    }

    /// Drops what is left of the aggregates in `stopped` — an earlier message of
    /// theirs did not go, so the later ones would only be held back — and says how
    /// many keys that left for the next sweep.
    pub fn stop(&mut self, stopped: &HashSet<String>) -> usize {
        let mut left = 0;
        for (pk, q) in &mut self.queues {
            if stopped.contains(pk) {
                left += q.len();
                q.clear();
            }
        }
        left
    }

    /// Drops everything left (the sweep's time is up) and says how many keys that
    /// left for the next sweep.
    pub fn stop_all(&mut self) -> usize {
        let left = self.remaining();
        self.queues.clear();
        left
    }

    /// Keys not yet taken.
    pub fn remaining(&self) -> usize {
        self.queues.iter().map(|(_, q)| q.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ItemKey;

    fn due(pk: &str, n: usize) -> DueKey {
        DueKey {
            key: ItemKey {
                pk: pk.into(),
                sk: format!("MESSAGE#E#{n:04}"),
            },
            seen_due: n.to_string(),
            due_at_ms: n as i64,
        }
    }

    fn sks(wave: &[DueKey]) -> Vec<String> {
        wave.iter()
            .map(|d| format!("{}/{}", d.key.pk, &d.key.sk[10..]))
            .collect()
    }

    #[test]
    fn each_wave_takes_the_earliest_keys_left_of_every_aggregate() {
        let keys: Vec<DueKey> = (0..5)
            .map(|n| due("A", n))
            .chain((0..2).map(|n| due("B", n)))
            .collect();
        let mut waves = Waves::new(&keys, 2);
        assert_eq!(
            sks(&waves.next_wave()),
            ["A/0000", "A/0001", "B/0000", "B/0001"]
        );
        assert_eq!(waves.remaining(), 3);
        assert_eq!(sks(&waves.next_wave()), ["A/0002", "A/0003"]);
        assert_eq!(sks(&waves.next_wave()), ["A/0004"]);
        assert!(waves.next_wave().is_empty());
    }

    #[test]
    fn a_stopped_aggregate_leaves_the_rest_of_its_keys_for_the_next_sweep() {
        let keys: Vec<DueKey> = (0..25)
            .map(|n| due("A", n))
            .chain((0..25).map(|n| due("B", n)))
            .collect();
        let mut waves = Waves::new(&keys, WAVE_PER_AGGREGATE);
        assert_eq!(waves.next_wave().len(), 20);
        let left = waves.stop(&HashSet::from(["A".to_owned()]));
        assert_eq!(left, 15);
        let next = waves.next_wave();
        assert_eq!(next.len(), 10);
        assert!(next.iter().all(|d| d.key.pk == "B"));
        assert_eq!(waves.remaining(), 5);
    }

    #[test]
    fn a_zero_bound_still_makes_progress() {
        let mut waves = Waves::new(&[due("A", 0), due("A", 1)], 0);
        assert_eq!(waves.next_wave().len(), 1);
    }
}
