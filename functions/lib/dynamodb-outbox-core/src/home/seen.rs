//! A `HomeRegion` of an odd shape, and the claim that still reaches it.
//!
//! [`HomeRegions::owns`] reads a `HomeRegion` the way producers write it: trimmed, and
//! `NULL`, an empty string or a value of another type as no home at all (boto3 writes
//! a Python `None` as `NULL`). A condition expression cannot trim, so the claim's
//! general condition ([`HomeRegions::ownership_condition`]) matches only the exact
//! region and a missing attribute: such an item was refused at every sweep, read as
//! held by someone else, and parked forever — never `SENT`, never `FAILED`, and on a
//! FIFO route every later message of its aggregate behind it (issue 36, finding 5).
//! When a claim is refused, the item it returns says what its `HomeRegion` holds
//! ([`HomeSeen`]); if this deployment owns that value, the claim is made once more,
//! conditional on exactly that value ([`HomeRegions::exact_ownership`]): the claim and
//! the ownership test then agree on every shape.

use super::{HOME_REGION, HomeRegions};
use serde_dynamo::AttributeValue;

/// What an item's `HomeRegion` attribute held, as a read returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeSeen {
    /// No such attribute.
    Absent,
    /// A string, as stored (untrimmed).
    Text(String),
    /// A value of another DynamoDB type: its type code (`NULL`, `N`, `BOOL`, `M`, …).
    Other(&'static str),
}

/// A condition that the item's `HomeRegion` is still exactly what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExactHome {
    /// `#home = :home`, with this string.
    Equals(String),
    /// `attribute_type(#home, :home)`, with this type code.
    OfType(&'static str),
}

impl ExactHome {
    /// The condition over `#home` that the attribute still holds exactly this, with the
    /// value `placeholder` names, and that value (a string: the text, or the type code).
    ///
    /// ```
    /// use dynamodb_outbox_core::home::ExactHome;
    ///
    /// let (condition, value) = ExactHome::OfType("NULL").condition(":home");
    /// assert_eq!((condition.as_str(), value), ("attribute_type(#home, :home)", "NULL"));
    /// ```
    pub fn condition(&self, placeholder: &str) -> (String, &str) {
        match self {
            ExactHome::Equals(home) => (format!("#home = {placeholder}"), home),
            ExactHome::OfType(code) => (format!("attribute_type(#home, {placeholder})"), code),
        }
    }
}

impl HomeSeen {
    /// What `item`'s `HomeRegion` holds.
    pub fn of(item: &serde_dynamo::Item) -> Self {
        match item.inner().get(HOME_REGION) {
            None => HomeSeen::Absent,
            Some(AttributeValue::S(home)) => HomeSeen::Text(home.clone()),
            Some(AttributeValue::Null(_)) => HomeSeen::Other("NULL"),
            Some(AttributeValue::N(_)) => HomeSeen::Other("N"),
            Some(AttributeValue::B(_)) => HomeSeen::Other("B"),
            Some(AttributeValue::Bool(_)) => HomeSeen::Other("BOOL"),
            Some(AttributeValue::M(_)) => HomeSeen::Other("M"),
            Some(AttributeValue::L(_)) => HomeSeen::Other("L"),
            Some(AttributeValue::Ss(_)) => HomeSeen::Other("SS"),
            Some(AttributeValue::Ns(_)) => HomeSeen::Other("NS"),
            Some(AttributeValue::Bs(_)) => HomeSeen::Other("BS"),
        }
    }
}

impl HomeRegions {
    /// Whether this deployment owns an item whose `HomeRegion` was `seen`: as
    /// [`HomeRegions::owns`] reads it (a value that is not a string names no home).
    pub fn owns_seen(&self, seen: &HomeSeen) -> bool {
        match seen {
            HomeSeen::Text(home) => self.owns(Some(home)),
            HomeSeen::Absent | HomeSeen::Other(_) => self.owns(None),
        }
    }

    /// The condition to claim again an item whose `HomeRegion` was `seen`, when this
    /// deployment owns it but the general ownership condition refuses its shape
    /// (`NULL`, another type, an empty or padded string). `None` when the general
    /// condition covers it already, when there is none, or when the item is not ours.
    pub fn exact_ownership(&self, seen: &HomeSeen) -> Option<ExactHome> {
        let (_, region) = self.ownership_condition()?;
        if !self.owns_seen(seen) {
            return None;
        }
        match seen {
            HomeSeen::Absent => None,
            HomeSeen::Text(home) if home == region => None,
            HomeSeen::Text(home) => Some(ExactHome::Equals(home.clone())),
            HomeSeen::Other(type_code) => Some(ExactHome::OfType(type_code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> HomeSeen {
        HomeSeen::Text(s.to_owned())
    }

    #[test]
    fn a_null_empty_or_padded_home_this_region_owns_is_claimed_on_its_exact_value() {
        // A single-region deployment that knows its region (Lambda sets AWS_REGION).
        let alone = HomeRegions::in_region("us-east-1");
        assert_eq!(
            alone.exact_ownership(&HomeSeen::Other("NULL")),
            Some(ExactHome::OfType("NULL"))
        );
        assert_eq!(
            alone.exact_ownership(&text("")),
            Some(ExactHome::Equals(String::new()))
        );
        assert_eq!(
            alone.exact_ownership(&text(" us-east-1 ")),
            Some(ExactHome::Equals(" us-east-1 ".to_owned()))
        );
        // The general condition covers these already.
        assert_eq!(alone.exact_ownership(&HomeSeen::Absent), None);
        assert_eq!(alone.exact_ownership(&text("us-east-1")), None);
    }

    #[test]
    fn an_odd_home_another_region_owns_is_not_claimed_again() {
        let eu = HomeRegions::in_region("eu-west-1").default_home("us-east-1");
        // Unhomed shapes are the default home's (us-east-1), not eu-west-1's.
        for seen in [HomeSeen::Other("NULL"), text(""), text(" us-east-1")] {
            assert!(!eu.owns_seen(&seen), "{seen:?}");
            assert_eq!(eu.exact_ownership(&seen), None, "{seen:?}");
        }
        assert_eq!(
            eu.exact_ownership(&text("eu-west-1 ")),
            Some(ExactHome::Equals("eu-west-1 ".to_owned()))
        );
        // A deployment that owns everything has no condition to widen.
        assert_eq!(HomeRegions::default().exact_ownership(&text(" x ")), None);
    }
}
