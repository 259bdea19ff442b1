//! `check`: whether the table is what the configuration says — its keys, the sweeper
//! index, a stream of new images and its TTL attribute — by the comparison the
//! functions make before their first piece of work (`DescribeTable` and
//! `DescribeTimeToLive`, nothing else read).

use crate::{OpsError, Table};
use dynamodb_outbox::dynamo::{Described, describe_table};
use dynamodb_outbox_core::schema::table_check::{
    Check, Outcome, TableNeeds, check_table, mismatches, missing_table,
};

/// Each check of the table, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// What was compared and how it came out.
    pub checks: Vec<Check>,
}

impl CheckReport {
    /// How many checks found the table unlike the configuration: the functions
    /// refuse work while any does.
    pub fn mismatches(&self) -> usize {
        mismatches(&self.checks).len()
    }

    /// The report as lines, one a check: `ok`, `MISMATCH` or `warning`, what, words.
    pub fn lines(&self) -> Vec<String> {
        self.checks
            .iter()
            .map(|c| match &c.outcome {
                Outcome::Ok(words) => format!("ok        {:<14} {words}", c.what),
                Outcome::Warning(words) => format!("warning   {:<14} {words}", c.what),
                Outcome::Mismatch(m) => format!("MISMATCH  {:<14} {m}", c.what),
            })
            .collect()
    }
}

/// Compares `table` as AWS describes it with its configuration (`table.keys`, the
/// fixed sweeper index, the publisher's stream). A table that does not exist is one
/// mismatch, naming `OUTBOX_TABLE_NAME`; one the caller may not describe, or cannot
/// now, is an error.
pub async fn check(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
) -> Result<CheckReport, OpsError> {
    let checks = match describe_table(client, &table.name).await {
        Described::Seen(seen) => check_table(&seen, &table.keys, TableNeeds { stream: true }),
        Described::Missing => vec![Check {
            what: "table",
            outcome: Outcome::Mismatch(missing_table(&table.name)),
        }],
        Described::Denied(error) => {
            return Err(OpsError::Unchecked {
                table: table.name.clone(),
                message: format!(
                    "the caller needs dynamodb:DescribeTable (and dynamodb:DescribeTimeToLive) on it ({error})"
                ),
            });
        }
        // No "run again" here: what failed may be the caller's setup (an untrusted
        // certificate, refused credentials), which the error names with its fix.
        Described::Unreadable(error) => {
            return Err(OpsError::Unchecked {
                table: table.name.clone(),
                message: error,
            });
        }
    };
    Ok(CheckReport { checks })
}
