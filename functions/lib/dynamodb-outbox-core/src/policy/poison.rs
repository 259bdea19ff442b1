//! How poison is marked `FAILED` so that the mark always fits in the item.
//!
//! The mark adds `LastError` and `FailedAt`. An item near DynamoDB's 400 KB limit
//! cannot take them: DynamoDB refuses the update for the item's size, the item would
//! stay `PENDING` and every pass would dead-letter it again. So the marks are tried in
//! order, each one used only when the item refused the one before for what it would
//! hold ([`FailureKind::ContentRefused`](crate::failure::FailureKind)):
//!
//! 1. the full mark: reason (bounded) and time, the item indexed as `FAILED#NN`;
//! 2. when the dead-letter copy holds the payload: the same, removing `Payload` from
//!    the item and saying where it went (`PayloadOn`);
//! 3. a short reason and no time, for which the removed index keys make room;
//! 4. only the state change, which never makes an item larger.
//!
//! A mark that keeps the payload on the item points it at the retained copy when there
//! is one ([`retained_payload`]): a pointer as long as the one it replaces.

use crate::large_payload::{FAILED_KEY_PREFIX, PayloadPointer};

/// The value of `PayloadOn` when the payload was moved to the dead-letter queue.
pub const PAYLOAD_ON_DEAD_LETTER_QUEUE: &str = "dead-letter queue";

/// The longest `LastError` the outbox writes, in bytes: reasons quote service errors,
/// and an item has no room to spare near its size limit.
pub const MAX_LAST_ERROR_BYTES: usize = 1024;

/// The reason of the short mark: what fits where the index keys were.
pub const SHORT_REASON: &str = "size limit; see logs";

/// One way of marking an item `FAILED` (always `Status = FAILED`). A mark that sets
/// `FailedAt` moves the item to the index's `FAILED#NN` partitions (`SweepShard`
/// [`failed_sweep_shard`](crate::schema::failed_sweep_shard), `SweepDueAt` the
/// failure time), where the operator's `failed` finds it without reading the table;
/// the marks for an item at its size limit (no `FailedAt`) remove the index keys
/// instead, which is the room they need: such an item is on the dead-letter queue
/// and in the logs, not in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedMark {
    /// The `LastError` to set; `None` leaves the attribute as it is.
    pub last_error: Option<String>,
    /// Whether to set `FailedAt`.
    pub failed_at: bool,
    /// Whether to remove `Payload` and set `PayloadOn` to
    /// [`PAYLOAD_ON_DEAD_LETTER_QUEUE`]: only when the dead-letter copy holds it.
    pub payload_moved: bool,
    /// The `Payload` to set: the pointer to the payload's copy kept under `failed/`
    /// ([`retained_payload`]); `None` leaves it as it is. Never with `payload_moved`.
    pub payload: Option<String>,
}

/// The `Payload` the `FAILED` mark of poison with `body` sets: `body` itself when it
/// is a pointer to a copy retained under `failed/` (see
/// [`crate::policy::judge_retention`]), so that the item points where its dead-letter
/// copy does and a redrive sends what still exists; else `None`.
pub fn retained_payload(body: &str) -> Option<&str> {
    PayloadPointer::decode(body)
        .filter(|p| p.key.starts_with(FAILED_KEY_PREFIX))
        .map(|_| body)
}

/// The marks to try, in order, for poison that failed for `reason`; `copied` says
/// whether its dead-letter copy (which holds the payload) was accepted; `payload` is
/// the pointer to the payload's retained copy, if any ([`retained_payload`]).
pub fn failed_marks(reason: &str, copied: bool, payload: Option<&str>) -> Vec<FailedMark> {
    let payload = payload.map(str::to_owned);
    let full = FailedMark {
        last_error: Some(bounded_error(reason)),
        failed_at: true,
        payload_moved: false,
        payload: payload.clone(),
    };
    let mut marks = vec![full.clone()];
    if copied {
        marks.push(FailedMark {
            payload_moved: true,
            payload: None,
            ..full
        });
    }
    marks.push(FailedMark {
        last_error: Some(SHORT_REASON.to_owned()),
        failed_at: false,
        payload_moved: false,
        payload: payload.clone(),
    });
    marks.push(FailedMark {
        last_error: None,
        failed_at: false,
        payload_moved: false,
        payload,
    });
    marks
}

/// `reason` cut to [`MAX_LAST_ERROR_BYTES`] on a character boundary, with an ellipsis
/// when cut.
pub fn bounded_error(reason: &str) -> String {
    if reason.len() <= MAX_LAST_ERROR_BYTES {
        return reason.to_owned();
    }
    let mut end = MAX_LAST_ERROR_BYTES - '…'.len_utf8();
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &reason[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_moved_off_the_item_only_when_the_dead_letter_copy_holds_it() {
        let copied = failed_marks("no route", true, None);
        assert_eq!(copied.len(), 4);
        assert!(!copied[0].payload_moved && copied[1].payload_moved);
        assert_eq!(copied[1].last_error.as_deref(), Some("no route"));
        assert!(copied[1].failed_at);
        let kept = failed_marks("no route", false, None);
        assert_eq!(kept.len(), 3);
        assert!(kept.iter().all(|m| !m.payload_moved), "{kept:?}");
    }

    #[test]
    fn the_last_marks_add_nothing_an_item_at_its_limit_cannot_take() {
        let marks = failed_marks("x", false, None);
        let short = &marks[1];
        assert_eq!(short.last_error.as_deref(), Some(SHORT_REASON));
        // Removing `SweepShard` (10 + 2 bytes) and `SweepDueAt` (10 + 8 for 13 digits)
        // and `PENDING` becoming `FAILED` (1) make room for it.
        assert!("LastError".len() + SHORT_REASON.len() <= 12 + 18 + 1);
        assert!(!short.failed_at);
        assert_eq!(
            marks[2],
            FailedMark {
                last_error: None,
                failed_at: false,
                payload_moved: false,
                payload: None
            }
        );
    }

    #[test]
    fn every_mark_that_keeps_the_payload_points_it_at_its_retained_copy() {
        let retained = PayloadPointer::for_failed("large", "id-1").encode();
        assert_eq!(retained_payload(&retained), Some(retained.as_str()));
        // A pointer the lifecycle rule expires, or a payload, is not rewritten.
        let expiring = PayloadPointer::for_message("large", "id-1").encode();
        assert_eq!(retained_payload(&expiring), None);
        assert_eq!(retained_payload("{}"), None);
        let marks = failed_marks("no route", true, Some(&retained));
        for mark in &marks {
            let expected = (!mark.payload_moved).then(|| retained.clone());
            assert_eq!(mark.payload, expected, "{mark:?}");
        }
        assert_eq!(marks.iter().filter(|m| m.payload_moved).count(), 1);
    }

    #[test]
    fn a_long_reason_is_bounded_on_a_character_boundary() {
        let long = "é".repeat(2000);
        let cut = bounded_error(&long);
        assert!(cut.len() <= MAX_LAST_ERROR_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded_error("short"), "short");
    }
}
