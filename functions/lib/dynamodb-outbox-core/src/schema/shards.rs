//! How a pending item's sweeper index partition (`SweepShard`) is chosen: a hash of
//! its aggregate modulo the shard count, a deployment setting (default 16).
//!
//! The index's sort key only ever increases (the due time), so DynamoDB cannot split
//! a hot index partition: each shard takes at most ~1,000 writes a second, and every
//! message writes the index twice (in when written `PENDING`, out when `SENT`). The
//! shard count is therefore the index's ceiling — 16 shards carry about 8,000
//! messages a second (docs/scale.md) — and is a setting.
//!
//! Producers, the publisher, the sweeper, the recovery function and the operator's
//! tool must agree on it. Changing it on a live table is a change *from* the old
//! count: every reader reads the shards of both counts (the sweep queries both sets,
//! the order fence reads an aggregate's shard under each), every writer writes the
//! new one, and a sweep's claim moves the item it claims into its new shard, so the
//! old shards empty as their items are sent or swept. When `outbox-ops shards` counts
//! none left outside the new layout, the old count is dropped (docs/operations.md,
//! "Changing the sweeper index's shard count").

use super::stable_hash;
use crate::config::{ConfigError, vars};
use std::collections::BTreeSet;

/// The default number of sweeper index shards.
pub const DEFAULT_SWEEP_SHARDS: u16 = 16;
/// The most sweeper index shards: every sweep queries each at least once (one read
/// request unit each), so a sweep of 1,000 shards reads 1,000 pages a minute even
/// when nothing is due.
pub const MAX_SWEEP_SHARDS: u16 = 1000;

/// The sweeper index layout: how many shards pending items are written to, and while
/// the count is being changed, the count they were written to before.
///
/// ```
/// use dynamodb_outbox_core::SweepShards;
///
/// let shards = SweepShards::new(64)?;
/// assert_eq!(shards.shard_of("ORDER#42"), shards.shard_of("ORDER#42"));
/// assert_eq!(shards.all().len(), 64);
///
/// // Going from 16 to 64 on a live table: write the new layout, read both.
/// let changing = SweepShards::new(64)?.changing_from(16)?;
/// assert_eq!(changing.all().len(), 64); // 00..15 are shards of both counts
/// assert!(changing.shards_of("ORDER#42").contains(&changing.shard_of("ORDER#42")));
/// assert!(changing.is_shard("15") && !SweepShards::new(16)?.is_shard("16"));
/// assert!(SweepShards::new(0).is_err());
/// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SweepShards {
    count: u16,
    previous: Option<u16>,
}

impl Default for SweepShards {
    fn default() -> Self {
        SweepShards {
            count: DEFAULT_SWEEP_SHARDS,
            previous: None,
        }
    }
}

impl SweepShards {
    /// `count` shards (1 to [`MAX_SWEEP_SHARDS`]).
    pub fn new(count: u32) -> Result<Self, ConfigError> {
        Ok(SweepShards {
            count: checked(vars::SWEEP_SHARDS, count)?,
            previous: None,
        })
    }

    /// The same layout while the table still holds items written with `previous`
    /// shards: readers read both, writers write this one.
    pub fn changing_from(self, previous: u32) -> Result<Self, ConfigError> {
        let previous = checked(vars::SWEEP_SHARDS_PREVIOUS, previous)?;
        Ok(SweepShards {
            previous: (previous != self.count).then_some(previous),
            ..self
        })
    }

    /// Reads `OUTBOX_SWEEP_SHARDS` (default 16) and `OUTBOX_SWEEP_SHARDS_PREVIOUS`
    /// (set only while the count is being changed) through `lookup`.
    ///
    /// ```
    /// use dynamodb_outbox_core::SweepShards;
    ///
    /// let shards = SweepShards::from_lookup(|name| match name {
    ///     "OUTBOX_SWEEP_SHARDS" => Some("64".into()),
    ///     "OUTBOX_SWEEP_SHARDS_PREVIOUS" => Some("16".into()),
    ///     _ => None,
    /// })?;
    /// assert_eq!((shards.count(), shards.previous()), (64, Some(16)));
    /// let wrong = SweepShards::from_lookup(|_| Some("sixteen".into())).unwrap_err();
    /// assert!(wrong.to_string().contains("OUTBOX_SWEEP_SHARDS"));
    /// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let read = |name: &'static str| -> Result<Option<u32>, ConfigError> {
            match lookup(name).map(|v| v.trim().to_owned()) {
                None => Ok(None),
                Some(v) if v.is_empty() => Ok(None),
                Some(v) => v.parse().map(Some).map_err(|_| ConfigError::Invalid {
                    name,
                    reason: format!(
                        "`{v}` is not a whole number of shards (1 to {MAX_SWEEP_SHARDS})"
                    ),
                }),
            }
        };
        let shards = SweepShards::new(
            read(vars::SWEEP_SHARDS)?.unwrap_or(u32::from(DEFAULT_SWEEP_SHARDS)),
        )?;
        match read(vars::SWEEP_SHARDS_PREVIOUS)? {
            Some(previous) => shards.changing_from(previous),
            None => Ok(shards),
        }
    }

    /// The number of shards items are written to.
    pub fn count(&self) -> u32 {
        u32::from(self.count)
    }

    /// The number of shards older items may still be in, while the count changes.
    pub fn previous(&self) -> Option<u32> {
        self.previous.map(u32::from)
    }

    /// The shard a pending item of aggregate `pk` is written to: a hash of the key, so
    /// one aggregate's messages share a shard.
    pub fn shard_of(&self, pk: &str) -> String {
        shard_in(pk, self.count)
    }

    /// Every shard a pending item of `pk` may be in: its shard, and while the count
    /// changes, its shard under the previous count. What the order fence reads.
    pub fn shards_of(&self, pk: &str) -> Vec<String> {
        let mut shards = vec![self.shard_of(pk)];
        if let Some(previous) = self.previous {
            let old = shard_in(pk, previous);
            if old != shards[0] {
                shards.push(old);
            }
        }
        shards
    }

    /// Every shard a sweep queries: those of the count, and of the previous count
    /// while it changes, each once, in order.
    pub fn all(&self) -> Vec<String> {
        let most = self.count.max(self.previous.unwrap_or(0));
        (0..most).map(name).collect()
    }

    /// Whether `shard` is one a sweep queries (`"00"`, `"01"`, … as written).
    pub fn is_shard(&self, shard: &str) -> bool {
        let of = |count: u16| number(shard).is_some_and(|n| n < count);
        of(self.count) || self.previous.is_some_and(of)
    }

    /// Whether a pending item of `pk` in `shard` is where the current count puts it
    /// (else a claim moves it there).
    pub fn is_current(&self, pk: &str, shard: &str) -> bool {
        self.shard_of(pk) == shard
    }

    /// The shards of the previous count that are not shards of the current one: what
    /// is left to empty, besides the items whose shard number changed.
    pub fn retired(&self) -> BTreeSet<String> {
        match self.previous {
            Some(previous) if previous > self.count => (self.count..previous).map(name).collect(),
            _ => BTreeSet::new(),
        }
    }
}

fn checked(name: &'static str, count: u32) -> Result<u16, ConfigError> {
    u16::try_from(count)
        .ok()
        .filter(|n| (1..=MAX_SWEEP_SHARDS).contains(n))
        .ok_or_else(|| ConfigError::Invalid {
            name,
            reason: format!("{count} shards: the sweeper index takes 1 to {MAX_SWEEP_SHARDS}"),
        })
}

fn shard_in(pk: &str, count: u16) -> String {
    // `count` is at least 1 (checked), so the modulo is defined and fits in u16.
    let n = stable_hash(pk.as_bytes()) % u64::from(count.max(1));
    name(u16::try_from(n).unwrap_or(0))
}

/// A shard's value: two digits at least, as every version has written them.
fn name(n: u16) -> String {
    format!("{n:02}")
}

/// The shard number `shard` names, when it is written the way [`name`] writes it.
fn number(shard: &str) -> Option<u16> {
    let n: u16 = shard.parse().ok()?;
    (shard.len() >= 2 && name(n) == shard).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(count: u32) -> SweepShards {
        SweepShards::new(count).unwrap_or_default()
    }

    #[test]
    fn the_default_layout_is_the_sixteen_shards_every_version_wrote() {
        let sixteen = SweepShards::default();
        assert_eq!(sixteen, shards(16));
        // FNV-1a of "USER#123" modulo 16, as producers before the setting wrote it:
        // changing it would strand pending items in shards no sweep reads.
        assert_eq!(
            sixteen.shard_of("USER#123"),
            format!("{:02}", stable_hash(b"USER#123") % 16)
        );
        assert_eq!(sixteen.all().first().map(String::as_str), Some("00"));
        assert_eq!(sixteen.all().last().map(String::as_str), Some("15"));
    }

    #[test]
    fn every_aggregate_lands_in_a_shard_the_sweep_queries() {
        for count in [1, 16, 100, 256, 1000] {
            let layout = shards(count);
            let all: BTreeSet<String> = layout.all().into_iter().collect();
            assert_eq!(all.len(), count as usize);
            for pk in ["a", "USER#1", "ORDER#99", "", "LEDGER#7"] {
                let shard = layout.shard_of(pk);
                assert!(all.contains(&shard) && layout.is_shard(&shard), "{count} {pk}");
            }
        }
    }

    #[test]
    fn only_shard_values_as_written_count() {
        let layout = shards(256);
        for ok in ["00", "09", "99", "100", "255"] {
            assert!(layout.is_shard(ok), "{ok}");
        }
        for foreign in ["256", "1", "001", "-1", "ab", "", "0100", "FAILED#01"] {
            assert!(!layout.is_shard(foreign), "{foreign}");
        }
    }

    #[test]
    fn while_the_count_changes_both_layouts_are_read_and_only_the_new_one_written() {
        let up = shards(64).changing_from(16).unwrap_or_default();
        let down = shards(16).changing_from(64).unwrap_or_default();
        for layout in [up, down] {
            assert_eq!(layout.all().len(), 64);
            for pk in (0..200).map(|i| format!("ORDER#{i}")) {
                let reads = layout.shards_of(&pk);
                assert_eq!(reads[0], layout.shard_of(&pk));
                assert!(reads.contains(&shard_in(&pk, 16)) && reads.contains(&shard_in(&pk, 64)));
                assert!(reads.iter().all(|s| layout.is_shard(s)));
            }
        }
        assert_eq!(down.retired().len(), 48);
        assert!(down.retired().contains("16") && !down.is_shard("64"));
        assert!(up.retired().is_empty());
        assert_eq!(shards(16).changing_from(16).ok(), Some(shards(16)));
    }

    #[test]
    fn a_count_out_of_range_or_not_a_number_is_refused_naming_the_variable() {
        for count in [0, 1001, 70_000] {
            assert!(SweepShards::new(count).is_err(), "{count}");
        }
        let previous_wrong = SweepShards::from_lookup(|name| {
            (name == vars::SWEEP_SHARDS_PREVIOUS).then(|| "0".to_owned())
        });
        assert!(
            previous_wrong
                .map_err(|e| e.to_string())
                .is_err_and(|e| e.contains("OUTBOX_SWEEP_SHARDS_PREVIOUS"))
        );
        let unset = SweepShards::from_lookup(|_| Some(" ".to_owned()));
        assert_eq!(unset.ok(), Some(SweepShards::default()));
    }
}
