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

    /// The `message_id` field of log lines about it: the outbox message id, `-` when
    /// poison has none that could be read.
    pub fn message_id(&self) -> &str {
        match self {
            Work::Publish(msg) => &msg.message_id,
            Work::Poison(p) => p.message_id(),
        }
    }

    /// The `trace_id` field of log lines about it: the W3C trace id it was committed
    /// in, `-` without one.
    pub fn trace_id(&self) -> &str {
        match self {
            Work::Publish(msg) => msg.trace_id(),
            Work::Poison(p) => p.trace_id(),
        }
    }
}

impl Poison {
    /// The `message_id` field of log lines about it (`-` when unknown).
    pub fn message_id(&self) -> &str {
        self.message_id.as_deref().unwrap_or("-")
    }

    /// The `trace_id` field of log lines about it (`-` without a trace).
    pub fn trace_id(&self) -> &str {
        crate::trace::log_trace_id(self.trace.as_ref())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_names_its_message_and_trace_in_log_lines_and_a_dash_when_it_has_none() {
        let traced = Poison {
            key: None,
            message_id: Some("m-1".to_owned()),
            topic: None,
            body: String::new(),
            reason: "bad".to_owned(),
            trace: TraceContext::from_w3c(
                "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01",
                None,
            )
            .ok(),
        };
        let work = Work::Poison(traced.clone());
        assert_eq!(
            (work.message_id(), work.trace_id()),
            ("m-1", "5759e988bd862e3fe1be46a994272793")
        );
        let unknown = Poison {
            message_id: None,
            trace: None,
            ..traced
        };
        assert_eq!((unknown.message_id(), unknown.trace_id()), ("-", "-"));
    }
}
