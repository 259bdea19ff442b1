//! EventBridge adapter: `PutEvents` to one bus, one event per message. Its answer
//! lists results in entry order rather than by id; they are read into the shared
//! shape by position.

use crate::batch::{Answer, BatchApi, Refused, entry_id};
use crate::sdk_error::send_failure;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::message::{ATTR_TOPIC, OutboundMessage, event_detail};

/// Error codes of a `PutEvents` entry that blame the event itself: retrying the same
/// event cannot help. (`PutEvents` reports an entry's failure only as a code, with no
/// sender-fault flag; this list stands in for it.) Anything else (throttling, internal
/// errors, permissions, a source the bus does not allow, unknown codes) is a condition
/// an operator or time can fix, so it is retried rather than dead-lettered.
const SENDER_FAULT_CODES: &[&str] = &["MalformedDetail", "InvalidArgument", "ValidationException"];

/// One event bus, through a client built once.
#[derive(Debug, Clone, Copy)]
pub struct Bus<'a> {
    /// The client.
    pub client: &'a aws_sdk_eventbridge::Client,
    /// The event bus ARN.
    pub bus: &'a str,
    /// The events' `Source`.
    pub source: &'a str,
}

/// Builds the event for one message: `DetailType` is the topic.
pub fn entry(bus: &str, source: &str, m: &OutboundMessage) -> PutEventsRequestEntry {
    let topic = m
        .attributes
        .iter()
        .find(|(n, _)| *n == ATTR_TOPIC)
        .map(|(_, v)| v.text().to_owned())
        .unwrap_or_default();
    PutEventsRequestEntry::builder()
        .event_bus_name(bus)
        .source(source)
        .detail_type(topic)
        .detail(event_detail(m))
        .set_trace_header(m.trace_header.clone())
        .build()
}

impl BatchApi for Bus<'_> {
    type Entry = PutEventsRequestEntry;
    const SERVICE: &'static str = "EventBridge";

    fn entry(&self, _: usize, m: &OutboundMessage) -> Result<Self::Entry, String> {
        Ok(entry(self.bus, self.source, m))
    }

    async fn call(&self, entries: Vec<Self::Entry>) -> Result<Answer, Failure> {
        let out = self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| send_failure(&e, |_| false))?;
        let mut answer = Answer::default();
        for (i, e) in out.entries().iter().enumerate() {
            if e.error_code().is_none() && e.event_id().is_some() {
                answer.sent.push(entry_id(i));
            } else {
                let code = e.error_code().unwrap_or("Unknown");
                answer.refused.push(Refused {
                    id: entry_id(i),
                    sender_fault: SENDER_FAULT_CODES.contains(&code),
                    reason: format!("{code}: {}", e.error_message().unwrap_or("no message")),
                });
            }
        }
        Ok(answer)
    }
}
