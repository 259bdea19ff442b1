//! The outbox table's attribute names that belong to the table rather than to the
//! outbox: its partition key, its sort key and its TTL attribute.
//!
//! A table the outbox is attached to already has them (`pk`/`sk`, a TTL attribute in
//! use by the application), so they are settings. Inside the engine every item is
//! read with the default names (`PK`, `SK`, `ExpiresAt`): the adapters rename the
//! configured attributes when an item is read and use the configured names in every
//! request they build ([`KeyNames::to_canonical`], [`KeyNames::to_configured`]).

use crate::config::{ConfigError, vars};
use crate::home::HomeRegions;
use crate::schema::SweepShards;
use std::collections::HashMap;

/// The partition key the engine reads items with.
const CANONICAL_PARTITION_KEY: &str = "PK";
/// The sort key the engine reads items with.
const CANONICAL_SORT_KEY: &str = "SK";
/// The TTL attribute the engine reads items with.
const CANONICAL_TTL_ATTRIBUTE: &str = "ExpiresAt";

/// The names of the outbox table's partition key, sort key (both strings) and TTL
/// attribute (epoch seconds). The default is `PK`, `SK`, `ExpiresAt`.
///
/// ```
/// use dynamodb_outbox_core::KeyNames;
///
/// let names = KeyNames::new("pk", "sk").ttl_attribute("expires_at");
/// assert_eq!(names.partition_key, "pk");
/// assert_eq!(names.ttl_attribute, "expires_at");
/// assert!(names.validate().is_ok());
///
/// // A sort key named like the partition key cannot be a table's key schema.
/// assert!(KeyNames::new("id", "id").validate().is_err());
/// assert_eq!(KeyNames::default().sort_key, "SK");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyNames {
    /// The partition key's attribute name (`OUTBOX_PARTITION_KEY`, default `PK`).
    pub partition_key: String,
    /// The sort key's attribute name (`OUTBOX_SORT_KEY`, default `SK`).
    pub sort_key: String,
    /// The TTL attribute's name (`OUTBOX_TTL_ATTRIBUTE`, default `ExpiresAt`): the
    /// table's TTL setting must name it, or `SENT` items are never deleted.
    pub ttl_attribute: String,
    /// How many sweeper index shards pending items are spread over
    /// (`OUTBOX_SWEEP_SHARDS`, default 16; while it changes,
    /// `OUTBOX_SWEEP_SHARDS_PREVIOUS`). Not a name, but like the names a property of
    /// the table's items that every producer and function must agree on.
    pub sweep_shards: SweepShards,
    /// On a global table, which messages this deployment owns (`OUTBOX_REGION`, else
    /// `AWS_REGION`; `OUTBOX_DEFAULT_HOME_REGION`): the publisher, the sweeper and the
    /// recovery function act only on those. The default owns every message.
    pub regions: HomeRegions,
}

impl Default for KeyNames {
    fn default() -> Self {
        KeyNames::new(CANONICAL_PARTITION_KEY, CANONICAL_SORT_KEY)
    }
}

impl KeyNames {
    /// A table keyed `partition_key`/`sort_key`, with the TTL attribute `ExpiresAt`.
    pub fn new(partition_key: impl Into<String>, sort_key: impl Into<String>) -> Self {
        KeyNames {
            partition_key: partition_key.into(),
            sort_key: sort_key.into(),
            ttl_attribute: CANONICAL_TTL_ATTRIBUTE.to_owned(),
            sweep_shards: SweepShards::default(),
            regions: HomeRegions::default(),
        }
    }

    /// The same names with the TTL attribute `name`.
    pub fn ttl_attribute(mut self, name: impl Into<String>) -> Self {
        self.ttl_attribute = name.into();
        self
    }

    /// The same names with the sweeper index layout `shards`.
    ///
    /// ```
    /// use dynamodb_outbox_core::{KeyNames, SweepShards};
    ///
    /// let keys = KeyNames::default().sweep_shards(SweepShards::new(64)?);
    /// assert_eq!(keys.sweep_shards.count(), 64);
    /// assert!(keys.is_default()); // the names are still the defaults
    /// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
    /// ```
    pub fn sweep_shards(mut self, shards: SweepShards) -> Self {
        self.sweep_shards = shards;
        self
    }

    /// The same names for a deployment that owns `regions`' messages (a global
    /// table's, [`crate::home`]).
    pub fn regions(mut self, regions: HomeRegions) -> Self {
        self.regions = regions;
        self
    }

    /// Reads `OUTBOX_PARTITION_KEY`, `OUTBOX_SORT_KEY` and `OUTBOX_TTL_ATTRIBUTE` from
    /// the process environment (each defaults to today's name), validated, and the
    /// sweeper index layout ([`SweepShards::from_lookup`]).
    ///
    /// ```no_run
    /// let names = dynamodb_outbox_core::KeyNames::from_env()?;
    /// println!("keys {} / {}", names.partition_key, names.sort_key);
    /// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
    /// ```
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`KeyNames::from_env`] through `lookup` (a map in tests).
    ///
    /// ```
    /// use dynamodb_outbox_core::KeyNames;
    ///
    /// let names = KeyNames::from_lookup(|name| (name == "OUTBOX_SORT_KEY").then(|| "sk".into()))?;
    /// assert_eq!((names.partition_key.as_str(), names.sort_key.as_str()), ("PK", "sk"));
    /// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let read = |name: &str, default: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let names = KeyNames {
            partition_key: read(vars::PARTITION_KEY, CANONICAL_PARTITION_KEY),
            sort_key: read(vars::SORT_KEY, CANONICAL_SORT_KEY),
            ttl_attribute: read(vars::TTL_ATTRIBUTE, CANONICAL_TTL_ATTRIBUTE),
            sweep_shards: SweepShards::from_lookup(&lookup)?,
            regions: HomeRegions::from_lookup(&lookup)?,
        };
        names.validate()?;
        Ok(names)
    }

    /// Whether the names can be a table's: none empty, the two keys different, the
    /// TTL attribute neither key (DynamoDB refuses a TTL on a key attribute). The
    /// error names the setting to change.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let empty = |name, value: &str| {
            value.is_empty().then(|| ConfigError::Invalid {
                name,
                reason: "an attribute name cannot be empty".to_owned(),
            })
        };
        if let Some(e) = empty(vars::PARTITION_KEY, &self.partition_key)
            .or_else(|| empty(vars::SORT_KEY, &self.sort_key))
            .or_else(|| empty(vars::TTL_ATTRIBUTE, &self.ttl_attribute))
        {
            return Err(e);
        }
        if self.partition_key == self.sort_key {
            return Err(ConfigError::Invalid {
                name: vars::SORT_KEY,
                reason: format!(
                    "the sort key `{}` is the partition key's name too: the outbox table needs a sort key of its own",
                    self.sort_key
                ),
            });
        }
        if self.ttl_attribute == self.partition_key || self.ttl_attribute == self.sort_key {
            return Err(ConfigError::Invalid {
                name: vars::TTL_ATTRIBUTE,
                reason: format!(
                    "the TTL attribute `{}` is a key attribute: name the table's TTL attribute (a number of epoch seconds)",
                    self.ttl_attribute
                ),
            });
        }
        for (variable, configured, canonical) in self.roles() {
            if let Some(reason) = collision(configured, canonical) {
                return Err(ConfigError::Invalid {
                    name: variable,
                    reason,
                });
            }
        }
        Ok(())
    }

    fn roles(&self) -> [(&'static str, &str, &'static str); 3] {
        [
            (
                vars::PARTITION_KEY,
                &self.partition_key,
                CANONICAL_PARTITION_KEY,
            ),
            (vars::SORT_KEY, &self.sort_key, CANONICAL_SORT_KEY),
            (
                vars::TTL_ATTRIBUTE,
                &self.ttl_attribute,
                CANONICAL_TTL_ATTRIBUTE,
            ),
        ]
    }

    /// Whether these are the default names (nothing to rename), whatever the
    /// sweeper index layout.
    pub fn is_default(&self) -> bool {
        self.pairs()
            .iter()
            .all(|(configured, canonical)| configured == canonical)
    }

    /// Renames the configured key and TTL attributes of an item read from the table
    /// to the names the engine reads (`PK`, `SK`, `ExpiresAt`). An attribute that
    /// already has a default name but is not the configured one (a business
    /// attribute called `PK` on a table keyed `pk`) is dropped: the key wins.
    pub fn to_canonical<V>(&self, item: &mut HashMap<String, V>) {
        for (configured, canonical) in self.pairs() {
            if configured != canonical {
                item.remove(canonical);
                if let Some(value) = item.remove(configured) {
                    item.insert(canonical.to_owned(), value);
                }
            }
        }
    }

    /// Renames an item written with the engine's names to the configured ones: what
    /// the producer puts.
    pub fn to_configured<V>(&self, item: &mut HashMap<String, V>) {
        for (configured, canonical) in self.pairs() {
            if configured != canonical
                && let Some(value) = item.remove(canonical)
            {
                item.insert(configured.to_owned(), value);
            }
        }
    }

    fn pairs(&self) -> [(&str, &'static str); 3] {
        [
            (&self.partition_key, CANONICAL_PARTITION_KEY),
            (&self.sort_key, CANONICAL_SORT_KEY),
            (&self.ttl_attribute, CANONICAL_TTL_ATTRIBUTE),
        ]
    }
}

/// Why `configured` cannot name the attribute whose engine name is `canonical`: it is
/// an attribute the outbox writes itself, or the engine's name of another of the
/// three (items are renamed to the engine's names when read: `SK` as the partition
/// key would be overwritten by the sort key).
fn collision(configured: &str, canonical: &str) -> Option<String> {
    use crate::schema::*;
    const WRITTEN: [&str; 17] = [
        ITEM_TYPE,
        TOPIC,
        PAYLOAD,
        STATUS,
        RETRY_COUNT,
        MESSAGE_ID,
        CREATED_AT,
        SEQUENCE,
        SWEEP_SHARD,
        SWEEP_DUE_AT,
        SENT_AT,
        FAILED_AT,
        LAST_ERROR,
        PAYLOAD_ON,
        PAYLOAD_SIZE,
        SCAN_SEGMENTS,
        SCAN_CURSOR,
    ];
    let engine = [
        CANONICAL_PARTITION_KEY,
        CANONICAL_SORT_KEY,
        CANONICAL_TTL_ATTRIBUTE,
    ];
    if WRITTEN.contains(&configured) {
        return Some(format!(
            "`{configured}` is an attribute the outbox writes itself: name the table's own attribute"
        ));
    }
    (engine.contains(&configured) && configured != canonical).then(|| {
        format!(
            "`{configured}` is the default name of another of the three (PK, SK, ExpiresAt): use it only for that one"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)]) -> Result<KeyNames, ConfigError> {
        KeyNames::from_lookup(crate::config::test_env::lookup(pairs))
    }

    #[test]
    fn unset_names_are_the_defaults_and_set_ones_are_trimmed() {
        assert_eq!(names(&[]).expect("defaults"), KeyNames::default());
        assert!(KeyNames::default().is_default());
        let read = names(&[
            ("OUTBOX_PARTITION_KEY", " pk "),
            ("OUTBOX_SORT_KEY", "sk"),
            ("OUTBOX_TTL_ATTRIBUTE", "expires_at"),
        ])
        .expect("valid");
        assert_eq!(read, KeyNames::new("pk", "sk").ttl_attribute("expires_at"));
    }

    #[test]
    fn names_a_table_cannot_have_are_refused_naming_the_setting() {
        for (pairs, variable) in [
            (&[("OUTBOX_SORT_KEY", "PK")][..], "OUTBOX_SORT_KEY"),
            (
                &[("OUTBOX_TTL_ATTRIBUTE", "SK")][..],
                "OUTBOX_TTL_ATTRIBUTE",
            ),
            (
                &[("OUTBOX_PARTITION_KEY", "t"), ("OUTBOX_TTL_ATTRIBUTE", "t")][..],
                "OUTBOX_TTL_ATTRIBUTE",
            ),
            // The engine's name of another role: renaming on read would lose a key.
            (
                &[("OUTBOX_PARTITION_KEY", "SK"), ("OUTBOX_SORT_KEY", "PK")][..],
                "OUTBOX_PARTITION_KEY",
            ),
            (
                &[
                    ("OUTBOX_PARTITION_KEY", "pk"),
                    ("OUTBOX_SORT_KEY", "sk"),
                    ("OUTBOX_TTL_ATTRIBUTE", "PK"),
                ][..],
                "OUTBOX_TTL_ATTRIBUTE",
            ),
            // An attribute the outbox writes itself.
            (&[("OUTBOX_SORT_KEY", "Status")][..], "OUTBOX_SORT_KEY"),
        ] {
            let err = names(pairs).expect_err(variable);
            assert!(err.to_string().contains(variable), "{err}");
        }
        let empty = KeyNames::new("", "sk").validate().expect_err("empty");
        assert!(
            empty.to_string().contains("OUTBOX_PARTITION_KEY"),
            "{empty}"
        );
    }

    #[test]
    fn items_are_renamed_both_ways_and_the_key_wins_over_a_business_attribute() {
        let keys = KeyNames::new("pk", "sk").ttl_attribute("ttl");
        let mut item = HashMap::from([
            ("pk".to_owned(), 1),
            ("sk".to_owned(), 2),
            ("ttl".to_owned(), 3),
            ("PK".to_owned(), 9),
            ("Topic".to_owned(), 4),
        ]);
        keys.to_canonical(&mut item);
        let canonical = HashMap::from([
            ("PK".to_owned(), 1),
            ("SK".to_owned(), 2),
            ("ExpiresAt".to_owned(), 3),
            ("Topic".to_owned(), 4),
        ]);
        assert_eq!(item, canonical);
        keys.to_configured(&mut item);
        assert_eq!(item.get("pk"), Some(&1));
        assert_eq!(item.get("ttl"), Some(&3));
        assert!(!item.contains_key("PK"));
        let mut untouched = canonical.clone();
        KeyNames::default().to_canonical(&mut untouched);
        assert_eq!(untouched, canonical);
    }
}
