//! The table the strategies write to, and what every strategy needs to know about it:
//! one settings value for [`BusinessKeyGuard`](crate::BusinessKeyGuard),
//! [`MessageMarker`](crate::MessageMarker) and
//! [`IdempotentEffects`](crate::IdempotentEffects), so that a consumer using two of
//! them states its table, key names, retention and clock once.

use crate::render_key;
use crate::retention::Retention;
use crate::{IdempotencyError, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::{SharedClock, clock};

/// The default partition (hash) key attribute: the orders table's `id`.
const DEFAULT_PARTITION_KEY: &str = "id";
/// The default TTL attribute of markers and effect records.
const DEFAULT_TTL_ATTRIBUTE: &str = "ExpiresAt";

/// A DynamoDB table holding idempotency records, and how to write them: the client,
/// the table's name, its key attribute names, the TTL attribute, how long records are
/// kept and the clock that stamps them.
///
/// Build it once and clone it into each strategy of the consumer, so that markers and
/// effect records share one retention:
///
/// ```
/// use dynamodb_outbox_idempotency::{
///     IdempotencyTable, IdempotentEffects, MessageMarker, Retention,
/// };
///
/// # fn client() -> aws_sdk_dynamodb::Client {
/// #     let conf = aws_sdk_dynamodb::Config::builder()
/// #         .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
/// #         .build();
/// #     aws_sdk_dynamodb::Client::from_conf(conf)
/// # }
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A single-table design keyed PK/SK, whose TTL attribute is `ttl`.
/// let table = IdempotencyTable::new(client(), "app")
///     .partition_key("PK")
///     .sort_key("SK")
///     .ttl_attribute("ttl")
///     .retention(Retention::days(4)?);
/// let marker = MessageMarker::in_table(table.clone());
/// let effects = IdempotentEffects::in_table(table);
/// # let _ = (marker, effects);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct IdempotencyTable {
    client: aws_sdk_dynamodb::Client,
    name: String,
    partition_key: String,
    sort_key: Option<String>,
    ttl_attribute: String,
    retention: Retention,
    clock: SharedClock,
}

impl IdempotencyTable {
    /// `name`, through `client`: hash key `id`, no sort key, TTL attribute `ExpiresAt`,
    /// records kept for the default [`Retention`] (14 days), the system clock.
    pub fn new(client: aws_sdk_dynamodb::Client, name: impl Into<String>) -> Self {
        IdempotencyTable {
            client,
            name: name.into(),
            partition_key: DEFAULT_PARTITION_KEY.to_owned(),
            sort_key: None,
            ttl_attribute: DEFAULT_TTL_ATTRIBUTE.to_owned(),
            retention: Retention::default(),
            clock: clock::system(),
        }
    }

    /// The table's partition (hash) key attribute (default `id`). For a
    /// [`BusinessKeyGuard`](crate::BusinessKeyGuard) it is the business key.
    pub fn partition_key(mut self, name: impl Into<String>) -> Self {
        self.partition_key = name.into();
        self
    }

    /// The table's sort (range) key attribute, for a table that has one (a
    /// single-table design keyed `PK`/`SK`). Markers and effect records carry their
    /// key in both attributes (`PK = SK = "MSG#<id>"`), so they never share an item
    /// collection with business items; a business key guard's items bring their own.
    pub fn sort_key(mut self, name: impl Into<String>) -> Self {
        self.sort_key = Some(name.into());
        self
    }

    /// The table's TTL attribute (default `ExpiresAt`), which markers and effect
    /// records carry as epoch seconds.
    pub fn ttl_attribute(mut self, name: impl Into<String>) -> Self {
        self.ttl_attribute = name.into();
        self
    }

    /// How long markers and effect records are kept (default 14 days; see
    /// [`Retention`] before shortening it).
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The clock that stamps records' expiry and says whether a lock has expired (the
    /// system clock by default); a test sets a
    /// [`ManualClock`](crate::ManualClock) instead of sleeping.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    pub(crate) fn partition_key_name(&self) -> &str {
        &self.partition_key
    }

    pub(crate) fn ttl_attribute_name(&self) -> &str {
        &self.ttl_attribute
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The TTL value of a record written at `now_ms`.
    pub(crate) fn expires_at(&self, now_ms: i64) -> AttributeValue {
        AttributeValue::N(self.retention.expires_at(now_ms).to_string())
    }

    /// The key of a record this crate writes under `value`: the partition key, and the
    /// sort key when the table has one, both `value`.
    pub(crate) fn record_key(&self, value: &str) -> Item {
        let value = AttributeValue::S(value.to_owned());
        let mut key = Item::from([(self.partition_key.clone(), value.clone())]);
        if let Some(sort_key) = &self.sort_key {
            key.insert(sort_key.clone(), value);
        }
        key
    }

    /// The key of a record this crate writes under `value`, as `name=value`.
    pub(crate) fn rendered_record_key(&self, value: &str) -> String {
        std::iter::once(&self.partition_key)
            .chain(&self.sort_key)
            .map(|name| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `item`'s key as `name=value` (both parts for a table with a sort key), or what
    /// the item lacks.
    pub(crate) fn rendered_key(&self, item: &Item) -> Result<String, IdempotencyError> {
        let mut parts = Vec::with_capacity(2);
        for name in std::iter::once(&self.partition_key).chain(&self.sort_key) {
            let value = item.get(name).ok_or_else(|| {
                IdempotencyError::Invalid(format!("the item has no key attribute `{name}`"))
            })?;
            parts.push(render_key(name, value));
        }
        Ok(parts.join(","))
    }
}

/// A client that is never called: unit tests build requests and items with it.
#[cfg(test)]
pub(crate) fn offline_client() -> aws_sdk_dynamodb::Client {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

#[cfg(test)]
mod tests {
    use super::offline_client as client;
    use super::*;

    #[test]
    fn by_default_records_are_keyed_by_id_alone() {
        let table = IdempotencyTable::new(client(), "orders");
        assert_eq!(
            table.record_key("MSG#a"),
            Item::from([("id".to_owned(), AttributeValue::S("MSG#a".into()))])
        );
        assert_eq!(table.ttl_attribute_name(), "ExpiresAt");
    }

    #[test]
    fn on_a_pk_sk_table_records_carry_their_key_in_both_attributes() {
        let table = IdempotencyTable::new(client(), "app")
            .partition_key("PK")
            .sort_key("SK");
        let key = table.record_key("IDEM#k");
        assert_eq!(key.len(), 2);
        assert_eq!(key.get("PK"), Some(&AttributeValue::S("IDEM#k".into())));
        assert_eq!(key.get("SK"), Some(&AttributeValue::S("IDEM#k".into())));
        assert_eq!(
            table.rendered_key(&key).expect("keyed"),
            "PK=IDEM#k,SK=IDEM#k"
        );
    }

    #[test]
    fn an_item_without_every_key_attribute_is_refused_naming_it() {
        let table = IdempotencyTable::new(client(), "app")
            .partition_key("PK")
            .sort_key("SK");
        let item = Item::from([("PK".to_owned(), AttributeValue::S("ORDER#1".into()))]);
        let err = table.rendered_key(&item).expect_err("no sort key");
        assert!(err.to_string().contains("`SK`"), "{err}");
    }
}
