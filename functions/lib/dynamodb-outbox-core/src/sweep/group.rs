//! A sweeper worker's share of the index, so a backlog drains at several workers'
//! speed: worker `index` of `of` sweeps the shards whose number is `index` modulo
//! `of` (an aggregate hashes to one shard, so a worker owns whole aggregates), and
//! worker 0 alone runs the backstop scan. Each worker is its own scheduled
//! invocation, given `{"sweepGroup": index, "sweepGroups": of}` by its schedule.
//!
//! While the shard count changes an aggregate may have items in a shard of each
//! count, which could fall to two workers: then worker 0 sweeps every shard and the
//! others stand down until the change is finished (docs/operations.md).

use crate::schema::{MAX_SWEEP_SHARDS, SweepShards};

/// One worker's share of the sweep ([`SweepGroup::ALL`]: the whole index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SweepGroup {
    index: u16,
    of: u16,
}

/// What was wrong with a worker's share as its schedule gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the sweeper's event names its share of the index wrongly (sweepGroup {index} of sweepGroups {of} as read): {why}; the schedule's input must be {{\"sweepGroup\": i, \"sweepGroups\": n}} with 0 <= i < n <= {MAX_SWEEP_SHARDS} (the stacks' sweep_workers sets it), or no sweepGroup at all for one worker"
)]
pub struct GroupError {
    index: u64,
    of: u64,
    why: &'static str,
}

impl SweepGroup {
    /// The whole index: one worker.
    pub const ALL: SweepGroup = SweepGroup { index: 0, of: 1 };

    /// Worker `index` of `of`: an error unless `index < of <=` [`MAX_SWEEP_SHARDS`].
    pub fn new(index: u64, of: u64) -> Result<Self, GroupError> {
        let err = |why| GroupError { index, of, why };
        let of16 = u16::try_from(of)
            .ok()
            .filter(|n| (1..=MAX_SWEEP_SHARDS).contains(n))
            .ok_or_else(|| err("sweepGroups is out of range"))?;
        let index16 = u16::try_from(index)
            .ok()
            .filter(|i| *i < of16)
            .ok_or_else(|| err("sweepGroup is not below sweepGroups"))?;
        Ok(SweepGroup {
            index: index16,
            of: of16,
        })
    }

    /// The share a scheduled event names: `sweepGroup` and `sweepGroups`, both or
    /// neither ([`SweepGroup::ALL`]); anything else in the event is ignored.
    pub fn of_event(event: &serde_json::Value) -> Result<Self, GroupError> {
        let field = |name: &str| event.get(name).map(|v| v.as_u64().ok_or(v.to_string()));
        let err = |why| GroupError { index: 0, of: 0, why };
        match (field("sweepGroup"), field("sweepGroups")) {
            (None, None) => Ok(SweepGroup::ALL),
            (Some(Ok(index)), Some(Ok(of))) => SweepGroup::new(index, of),
            (Some(Err(_)), _) | (_, Some(Err(_))) => Err(err("not a whole number")),
            _ => Err(err("one of the two is missing")),
        }
    }

    /// The shards of `layout` this worker sweeps: every `of`th from its `index`; while
    /// the count changes, all of them for worker 0 and none for the others.
    pub fn shards(&self, layout: &SweepShards) -> Vec<String> {
        let changing = layout.previous().is_some();
        layout
            .all()
            .into_iter()
            .enumerate()
            .filter(|(n, _)| match changing {
                true => self.index == 0,
                false => n % usize::from(self.of) == usize::from(self.index),
            })
            .map(|(_, shard)| shard)
            .collect()
    }

    /// Whether this worker runs the backstop scan of unindexed items (worker 0 only:
    /// the scan's cursor is one).
    pub fn scans(&self) -> bool {
        self.index == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_workers_shares_cover_every_shard_once() {
        let layout = SweepShards::new(32).unwrap_or_default();
        let mut seen = BTreeSet::new();
        for i in 0..8 {
            for shard in SweepGroup::new(i, 8).expect("a share").shards(&layout) {
                assert!(seen.insert(shard), "a shard swept by two workers");
            }
        }
        assert_eq!(seen.len(), 32);
        assert_eq!(SweepGroup::ALL.shards(&layout).len(), 32);
    }

    #[test]
    fn while_the_count_changes_worker_zero_sweeps_everything_and_the_others_nothing() {
        let layout = SweepShards::new(64)
            .and_then(|s| s.changing_from(16))
            .unwrap_or_default();
        assert_eq!(SweepGroup::new(0, 4).expect("a share").shards(&layout).len(), 64);
        assert!(SweepGroup::new(1, 4).expect("a share").shards(&layout).is_empty());
    }

    #[test]
    fn a_scheduled_event_names_its_share_or_sweeps_everything() {
        let share = |v| SweepGroup::of_event(&v);
        assert_eq!(share(serde_json::json!({})), Ok(SweepGroup::ALL));
        assert_eq!(
            share(serde_json::json!({"detail-type": "Scheduled Event"})),
            Ok(SweepGroup::ALL)
        );
        assert_eq!(
            share(serde_json::json!({"sweepGroup": 2, "sweepGroups": 4})),
            SweepGroup::new(2, 4)
        );
        let err = share(serde_json::json!({"sweepGroup": 4, "sweepGroups": 4}))
            .expect_err("out of range");
        assert!(err.to_string().contains("sweepGroup is not below sweepGroups"), "{err}");
        let err = share(serde_json::json!({"sweepGroup": 1})).expect_err("half");
        assert!(err.to_string().contains("one of the two is missing"), "{err}");
        assert!(share(serde_json::json!({"sweepGroups": 0})).is_err());
        let err = share(serde_json::json!({"sweepGroup": "1", "sweepGroups": 2}))
            .expect_err("a string");
        assert!(err.to_string().contains("not a whole number"), "{err}");
    }

    #[test]
    fn only_worker_zero_scans() {
        assert!(SweepGroup::ALL.scans());
        assert!(!SweepGroup::new(1, 2).expect("a share").scans());
    }
}
