//! The one shape every destination's batch send shares: build one entry per message
//! (ids `m0`, `m1`, ...), make one call, and turn the service's answer into one
//! result per entry. The SQS, SNS and EventBridge adapters supply only what differs:
//! their entry type, their call, and how they read their answer.

use dynamodb_outbox_core::Failure;
use dynamodb_outbox_core::message::OutboundMessage;
use dynamodb_outbox_core::__private::ports::EntryResult;
use std::future::Future;

/// An entry the service refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The entry's id.
    pub id: String,
    /// The service blames the message (`SenderFault`): retrying it cannot help.
    pub sender_fault: bool,
    /// What the service said.
    pub reason: String,
}

/// What a batch call answered: the ids of the entries it accepted and of those it
/// refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Ids of the entries sent.
    pub sent: Vec<String>,
    /// The entries refused.
    pub refused: Vec<Refused>,
}

/// One destination's batch API.
pub trait BatchApi: Sync {
    /// The request entry of the service.
    type Entry: Send;

    /// The service's name, for messages.
    const SERVICE: &'static str;

    /// Builds the entry for the `index`th message of the call, with id
    /// [`entry_id`]`(index)`. An error is a message the service could never accept.
    fn entry(&self, index: usize, message: &OutboundMessage) -> Result<Self::Entry, String>;

    /// Makes the call.
    fn call(
        &self,
        entries: Vec<Self::Entry>,
    ) -> impl Future<Output = Result<Answer, Failure>> + Send;
}

/// Sends `messages` in one call to `api` and returns one result per message.
pub async fn send<A: BatchApi>(
    api: &A,
    messages: &[&OutboundMessage],
) -> Result<Vec<EntryResult>, Failure> {
    let entries = messages
        .iter()
        .enumerate()
        .map(|(i, m)| api.entry(i, m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::content_refused)?;
    // Boxed: see "Future depth" in the crate docs.
    let answer = Box::pin(api.call(entries)).await?;
    Ok(entry_results(messages.len(), A::SERVICE, answer))
}

/// The id of the `index`th entry of a call.
pub fn entry_id(index: usize) -> String {
    format!("m{index}")
}

/// Turns an answer into one result per entry, for entries whose ids are `m0`,
/// `m1`, ... An entry the service said nothing about is not known to be sent: it is
/// a transient failure.
pub fn entry_results(len: usize, service: &str, answer: Answer) -> Vec<EntryResult> {
    let index = |id: &str| {
        id.strip_prefix('m')?
            .parse::<usize>()
            .ok()
            .filter(|i| *i < len)
    };
    let mut results: Vec<Option<EntryResult>> = vec![None; len];
    for id in &answer.sent {
        if let Some(i) = index(id) {
            results[i] = Some(Ok(()));
        }
    }
    for r in answer.refused {
        if let Some(i) = index(&r.id) {
            results[i] = Some(Err(if r.sender_fault {
                Failure::permanent(r.reason)
            } else {
                Failure::transient(r.reason)
            }));
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Failure::transient(format!(
                    "{service} returned no result for this entry"
                )))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_core::FailureKind;

    #[test]
    fn batch_answers_become_one_result_per_entry_and_silence_is_a_transient_failure() {
        let answer = Answer {
            sent: ["m0", "m3", "m9", "bogus"].map(str::to_owned).to_vec(),
            refused: vec![Refused {
                id: "m1".into(),
                sender_fault: true,
                reason: "InvalidMessageContents: bad".into(),
            }],
        };
        let results = entry_results(4, "SQS", answer);
        assert_eq!(results[0], Ok(()));
        assert_eq!(
            results[1],
            Err(Failure::permanent("InvalidMessageContents: bad"))
        );
        assert!(
            matches!(&results[2], Err(f) if f.kind == FailureKind::Transient && f.reason.contains("no result"))
        );
        assert_eq!(results[3], Ok(()));
    }
}
