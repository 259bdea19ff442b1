//! What was published: every message of the run `SENT` in the table, then each
//! region's destination queue drained and every delivery counted per message, with
//! the region whose queue received it and its `outbox-message-id`.

use super::stack::RegionStack;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use aws_smithy_types::error::display::DisplayErrorContext;
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Deliveries per message name.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Message name → the region of each queue that received a copy.
    pub regions: BTreeMap<String, Vec<String>>,
    /// Message name → the `outbox-message-id`s its copies carried.
    pub ids: BTreeMap<String, BTreeSet<String>>,
}

impl Tally {
    /// Copies `region`'s queue received.
    pub fn count_in(&self, region: &str) -> usize {
        self.regions
            .values()
            .flatten()
            .filter(|r| *r == region)
            .count()
    }

    /// Every copy received.
    pub fn total(&self) -> usize {
        self.regions.values().map(Vec::len).sum()
    }

    /// Messages delivered more than once (in one region or across both).
    pub fn twice(&self) -> usize {
        self.regions.values().filter(|r| r.len() > 1).count()
    }

    /// Messages whose copies carried different message ids (never expected).
    pub fn inconsistent_ids(&self) -> usize {
        self.ids.values().filter(|ids| ids.len() > 1).count()
    }
}

/// Waits until every message of the run (partition keys starting `ORDER#{tag}`) is
/// `SENT` in `stack`'s replica: `want` of them. Prints progress every few seconds.
pub async fn wait_sent(
    stack: &RegionStack,
    tag: &str,
    want: usize,
    timeout: Duration,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let statuses = statuses(stack, tag).await?;
        let sent = statuses.get("SENT").copied().unwrap_or(0);
        if sent >= want {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{} of {want} SENT after {}s: {statuses:?}",
                sent,
                timeout.as_secs()
            ));
        }
        if last_print.elapsed() >= Duration::from_secs(5) {
            eprintln!(
                "regions:   {sent}/{want} SENT ({}s)",
                start.elapsed().as_secs()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
}

/// Outbox items of the run by `Status`, as `stack`'s replica has them.
pub(super) async fn statuses(
    stack: &RegionStack,
    tag: &str,
) -> Result<BTreeMap<String, usize>, String> {
    let mut counts = BTreeMap::new();
    let mut start = None;
    loop {
        let page = stack
            .clients
            .dynamodb
            .scan()
            .table_name(&stack.table)
            .filter_expression("begins_with(PK, :p) AND attribute_exists(#s)")
            .expression_attribute_names("#s", "Status")
            .expression_attribute_values(":p", AttributeValue::S(format!("ORDER#{tag}")))
            .projection_expression("#s")
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| format!("{}: scan: {}", stack.region, DisplayErrorContext(&e)))?;
        for item in page.items() {
            if let Some(AttributeValue::S(status)) = item.get("Status") {
                *counts.entry(status.clone()).or_insert(0) += 1;
            }
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(counts);
        }
    }
}

/// Drains every region's queue into `tally` (receive, count, delete) until each is
/// empty twice in a row.
pub async fn drain_into(tally: &mut Tally, stacks: &[RegionStack]) -> Result<(), String> {
    for stack in stacks {
        for (id, name) in drain(stack).await? {
            tally
                .regions
                .entry(name.clone())
                .or_default()
                .push(stack.region.clone());
            tally.ids.entry(name).or_default().insert(id);
        }
    }
    Ok(())
}

/// Everything on `stack`'s queue: each delivery's message id and message name.
async fn drain(stack: &RegionStack) -> Result<Vec<(String, String)>, String> {
    let sqs = &stack.clients.sqs;
    let fail = |e: String| format!("{}: queue {}: {e}", stack.region, stack.queue_url);
    let (mut out, mut empty) = (Vec::new(), 0);
    while empty < 2 {
        let received = sqs
            .receive_message()
            .queue_url(&stack.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .map_err(|e| fail(DisplayErrorContext(&e).to_string()))?;
        let messages = received.messages();
        if messages.is_empty() {
            empty += 1;
            continue;
        }
        empty = 0;
        let mut deletes = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            out.push(delivery(m).map_err(fail)?);
            if let Some(handle) = m.receipt_handle() {
                deletes.push(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(handle)
                        .build()
                        .map_err(|e| fail(e.to_string()))?,
                );
            }
        }
        sqs.delete_message_batch()
            .queue_url(&stack.queue_url)
            .set_entries(Some(deletes))
            .send()
            .await
            .map_err(|e| fail(DisplayErrorContext(&e).to_string()))?;
    }
    Ok(out)
}

/// A delivery's `outbox-message-id` and the name in its payload.
fn delivery(m: &aws_sdk_sqs::types::Message) -> Result<(String, String), String> {
    let id = m
        .message_attributes()
        .and_then(|a| a.get(ATTR_MESSAGE_ID))
        .and_then(|v| v.string_value())
        .ok_or_else(|| format!("a delivery without {ATTR_MESSAGE_ID}"))?;
    let body: serde_json::Value = serde_json::from_str(m.body().unwrap_or_default())
        .map_err(|e| format!("a delivery whose body is not JSON: {e}"))?;
    let name = body["n"]
        .as_str()
        .ok_or_else(|| "a delivery without a message name".to_owned())?;
    Ok((id.to_owned(), name.to_owned()))
}
