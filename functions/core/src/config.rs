//! Configuration, read once from the environment at start-up.
//!
//! Every reader takes a lookup function rather than touching the process environment,
//! so tests pass a map and nothing calls `env::set_var`.

use crate::route::{Destination, RouteError, Routes};

/// A missing or malformed variable, named.
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
}

/// What the publish path needs to know.
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
        Ok(PublisherConfig {
            table_name,
            routes,
            dead_letter,
            ttl_days,
        })
    }
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
