//! What the publish path does with what a destination answered. Plain functions of
//! plain data: the publish path calls them, and so can a test or a model.

use crate::failure::{Failure, FailureKind};
use crate::answers::EntryResult;
use crate::outcome::Outcome;
use crate::route::Destination;

/// What to do with a whole call's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallVerdict {
    /// One result per entry: judge each with [`judge_entry`].
    Answered(Vec<EntryResult>),
    /// The service refused the call for its content: send the entries one by one,
    /// so the one to blame is found and the others go out.
    OneByOne,
    /// The call failed as a whole: every entry fails with this.
    Every(Failure),
}

/// Judges the answer to a call of `entries` messages to `dest`.
pub fn judge_call(
    answer: Result<Vec<EntryResult>, Failure>,
    dest: &Destination,
    entries: usize,
) -> CallVerdict {
    match answer {
        Ok(results) if results.len() == entries => CallVerdict::Answered(results),
        Ok(results) => CallVerdict::Every(Failure::transient(format!(
            "{dest} answered {} results for {entries} messages",
            results.len()
        ))),
        Err(f) if f.kind == FailureKind::ContentRefused && entries > 1 => CallVerdict::OneByOne,
        Err(f) => CallVerdict::Every(Failure::new(
            f.kind,
            format!("sending to {dest} failed: {}", f.reason),
        )),
    }
}

/// Words in a refusal that name the destination's address rather than the message:
/// SNS refuses a topic in another region (or a malformed ARN) with
/// `InvalidParameter: Invalid parameter: TopicArn`, EventBridge names `EventBusName`,
/// SQS `QueueUrl`.
const DESTINATION_PARAMETERS: &[&str] = &["TopicArn", "TargetArn", "EventBusName", "QueueUrl"];

/// What a refusal that blames the destination's address says to do: it is the
/// route's configuration (or a missing grant), so its messages are retried — counted
/// in `PublishFailed` and logged — until an operator fixes it.
pub const DESTINATION_REFUSED: &str = "the destination's address was refused (a topic, bus or queue in another region than the client's, or one that does not exist): check the route; its messages are retried meanwhile";

/// Whether a refusal with this message blames the destination's address (it names
/// `TopicArn`, `TargetArn`, `EventBusName` or `QueueUrl`), not the message: never a content refusal, which
/// would fail every message sent there.
pub fn blames_the_destination(message: Option<&str>) -> bool {
    message.is_some_and(|m| DESTINATION_PARAMETERS.iter().any(|p| m.contains(p)))
}

/// The result of one message sent on its own (after its call was refused for its
/// content): a refusal now blames this message, so it is permanent unless transient.
pub fn judge_single(answer: Result<Vec<EntryResult>, Failure>, dest: &Destination) -> EntryResult {
    match answer {
        Ok(mut results) if results.len() == 1 => results.remove(0),
        Ok(_) => Err(Failure::transient(format!(
            "{dest} answered the wrong number of results"
        ))),
        Err(f) => {
            let kind = if f.is_retryable() {
                FailureKind::Transient
            } else {
                FailureKind::Permanent
            };
            Err(Failure::new(
                kind,
                format!("{dest} refused it: {}", f.reason),
            ))
        }
    }
}

/// What happens to one published entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryVerdict {
    /// Sent: mark it `SENT`.
    Sent,
    /// Report it for retry; later messages of its aggregate in the batch wait.
    Retry {
        /// What failed.
        reason: String,
    },
    /// Poison: copy it to the dead-letter queue and mark it `FAILED`.
    Poison {
        /// The reason recorded in `LastError`.
        reason: String,
    },
}

/// Judges one entry's result.
pub fn judge_entry(result: EntryResult) -> EntryVerdict {
    match result {
        Ok(()) => EntryVerdict::Sent,
        Err(f) if f.is_retryable() => EntryVerdict::Retry { reason: f.reason },
        Err(f) => EntryVerdict::Poison {
            reason: format!("the destination refused the message: {}", f.reason),
        },
    }
}

/// What happens to poison after its dead-letter copy was attempted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeadLetterVerdict {
    /// Mark it `FAILED` with this reason: the copy is on the dead-letter queue, or the
    /// queue refused it for good too (retrying cannot help; the payload stays on the
    /// item, so nothing is lost).
    MarkFailed {
        /// The reason recorded in `LastError`.
        reason: String,
        /// Whether the dead-letter queue holds the copy (and so the payload).
        copied: bool,
    },
    /// The copy failed transiently: leave the item `PENDING` and report it for retry.
    Retry(Outcome),
}

/// Judges a dead-letter copy of poison that failed for `poison_reason`.
pub fn judge_dead_letter(result: EntryResult, poison_reason: &str) -> DeadLetterVerdict {
    match result {
        Ok(()) => DeadLetterVerdict::MarkFailed {
            reason: poison_reason.to_owned(),
            copied: true,
        },
        Err(f) if f.is_retryable() => DeadLetterVerdict::Retry(Outcome::Retry {
            reason: format!("dead-letter queue refused the copy: {}", f.reason),
        }),
        Err(f) => DeadLetterVerdict::MarkFailed {
            reason: format!(
                "{poison_reason}; the dead-letter queue also refused a copy ({}), so the payload is only on this item",
                f.reason
            ),
            copied: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest() -> Destination {
        Destination::sqs("https://q/x")
    }

    #[test]
    fn a_call_refused_for_its_content_is_split_unless_it_held_one_message() {
        let refused = || Err(Failure::content_refused("BatchRequestTooLong"));
        assert_eq!(judge_call(refused(), &dest(), 3), CallVerdict::OneByOne);
        match judge_call(refused(), &dest(), 1) {
            CallVerdict::Every(f) => assert_eq!(f.kind, FailureKind::ContentRefused),
            other => panic!("{other:?}"),
        }
        match judge_call(Err(Failure::transient("Throttled")), &dest(), 3) {
            CallVerdict::Every(f) => {
                assert!(f.is_retryable());
                assert_eq!(f.reason, "sending to sqs:https://q/x failed: Throttled");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refusal_naming_the_destinations_address_blames_the_route_not_the_message() {
        assert!(blames_the_destination(Some("Invalid parameter: TopicArn")));
        assert!(blames_the_destination(Some(
            "EventBusName arn:aws:events:us-west-2:123456789012:event-bus/b does not exist."
        )));
        assert!(!blames_the_destination(Some(
            "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."
        )));
        assert!(!blames_the_destination(Some("Invalid parameter: Message too long")));
        assert!(!blames_the_destination(None));
    }

    #[test]
    fn an_answer_with_the_wrong_number_of_results_fails_every_entry_transiently() {
        match judge_call(Ok(vec![Ok(())]), &dest(), 2) {
            CallVerdict::Every(f) => assert!(f.is_retryable() && f.reason.contains("1 results")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_single_message_refused_for_its_content_is_refused_for_good() {
        let r = judge_single(Err(Failure::content_refused("MessageTooLong")), &dest());
        assert_eq!(r.expect_err("refused").kind, FailureKind::Permanent);
        let r = judge_single(Err(Failure::transient("Throttled")), &dest());
        assert!(r.expect_err("failed").is_retryable());
    }

    #[test]
    fn entries_are_sent_retried_or_poison_by_failure_kind() {
        assert_eq!(judge_entry(Ok(())), EntryVerdict::Sent);
        assert_eq!(
            judge_entry(Err(Failure::transient("Throttled"))),
            EntryVerdict::Retry {
                reason: "Throttled".into()
            }
        );
        assert_eq!(
            judge_entry(Err(Failure::permanent("InvalidMessageContents"))),
            EntryVerdict::Poison {
                reason: "the destination refused the message: InvalidMessageContents".into()
            }
        );
    }

    #[test]
    fn poison_the_dead_letter_queue_refuses_for_good_is_still_marked_failed() {
        assert_eq!(
            judge_dead_letter(Ok(()), "no route"),
            DeadLetterVerdict::MarkFailed {
                reason: "no route".into(),
                copied: true
            }
        );
        match judge_dead_letter(Err(Failure::permanent("too big")), "no route") {
            DeadLetterVerdict::MarkFailed { reason, copied } => {
                assert!(!copied);
                assert!(reason.starts_with("no route;") && reason.contains("only on this item"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            judge_dead_letter(Err(Failure::transient("Throttled")), "no route"),
            DeadLetterVerdict::Retry(Outcome::Retry { .. })
        ));
    }
}
