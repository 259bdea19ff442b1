//! Which region publishes a message, on a DynamoDB global table.
//!
//! Every replica's stream carries every replicated write, and conditional writes are
//! not serialised across regions: with the outbox deployed in two regions, only an
//! owner per message keeps it from being published twice. A message's owner is its
//! **home region**: the `HomeRegion` attribute ([`HOME_REGION`]) the library producer
//! writes (the region it committed in), else the deployment's default home region.
//! Each region's publisher, sweeper and recovery function act only on the messages
//! it owns ([`HomeRegions::owns`]); `outbox-ops failover` re-homes a failed region's
//! pending messages into a surviving one (docs/global-tables.md).
//!
//! ```
//! use dynamodb_outbox_core::HomeRegions;
//!
//! // eu-west-1's deployment on a table whose minimal producers' messages are us-east-1's.
//! let eu = HomeRegions::in_region("eu-west-1").default_home("us-east-1");
//! assert!(eu.owns(Some("eu-west-1")));
//! assert!(!eu.owns(Some("us-east-1"))); // replicated from us-east-1: its publisher's
//! assert!(!eu.owns(None)); // no HomeRegion: the default home's
//!
//! // A single-region deployment (no region known) owns everything, as before.
//! assert!(HomeRegions::default().owns(Some("ap-south-1")));
//! ```

use crate::config::{ConfigError, vars};

mod seen;
pub use seen::{ExactHome, HomeSeen};

/// Outbox item attribute: the region whose deployment publishes the message.
pub const HOME_REGION: &str = "HomeRegion";
/// Outbox item attribute: the region a failover moved the message from
/// (`outbox-ops failover`), so that `failback` returns exactly those.
pub const FAILED_OVER_FROM: &str = "FailedOverFrom";

/// The messages a deployment owns: its region, and the home of messages that name
/// none. The default — no region — owns every message (a single-region table).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct HomeRegions {
    region: Option<String>,
    default_home: Option<String>,
}

impl HomeRegions {
    /// A deployment in `region`: it owns the messages homed there, and those without a
    /// home while it is the default home (itself, unless [`HomeRegions::default_home`]).
    pub fn in_region(region: impl Into<String>) -> Self {
        HomeRegions {
            region: Some(region.into()),
            default_home: None,
        }
    }

    /// The home region of messages that name none; the same in every region's
    /// deployment of one table.
    pub fn default_home(mut self, region: impl Into<String>) -> Self {
        self.default_home = Some(region.into());
        self
    }

    /// From `OUTBOX_REGION` (else `AWS_REGION`) and `OUTBOX_DEFAULT_HOME_REGION`, read
    /// through `lookup`. Neither region set: [`HomeRegions::default`].
    ///
    /// ```
    /// use dynamodb_outbox_core::HomeRegions;
    ///
    /// let lambda = |name: &str| (name == "AWS_REGION").then(|| "eu-west-1".to_owned());
    /// assert_eq!(HomeRegions::from_lookup(lambda)?, HomeRegions::in_region("eu-west-1"));
    /// let misspelt = |name: &str| (name == "OUTBOX_DEFAULT_HOME_REGION").then(|| "eu west".to_owned());
    /// assert!(HomeRegions::from_lookup(misspelt).is_err());
    /// # Ok::<(), dynamodb_outbox_core::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let read = |name: &'static str| -> Result<Option<String>, ConfigError> {
            match lookup(name).map(|v| v.trim().to_owned()) {
                Some(v) if v.is_empty() => Ok(None),
                Some(v) if is_region_name(&v) => Ok(Some(v)),
                Some(v) => Err(ConfigError::Invalid {
                    name,
                    reason: format!(
                        "`{v}` is not a region name (lowercase letters, digits and dashes, e.g. eu-west-1)"
                    ),
                }),
                None => Ok(None),
            }
        };
        let region = match read(vars::REGION)? {
            Some(region) => Some(region),
            None => read(vars::AWS_REGION)?,
        };
        let default_home = read(vars::DEFAULT_HOME_REGION)?;
        if region.is_none() && default_home.is_some() {
            return Err(ConfigError::Missing {
                name: vars::REGION,
                hint: "a default home region needs the deployment's own region: set OUTBOX_REGION (Lambda sets AWS_REGION)",
            });
        }
        Ok(HomeRegions {
            region,
            default_home,
        })
    }

    /// The deployment's region, when it knows it.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// The home of messages that name none: the configured default home, else the
    /// deployment's own region.
    pub fn home_of_unhomed(&self) -> Option<&str> {
        self.default_home.as_deref().or(self.region.as_deref())
    }

    /// The condition a write makes that the item is still this deployment's, as a
    /// DynamoDB condition over the placeholders `#home` ([`HOME_REGION`]) and `:home`
    /// (the region it returns); `None` when the deployment owns every message. A
    /// sweeper's claim carries it: a message re-homed since the index was read (a
    /// failover) is not claimed by the region it left.
    pub fn ownership_condition(&self) -> Option<(&'static str, &str)> {
        let me = self.region()?;
        let expression = if self.home_of_unhomed() == Some(me) {
            "(#home = :home OR attribute_not_exists(#home))"
        } else {
            "#home = :home"
        };
        Some((expression, me))
    }

    /// Whether this deployment publishes a message whose `HomeRegion` is `home`.
    pub fn owns(&self, home: Option<&str>) -> bool {
        let Some(me) = self.region.as_deref() else {
            return true;
        };
        match home.map(str::trim).filter(|h| !h.is_empty()) {
            Some(home) => home == me,
            None => self.home_of_unhomed() == Some(me),
        }
    }
}

/// Whether `name` looks like a region name (`eu-west-1`, `us-gov-west-1`): lowercase
/// letters, digits and dashes, not starting or ending with a dash.
fn is_region_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn each_region_owns_its_own_messages_and_only_the_default_home_owns_the_unhomed() {
        let us = HomeRegions::in_region("us-east-1").default_home("us-east-1");
        let eu = HomeRegions::in_region("eu-west-1").default_home("us-east-1");
        for home in [Some("us-east-1"), Some("eu-west-1"), None, Some("")] {
            assert_eq!(
                u8::from(us.owns(home)) + u8::from(eu.owns(home)),
                1,
                "exactly one region owns {home:?}"
            );
        }
        assert!(us.owns(None) && !eu.owns(None));
        // A home no deployment runs in is nobody's: failover re-homes it.
        assert!(!us.owns(Some("ap-south-1")) && !eu.owns(Some("ap-south-1")));
    }

    #[test]
    fn a_claim_is_conditional_on_the_ownership_the_region_has() {
        assert_eq!(HomeRegions::default().ownership_condition(), None);
        let home = HomeRegions::in_region("us-east-1");
        assert_eq!(
            home.ownership_condition(),
            Some((
                "(#home = :home OR attribute_not_exists(#home))",
                "us-east-1"
            ))
        );
        let other = HomeRegions::in_region("eu-west-1").default_home("us-east-1");
        assert_eq!(
            other.ownership_condition(),
            Some(("#home = :home", "eu-west-1"))
        );
    }

    #[test]
    fn a_region_without_a_configured_default_is_the_home_of_the_unhomed() {
        let alone = HomeRegions::in_region("eu-west-1");
        assert!(alone.owns(None) && alone.owns(Some("eu-west-1")));
        assert_eq!(alone.home_of_unhomed(), Some("eu-west-1"));
    }

    #[test]
    fn the_region_is_read_from_outbox_region_else_lambdas_aws_region() {
        let both = lookup(&[("OUTBOX_REGION", "eu-west-1"), ("AWS_REGION", "us-east-1")]);
        assert_eq!(
            HomeRegions::from_lookup(both).unwrap().region(),
            Some("eu-west-1")
        );
        let configured = lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("OUTBOX_DEFAULT_HOME_REGION", " us-east-1 "),
        ]);
        assert_eq!(
            HomeRegions::from_lookup(configured).unwrap(),
            HomeRegions::in_region("eu-west-1").default_home("us-east-1")
        );
        assert_eq!(
            HomeRegions::from_lookup(lookup(&[])).unwrap(),
            HomeRegions::default()
        );
    }

    #[test]
    fn a_bad_region_or_a_default_home_without_a_region_is_refused_naming_the_variable() {
        let bad = HomeRegions::from_lookup(lookup(&[("OUTBOX_REGION", "EU_WEST_1")]));
        assert!(bad.unwrap_err().to_string().contains("OUTBOX_REGION"));
        let orphan =
            HomeRegions::from_lookup(lookup(&[("OUTBOX_DEFAULT_HOME_REGION", "us-east-1")]));
        assert!(orphan.unwrap_err().to_string().contains("OUTBOX_REGION"));
    }
}
