//! The value types the store and the sink answer in, and the policies decide on: at
//! the bottom of the crate, so that `policy` depends on neither `ports` (which
//! re-exports them as their public address) nor `publish`.

use crate::failure::Failure;
use crate::schema::{ItemKey, LAST_ERROR, OutboxMessage, Undecodable, decode, string_attr};

/// The answer for one entry of a batch: sent, or why not (a [`Failure`] of kind
/// `Transient` or `Permanent`).
pub type EntryResult = Result<(), Failure>;

/// Why one statement of a batched change was not applied, as the service said it
/// (DynamoDB's `BatchStatementError`): [`crate::policy::judge_statement`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementError {
    /// The service's code (`ConditionalCheckFailed`, `ThrottlingError`, …).
    pub code: String,
    /// Its message.
    pub message: String,
}

/// One statement's answer: applied, or why not.
pub type StatementAnswer = Result<(), StatementError>;

/// An item in the sweeper index whose due time has passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueKey {
    /// Its primary key.
    pub key: ItemKey,
    /// Its `SweepDueAt`, fractions truncated: for ordering and ages.
    pub due_at_ms: i64,
    /// Its `SweepDueAt` exactly as read (DynamoDB's decimal text): the claim is
    /// conditional on it being unchanged, so it must compare what is stored.
    pub seen_due: String,
}

impl DueKey {
    /// A key due at `due_at_ms`, as this library writes due times.
    pub fn new(key: ItemKey, due_at_ms: i64) -> Self {
        DueKey {
            key,
            due_at_ms,
            seen_due: due_at_ms.to_string(),
        }
    }
}

/// An item the sweeper claimed, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedItem {
    /// Its primary key.
    pub key: ItemKey,
    /// Why its previous attempt failed, if one did.
    pub last_error: Option<String>,
    /// The message (with `RetryCount` already incremented by the claim), or what is
    /// needed to dead-letter an item that is not one.
    pub message: Result<OutboxMessage, Undecodable>,
}

impl ClaimedItem {
    /// Decodes the item a claim returned.
    pub fn decode(key: ItemKey, item: serde_dynamo::Item) -> Self {
        ClaimedItem {
            last_error: string_attr(&item, LAST_ERROR).map(str::to_owned),
            message: decode(&item, Some(&key)),
            key,
        }
    }
}
