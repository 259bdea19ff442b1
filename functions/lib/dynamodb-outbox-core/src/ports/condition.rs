//! What a `FAILED` mark requires of the item besides being `PENDING`: that the
//! sweep's claim on it is still current.
//!
//! A sweep acts on an item it claimed for the length of its lease. Meanwhile the
//! stream publisher may fail it and an operator redrive it (`PENDING` again, a fresh
//! `RetryCount`, due now), and a second sweep claim it. A `FAILED` mark conditional
//! on `PENDING` alone would then undo the redrive; conditional also on the
//! `SweepDueAt` the claim set, it is refused, and the item is left to whoever holds
//! it now. (`SENT` is conditional on `PENDING` only: a message that went out is
//! sent, whoever holds it.)

use crate::schema::number::integer;
use crate::schema::{STATUS, SeenIndex, Status, string_attr};

/// The condition of a `FAILED` mark ([`super::OutboxStore::mark_failed`],
/// [`super::MarkChange::Failed`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MarkCondition {
    /// `Status = PENDING`: a writer that holds no claim (the stream publisher).
    #[default]
    Pending,
    /// `Status = PENDING AND SweepDueAt = sweep_due_at`: a sweep's mark, under the
    /// claim that set `SweepDueAt` to its lease. Anything that moved the item since
    /// — a redrive, a newer claim, a reschedule — makes it refused.
    Claimed {
        /// The `SweepDueAt` the claim left, as DynamoDB number text.
        sweep_due_at: String,
    },
}

impl MarkCondition {
    /// The condition of a sweep's marks under a claim whose lease runs until
    /// `lease_until_ms` (the `SweepDueAt` the claim wrote).
    pub fn claim(lease_until_ms: i64) -> Self {
        MarkCondition::Claimed {
            sweep_due_at: lease_until_ms.to_string(),
        }
    }

    /// The condition of a sweep's marks of an item it could not claim (it refused
    /// every claim for what it holds): its `SweepDueAt` as read, `seen`; without one,
    /// `PENDING` alone.
    pub fn as_read(seen: &SeenIndex) -> Self {
        match &seen.due {
            Some(due) => MarkCondition::Claimed {
                sweep_due_at: due.clone(),
            },
            None => MarkCondition::Pending,
        }
    }

    /// The `SweepDueAt` the item must still hold, when the condition asks for one.
    pub fn sweep_due_at(&self) -> Option<&str> {
        match self {
            MarkCondition::Pending => None,
            MarkCondition::Claimed { sweep_due_at } => Some(sweep_due_at),
        }
    }

    /// Whether `item` (as stored) meets the condition: `PENDING`, and its
    /// `SweepDueAt` equal by value to the claim's when there is one.
    pub fn holds(&self, item: &serde_dynamo::Item) -> bool {
        if string_attr(item, STATUS) != Some(Status::Pending.as_str()) {
            return false;
        }
        match self.sweep_due_at() {
            None => true,
            Some(claimed) => SeenIndex::of(item)
                .due
                .is_some_and(|due| same_number(&due, claimed)),
        }
    }

    /// Whether a stored `SweepDueAt` (`None`: absent) meets the claim's, for a store
    /// that keeps it as an integer (the in-memory fake).
    pub fn holds_due(&self, due_ms: Option<i64>) -> bool {
        match self.sweep_due_at() {
            None => true,
            Some(claimed) => due_ms.map(i128::from).is_some_and(|d| integer(claimed) == Some(d)),
        }
    }
}

/// Whether two DynamoDB number texts are the same value, as a condition compares
/// them (`7` and `7.0` are; a fraction only equals its own text).
fn same_number(a: &str, b: &str) -> bool {
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_dynamo::AttributeValue;
    use std::collections::HashMap;

    fn item(status: &str, due: Option<&str>) -> serde_dynamo::Item {
        let mut raw = HashMap::from([(STATUS.to_owned(), AttributeValue::S(status.into()))]);
        if let Some(due) = due {
            raw.insert("SweepDueAt".to_owned(), AttributeValue::N(due.into()));
        }
        serde_dynamo::Item::from(raw)
    }

    #[test]
    fn a_claimed_mark_holds_only_while_the_item_is_pending_at_the_claims_due_time() {
        let claimed = MarkCondition::claim(1_000);
        assert!(claimed.holds(&item("PENDING", Some("1000"))));
        assert!(claimed.holds(&item("PENDING", Some("1000.0"))), "by value");
        // Redriven (due now), claimed again, or rescheduled: someone else's.
        assert!(!claimed.holds(&item("PENDING", Some("900"))));
        assert!(!claimed.holds(&item("PENDING", None)));
        assert!(!claimed.holds(&item("FAILED", Some("1000"))));
        assert!(claimed.holds_due(Some(1_000)));
        assert!(!claimed.holds_due(Some(999)) && !claimed.holds_due(None));
    }

    #[test]
    fn a_mark_without_a_claim_asks_only_for_pending() {
        let pending = MarkCondition::Pending;
        assert!(pending.holds(&item("PENDING", None)));
        assert!(!pending.holds(&item("SENT", None)));
        assert!(pending.holds_due(None));
        let foreign = SeenIndex {
            shard: Some("99".into()),
            due: Some("1700000000000.5".into()),
        };
        let read = MarkCondition::as_read(&foreign);
        assert!(read.holds(&item("PENDING", Some("1700000000000.5"))));
        assert!(!read.holds(&item("PENDING", Some("1700000000000"))));
        assert_eq!(MarkCondition::as_read(&SeenIndex::default()), MarkCondition::Pending);
    }
}
