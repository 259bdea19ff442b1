//! Which form a dead-letter copy of poison takes, so that every `FAILED` message has
//! a record on the dead-letter queue — the queue operators watch — even when its copy
//! is too large for the queue (an item near DynamoDB's 400 KB limit, a queue at
//! 256 KiB) and the item is too full to take a `LastError` as well.
//!
//! The forms are tried in order, each only after the one before was refused for good
//! (or would be: over the queue's limit):
//!
//! 1. [`CopyForm::Whole`]: the body itself (the payload, or the raw item).
//! 2. [`CopyForm::ClaimCheck`]: the body written to the claim-check bucket first, under
//!    `failed/<MessageId>` (which no lifecycle rule expires), and the copy carries the
//!    extended clients' pointer to it ([`crate::large_payload`]). Only with a bucket
//!    for the message's route and a message id to name the object.
//! 3. [`CopyForm::Record`]: no body, only the reason and where the payload stays (on
//!    the item), so the queue still says that this message failed and why.
//!
//! A transient failure of any form leaves the item `PENDING` (retried); the forms
//! exhausted, the item is marked `FAILED` with the reason, keeping its payload.
//!
//! Before any form, a payload whose only copy is an object the lifecycle rule expires
//! (a producer's pointer to `outbox/<MessageId>`) is copied to `failed/<MessageId>`
//! ([`crate::large_payload::retained`]), and the copy and the `FAILED` item point
//! there ([`judge_retention`]): the payload lasts as long as the `FAILED` item.

use crate::large_payload::Retention;
use crate::failure::Failure;
use crate::large_payload::PayloadPointer;
use crate::answers::EntryResult;
use crate::outcome::Outcome;
use crate::route::Destination;

/// One way of putting a dead-letter copy on the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyForm {
    /// The body itself.
    Whole,
    /// The body in this object, the copy carrying the pointer to it.
    ClaimCheck(PayloadPointer),
    /// The reason and the item's key only: the payload stays on the item.
    Record,
}

impl CopyForm {
    /// Whether the queue holds the payload once this form is accepted (itself, or a
    /// pointer to it): only then may the item give up its payload to make room for
    /// its `FAILED` mark.
    pub fn holds_payload(&self) -> bool {
        !matches!(self, CopyForm::Record)
    }

    /// What an accepted copy of this form means for the payload, for `LastError`.
    fn consequence(&self) -> Option<String> {
        match self {
            CopyForm::Whole => None,
            CopyForm::ClaimCheck(pointer) => Some(format!(
                "its dead-letter copy carries a pointer to {pointer}, where the payload was written"
            )),
            CopyForm::Record => Some(
                "its dead-letter record carries no payload: the payload is only on this item"
                    .to_owned(),
            ),
        }
    }
}

/// The forms to try, in order, for the copy of poison `message_id` (when known)
/// whose route's claim-check bucket is `bucket`.
pub fn copy_forms(bucket: Option<&str>, message_id: Option<&str>) -> Vec<CopyForm> {
    let mut forms = vec![CopyForm::Whole];
    if let (Some(bucket), Some(id)) = (bucket, message_id) {
        forms.push(CopyForm::ClaimCheck(PayloadPointer::for_failed(bucket, id)));
    }
    forms.push(CopyForm::Record);
    forms
}

/// What to do after the copy of a `FAILED` message's payload to where it is retained
/// ([`Retention`]) was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetentionVerdict {
    /// Copied: the dead-letter copy and the `FAILED` item carry this body (the
    /// pointer to the retained object) instead.
    Retained(String),
    /// Refused for good (the object already expired, no permission): the message
    /// keeps its pointer, which expires with the object; this note joins its reason.
    Kept(String),
    /// A transient failure: leave the item `PENDING` and report it for retry.
    Retry(Outcome),
}

/// Judges the copy of `retention` (its result).
pub fn judge_retention(retention: &Retention, result: Result<(), Failure>) -> RetentionVerdict {
    match result {
        Ok(()) => RetentionVerdict::Retained(retention.to.encode()),
        Err(f) if f.is_retryable() => RetentionVerdict::Retry(Outcome::Retry {
            reason: format!(
                "could not copy the payload of a FAILED message from {} to {}: {}",
                retention.from, retention.to, f.reason
            ),
        }),
        Err(f) => RetentionVerdict::Kept(format!(
            "its payload stays at {}, which the bucket's lifecycle rule expires: it could not be copied to {} ({f})",
            retention.from, retention.to
        )),
    }
}

/// Why a copy of `size` bytes is not sent to `dlq` (over its limit), or `None`.
pub fn over_dead_letter_limit(form: &CopyForm, size: usize, dlq: &Destination) -> Option<String> {
    let max = dlq.max_message_bytes();
    let what = match form {
        CopyForm::Whole => "its dead-letter copy",
        CopyForm::ClaimCheck(_) => "its dead-letter pointer",
        CopyForm::Record => "its dead-letter record",
    };
    (size > max).then(|| {
        format!(
            "{what} is {size} bytes but the dead-letter queue {dlq} accepts at most {max} bytes ({})",
            dlq.limit_source()
        )
    })
}

/// What to do after one form of a copy was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyVerdict {
    /// The queue holds the copy: mark the item `FAILED` with `reason`.
    Copied {
        /// The reason recorded in `LastError`.
        reason: String,
        /// Whether the queue holds the payload ([`CopyForm::holds_payload`]).
        holds_payload: bool,
    },
    /// Refused for good: try the next form, this refusal noted.
    Next(String),
    /// A transient failure: leave the item `PENDING` and report it for retry.
    Retry(Outcome),
}

/// Judges one attempt of `form` (its payload write and its send, the first that
/// failed), for poison that failed for `poison_reason` and whose earlier forms were
/// refused for `notes`.
pub fn judge_copy(
    form: &CopyForm,
    result: EntryResult,
    poison_reason: &str,
    notes: &[String],
) -> CopyVerdict {
    match result {
        Ok(()) => CopyVerdict::Copied {
            reason: copied_reason(poison_reason, notes, form.consequence()),
            holds_payload: form.holds_payload(),
        },
        Err(f) if f.is_retryable() => CopyVerdict::Retry(Outcome::Retry {
            reason: format!("dead-letter queue refused the copy: {}", f.reason),
        }),
        Err(f) => CopyVerdict::Next(refusal_note(form, &f)),
    }
}

/// Why `form` was refused for good, for the reason of the form that follows.
pub fn refusal_note(form: &CopyForm, failure: &Failure) -> String {
    match form {
        CopyForm::Whole => format!("the dead-letter queue refused the copy ({failure})"),
        CopyForm::ClaimCheck(pointer) => {
            format!("its dead-letter copy could not go through {pointer} ({failure})")
        }
        CopyForm::Record => format!("the dead-letter queue refused its record ({failure})"),
    }
}

/// The reason for an item no form could copy: marked `FAILED` keeping its payload.
pub fn uncopied_reason(poison_reason: &str, notes: &[String]) -> String {
    copied_reason(
        poison_reason,
        notes,
        Some("no dead-letter record could be sent, so the payload is only on this item".into()),
    )
}

/// The poison's reason, what became of the payload, then why: in this order because
/// `LastError` is bounded and the refusals quote long service errors.
fn copied_reason(poison_reason: &str, notes: &[String], consequence: Option<String>) -> String {
    std::iter::once(poison_reason.to_owned())
        .chain(consequence)
        .chain(notes.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::QueueLimits;

    const ID: &str = "id-1";

    fn dlq(bytes: usize) -> Destination {
        let limits = QueueLimits::from([("https://q/dlq".to_owned(), Ok(bytes))]);
        Destination::sqs("https://q/dlq").with_queue_limits(&limits)
    }

    #[test]
    fn with_a_bucket_the_claim_check_comes_between_the_whole_copy_and_the_record() {
        assert_eq!(
            copy_forms(Some("large"), Some(ID)),
            [
                CopyForm::Whole,
                CopyForm::ClaimCheck(PayloadPointer::for_failed("large", ID)),
                CopyForm::Record
            ]
        );
        // Without a bucket, or without a message id to name the object: no claim check.
        assert_eq!(copy_forms(None, Some(ID)), [CopyForm::Whole, CopyForm::Record]);
        assert_eq!(
            copy_forms(Some("large"), None),
            [CopyForm::Whole, CopyForm::Record]
        );
    }

    #[test]
    fn a_dead_letter_claim_check_is_written_where_no_lifecycle_rule_expires_it() {
        // A FAILED item lives until it is redriven; its payload given up for this
        // object must live as long: under failed/, not outbox/ (30 days by default).
        let forms = copy_forms(Some("large"), Some(ID));
        match &forms[1] {
            CopyForm::ClaimCheck(pointer) => {
                assert_eq!(pointer.to_string(), "s3://large/failed/id-1")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_retained_payload_is_pointed_to_a_lost_copy_keeps_its_pointer_a_transient_one_retries() {
        let retention = crate::large_payload::retained(
            &PayloadPointer::for_message("large", ID).encode(),
            Some(ID),
        )
        .expect("a producer's pointer");
        assert_eq!(
            judge_retention(&retention, Ok(())),
            RetentionVerdict::Retained(PayloadPointer::for_failed("large", ID).encode())
        );
        match judge_retention(&retention, Err(Failure::permanent("NoSuchKey"))) {
            RetentionVerdict::Kept(note) => assert_eq!(
                note,
                "its payload stays at s3://large/outbox/id-1, which the bucket's lifecycle rule expires: it could not be copied to s3://large/failed/id-1 (NoSuchKey)"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            judge_retention(&retention, Err(Failure::transient("SlowDown"))),
            RetentionVerdict::Retry(Outcome::Retry { .. })
        ));
    }

    #[test]
    fn a_copy_over_the_queues_limit_is_not_sent_and_the_note_says_why() {
        let dlq = dlq(262_144);
        assert_eq!(over_dead_letter_limit(&CopyForm::Whole, 262_144, &dlq), None);
        let note = over_dead_letter_limit(&CopyForm::Whole, 409_000, &dlq).expect("over");
        assert_eq!(
            note,
            "its dead-letter copy is 409000 bytes but the dead-letter queue sqs:https://q/dlq accepts at most 262144 bytes (the queue's MaximumMessageSize)"
        );
    }

    #[test]
    fn only_the_whole_copy_and_the_claim_check_hold_the_payload() {
        let pointer = PayloadPointer::for_failed("large", ID);
        let notes = ["its dead-letter copy is 409000 bytes".to_owned()];
        match judge_copy(&CopyForm::ClaimCheck(pointer), Ok(()), "no route", &notes) {
            CopyVerdict::Copied {
                reason,
                holds_payload: true,
            } => assert_eq!(
                reason,
                "no route; its dead-letter copy carries a pointer to s3://large/failed/id-1, where the payload was written; its dead-letter copy is 409000 bytes"
            ),
            other => panic!("{other:?}"),
        }
        match judge_copy(&CopyForm::Record, Ok(()), "no route", &notes) {
            CopyVerdict::Copied {
                reason,
                holds_payload: false,
            } => assert!(
                reason.starts_with("no route; its dead-letter record carries no payload: the payload is only on this item;"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            judge_copy(&CopyForm::Whole, Ok(()), "no route", &[]),
            CopyVerdict::Copied {
                reason: "no route".into(),
                holds_payload: true
            }
        );
    }

    #[test]
    fn a_refusal_for_good_moves_to_the_next_form_and_a_transient_one_retries() {
        let pointer = PayloadPointer::for_message("large", ID);
        match judge_copy(
            &CopyForm::ClaimCheck(pointer),
            Err(Failure::permanent("AccessDenied")),
            "no route",
            &[],
        ) {
            CopyVerdict::Next(note) => {
                assert!(note.contains("s3://large/outbox/id-1") && note.contains("AccessDenied"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            judge_copy(&CopyForm::Whole, Err(Failure::transient("Throttled")), "x", &[]),
            CopyVerdict::Retry(Outcome::Retry { .. })
        ));
    }

    #[test]
    fn with_every_form_refused_the_reason_says_the_payload_is_only_on_the_item() {
        let reason = uncopied_reason("no route", &["a".into(), "b".into()]);
        assert_eq!(
            reason,
            "no route; no dead-letter record could be sent, so the payload is only on this item; a; b"
        );
    }
}
