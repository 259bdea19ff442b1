//! The producer's pure half: the messages an application hands over, the outbox
//! items they become, and DynamoDB's transaction limits. The DynamoDB adapter
//! (`OutboxWriter` in `dynamodb-outbox`) writes them.

use crate::schema::{
    OutboxItem, PENDING_MESSAGE, RESERVED_EVENT, Status, SweepShards, sequenced_sort_key,
};
use crate::trace::TraceContext;
use std::fmt;
use std::time::Duration;

/// Most actions in one `TransactWriteItems`.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
/// Largest aggregate size of the items in one transaction.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Largest DynamoDB item.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// A message the application wants announced once its write commits.
///
/// ```
/// use dynamodb_outbox_core::NewMessage;
///
/// let shipped = NewMessage::new("ORDER#42", "orders", r#"{"orderId":42}"#)
///     .event_type("OrderShipped")
///     .sequence(3); // the order's version this transaction sets: MESSAGE#SEQ#…3#00#OrderShipped#<id>
/// assert!(shipped.invalid().is_none());
/// assert!(NewMessage::new("", "orders", "{}").invalid().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// The aggregate it belongs to: becomes `PK`, the FIFO group and the order key.
    pub aggregate: String,
    /// Logical topic; configuration routes it to a destination.
    pub topic: String,
    /// Body (JSON text).
    pub payload: String,
    /// Event name in the sort key (`MESSAGE#<EVENT>#<id>`); defaults to the topic.
    pub event_type: Option<String>,
    /// The aggregate's sequence number (its version) that the same transaction
    /// commits under a condition: the sort key is then sequenced, so the order fence
    /// keeps FIFO order from one bounded consistent read ([`NewMessage::sequence`]).
    pub sequence: Option<u64>,
    /// The trace the message continues ([`crate::trace`]): set it with
    /// [`NewMessage::trace`]; `dynamodb-outbox`'s writer fills in the Lambda
    /// invocation's when it is left unset.
    pub trace: Option<TraceContext>,
}

impl NewMessage {
    /// A message for `aggregate` on `topic`.
    pub fn new(
        aggregate: impl Into<String>,
        topic: impl Into<String>,
        payload: impl Into<String>,
    ) -> Self {
        NewMessage {
            aggregate: aggregate.into(),
            topic: topic.into(),
            payload: payload.into(),
            event_type: None,
            sequence: None,
            trace: None,
        }
    }

    /// Sets the event name used in the sort key.
    pub fn event_type(mut self, event: impl Into<String>) -> Self {
        self.event_type = Some(event.into());
        self
    }

    /// Sets the aggregate's sequence number: its version, which the same transaction
    /// sets under a condition (`#version = :previous`), so that two commits of the
    /// aggregate never carry the same number and the larger one commits later.
    ///
    /// The message's sort key is then `MESSAGE#SEQ#<sequence>#<position>#<EVENT>#<id>`
    /// (`schema::sequenced_sort_key`), ordered as the transactions committed,
    /// and the order fence of a FIFO route decides from one strongly consistent read
    /// of the message just before it: order holds whatever the order of the stream's
    /// records, the parallelization factor or the sweeper index's lag. Consumers get
    /// the number as `outbox-sequence`. Give all of an aggregate's messages one, or
    /// none: once it has sequenced messages, one written without is not ordered with
    /// them. Switching to sequences is safe: an aggregate's first sequenced message
    /// waits for its messages without one still pending.
    pub fn sequence(mut self, sequence: u64) -> Self {
        self.sequence = Some(sequence);
        self
    }

    /// Sets the trace the message continues: the publisher hands it on to the
    /// destination, and a consumer's span links to it.
    ///
    /// ```
    /// use dynamodb_outbox_core::NewMessage;
    /// use dynamodb_outbox_core::trace::TraceContext;
    ///
    /// let trace = TraceContext::from_w3c("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", None)?;
    /// let message = NewMessage::new("ORDER#42", "orders", "{}").trace(trace);
    /// assert!(message.trace.is_some());
    /// # Ok::<(), dynamodb_outbox_core::trace::TraceError>(())
    /// ```
    pub fn trace(mut self, trace: TraceContext) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Its sort key: `MESSAGE#<EVENT>#<id>`, or sequenced when it has a sequence.
    pub fn sort_key(&self, position: u8, message_id: &str) -> String {
        let event = self.event_type.as_deref().unwrap_or(&self.topic);
        match self.sequence {
            Some(n) => sequenced_sort_key(n, position, event, message_id),
            None => format!("MESSAGE#{event}#{message_id}"),
        }
    }

    /// Why the message cannot be written, if it cannot.
    pub fn invalid(&self) -> Option<&'static str> {
        if self.aggregate.is_empty() {
            Some("aggregate is empty")
        } else if self.topic.trim().is_empty() {
            Some("topic is empty")
        } else if self.sequence.is_none()
            && reserved(self.event_type.as_deref().unwrap_or(&self.topic))
        {
            Some(
                "the event name SEQ (alone or before a #) is reserved for sequenced sort keys (MESSAGE#SEQ#…): name the event otherwise, or give the message a sequence",
            )
        } else {
            None
        }
    }

    /// The outbox item for this message: every attribute of the schema, `PENDING`,
    /// written at `now_ms`, outside the sweeper index (no `SweepShard`/`SweepDueAt`:
    /// the sparse index gets an entry only when the stream path cannot finish the
    /// message and adopts it, `OutboxItem::indexed_at_commit` otherwise). The first
    /// (or only) message of its aggregate in its transaction; see
    /// [`NewMessage::outbox_item_at`].
    pub fn outbox_item(&self, message_id: &str, now_ms: i64) -> OutboxItem {
        self.outbox_item_at(0, message_id, now_ms)
    }

    /// [`NewMessage::outbox_item`] for the message at `position` among its
    /// aggregate's messages in one transaction (0 for the first): a sequenced sort
    /// key carries it, so that messages sharing a sequence sort as given.
    pub fn outbox_item_at(&self, position: u8, message_id: &str, now_ms: i64) -> OutboxItem {
        let item = OutboxItem {
            pk: Some(self.aggregate.clone()),
            sk: Some(self.sort_key(position, message_id)),
            item_type: Some(PENDING_MESSAGE.to_owned()),
            topic: Some(self.topic.clone()),
            payload: Some(self.payload.clone()),
            status: Some(Status::Pending.as_str().to_owned()),
            retry_count: Some(0),
            message_id: Some(message_id.to_owned()),
            created_at: Some(now_ms),
            sequence: self.sequence,
            ..OutboxItem::default()
        };
        match &self.trace {
            Some(trace) => item.with_trace(trace),
            None => item,
        }
    }
}

impl OutboxItem {
    /// The item in the sweeper index from its write: in its aggregate's shard of
    /// `layout`, due `sweep_grace` after its `CreatedAt`, so that a sweep finds it
    /// whatever becomes of its stream record. Two more index writes per message (the
    /// entry, and its removal by the `SENT` mark) that the stream path does not need:
    /// the producer's opt-in (`OutboxWriter::index_at_commit` in `dynamodb-outbox`).
    pub fn indexed_at_commit(mut self, layout: &SweepShards, sweep_grace: Duration) -> Self {
        let grace_ms = i64::try_from(sweep_grace.as_millis()).unwrap_or(i64::MAX);
        let created = self.created_at.unwrap_or_default();
        self.sweep_shard = self.pk.as_deref().map(|pk| layout.shard_of(pk));
        self.sweep_due_at = Some(created.saturating_add(grace_ms));
        self
    }
}

/// Whether an event name would make an unsequenced sort key begin like a sequenced one.
fn reserved(event: &str) -> bool {
    event == RESERVED_EVENT
        || event
            .strip_prefix(RESERVED_EVENT)
            .is_some_and(|rest| rest.starts_with('#'))
}

/// One action of a transaction that AWS cancelled, and why.
///
/// ```
/// use dynamodb_outbox_core::producer::CancelledAction;
///
/// let refused = CancelledAction {
///     index: 0,
///     action: "Put on orders".into(),
///     code: "ConditionalCheckFailed".into(),
///     message: None,
/// };
/// assert!(refused.to_string().contains("ConditionalCheckFailed"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelledAction {
    /// Position in the transaction (0-based, application actions first).
    pub index: usize,
    /// What the action was.
    pub action: String,
    /// AWS's reason code, e.g. `ConditionalCheckFailed`.
    pub code: String,
    /// AWS's message, if any.
    pub message: Option<String>,
}

impl fmt::Display for CancelledAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "action {} ({}): {}", self.index, self.action, self.code)?;
        if let Some(m) = &self.message {
            write!(f, " — {m}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_message_becomes_a_pending_item_outside_the_sweeper_index() {
        let m = NewMessage::new("USER#1", "orders", "{}")
            .event_type("CREATED")
            .sequence(4);
        let item = m.outbox_item("0190-id", 1_000);
        assert_eq!(
            item.sk.as_deref(),
            Some("MESSAGE#SEQ#00000000000000000004#00#CREATED#0190-id")
        );
        assert_eq!(item.item_type.as_deref(), Some("PENDING_MESSAGE"));
        assert_eq!(item.status(), Some(Status::Pending));
        assert_eq!(item.created_at, Some(1_000));
        assert_eq!(
            (item.sweep_shard, item.sweep_due_at),
            (None, None),
            "on the happy path the item never enters the sparse index"
        );
        assert_eq!((item.retry_count, item.sequence), (Some(0), Some(4)));
        assert_eq!(
            NewMessage::new("A", " ", "{}").invalid(),
            Some("topic is empty")
        );
    }

    #[test]
    fn an_item_indexed_at_commit_is_in_its_shard_due_the_grace_after_its_write() {
        let layout = SweepShards::new(64).unwrap();
        let item = NewMessage::new("USER#1", "orders", "{}")
            .outbox_item("0190-id", 1_000)
            .indexed_at_commit(&layout, Duration::from_secs(60));
        assert_eq!(item.sweep_shard, Some(layout.shard_of("USER#1")));
        assert_eq!(item.sweep_due_at, Some(61_000));
        assert_eq!(
            (item.created_at, item.status()),
            (Some(1_000), Some(Status::Pending))
        );
    }

    #[test]
    fn a_messages_trace_is_written_on_its_item_and_read_back_from_it() {
        let xray = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1;Lineage=a87bd80c:1";
        let from_lambda = TraceContext::from_xray(xray).unwrap();
        let item = NewMessage::new("USER#1", "orders", "{}")
            .trace(from_lambda.clone())
            .outbox_item("0190-id", 1_000);
        assert_eq!(
            item.trace_parent.as_deref(),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        );
        assert_eq!(
            item.aws_trace_header.as_deref(),
            Some("Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1"),
            "both forms stored, the X-Ray one rebuilt"
        );
        assert_eq!(item.trace_state, None);
        let decoded = item.into_message(None, Default::default()).unwrap();
        assert_eq!(decoded.trace, Some(from_lambda));

        let w3c = TraceContext::from_w3c(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
            Some("vendor=x"),
        )
        .unwrap();
        let item = NewMessage::new("USER#1", "orders", "{}")
            .trace(w3c.clone())
            .outbox_item("0190-id", 1_000);
        assert_eq!(item.trace_state.as_deref(), Some("vendor=x"));
        assert_eq!(
            item.aws_trace_header.as_deref(),
            Some("Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0")
        );
        assert_eq!(
            item.into_message(None, Default::default()).unwrap().trace,
            Some(w3c)
        );

        let untraced = NewMessage::new("USER#1", "orders", "{}").outbox_item("0190-id", 1_000);
        assert_eq!(
            (
                untraced.trace_parent.as_ref(),
                untraced.aws_trace_header.as_ref()
            ),
            (None, None)
        );
        assert_eq!(
            untraced
                .into_message(None, Default::default())
                .unwrap()
                .trace,
            None
        );
    }
}
