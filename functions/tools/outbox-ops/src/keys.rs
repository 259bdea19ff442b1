//! The table's key names when no flag gives them: read from the table itself
//! (`DescribeTable`), so that every command works on a table keyed `tenant_id`/
//! `entity_id` without being told, instead of asking for `PK` and failing with the
//! service's refusal.

use crate::{OpsError, Table};
use dynamodb_outbox::KeyNames;
use dynamodb_outbox::dynamo::key_schema;

/// The key names the operator gave (`--partition-key`, `--sort-key`, or
/// `OUTBOX_PARTITION_KEY`, `OUTBOX_SORT_KEY`); `None` where none was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyFlags {
    /// The partition key's attribute, when given.
    pub partition_key: Option<String>,
    /// The sort key's attribute, when given.
    pub sort_key: Option<String>,
}

impl KeyFlags {
    /// Both names, when both were given: then the table need not be described.
    fn both(&self) -> Option<(String, String)> {
        Some((self.partition_key.clone()?, self.sort_key.clone()?))
    }
}

/// The table `name` keyed as `flags` say, the names they leave out read from the table
/// with one `DescribeTable` (none when both are given). `base` gives the rest of the
/// layout (TTL attribute, sweeper index shards); the names are validated as the
/// functions validate theirs.
///
/// A table that does not exist is [`OpsError::TableNotFound`]; one that cannot be
/// described is [`OpsError::KeyNamesUnread`], naming the cause and the flags that
/// avoid the call.
pub async fn table_keyed(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
    flags: &KeyFlags,
    base: KeyNames,
) -> Result<Table, OpsError> {
    let (partition_key, sort_key) = match flags.both() {
        Some(both) => both,
        None => {
            let schema = described_keys(client, name).await?;
            chosen(name, flags, schema)?
        }
    };
    let keys = KeyNames {
        partition_key,
        sort_key,
        ..base
    };
    keys.validate().map_err(|e| OpsError::UnusableKeys {
        table: name.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(Table::new(name).key_names(keys))
}

/// The partition and sort key attributes `DescribeTable` gives for `table`.
async fn described_keys(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<(Option<String>, Option<String>), OpsError> {
    let out = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| match OpsError::aws("describe", table, e) {
            missing @ OpsError::TableNotFound { .. } => missing,
            other => OpsError::KeyNamesUnread {
                table: table.to_owned(),
                source: Box::new(other),
            },
        })?;
    let schema = out.table().map(|t| t.key_schema()).unwrap_or_default();
    Ok(key_schema(schema))
}

/// The names to use: each flag given, else the table's. A table without a sort key
/// cannot hold outbox items (an aggregate's messages share its partition).
fn chosen(
    table: &str,
    flags: &KeyFlags,
    (partition, sort): (Option<String>, Option<String>),
) -> Result<(String, String), OpsError> {
    let unusable = |reason: &str| OpsError::UnusableKeys {
        table: table.to_owned(),
        reason: reason.to_owned(),
    };
    let partition_key = flags
        .partition_key
        .clone()
        .or(partition)
        .ok_or_else(|| unusable("DescribeTable gave no partition key"))?;
    let sort_key = flags.sort_key.clone().or(sort).ok_or_else(|| {
        unusable("it has no sort key, and an outbox table needs one: an aggregate's messages share its partition (docs/schema.md)")
    })?;
    Ok((partition_key, sort_key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::{KeySchemaElement, KeyType};

    fn flags(pk: Option<&str>, sk: Option<&str>) -> KeyFlags {
        KeyFlags {
            partition_key: pk.map(str::to_owned),
            sort_key: sk.map(str::to_owned),
        }
    }

    fn table(pk: Option<&str>, sk: Option<&str>) -> (Option<String>, Option<String>) {
        (pk.map(str::to_owned), sk.map(str::to_owned))
    }

    #[test]
    fn without_flags_the_tables_own_key_names_are_used() {
        let names = chosen(
            "app",
            &flags(None, None),
            table(Some("tenant_id"), Some("entity_id")),
        );
        assert_eq!(names.ok(), Some(("tenant_id".into(), "entity_id".into())));
    }

    #[test]
    fn a_flag_given_wins_over_the_table_and_only_the_other_name_is_read() {
        let names = chosen(
            "app",
            &flags(Some("pk"), None),
            table(Some("tenant_id"), Some("entity_id")),
        );
        assert_eq!(names.ok(), Some(("pk".into(), "entity_id".into())));
        assert_eq!(
            flags(Some("pk"), None).both(),
            None,
            "one flag still describes"
        );
        assert_eq!(
            flags(Some("pk"), Some("sk")).both(),
            Some(("pk".into(), "sk".into())),
            "both flags need no DescribeTable"
        );
    }

    #[test]
    fn a_table_without_a_sort_key_is_named_with_why_it_cannot_hold_messages() {
        let message = chosen("app", &flags(None, None), table(Some("id"), None))
            .expect_err("no sort key")
            .to_string();
        assert!(
            message.contains("table app") && message.contains("no sort key"),
            "{message}"
        );
    }

    #[test]
    fn the_key_schema_is_read_by_key_type_not_by_position() {
        let element = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .expect("element")
        };
        let schema = [
            element("entity_id", KeyType::Range),
            element("tenant_id", KeyType::Hash),
        ];
        assert_eq!(
            key_schema(&schema),
            table(Some("tenant_id"), Some("entity_id"))
        );
    }
}
