//! The check of the table before a function's first piece of work: one
//! `DescribeTable` (and `DescribeTimeToLive`) on the first invocation, compared with
//! the configuration by the core ([`check_table`]). A table that matches is not read
//! again; a mismatch refuses every invocation with one error naming the setting, the
//! configured value and the table's — so a wrong key name leaves the stream's records
//! to be retried (the iterator-age alarm fires) instead of dead-lettering every
//! message. A table that cannot be read now does not stop the work (logged, read again
//! on the next invocation); one the role may not describe is logged, naming the grant,
//! and not checked.

use super::learned::{Learned, Lookup};
use crate::dynamo::{Described, describe_table};
use dynamodb_outbox_core::__private::schema::table_check::{
    Outcome, TableNeeds, check_table, mismatches, missing_table,
};
use dynamodb_outbox_core::KeyNames;
use lambda_runtime::Error;

/// Whether the table is the one configured, learned on the first invocation.
#[derive(Debug)]
pub(crate) struct TableGate {
    client: aws_sdk_dynamodb::Client,
    table: String,
    keys: KeyNames,
    needs: TableNeeds,
    /// `Ok` when the work may go on; the mismatch's words when it may not.
    verdict: Learned<Result<(), String>>,
}

impl TableGate {
    /// The check of `table`, keyed as `keys` says, for a function that `needs` what it
    /// says; makes no request.
    pub(crate) fn new(
        client: aws_sdk_dynamodb::Client,
        table: impl Into<String>,
        keys: KeyNames,
        needs: TableNeeds,
    ) -> Self {
        TableGate {
            client,
            table: table.into(),
            keys,
            needs,
            verdict: Learned::default(),
        }
    }

    /// The same check for a table keyed as `keys` says.
    pub(crate) fn with_key_names(self, keys: KeyNames) -> Self {
        TableGate { keys, ..self }
    }

    /// `Ok` when the function may work on the table; else the error that names the
    /// mismatch (logged), for the invocation to fail with.
    pub(crate) async fn admit(&self) -> Result<(), Error> {
        let verdict = self.verdict.get(|| self.look()).await;
        match &*verdict {
            Ok(()) => Ok(()),
            Err(mismatch) => {
                tracing::error!(table = %self.table, error = %mismatch, "the table does not match the function's configuration: no work is done until it does (nothing is dead-lettered; the stream's records are retried)");
                Err(mismatch.clone().into())
            }
        }
    }

    async fn look(&self) -> Lookup<Result<(), String>> {
        match describe_table(&self.client, &self.table).await {
            Described::Seen(seen) => {
                let checks = check_table(&seen, &self.keys, self.needs);
                for check in &checks {
                    if let Outcome::Warning(words) = &check.outcome {
                        tracing::warn!(table = %self.table, check = check.what, "{words}");
                    }
                }
                let found = mismatches(&checks);
                if found.is_empty() {
                    return Lookup::Known(Ok(()));
                }
                let words: Vec<String> = found.iter().map(ToString::to_string).collect();
                Lookup::Known(Err(words.join("; ")))
            }
            Described::Missing => Lookup::Known(Err(missing_table(&self.table).to_string())),
            Described::Denied(error) => {
                tracing::error!(table = %self.table, %error, "the function's role may not dynamodb:DescribeTable the outbox table, so the table's keys, index and stream are not checked against the configuration: grant dynamodb:DescribeTable (and dynamodb:DescribeTimeToLive) on the table's ARN (docs/iam.md)");
                Lookup::Known(Ok(()))
            }
            Described::Unreadable(error) => {
                tracing::warn!(table = %self.table, %error, "could not describe the outbox table now: working unchecked for this invocation, checking again on the next");
                Lookup::ForNow(Ok(()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::config::{
        BehaviorVersion, Credentials, Region, SharedCredentialsProvider,
    };
    use aws_types::SdkConfig;

    /// A client whose every request fails at once: nothing listens there.
    fn unreachable() -> aws_sdk_dynamodb::Client {
        let config = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:1")
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "a", "b", None, None, "test",
            )))
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_dynamodb::Client::new(&config)
    }

    #[tokio::test]
    async fn a_table_that_cannot_be_described_now_does_not_stop_the_work_and_is_looked_at_again() {
        let gate = TableGate::new(
            unreachable(),
            "t",
            KeyNames::default(),
            TableNeeds { stream: true },
        );
        for _ in 0..2 {
            assert!(gate.admit().await.is_ok());
        }
        // Nothing was kept: the next invocation describes the table again.
        assert!(!gate.verdict.is_kept());
    }
}
