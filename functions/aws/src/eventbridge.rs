//! EventBridge adapter: `PutEvents`, one event per message, results in order.

use crate::message::{ATTR_TOPIC, OutboundMessage, event_detail};
use crate::ports::{EntryResult, SendError};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

/// Error codes of a `PutEvents` entry that blame the event itself: retrying the same
/// event cannot help. Anything else (throttling, internal errors, permissions, a
/// source the bus does not allow, unknown codes) is a condition an operator or time
/// can fix, so it is retried rather than dead-lettered.
const CONTENT: &[&str] = &["MalformedDetail", "InvalidArgument", "ValidationException"];

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
        .build()
}

/// Puts the events on the bus.
pub async fn send(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    source: &str,
    messages: &[&OutboundMessage],
) -> Result<Vec<EntryResult>, SendError> {
    let entries: Vec<PutEventsRequestEntry> =
        messages.iter().map(|m| entry(bus, source, m)).collect();
    let out = client
        .put_events()
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(|e| SendError::from_sdk(&e))?;
    let answered = out.entries();
    Ok((0..messages.len())
        .map(|i| match answered.get(i) {
            Some(e) if e.error_code().is_none() && e.event_id().is_some() => EntryResult::Sent,
            Some(e) => {
                let code = e.error_code().unwrap_or("Unknown");
                EntryResult::Failed {
                    permanent: CONTENT.contains(&code),
                    reason: format!("{code}: {}", e.error_message().unwrap_or("no message")),
                }
            }
            None => EntryResult::Failed {
                permanent: false,
                reason: "EventBridge returned no result for this entry".to_owned(),
            },
        })
        .collect())
}
