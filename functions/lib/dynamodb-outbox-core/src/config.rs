//! Configuration, read once from the environment at start-up.
//!
//! Every reader takes a lookup function rather than touching the process environment,
//! so tests pass a map and nothing calls `env::set_var`.

use crate::KeyNames;
use crate::large_payload::bucket_name_problem;
use crate::policy::{QueueLimits, QueueRole};
use crate::route::{Destination, RouteError, Routes};
use std::collections::BTreeMap;

pub mod timeouts;

/// A missing or malformed variable, named (see [`PublisherConfig`] for an example).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required variable is not set.
    #[error("environment variable {name} is not set: {hint}")]
    Missing {
        /// Variable name.
        name: &'static str,
        /// What it should hold.
        hint: &'static str,
    },
    /// A variable is set to something unusable.
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid {
        /// Variable name.
        name: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// Names of the variables, in one place.
pub mod vars {
    /// Outbox table name.
    pub const TABLE_NAME: &str = "OUTBOX_TABLE_NAME";
    /// Topic → destination JSON map.
    pub const ROUTES: &str = "OUTBOX_ROUTES";
    /// Destination for topics without a route.
    pub const DEFAULT_DESTINATION: &str = "OUTBOX_DEFAULT_DESTINATION";
    /// Dead-letter queue URL.
    pub const DLQ_URL: &str = "OUTBOX_DLQ_URL";
    /// Days a `SENT` item is kept before TTL deletes it.
    pub const TTL_DAYS: &str = "OUTBOX_TTL_DAYS";
    /// The bucket of every route's payloads too large for its destination (the claim
    /// check), unless the route names its own `large_payload_bucket`.
    pub const LARGE_PAYLOAD_BUCKET: &str = "OUTBOX_LARGE_PAYLOAD_BUCKET";
    /// Payloads larger than this go to the bucket even when they fit.
    pub const LARGE_PAYLOAD_THRESHOLD: &str = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES";
    /// The outbox table's partition key attribute name (default `PK`).
    pub const PARTITION_KEY: &str = "OUTBOX_PARTITION_KEY";
    /// The outbox table's sort key attribute name (default `SK`).
    pub const SORT_KEY: &str = "OUTBOX_SORT_KEY";
    /// The outbox table's TTL attribute name (default `ExpiresAt`).
    pub const TTL_ATTRIBUTE: &str = "OUTBOX_TTL_ATTRIBUTE";
    /// The number of sweeper index shards pending items are written to (default 16).
    pub const SWEEP_SHARDS: &str = "OUTBOX_SWEEP_SHARDS";
    /// While the shard count is being changed: the count it is changed from.
    pub const SWEEP_SHARDS_PREVIOUS: &str = "OUTBOX_SWEEP_SHARDS_PREVIOUS";
    /// The region this deployment runs in and publishes the messages of (default:
    /// `AWS_REGION`, which Lambda sets): on a global table, each region's deployment
    /// acts only on the messages whose home it is.
    pub const REGION: &str = "OUTBOX_REGION";
    /// The home region of messages that name none (a minimal producer's): the same in
    /// every region's deployment of a global table (default: [`REGION`]).
    pub const DEFAULT_HOME_REGION: &str = "OUTBOX_DEFAULT_HOME_REGION";
    /// The region Lambda runs a function in.
    pub const AWS_REGION: &str = "AWS_REGION";
}

/// What the publish path needs to know.
///
/// ```
/// use dynamodb_outbox_core::{ConfigError, PublisherConfig};
///
/// let config = PublisherConfig::from_lookup(|name| match name {
///     "OUTBOX_TABLE_NAME" => Some("orders".into()),
///     "OUTBOX_ROUTES" => Some(r#"{"orders":"https://sqs.eu-west-1.amazonaws.com/123456789012/orders"}"#.into()),
///     "OUTBOX_DLQ_URL" => Some("https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-dlq".into()),
///     _ => None,
/// })?;
/// assert_eq!(config.table_name, "orders");
///
/// // A missing variable is named, with what to set.
/// let missing = PublisherConfig::from_lookup(|_| None).unwrap_err();
/// assert!(matches!(missing, ConfigError::Missing { name: "OUTBOX_TABLE_NAME", .. }));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PublisherConfig {
    /// Outbox table name.
    pub table_name: String,
    /// Topic routing.
    pub routes: Routes,
    /// Where poison messages go.
    pub dead_letter: Destination,
    /// Days a `SENT` item is kept.
    pub ttl_days: u32,
    /// The table's key and TTL attribute names.
    pub key_names: KeyNames,
}

impl PublisherConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table_name = required(
            &lookup,
            vars::TABLE_NAME,
            "set it to the outbox table's name",
        )?;
        let routes_json = lookup(vars::ROUTES).unwrap_or_else(|| "{}".to_owned());
        let default = lookup(vars::DEFAULT_DESTINATION);
        let routes = Routes::parse(&routes_json, default.as_deref()).map_err(|e| {
            let name = match e {
                RouteError::Json(_) | RouteError::EmptyTopic => vars::ROUTES,
                _ if default
                    .as_deref()
                    .is_some_and(|d| e.to_string().contains(d.trim())) =>
                {
                    vars::DEFAULT_DESTINATION
                }
                _ => vars::ROUTES,
            };
            ConfigError::Invalid {
                name,
                reason: e.to_string(),
            }
        })?;
        if routes.destinations().next().is_none() {
            return Err(ConfigError::Invalid {
                name: vars::ROUTES,
                reason: format!(
                    "no topic is routed anywhere: set {} to a JSON object such as {{\"orders\":\"https://sqs...\"}} or set {}",
                    vars::ROUTES,
                    vars::DEFAULT_DESTINATION
                ),
            });
        }
        let dlq = required(
            &lookup,
            vars::DLQ_URL,
            "set it to the URL of the SQS queue that receives messages the outbox gives up on",
        )?;
        let dead_letter = Destination::parse(&dlq, None).map_err(|e| ConfigError::Invalid {
            name: vars::DLQ_URL,
            reason: e.to_string(),
        })?;
        let ttl_days = parse_or(&lookup, vars::TTL_DAYS, 7u32, |d| {
            (1..=3650)
                .contains(d)
                .then_some(())
                .ok_or("must be between 1 and 3650 days")
        })?;
        let (bucket, threshold) = large_payloads(&lookup)?;
        let routes = routes.with_large_payloads(bucket, threshold);
        let key_names = KeyNames::from_lookup(&lookup)?;
        // Checked here, with the rest of the functions' settings, so that a bad value
        // stops the function at start naming the variable; the timeouts themselves
        // are applied where the clients are built (`FromSdkConfig::load`).
        timeouts::SdkTimeouts::from_lookup(&lookup)?;
        Ok(PublisherConfig {
            table_name,
            routes,
            dead_letter,
            ttl_days,
            key_names,
        })
    }

    /// The SQS queues whose `MaximumMessageSize` is worth reading (on a function's first invocation): the
    /// routes' queues without `max_message_bytes` and the dead-letter queue, each
    /// once, by URL (a queue that is also the dead-letter queue counts as that).
    // Hidden, not API: for dynamodb-outbox's functions (`QueueLimits` is the engine's).
    #[doc(hidden)]
    pub fn queues_to_learn(&self) -> Vec<(String, QueueRole)> {
        let mut queues: BTreeMap<&str, QueueRole> = self
            .routes
            .destinations()
            .filter_map(Destination::queue_to_learn)
            .map(|url| (url, QueueRole::Route))
            .collect();
        if let Some(url) = self.dead_letter.queue_to_learn() {
            queues.insert(url, QueueRole::DeadLetter);
        }
        queues
            .into_iter()
            .map(|(url, role)| (url.to_owned(), role))
            .collect()
    }

    /// The same configuration with the limits read from the queues (by URL): every
    /// route's destination and the dead-letter queue get the limit that applies
    /// (the core's `policy::sqs_limit`).
    // Hidden, not API: for dynamodb-outbox's functions (`QueueLimits` is the engine's).
    #[doc(hidden)]
    pub fn with_queue_limits(self, limits: &QueueLimits) -> Self {
        PublisherConfig {
            routes: self.routes.with_queue_limits(limits),
            dead_letter: self.dead_letter.with_queue_limits(limits),
            ..self
        }
    }
}

/// The large-payload offload's default bucket and threshold, both optional.
fn large_payloads(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<(Option<String>, Option<usize>), ConfigError> {
    let bucket = lookup(vars::LARGE_PAYLOAD_BUCKET)
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty());
    if let Some(reason) = bucket.as_deref().and_then(bucket_name_problem) {
        return Err(ConfigError::Invalid {
            name: vars::LARGE_PAYLOAD_BUCKET,
            reason,
        });
    }
    let threshold = parse_or(lookup, vars::LARGE_PAYLOAD_THRESHOLD, 0usize, |t| {
        (*t > 0)
            .then_some(())
            .ok_or("must be a positive number of bytes")
    })?;
    Ok((bucket, (threshold > 0).then_some(threshold)))
}

/// A required, non-empty variable.
pub fn required(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    hint: &'static str,
) -> Result<String, ConfigError> {
    match lookup(name) {
        Some(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(ConfigError::Missing { name, hint }),
    }
}

/// An optional parsed variable with a default and a range check.
pub fn parse_or<T>(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: T,
    check: impl Fn(&T) -> Result<(), &'static str>,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let Some(text) = lookup(name).filter(|v| !v.trim().is_empty()) else {
        return Ok(default);
    };
    let value: T = text
        .trim()
        .parse()
        .map_err(|e: T::Err| ConfigError::Invalid {
            name,
            reason: format!("`{text}` is not a valid number: {e}"),
        })?;
    check(&value).map_err(|why| ConfigError::Invalid {
        name,
        reason: format!("`{text}` {why}"),
    })?;
    Ok(value)
}

/// An environment made of pairs, and a complete one, for the configuration tests here
/// and in `sweep`.
#[cfg(test)]
pub(crate) mod test_env {
    use std::collections::HashMap;

    pub(crate) fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    pub(crate) const GOOD: &[(&str, &str)] = &[
        ("OUTBOX_TABLE_NAME", "outbox"),
        ("OUTBOX_ROUTES", r#"{"orders":"https://sqs.x/1/orders"}"#),
        ("OUTBOX_DLQ_URL", "https://sqs.x/1/dlq"),
    ];
}

#[cfg(test)]
mod tests {
    use super::test_env::{GOOD, lookup};
    use super::*;

    #[test]
    fn reads_a_complete_configuration_with_defaults() {
        let cfg = PublisherConfig::from_lookup(lookup(GOOD)).expect("valid");
        assert_eq!(cfg.table_name, "outbox");
        assert_eq!(cfg.ttl_days, 7);
        assert!(cfg.routes.resolve("orders").is_some());
        assert_eq!(cfg.key_names, KeyNames::default());
    }

    #[test]
    fn the_key_names_are_read_and_checked_with_the_rest() {
        let mut with = GOOD.to_vec();
        with.push(("OUTBOX_PARTITION_KEY", "pk"));
        with.push(("OUTBOX_SORT_KEY", "sk"));
        let cfg = PublisherConfig::from_lookup(lookup(&with)).expect("valid");
        assert_eq!(cfg.key_names, KeyNames::new("pk", "sk"));
        with.push(("OUTBOX_TTL_ATTRIBUTE", "pk"));
        let err = PublisherConfig::from_lookup(lookup(&with)).expect_err("ttl on a key");
        assert!(err.to_string().contains("OUTBOX_TTL_ATTRIBUTE"), "{err}");
    }

    #[test]
    fn the_claim_checks_bucket_and_threshold_are_optional_and_checked() {
        let cfg = PublisherConfig::from_lookup(lookup(GOOD)).expect("valid");
        assert_eq!(cfg.routes.offload("orders").bucket, None);
        let mut with = GOOD.to_vec();
        with.push(("OUTBOX_LARGE_PAYLOAD_BUCKET", " large-payloads "));
        with.push(("OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES", "65536"));
        let cfg = PublisherConfig::from_lookup(lookup(&with)).expect("valid");
        let check = cfg.routes.offload("orders");
        assert_eq!(check.bucket, Some("large-payloads"));
        assert_eq!(check.threshold, Some(65_536));
        for (name, value) in [
            ("OUTBOX_LARGE_PAYLOAD_BUCKET", "s3://large-payloads"),
            ("OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES", "0"),
            ("OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES", "big"),
        ] {
            let mut bad = GOOD.to_vec();
            bad.push((name, value));
            let err = PublisherConfig::from_lookup(lookup(&bad)).expect_err(value);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn a_bad_sdk_timeout_stops_the_configuration_naming_the_variable() {
        let mut bad = GOOD.to_vec();
        bad.push(("OUTBOX_SDK_OPERATION_TIMEOUT_MS", "soon"));
        let err = PublisherConfig::from_lookup(lookup(&bad)).expect_err("bad timeout");
        assert!(
            err.to_string().contains("OUTBOX_SDK_OPERATION_TIMEOUT_MS"),
            "{err}"
        );
    }

    #[test]
    fn missing_table_names_the_variable() {
        let err = PublisherConfig::from_lookup(lookup(&GOOD[1..])).expect_err("no table");
        assert!(err.to_string().contains("OUTBOX_TABLE_NAME"), "{err}");
    }

    #[test]
    fn malformed_routes_and_ttl_name_the_variable() {
        let mut bad = GOOD.to_vec();
        bad[1] = ("OUTBOX_ROUTES", "{not json");
        let err = PublisherConfig::from_lookup(lookup(&bad)).expect_err("bad json");
        assert!(err.to_string().contains("OUTBOX_ROUTES"), "{err}");

        let mut bad = GOOD.to_vec();
        bad.push(("OUTBOX_TTL_DAYS", "seven"));
        let err = PublisherConfig::from_lookup(lookup(&bad)).expect_err("bad ttl");
        assert!(err.to_string().contains("OUTBOX_TTL_DAYS"), "{err}");

        let mut bad = GOOD.to_vec();
        bad.push(("OUTBOX_TTL_DAYS", "0"));
        assert!(PublisherConfig::from_lookup(lookup(&bad)).is_err());
    }

    #[test]
    fn the_queues_to_read_are_the_unsized_routes_and_the_dead_letter_queue_once_each() {
        let cfg = PublisherConfig::from_lookup(lookup(&[
            ("OUTBOX_TABLE_NAME", "t"),
            (
                "OUTBOX_ROUTES",
                r#"{"a":"https://sqs.x/1/a","b":"https://sqs.x/1/a","c":{"destination":"https://sqs.x/1/c","max_message_bytes":4096},"d":"arn:aws:sns:eu-west-1:123456789012:t"}"#,
            ),
            ("OUTBOX_DEFAULT_DESTINATION", "https://sqs.x/1/dlq"),
            ("OUTBOX_DLQ_URL", "https://sqs.x/1/dlq"),
        ]))
        .expect("valid");
        assert_eq!(
            cfg.queues_to_learn(),
            [
                ("https://sqs.x/1/a".to_owned(), QueueRole::Route),
                ("https://sqs.x/1/dlq".to_owned(), QueueRole::DeadLetter),
            ]
        );
    }

    #[test]
    fn the_limits_read_apply_to_every_route_and_the_dead_letter_queue_unless_a_route_sets_one() {
        let cfg = PublisherConfig::from_lookup(lookup(&[
            ("OUTBOX_TABLE_NAME", "t"),
            (
                "OUTBOX_ROUTES",
                r#"{"a":"https://sqs.x/1/a","c":{"destination":"https://sqs.x/1/a","max_message_bytes":4096},"u":"https://sqs.x/1/u"}"#,
            ),
            ("OUTBOX_DEFAULT_DESTINATION", "https://sqs.x/1/a"),
            ("OUTBOX_DLQ_URL", "https://sqs.x/1/dlq"),
        ]))
        .expect("valid");
        let limits = QueueLimits::from([
            ("https://sqs.x/1/a".to_owned(), Ok(262_144)),
            ("https://sqs.x/1/dlq".to_owned(), Ok(300_000)),
            (
                "https://sqs.x/1/u".to_owned(),
                Err("AccessDenied".to_owned()),
            ),
        ]);
        let cfg = cfg.with_queue_limits(&limits);
        let max = |topic: &str| {
            cfg.routes
                .resolve(topic)
                .map(Destination::max_message_bytes)
        };
        assert_eq!(max("a"), Some(262_144));
        assert_eq!(
            max("unrouted"),
            Some(262_144),
            "the default destination too"
        );
        assert_eq!(max("c"), Some(4096), "the route's own limit wins");
        assert_eq!(max("u"), Some(1_048_576), "unreadable: SQS's default");
        assert_eq!(cfg.dead_letter.max_message_bytes(), 300_000);
        assert_eq!(
            cfg.dead_letter.limit_source(),
            "the queue's MaximumMessageSize"
        );
    }

    #[test]
    fn no_routes_at_all_is_an_error() {
        let err = PublisherConfig::from_lookup(lookup(&[
            ("OUTBOX_TABLE_NAME", "t"),
            ("OUTBOX_DLQ_URL", "https://sqs.x/1/dlq"),
        ]))
        .expect_err("nothing routed");
        assert!(
            err.to_string().contains("OUTBOX_DEFAULT_DESTINATION"),
            "{err}"
        );
    }
}
