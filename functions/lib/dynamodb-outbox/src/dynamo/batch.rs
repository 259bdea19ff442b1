//! Batched state changes: up to 25 conditional PartiQL `UPDATE` statements in one
//! `BatchExecuteStatement`, each conditional on `Status = 'PENDING'` (and a sweep's
//! `FAILED` mark on its claim's `SweepDueAt` too), each billed as
//! its own write and answered on its own (not a transaction: one refused statement
//! leaves the others applied). What each answer means is the core's decision
//! ([`dynamodb_outbox_core::__private::policy::judge_statement`]); here the statements are written and the
//! answers read.

use super::{DynamoStore, n, request, s};
use crate::sdk_error::store_failure;
use aws_sdk_dynamodb::types::{AttributeValue, BatchStatementRequest, BatchStatementResponse};
use dynamodb_outbox_core::{Failure, KeyNames};
use dynamodb_outbox_core::__private::policy::{FailedMark, PAYLOAD_ON_DEAD_LETTER_QUEUE};
use dynamodb_outbox_core::__private::ports::{MarkChange, MarkCondition, StatementAnswer, StatementError};
use dynamodb_outbox_core::__private::schema::{
    FAILED_AT, ItemKey, LAST_ERROR, PAYLOAD, PAYLOAD_ON, SENT_AT, STATUS, Status, TABLE,
    failed_sweep_shard,
};

/// A PartiQL identifier: double-quoted, so that no attribute name is taken for a
/// reserved word.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `WHERE` on the item's key, conditional on it being `PENDING`: the last two
/// parameters are the key.
fn where_pending(keys: &KeyNames) -> String {
    format!(
        "WHERE {} = ? AND {} = ? AND {} = '{}'",
        quoted(&keys.partition_key),
        quoted(&keys.sort_key),
        quoted(STATUS),
        Status::Pending.as_str()
    )
}

/// [`where_pending`], and for a mark under a sweep's claim also on its `SweepDueAt`:
/// then the claim's due time is the last parameter, after the key.
fn where_claimed(keys: &KeyNames, condition: &MarkCondition) -> String {
    match condition.sweep_due_at() {
        None => where_pending(keys),
        Some(_) => format!(
            "{} AND {} = ?",
            where_pending(keys),
            quoted(TABLE.sweep_index_sort_key)
        ),
    }
}

/// `REMOVE` of the sweeper index keys: the item leaves the sparse index.
fn leave_index() -> String {
    format!(
        "REMOVE {} REMOVE {}",
        quoted(TABLE.sweep_index_partition_key),
        quoted(TABLE.sweep_index_sort_key)
    )
}

/// The `SENT` mark as a statement and its parameters (before the key's).
fn sent_statement(
    table: &str,
    keys: &KeyNames,
    sent_at_ms: i64,
    expires_at_s: i64,
) -> (String, Vec<AttributeValue>) {
    let statement = format!(
        "UPDATE {} SET {} = '{}' SET {} = ? SET {} = ? {} {}",
        quoted(table),
        quoted(STATUS),
        Status::Sent.as_str(),
        quoted(SENT_AT),
        quoted(&keys.ttl_attribute),
        leave_index(),
        where_pending(keys)
    );
    (statement, vec![n(sent_at_ms), n(expires_at_s)])
}

/// The `FAILED` mark of `key` as a statement and its parameters (before the key's):
/// the same changes as the per-item update (`failed_update`), removals first, under
/// `condition` ([`where_claimed`]).
fn failed_statement(
    table: &str,
    keys: &KeyNames,
    key: &ItemKey,
    mark: &FailedMark,
    failed_at_ms: i64,
    condition: &MarkCondition,
) -> (String, Vec<AttributeValue>) {
    let mut clauses = Vec::new();
    let mut parameters = Vec::new();
    if !mark.failed_at {
        clauses.push(leave_index());
    }
    if mark.payload_moved {
        clauses.push(format!("REMOVE {}", quoted(PAYLOAD)));
        clauses.push(format!("SET {} = ?", quoted(PAYLOAD_ON)));
        parameters.push(s(PAYLOAD_ON_DEAD_LETTER_QUEUE));
    }
    if let Some(payload) = &mark.payload {
        clauses.push(format!("SET {} = ?", quoted(PAYLOAD)));
        parameters.push(s(payload));
    }
    if let Some(reason) = &mark.last_error {
        clauses.push(format!("SET {} = ?", quoted(LAST_ERROR)));
        parameters.push(s(reason));
    }
    if mark.failed_at {
        clauses.push(format!(
            "SET {} = ? SET {} = ? SET {} = ?",
            quoted(TABLE.sweep_index_partition_key),
            quoted(TABLE.sweep_index_sort_key),
            quoted(FAILED_AT)
        ));
        parameters.extend([
            s(&failed_sweep_shard(&key.pk)),
            n(failed_at_ms),
            n(failed_at_ms),
        ]);
    }
    clauses.push(format!(
        "SET {} = '{}'",
        quoted(STATUS),
        Status::Failed.as_str()
    ));
    let statement = format!(
        "UPDATE {} {} {}",
        quoted(table),
        clauses.join(" "),
        where_claimed(keys, condition)
    );
    (statement, parameters)
}

/// One change as a statement of the batch.
fn statement(
    table: &str,
    keys: &KeyNames,
    key: &ItemKey,
    change: &MarkChange,
) -> Result<BatchStatementRequest, Failure> {
    let ((statement, mut parameters), claimed_due) = match change {
        MarkChange::Sent {
            sent_at_ms,
            expires_at_s,
        } => (
            sent_statement(table, keys, *sent_at_ms, *expires_at_s),
            None,
        ),
        MarkChange::Failed {
            mark,
            failed_at_ms,
            condition,
        } => (
            failed_statement(table, keys, key, mark, *failed_at_ms, condition),
            condition.sweep_due_at(),
        ),
    };
    parameters.extend([s(&key.pk), s(&key.sk)]);
    parameters.extend(claimed_due.map(|due| AttributeValue::N(due.to_owned())));
    BatchStatementRequest::builder()
        .statement(statement)
        .set_parameters(Some(parameters))
        .build()
        .map_err(|e| Failure::permanent(format!("could not build a batched mark: {e}")))
}

/// One statement's answer, in the core's words.
fn answer(response: &BatchStatementResponse) -> StatementAnswer {
    match response.error() {
        None => Ok(()),
        Some(e) => Err(StatementError {
            code: e
                .code()
                .map_or_else(|| "Unknown".to_owned(), |c| c.as_str().to_owned()),
            message: e.message().unwrap_or_default().to_owned(),
        }),
    }
}

impl DynamoStore {
    /// Applies `changes` in one `BatchExecuteStatement`.
    pub(super) async fn batch_execute(
        &self,
        changes: &[(ItemKey, MarkChange)],
    ) -> Result<Vec<StatementAnswer>, Failure> {
        let statements = changes
            .iter()
            .map(|(key, change)| statement(&self.table, &self.keys, key, change))
            .collect::<Result<Vec<_>, _>>()?;
        let out = request(
            self.client
                .batch_execute_statement()
                .set_statements(Some(statements))
                .send(),
        )
        .await
        .map_err(|e| store_failure(&e))?;
        Ok(out.responses().iter().map(answer).collect())
    }

    /// Waits on the SDK's own sleep (the runtime the client was built on).
    pub(super) async fn sleep(&self, pause: std::time::Duration) {
        use aws_sdk_dynamodb::config::AsyncSleep;
        if let Some(sleep) = self.client.config().sleep_impl() {
            sleep.sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sent_statement_sets_the_state_and_times_and_leaves_the_index_only_if_pending() {
        let (statement, parameters) =
            sent_statement("t", &KeyNames::default(), 1_700_000_000_000, 1_700_604_800);
        assert_eq!(
            statement,
            "UPDATE \"t\" SET \"Status\" = 'SENT' SET \"SentAt\" = ? SET \"ExpiresAt\" = ? \
             REMOVE \"SweepShard\" REMOVE \"SweepDueAt\" \
             WHERE \"PK\" = ? AND \"SK\" = ? AND \"Status\" = 'PENDING'"
        );
        assert_eq!(parameters, vec![n(1_700_000_000_000), n(1_700_604_800)]);
        let keyed = KeyNames::new("pk", "sk").ttl_attribute("ttl");
        let (statement, _) = sent_statement("t", &keyed, 1, 2);
        assert!(statement.contains("SET \"ttl\" = ?"), "{statement}");
        assert!(statement.ends_with("WHERE \"pk\" = ? AND \"sk\" = ? AND \"Status\" = 'PENDING'"));
    }

    #[test]
    fn the_failed_statement_changes_only_what_the_mark_says() {
        let full = FailedMark {
            last_error: Some("why".into()),
            failed_at: true,
            payload_moved: false,
            payload: None,
        };
        let (keys, key) = (KeyNames::default(), key());
        let (statement, parameters) = failed_statement("t", &keys, &key, &full, 7, &MarkCondition::Pending);
        assert_eq!(
            statement,
            "UPDATE \"t\" SET \"LastError\" = ? \
             SET \"SweepShard\" = ? SET \"SweepDueAt\" = ? SET \"FailedAt\" = ? SET \"Status\" = 'FAILED' \
             WHERE \"PK\" = ? AND \"SK\" = ? AND \"Status\" = 'PENDING'"
        );
        assert_eq!(
            parameters,
            vec![s("why"), s(&failed_sweep_shard("USER#1")), n(7), n(7)]
        );
        let moved = FailedMark {
            payload_moved: true,
            ..full
        };
        let (statement, parameters) = failed_statement("t", &keys, &key, &moved, 7, &MarkCondition::Pending);
        assert!(statement.contains("REMOVE \"Payload\" SET \"PayloadOn\" = ?"));
        assert_eq!(parameters[0], s("dead-letter queue"));
        let bare = FailedMark {
            last_error: None,
            failed_at: false,
            payload_moved: false,
            payload: None,
        };
        let (statement, parameters) = failed_statement("t", &keys, &key, &bare, 7, &MarkCondition::Pending);
        assert_eq!(statement.matches('?').count(), 2, "only the key's");
        assert!(statement.contains("REMOVE \"SweepShard\" REMOVE \"SweepDueAt\""));
        assert!(parameters.is_empty());
        let pointed = FailedMark {
            payload: Some("pointer".into()),
            ..bare
        };
        let (statement, parameters) = failed_statement("t", &keys, &key, &pointed, 7, &MarkCondition::Pending);
        assert!(statement.contains("SET \"Payload\" = ?"), "{statement}");
        assert_eq!(parameters, vec![s("pointer")]);
    }

    fn key() -> ItemKey {
        ItemKey {
            pk: "USER#1".into(),
            sk: "MESSAGE#X#1".into(),
        }
    }

    #[test]
    fn a_failed_mark_under_a_claim_is_conditional_on_its_due_time_given_after_the_key() {
        let mark = FailedMark {
            last_error: Some("why".into()),
            failed_at: true,
            payload_moved: false,
            payload: None,
        };
        let change = MarkChange::Failed {
            mark,
            failed_at_ms: 7,
            condition: MarkCondition::claim(1_000),
        };
        let request = statement("t", &KeyNames::default(), &key(), &change).expect("builds");
        assert!(
            request.statement().ends_with(
                "WHERE \"PK\" = ? AND \"SK\" = ? AND \"Status\" = 'PENDING' AND \"SweepDueAt\" = ?"
            ),
            "{}",
            request.statement()
        );
        let parameters = request.parameters();
        assert_eq!(parameters.len(), request.statement().matches('?').count());
        assert_eq!(&parameters[parameters.len() - 3..], &[
            s("USER#1"),
            s("MESSAGE#X#1"),
            AttributeValue::N("1000".into())
        ]);
    }

    #[test]
    fn the_key_comes_last_and_identifiers_are_quoted() {
        let key = key();
        let change = MarkChange::Sent {
            sent_at_ms: 1,
            expires_at_s: 2,
        };
        let request = statement("my-table", &KeyNames::default(), &key, &change).expect("builds");
        assert!(request.statement().starts_with("UPDATE \"my-table\" "));
        assert_eq!(
            request.parameters(),
            &[n(1), n(2), s("USER#1"), s("MESSAGE#X#1")]
        );
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
    }
}
