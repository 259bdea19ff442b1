//! `failover` and `failback`: a failed region's pending messages re-homed into the
//! region the command runs against, and returned to it later (docs/global-tables.md).
//!
//! On a global table each region's deployment publishes only the messages homed
//! there (`HomeRegion`). When a region is down, its pending messages would wait for
//! it; `failover --from A`, run against a surviving region B, re-homes them into B —
//! each with one conditional write in B, only while it is still `PENDING` and A's —
//! and makes them due now, so B's sweeper publishes them at its next sweep. A message
//! A published whose `SENT` mark had not replicated before A went down is published
//! again by B (same `outbox-message-id`: the consumers' idempotency absorbs it).
//! `failback --to A` returns what is still `PENDING` and was failed over from A, due
//! only after the sweeper's grace, as a fresh commit is: A's stream mapping, enabled
//! again, replays the outage's `INSERT`s and publishes them, and A's sweeper takes only
//! what the replay has not (due at once, a sweep and the replay published each twice).
//!
//! Both read the sweeper index of the region they run against (every shard) and
//! write only items the index lists: a minimal producer's message that no sweep has
//! adopted yet is not in it (its default home's sweeper adopts it).

use crate::{OpsError, Reads, Table, index};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use dynamodb_outbox::HomeRegions;
use dynamodb_outbox::home::{ExactHome, FAILED_OVER_FROM, HOME_REGION, HomeSeen};
use dynamodb_outbox_core::schema::{
    ItemKey, RETRY_COUNT, STATUS, SWEEP_DUE_AT, Status, string_attr,
};
use std::time::Duration;

/// What a failover or a failback did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HomesReport {
    /// Pending messages re-homed.
    pub moved: Vec<ItemKey>,
    /// Pending messages listed by the index but not the moving region's (or finished,
    /// or re-homed by someone else since the read): left alone.
    pub left: u64,
    /// What the command read.
    pub reads: Reads,
}

/// Which messages a re-home takes, and where to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rehome {
    /// `failover --from`: the messages homed in `from` — and, when `from` is the
    /// default home, those naming no home — into `to`.
    Failover {
        /// The failed region.
        from: String,
        /// The region taking them (the one the command runs against).
        to: String,
        /// Whether `from` is the default home region of messages naming none.
        from_is_default_home: bool,
    },
    /// `failback --to`: the messages failed over from `to`, back to it, due `grace`
    /// later — each only if its index entry stayed unchanged for `settle`.
    Failback {
        /// The region they were failed over from.
        to: String,
        /// How long the recovered region's sweeper leaves them to its stream mapping's
        /// replay (`--due-after-seconds`, 60 by default: a commit's grace).
        grace: Duration,
        /// How long an entry must stay as read before it is taken: at least the
        /// longest lease a sweep of this region holds (its timeout + 60 s). A sweep's
        /// claim moves the due time; one that held it when read has ended by then.
        /// Timed on the operator's own clock, never compared with the sweeper's.
        settle: Duration,
    },
}

impl Rehome {
    /// The conditional update of one item: condition, update, and the values its
    /// placeholders name, typed (`#status`, `#home`, `#from`, `#due` are set by the
    /// caller).
    fn update(
        &self,
        now_ms: i64,
        seen_due: Option<&str>,
        exact: Option<&ExactHome>,
    ) -> (String, &'static str, Vec<(&'static str, AttributeValue)>) {
        let now = AttributeValue::N(now_ms.to_string());
        let region = |name: &String| AttributeValue::S(name.clone());
        match self {
            Rehome::Failover {
                from,
                to,
                from_is_default_home,
            } => {
                let (theirs, seen_home) = match exact {
                    Some(exact) => {
                        let (theirs, value) = exact.condition(":seen_home");
                        (theirs, Some(value))
                    }
                    None if *from_is_default_home => (
                        "(#home = :from OR attribute_not_exists(#home))".to_owned(),
                        None,
                    ),
                    None => ("#home = :from".to_owned(), None),
                };
                // The attempt count starts again: a region usually fails gradually (its
                // queues first), charging attempts its own dead-letter copies could not
                // honour; kept, they reached the survivor at the limit and were
                // dead-lettered at its first claim without one send.
                let mut values = vec![
                    (":from", region(from)),
                    (":to", region(to)),
                    (":now", now),
                    (":zero", AttributeValue::N("0".into())),
                ];
                values.extend(seen_home.map(|v| (":seen_home", AttributeValue::S(v.to_owned()))));
                (
                    format!("#status = :pending AND {theirs}"),
                    "SET #home = :to, #from = :from, #due = :now, #retries = :zero",
                    values,
                )
            }
            // Not while a sweep of this region holds it: its claim moves the due time, so
            // the entry must still be as read a settle later (`#due = :seen`). Comparing
            // the due time with the operator's clock (`#due <= :now`) let an operator
            // ahead by more than a lease take a message a sweep was still publishing
            // (issue 36, finding 7). Due after the grace: see the module's comment.
            Rehome::Failback { to, grace, .. } => {
                let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
                let due = AttributeValue::N(now_ms.saturating_add(grace_ms).to_string());
                let seen = AttributeValue::N(seen_due.unwrap_or("0").to_owned());
                (
                    "#status = :pending AND #from = :to AND #due = :seen".to_owned(),
                    "SET #home = :to, #due = :due REMOVE #from",
                    vec![(":to", region(to)), (":seen", seen), (":due", due)],
                )
            }
        }
    }
}

impl Rehome {
    /// For a failover refused on `refused` (the item as the refusal returned it): the
    /// exact `HomeRegion` to take it on, when the failed region owned that odd value
    /// (`NULL`, empty, padded — the sweeper's rule, `HomeRegions::exact_ownership`)
    /// and the item is still pending. A condition cannot trim, so these were left
    /// behind in the failed region (found by the model).
    fn odd_home(&self, refused: &serde_dynamo::Item) -> Option<ExactHome> {
        let Rehome::Failover {
            from,
            to,
            from_is_default_home,
        } = self
        else {
            return None;
        };
        if string_attr(refused, STATUS) != Some(Status::Pending.as_str()) {
            return None;
        }
        let default_home = if *from_is_default_home { from } else { to };
        HomeRegions::in_region(from.as_str())
            .default_home(default_home.as_str())
            .exact_ownership(&HomeSeen::of(refused))
    }
}

/// Re-homes the pending messages `rehome` names, reading every shard of the sweeper
/// index of the region `client` reaches.
pub async fn rehome(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    rehome: &Rehome,
    now_ms: i64,
) -> Result<HomesReport, OpsError> {
    let mut report = HomesReport::default();
    let mut entries = Vec::new();
    for shard in table.keys.sweep_shards.all() {
        entries.extend(index::entries(client, table, &shard, &mut report.reads).await?);
    }
    if let Rehome::Failback { settle, .. } = rehome {
        tokio::time::sleep(*settle).await;
    }
    for (key, seen) in entries {
        // A failback leaves an entry without a due time to hold it to, and one due after
        // now by the operator's clock (a sweep's lease, or a backoff): with the clocks
        // agreeing, that alone keeps it from a message a sweep is publishing; with the
        // operator's clock ahead, the settle does.
        let failback = matches!(rehome, Rehome::Failback { .. });
        let held = failback && seen.due_ms().is_none_or(|due| due > now_ms);
        if !held && rehome_one(client, table, &key, rehome, now_ms, seen.due.as_deref()).await? {
            report.moved.push(key);
        } else {
            report.left += 1;
        }
    }
    Ok(report)
}

/// One item re-homed, if it is still pending and the moving region's; `false` when
/// it is not (a refused condition). A failover refused on an odd `HomeRegion` the
/// failed region owned is made again on that exact value ([`Rehome::odd_home`]).
async fn rehome_one(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    key: &ItemKey,
    rehome: &Rehome,
    now_ms: i64,
    seen_due: Option<&str>,
) -> Result<bool, OpsError> {
    let refused =
        match update_one(client, table, key, rehome.update(now_ms, seen_due, None)).await? {
            Ok(()) => return Ok(true),
            Err(refused) => refused,
        };
    let Some(exact) = refused.as_ref().and_then(|item| rehome.odd_home(item)) else {
        return Ok(false);
    };
    let again = rehome.update(now_ms, seen_due, Some(&exact));
    Ok(update_one(client, table, key, again).await?.is_ok())
}

/// One conditional update; `Err` holds the item a refusal returned.
async fn update_one(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    key: &ItemKey,
    (condition, update, values): (String, &'static str, Vec<(&'static str, AttributeValue)>),
) -> Result<Result<(), Option<serde_dynamo::Item>>, OpsError> {
    let mut request = client
        .update_item()
        .table_name(&table.name)
        .set_key(Some(index::key_of(table, key)))
        .condition_expression(condition)
        .update_expression(update)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .expression_attribute_names("#status", STATUS)
        .expression_attribute_names("#home", HOME_REGION)
        .expression_attribute_names("#from", FAILED_OVER_FROM)
        .expression_attribute_names("#due", SWEEP_DUE_AT)
        .expression_attribute_values(
            ":pending",
            AttributeValue::S(Status::Pending.as_str().into()),
        );
    if update.contains("#retries") {
        request = request.expression_attribute_names("#retries", RETRY_COUNT);
    }
    for (name, value) in values {
        request = request.expression_attribute_values(name, value);
    }
    match request.send().await {
        Ok(_) => Ok(Ok(())),
        Err(e) => match e.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(refused)) => {
                Ok(Err(refused.item().map(|raw| index::canonical(table, raw))))
            }
            _ => Err(OpsError::aws("update", &table.name, e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failover_takes_the_failed_regions_messages_and_the_unhomed_only_from_the_default_home() {
        let failover = |default| Rehome::Failover {
            from: "us-east-1".into(),
            to: "eu-west-1".into(),
            from_is_default_home: default,
        };
        let (condition, update, values) = failover(true).update(7, None, None);
        assert_eq!(
            condition,
            "#status = :pending AND (#home = :from OR attribute_not_exists(#home))"
        );
        assert_eq!(
            update,
            "SET #home = :to, #from = :from, #due = :now, #retries = :zero"
        );
        assert!(values.contains(&(":now", AttributeValue::N("7".into()))));
        // The failed region's attempts are not the survivor's (issue 36, finding 6).
        assert!(values.contains(&(":zero", AttributeValue::N("0".into()))));
        assert!(values.contains(&(":from", AttributeValue::S("us-east-1".into()))));
        assert_eq!(
            failover(false).update(7, None, None).0,
            "#status = :pending AND #home = :from"
        );
    }

    fn item(status: &str, home: Option<serde_dynamo::AttributeValue>) -> serde_dynamo::Item {
        let mut item = std::collections::HashMap::from([(
            STATUS.to_owned(),
            serde_dynamo::AttributeValue::S(status.to_owned()),
        )]);
        if let Some(home) = home {
            item.insert(HOME_REGION.to_owned(), home);
        }
        item.into()
    }

    #[test]
    fn a_failover_refused_on_an_odd_home_the_failed_region_owned_is_made_on_that_value() {
        use serde_dynamo::AttributeValue as V;
        let failover = |default| Rehome::Failover {
            from: "us-east-1".into(),
            to: "eu-west-1".into(),
            from_is_default_home: default,
        };
        let text = |s: &str| Some(V::S(s.to_owned()));
        let pending = |home| failover(true).odd_home(&item("PENDING", home));
        assert_eq!(
            pending(Some(V::Null(true))),
            Some(ExactHome::OfType("NULL"))
        );
        assert_eq!(pending(text("")), Some(ExactHome::Equals(String::new())));
        assert_eq!(
            pending(text(" us-east-1 ")),
            Some(ExactHome::Equals(" us-east-1 ".into()))
        );
        // Not the failed region's, already covered, or finished: nothing to retry.
        assert_eq!(pending(text("eu-west-1")), None);
        assert_eq!(pending(text("us-east-1")), None);
        assert_eq!(pending(None), None);
        assert_eq!(failover(true).odd_home(&item("SENT", text(""))), None);
        // Unhomed shapes are the default home's: not the failed region's unless it is.
        assert_eq!(failover(false).odd_home(&item("PENDING", text(""))), None);
        let (condition, _, values) =
            failover(true).update(7, None, Some(&ExactHome::OfType("NULL")));
        assert_eq!(
            condition,
            "#status = :pending AND attribute_type(#home, :seen_home)"
        );
        assert!(values.contains(&(":seen_home", AttributeValue::S("NULL".into()))));
    }

    #[test]
    fn a_failback_returns_only_what_was_failed_over_from_the_region_and_unchanged_since_read() {
        let (condition, update, values) = Rehome::Failback {
            to: "us-east-1".into(),
            grace: Duration::from_secs(60),
            settle: Duration::from_secs(360),
        }
        .update(9, Some("1700000000123"), None);
        // Issue 36, finding 7: `#due <= :now` compared the survivor sweeper's lease with
        // the operator's clock. The entry as read is the condition; the operator's
        // clock only sets the new due time.
        assert_eq!(
            condition,
            "#status = :pending AND #from = :to AND #due = :seen"
        );
        assert_eq!(update, "SET #home = :to, #due = :due REMOVE #from");
        assert_eq!(
            values,
            [
                (":to", AttributeValue::S("us-east-1".into())),
                (":seen", AttributeValue::N("1700000000123".into())),
                (":due", AttributeValue::N("60009".into()))
            ]
        );
    }
}
