//! What the publish path is given: a batch of work items, each a message to publish
//! or poison found before publishing.

use crate::schema::{ItemKey, OutboxMessage, Undecodable, derive_message_id};
use crate::trace::TraceContext;

/// One unit of work for the publish path.
#[derive(Debug, Clone)]
pub struct WorkItem {
    /// Opaque id the caller uses to match outcomes (a stream sequence number).
    pub id: String,
    /// What to do.
    pub work: Work,
}

/// What the publish path should do with an item.
#[derive(Debug, Clone)]
pub enum Work {
    /// A well-formed message: route and publish it.
    Publish(OutboxMessage),
    /// A permanent problem found before publishing: dead-letter it and mark it
    /// `FAILED`.
    Poison(Poison),
}

impl Work {
    /// The item's key, when known.
    pub fn key(&self) -> Option<&ItemKey> {
        match self {
            Work::Publish(msg) => Some(&msg.key),
            Work::Poison(p) => p.key.as_ref(),
        }
    }
}

/// An item that can never be published as it is.
#[derive(Debug, Clone)]
pub struct Poison {
    /// Its key, when known (needed to mark it `FAILED`).
    pub key: Option<ItemKey>,
    /// The outbox message id, when it could be read or derived.
    pub message_id: Option<String>,
    /// The topic, when it could be read.
    pub topic: Option<String>,
    /// What the dead-letter queue receives: the payload, or the raw item as JSON
    /// when there is no usable payload, so nothing is lost.
    pub body: String,
    /// Why, in words an operator understands.
    pub reason: String,
    /// The trace the message continues, when it could be read: its dead-letter copy
    /// carries it too.
    pub trace: Option<TraceContext>,
}

/// Poison built from a decoded message that cannot be delivered.
pub fn poison_of(msg: &OutboxMessage, reason: String) -> Poison {
    Poison {
        key: Some(msg.key.clone()),
        message_id: Some(msg.message_id.clone()),
        topic: Some(msg.topic.clone()),
        body: msg.payload.clone(),
        reason,
        trace: msg.trace.clone(),
    }
}

impl From<Undecodable> for Poison {
    /// An item that is not a message: its raw content goes to the dead-letter queue.
    fn from(u: Undecodable) -> Self {
        Poison {
            message_id: u.key.as_ref().map(derive_message_id),
            key: u.key,
            topic: u.topic,
            body: u.raw,
            reason: u.error.to_string(),
            // An item that does not decode is not read for its trace either.
            trace: None,
        }
    }
}
