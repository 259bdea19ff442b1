//! What the table is: `DescribeTable` and `DescribeTimeToLive` read into the core's
//! [`SeenTable`], for the functions' check before work and for `outbox-ops check`.
//! The comparison with the configuration is the core's ([`check_table`]).
//!
//! [`check_table`]: dynamodb_outbox_core::__private::schema::table_check::check_table

use crate::sdk_error::{denial, describe};
use aws_sdk_dynamodb::types::{KeySchemaElement, KeyType, TimeToLiveStatus};
use dynamodb_outbox_core::__private::schema::table_check::{SeenTable, SeenTtl};

/// What describing the table gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Described {
    /// The table as it is.
    Seen(SeenTable),
    /// No table of that name in this account and region.
    Missing,
    /// The caller may not `dynamodb:DescribeTable` it: what AWS said.
    Denied(String),
    /// It could not be read now (throttling, network, a timeout): what failed.
    Unreadable(String),
}

/// Describes `table`: its keys, indexes and stream (`DescribeTable`) and its TTL
/// setting (`DescribeTimeToLive`, both at once). A TTL that cannot be read is left
/// unread ([`SeenTtl::NotRead`], logged): the keys are what a function needs.
pub async fn describe_table(client: &aws_sdk_dynamodb::Client, table: &str) -> Described {
    let (description, ttl) = futures::future::join(
        Box::pin(client.describe_table().table_name(table).send()),
        Box::pin(client.describe_time_to_live().table_name(table).send()),
    )
    .await;
    let description = match description {
        Ok(out) => out.table,
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => {
            return Described::Missing;
        }
        Err(e) if denial(&e).is_some() => return Described::Denied(describe(&e)),
        Err(e) => return Described::Unreadable(describe(&e)),
    };
    let Some(description) = description else {
        return Described::Unreadable("DescribeTable answered without a table".to_owned());
    };
    let mut seen = SeenTable {
        name: table.to_owned(),
        ..SeenTable::default()
    };
    (seen.partition_key, seen.sort_key) = key_schema(description.key_schema());
    seen.attribute_types = description
        .attribute_definitions()
        .iter()
        .map(|a| (a.attribute_name().to_owned(), a.attribute_type().as_str().to_owned()))
        .collect();
    seen.indexes = description
        .global_secondary_indexes()
        .iter()
        .filter_map(|i| Some((i.index_name()?.to_owned(), key_schema(i.key_schema()))))
        .collect();
    seen.stream_view_type = description
        .stream_specification()
        .filter(|s| s.stream_enabled())
        .and_then(|s| s.stream_view_type())
        .map(|v| v.as_str().to_owned());
    seen.ttl = match ttl {
        Ok(out) => match out.time_to_live_description() {
            Some(d) => match (d.time_to_live_status(), d.attribute_name()) {
                (Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling), Some(name)) => {
                    SeenTtl::On(name.to_owned())
                }
                _ => SeenTtl::Disabled,
            },
            None => SeenTtl::Disabled,
        },
        Err(e) => {
            tracing::warn!(table, error = %describe(&e), "could not read the table's TTL setting (dynamodb:DescribeTimeToLive): the TTL attribute is not checked");
            SeenTtl::NotRead
        }
    };
    Described::Seen(seen)
}

/// The partition (`HASH`) and sort (`RANGE`) key attributes of a key schema, read by
/// key type, not by position (the table's, an index's; `outbox-ops` reads its keys
/// with it too).
pub fn key_schema(schema: &[KeySchemaElement]) -> (Option<String>, Option<String>) {
    let of = |kind: KeyType| {
        schema
            .iter()
            .find(|k| *k.key_type() == kind)
            .map(|k| k.attribute_name().to_owned())
    };
    (of(KeyType::Hash), of(KeyType::Range))
}
