//! Whether the table a function is configured for is the table it will work on: its
//! key schema, the sweeper index, its stream and its TTL attribute compared with the
//! configuration ([`KeyNames`], the fixed [`TABLE`] shape), as a pure decision.
//!
//! A wrong key name is otherwise caught nowhere: every write of a function fails with
//! a validation error that reads like a permission or a poison item, the publisher
//! dead-letters every message and the sweeper's errors point at IAM. Checked once per
//! process before the first piece of work, a mismatch is one error that names the
//! setting, the configured value, the table's actual value and what to do, and the
//! function refuses work until it is fixed (`outbox-ops check` runs the same
//! comparison for operators and CI).

use super::TABLE;
use crate::KeyNames;
use crate::config::vars;
use std::collections::BTreeMap;
use std::fmt;

/// What `DescribeTable` (and `DescribeTimeToLive`) said about the table, in the
/// adapters' words: nothing here is an SDK type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenTable {
    /// The table's name.
    pub name: String,
    /// The partition (`HASH`) key's attribute, when the key schema has one.
    pub partition_key: Option<String>,
    /// The sort (`RANGE`) key's attribute, when the key schema has one.
    pub sort_key: Option<String>,
    /// Each key attribute's type as the table defines it (`S`, `N`, `B`).
    pub attribute_types: BTreeMap<String, String>,
    /// Each global secondary index by name: its partition and sort key attributes.
    pub indexes: BTreeMap<String, (Option<String>, Option<String>)>,
    /// The stream's view type when a stream is enabled; `None` when there is none.
    pub stream_view_type: Option<String>,
    /// The TTL setting, when it was read.
    pub ttl: SeenTtl,
}

/// The table's TTL setting as `DescribeTimeToLive` gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SeenTtl {
    /// Not read (the call failed or was not made): not checked.
    #[default]
    NotRead,
    /// TTL is off (or being turned off).
    Disabled,
    /// TTL is on (or being turned on) for this attribute.
    On(String),
}

/// What a function needs of the table, beyond its keys and the sweeper index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableNeeds {
    /// A stream with new images: the publisher reads the item from its record, the
    /// recovery function reads discarded records back.
    pub stream: bool,
}

/// One thing compared, and how it came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was compared: `partition key`, `sweeper index`, `stream`, …
    pub what: &'static str,
    /// How it came out.
    pub outcome: Outcome,
}

/// How a comparison came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// As configured; the words say what was seen.
    Ok(String),
    /// Not as configured: the function refuses work.
    Mismatch(Mismatch),
    /// Worth fixing, but no reason to refuse work (TTL off: `SENT` items stay).
    Warning(String),
}

/// A table that is not what the configuration says: which setting, its value, the
/// table's, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The table's name.
    pub table: String,
    /// The setting that names it: the environment variable and the stacks' setting.
    pub setting: &'static str,
    /// What the configuration says.
    pub configured: String,
    /// What the table has.
    pub actual: String,
    /// What to do.
    pub fix: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table `{}` does not match {}: configured `{}`, the table has `{}`; {}",
            self.table, self.setting, self.configured, self.actual, self.fix
        )
    }
}

/// The setting of the partition key's name.
const PARTITION_KEY_SETTING: &str = "OUTBOX_PARTITION_KEY (stack setting partition_key_name / keyNames.partitionKey)";
/// The setting of the sort key's name.
const SORT_KEY_SETTING: &str =
    "OUTBOX_SORT_KEY (stack setting sort_key_name / keyNames.sortKey)";
/// The setting of the TTL attribute's name.
const TTL_SETTING: &str =
    "OUTBOX_TTL_ATTRIBUTE (stack setting ttl_attribute_name / keyNames.ttlAttribute)";
/// The setting of the table's name.
const TABLE_SETTING: &str = "OUTBOX_TABLE_NAME (the stacks' outbox table)";
/// Where the index, the stream and the types come from: the table's definition.
const TABLE_DEFINITION: &str = "the outbox table's definition (docs/schema.md)";

/// Stream view types whose records carry the new image.
const NEW_IMAGE_VIEWS: [&str; 2] = ["NEW_IMAGE", "NEW_AND_OLD_IMAGES"];

/// Compares `seen` with the configuration `keys` and the fixed [`TABLE`] shape: one
/// [`Check`] per thing compared, in a stable order.
pub fn check_table(seen: &SeenTable, keys: &KeyNames, needs: TableNeeds) -> Vec<Check> {
    let mut checks = vec![
        key_check(seen, "partition key", seen.partition_key.as_deref(), &keys.partition_key, PARTITION_KEY_SETTING),
        key_check(seen, "sort key", seen.sort_key.as_deref(), &keys.sort_key, SORT_KEY_SETTING),
        index_check(seen),
    ];
    if needs.stream {
        checks.push(stream_check(seen));
    }
    checks.push(ttl_check(seen, &keys.ttl_attribute));
    checks
}

/// The mismatches among `checks`.
pub fn mismatches(checks: &[Check]) -> Vec<&Mismatch> {
    checks
        .iter()
        .filter_map(|c| match &c.outcome {
            Outcome::Mismatch(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// The table named by the configuration does not exist.
pub fn missing_table(table: &str) -> Mismatch {
    Mismatch {
        table: table.to_owned(),
        setting: vars::TABLE_NAME,
        configured: table.to_owned(),
        actual: "no such table in this account and region".to_owned(),
        fix: format!(
            "set {TABLE_SETTING} to the outbox table's name, or deploy the function in the table's region"
        ),
    }
}

fn mismatch(seen: &SeenTable, setting: &'static str, configured: &str, actual: &str, fix: String) -> Outcome {
    Outcome::Mismatch(Mismatch {
        table: seen.name.clone(),
        setting,
        configured: configured.to_owned(),
        actual: actual.to_owned(),
        fix,
    })
}

fn key_check(
    seen: &SeenTable,
    what: &'static str,
    actual: Option<&str>,
    configured: &str,
    setting: &'static str,
) -> Check {
    let var = setting.split(' ').next().unwrap_or(setting);
    let outcome = match actual {
        None => mismatch(
            seen,
            setting,
            configured,
            &format!("no {what}"),
            format!("the outbox needs a table with a string partition key and a string sort key: use such a table ({TABLE_DEFINITION})"),
        ),
        Some(actual) if actual != configured => mismatch(
            seen,
            setting,
            configured,
            actual,
            format!("set {var} to `{actual}` (the table's {what}), or point {TABLE_SETTING} at the outbox table"),
        ),
        Some(actual) => match seen.attribute_types.get(actual).map(String::as_str) {
            Some("S") | None => Outcome::Ok(format!("`{actual}` (string)")),
            Some(other) => mismatch(
                seen,
                TABLE_DEFINITION,
                &format!("{actual} of type S"),
                &format!("{actual} of type {other}"),
                format!("the outbox writes its {what} as a string: use a table whose {what} is a string (S)"),
            ),
        },
    };
    Check { what, outcome }
}

fn index_check(seen: &SeenTable) -> Check {
    let what = "sweeper index";
    let wanted = (TABLE.sweep_index_partition_key, TABLE.sweep_index_sort_key);
    let configured = format!("{} keyed {}/{}", TABLE.sweep_index, wanted.0, wanted.1);
    let outcome = match seen.indexes.get(TABLE.sweep_index) {
        None => mismatch(
            seen,
            TABLE_DEFINITION,
            &configured,
            &format!("no index {} (indexes: {})", TABLE.sweep_index, names(seen.indexes.keys())),
            format!("add the global secondary index {configured} (partition key string, sort key number, KEYS_ONLY), as the stacks create it"),
        ),
        Some((pk, sk)) if (pk.as_deref(), sk.as_deref()) != (Some(wanted.0), Some(wanted.1)) => mismatch(
            seen,
            TABLE_DEFINITION,
            &configured,
            &format!("{} keyed {}/{}", TABLE.sweep_index, pk.as_deref().unwrap_or("-"), sk.as_deref().unwrap_or("-")),
            format!("recreate the index as {configured}"),
        ),
        Some(_) => Outcome::Ok(configured),
    };
    Check { what, outcome }
}

fn stream_check(seen: &SeenTable) -> Check {
    let what = "stream";
    let configured = NEW_IMAGE_VIEWS.join(" or ");
    let outcome = match seen.stream_view_type.as_deref() {
        Some(view) if NEW_IMAGE_VIEWS.contains(&view) => Outcome::Ok(format!("enabled, {view}")),
        Some(view) => mismatch(
            seen,
            TABLE_DEFINITION,
            &format!("a stream of {configured}"),
            &format!("a stream of {view}"),
            "the publisher reads each item from its record's new image: set the table's stream view type to NEW_IMAGE (a stream's view type cannot change: disable the stream and enable it again, then point the publisher's event source mapping at the new stream)".to_owned(),
        ),
        None => mismatch(
            seen,
            TABLE_DEFINITION,
            &format!("a stream of {configured}"),
            "no stream",
            "enable the table's stream with view type NEW_IMAGE and point the publisher's event source mapping at it".to_owned(),
        ),
    };
    Check { what, outcome }
}

fn ttl_check(seen: &SeenTable, configured: &str) -> Check {
    let what = "TTL attribute";
    let outcome = match &seen.ttl {
        SeenTtl::NotRead => Outcome::Warning("not read (dynamodb:DescribeTimeToLive failed): not checked".to_owned()),
        SeenTtl::Disabled => Outcome::Warning(format!(
            "TTL is off: SENT items are never deleted; turn TTL on for `{configured}`"
        )),
        SeenTtl::On(actual) if actual == configured => Outcome::Ok(format!("`{actual}`")),
        SeenTtl::On(actual) => mismatch(
            seen,
            TTL_SETTING,
            configured,
            actual,
            format!(
                "set OUTBOX_TTL_ATTRIBUTE to `{actual}` (the table's TTL attribute: a table has one), or SENT items are never deleted"
            ),
        ),
    };
    Check { what, outcome }
}

fn names<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let all: Vec<&str> = names.map(String::as_str).collect();
    if all.is_empty() {
        "none".to_owned()
    } else {
        all.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table as the stacks create it, keyed `pk`/`sk`.
    fn good(pk: &str, sk: &str) -> SeenTable {
        SeenTable {
            name: "orders".into(),
            partition_key: Some(pk.into()),
            sort_key: Some(sk.into()),
            attribute_types: [(pk, "S"), (sk, "S"), ("SweepShard", "S"), ("SweepDueAt", "N")]
                .into_iter()
                .map(|(a, t)| (a.to_owned(), t.to_owned()))
                .collect(),
            indexes: [("OutboxSweepIndex".to_owned(), (Some("SweepShard".into()), Some("SweepDueAt".into())))]
                .into_iter()
                .collect(),
            stream_view_type: Some("NEW_IMAGE".into()),
            ttl: SeenTtl::On("ExpiresAt".into()),
        }
    }

    const PUBLISHER: TableNeeds = TableNeeds { stream: true };

    /// The only mismatch of the check, as its message.
    fn the_mismatch(seen: &SeenTable, keys: &KeyNames, needs: TableNeeds) -> String {
        let checks = check_table(seen, keys, needs);
        let found = mismatches(&checks);
        assert_eq!(found.len(), 1, "{checks:?}");
        found[0].to_string()
    }

    fn assert_names(message: &str, parts: &[&str]) {
        for part in parts {
            assert!(message.contains(part), "`{part}` not in: {message}");
        }
    }

    #[test]
    fn a_table_as_configured_passes_every_check() {
        let checks = check_table(&good("PK", "SK"), &KeyNames::default(), PUBLISHER);
        let whats: Vec<_> = checks.iter().map(|c| c.what).collect();
        assert_eq!(whats, ["partition key", "sort key", "sweeper index", "stream", "TTL attribute"]);
        assert!(checks.iter().all(|c| matches!(c.outcome, Outcome::Ok(_))), "{checks:?}");
        let mut old_and_new = good("PK", "SK");
        old_and_new.stream_view_type = Some("NEW_AND_OLD_IMAGES".into());
        assert!(mismatches(&check_table(&old_and_new, &KeyNames::default(), PUBLISHER)).is_empty());
    }

    #[test]
    fn a_wrong_partition_key_names_the_setting_both_values_and_what_to_set() {
        let message = the_mismatch(&good("tenant_id", "SK"), &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["OUTBOX_PARTITION_KEY", "partition_key_name", "configured `PK`", "has `tenant_id`", "set OUTBOX_PARTITION_KEY to `tenant_id`", "orders"]);
    }

    #[test]
    fn a_wrong_sort_key_names_its_setting() {
        let keys = KeyNames::new("tenant_id", "entity");
        let message = the_mismatch(&good("tenant_id", "entity_id"), &keys, PUBLISHER);
        assert_names(&message, &["OUTBOX_SORT_KEY", "configured `entity`", "has `entity_id`"]);
    }

    #[test]
    fn a_key_that_is_not_a_string_or_absent_is_a_mismatch() {
        let mut numeric = good("PK", "SK");
        numeric.attribute_types.insert("SK".into(), "N".into());
        let message = the_mismatch(&numeric, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["SK of type S", "SK of type N"]);
        let mut hash_only = good("PK", "SK");
        hash_only.sort_key = None;
        let message = the_mismatch(&hash_only, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["OUTBOX_SORT_KEY", "no sort key"]);
    }

    #[test]
    fn a_missing_or_differently_keyed_sweeper_index_is_a_mismatch() {
        let mut none = good("PK", "SK");
        none.indexes.clear();
        let message = the_mismatch(&none, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["OutboxSweepIndex keyed SweepShard/SweepDueAt", "indexes: none"]);
        let mut other = good("PK", "SK");
        other.indexes.insert("OutboxSweepIndex".into(), (Some("Shard".into()), Some("SweepDueAt".into())));
        let message = the_mismatch(&other, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["has `OutboxSweepIndex keyed Shard/SweepDueAt`"]);
    }

    #[test]
    fn the_publisher_needs_a_stream_of_new_images_and_the_sweeper_none() {
        let mut keys_only = good("PK", "SK");
        keys_only.stream_view_type = Some("KEYS_ONLY".into());
        let message = the_mismatch(&keys_only, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["NEW_IMAGE or NEW_AND_OLD_IMAGES", "a stream of KEYS_ONLY"]);
        let mut none = good("PK", "SK");
        none.stream_view_type = None;
        assert_names(&the_mismatch(&none, &KeyNames::default(), PUBLISHER), &["no stream"]);
        let sweeper = check_table(&none, &KeyNames::default(), TableNeeds { stream: false });
        assert!(mismatches(&sweeper).is_empty(), "{sweeper:?}");
    }

    #[test]
    fn a_ttl_on_another_attribute_is_a_mismatch_and_ttl_off_a_warning() {
        let mut other = good("PK", "SK");
        other.ttl = SeenTtl::On("expires_at".into());
        let message = the_mismatch(&other, &KeyNames::default(), PUBLISHER);
        assert_names(&message, &["OUTBOX_TTL_ATTRIBUTE", "configured `ExpiresAt`", "has `expires_at`"]);
        for ttl in [SeenTtl::Disabled, SeenTtl::NotRead] {
            let mut seen = good("PK", "SK");
            seen.ttl = ttl;
            let checks = check_table(&seen, &KeyNames::default(), PUBLISHER);
            assert!(mismatches(&checks).is_empty(), "{checks:?}");
            assert!(matches!(checks[4].outcome, Outcome::Warning(_)), "{checks:?}");
        }
    }

    #[test]
    fn a_missing_table_names_the_table_setting() {
        assert_names(&missing_table("ordrs").to_string(), &["OUTBOX_TABLE_NAME", "`ordrs`", "no such table"]);
    }
}
