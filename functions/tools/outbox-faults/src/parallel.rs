//! Lambda's parallelization factor, applied on our side of a mapping that ignores it.
//!
//! With `ParallelizationFactor` > 1, a stream event source mapping runs up to that
//! many batches of one shard at the same time, and keeps the order of records of the
//! same *item* (same partition and sort key) only: records of different items — two
//! messages of one aggregate among them — may be handled in any order, by concurrent
//! invocations. The local AWS stores the setting and still runs one batch per shard
//! at a time. A publisher built with the `fault-injection` feature and
//! `OUTBOX_FAULTS_PARALLEL=<factor>` set splits each batch it is handed the way AWS
//! may ([`split`]) and hands the parts to its handler as concurrent invocations
//! ([`crate::stream`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::str::FromStr;

/// The variable that switches the split on: the mapping's parallelization factor,
/// 2 to 10.
pub const PARALLEL_VAR: &str = "OUTBOX_FAULTS_PARALLEL";
/// The largest factor AWS allows on a stream mapping.
pub const MAX_FACTOR: usize = 10;
/// The message of the log line of each split batch (fields: `records`, `parts`).
pub const SPLIT_LOG: &str = "split stream batch";

/// How many batches of one shard may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallel {
    /// The mapping's `ParallelizationFactor`, 2 to [`MAX_FACTOR`].
    pub factor: usize,
}

/// `OUTBOX_FAULTS_PARALLEL` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "OUTBOX_FAULTS_PARALLEL: `{0}` is not a parallelization factor from 2 to 10 (the stream mapping's ParallelizationFactor; unset it for 1)"
)]
pub struct ParallelError(String);

impl FromStr for Parallel {
    type Err = ParallelError;

    fn from_str(text: &str) -> Result<Self, ParallelError> {
        match text.trim().parse() {
            Ok(factor) if (2..=MAX_FACTOR).contains(&factor) => Ok(Parallel { factor }),
            _ => Err(ParallelError(text.to_owned())),
        }
    }
}

impl Parallel {
    /// The factor `OUTBOX_FAULTS_PARALLEL` asks for, or `None` when it is unset.
    pub fn from_env() -> Result<Option<Self>, ParallelError> {
        match std::env::var(PARALLEL_VAR) {
            Ok(text) if !text.trim().is_empty() => text.parse().map(Some),
            _ => Ok(None),
        }
    }
}

/// Splits a batch into at most `factor` parts as a mapping with that
/// parallelization factor may: `items[i]` is the item record `i` changed, and
/// `draw(n)` a uniform number in `0..n`. Each item goes, whole, to a part drawn for
/// it; the records of one item keep their batch order inside it, and records of
/// different items — even of one aggregate — may land in different parts. Returns
/// the records' positions per part, in batch order, without empty parts.
pub fn split<K: Eq + Hash>(
    items: &[K],
    factor: usize,
    mut draw: impl FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    let factor = factor.max(1);
    let mut part_of: HashMap<&K, usize> = HashMap::new();
    let mut parts = vec![Vec::new(); factor];
    for (i, item) in items.iter().enumerate() {
        let part = *part_of
            .entry(item)
            .or_insert_with(|| draw(factor).min(factor - 1));
        parts[part].push(i);
    }
    parts.retain(|p| !p.is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of aggregate `A` (items A/1, A/2, A/3 each changed more than once),
    /// with another aggregate's between them.
    const BATCH: [(&str, &str); 8] = [
        ("A", "1"),
        ("B", "1"),
        ("A", "2"),
        ("A", "1"),
        ("A", "3"),
        ("B", "1"),
        ("A", "2"),
        ("A", "3"),
    ];

    fn split_with(seed: u64, factor: usize) -> Vec<Vec<usize>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        split(&BATCH, factor, |n| rng.usize(..n))
    }

    #[test]
    fn every_record_lands_in_exactly_one_part_of_at_most_factor_none_empty() {
        for seed in 0..200 {
            for factor in [2, 3, MAX_FACTOR] {
                let parts = split_with(seed, factor);
                assert!(parts.len() <= factor && parts.iter().all(|p| !p.is_empty()));
                let mut all: Vec<usize> = parts.concat();
                all.sort_unstable();
                assert_eq!(all, (0..BATCH.len()).collect::<Vec<_>>(), "seed {seed}");
            }
        }
    }

    #[test]
    fn the_records_of_one_item_stay_in_one_part_in_batch_order() {
        for seed in 0..200 {
            for part in split_with(seed, 3) {
                assert!(
                    part.windows(2).all(|w| w[0] < w[1]),
                    "batch order: {part:?}"
                );
            }
            let parts = split_with(seed, 3);
            for item in BATCH {
                let holding = parts
                    .iter()
                    .filter(|p| p.iter().any(|&i| BATCH[i] == item))
                    .count();
                assert_eq!(holding, 1, "seed {seed}: {item:?} in {holding} parts");
            }
        }
    }

    #[test]
    fn different_items_of_one_aggregate_may_run_apart_and_a_factor_spreads_them() {
        let apart = (0..50).filter(|&seed| {
            let parts = split_with(seed, 2);
            let part_of = |item| {
                parts
                    .iter()
                    .position(|p| p.iter().any(|&i| BATCH[i] == item))
            };
            part_of(("A", "1")) != part_of(("A", "2"))
        });
        assert!(apart.count() > 0, "A/1 and A/2 never in different parts");
        let widest = (0..50).map(|seed| split_with(seed, 3).len()).max();
        assert_eq!(widest, Some(3));
        assert_eq!(split(&BATCH, 1, |_| 0).len(), 1, "factor 1: one batch");
        assert!(split::<u8>(&[], 4, |_| 0).is_empty());
    }

    #[test]
    fn the_setting_is_a_factor_from_2_to_10() {
        assert_eq!("2".parse(), Ok(Parallel { factor: 2 }));
        assert_eq!(" 10 ".parse(), Ok(Parallel { factor: 10 }));
        for bad in ["", "1", "11", "two", "-2"] {
            let err = bad
                .parse::<Parallel>()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains(PARALLEL_VAR) && err.contains("2 to 10"),
                "{bad}: {err}"
            );
        }
    }
}
