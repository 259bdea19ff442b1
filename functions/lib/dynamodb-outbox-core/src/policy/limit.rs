//! Which size limit an SQS destination has: the route's `max_message_bytes` when it
//! sets one, else the queue's own `MaximumMessageSize` as the function read it on its
//! first invocation, else SQS's documented default (1 MiB) — with advice for the log
//! when the queue could not be read. Plain functions of plain data; the lookup itself
//! is the AWS adapter's (`dynamodb_outbox::sqs::learn_limits`).

use crate::route::SQS_MAX_MESSAGE_BYTES;
use std::collections::HashMap;

/// The largest message an SQS destination accepts, and where that number comes from
/// (which one applies is `sqs_limit`'s decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqsLimit {
    /// The route's `max_message_bytes`: it wins over what the queue says.
    Route(usize),
    /// The queue's own `MaximumMessageSize`, as the function read it.
    Queue(usize),
    /// Not known (not read, or it could not be read): SQS's largest message, 1 MiB.
    /// A message over the queue's real limit is then refused when it is sent.
    Default,
}

impl SqsLimit {
    /// The limit in bytes.
    pub fn bytes(self) -> usize {
        match self {
            SqsLimit::Route(bytes) | SqsLimit::Queue(bytes) => bytes,
            SqsLimit::Default => SQS_MAX_MESSAGE_BYTES,
        }
    }

    /// The route's own limit, when it sets one.
    pub fn configured(self) -> Option<usize> {
        match self {
            SqsLimit::Route(bytes) => Some(bytes),
            SqsLimit::Queue(_) | SqsLimit::Default => None,
        }
    }

    /// Where the limit comes from, for reasons an operator reads.
    pub fn source(self) -> &'static str {
        match self {
            SqsLimit::Route(_) => "the route's max_message_bytes",
            SqsLimit::Queue(_) => "the queue's MaximumMessageSize",
            SqsLimit::Default => "SQS's largest message",
        }
    }
}

/// What reading one queue's `MaximumMessageSize` gave: the value, or why it could not
/// be read (no permission, throttled, a queue in another account, no such queue).
pub type LimitRead = Result<usize, String>;

/// What the lookups gave, by queue URL.
pub type QueueLimits = HashMap<String, LimitRead>;

/// The limit that applies to an SQS queue whose route says `configured` (its
/// `max_message_bytes`, when set) and whose `MaximumMessageSize` read as `read` (when
/// it was read).
///
/// The route wins: it is the operator's word, and the way to state a limit for a
/// queue the function may not read. A value read outside what SQS allows is not
/// believed: 0 counts as unreadable, anything above 1 MiB is capped at 1 MiB (no SQS
/// message is larger). Unread or unreadable: SQS's default, 1 MiB — a message over
/// the queue's real limit is then refused when sent, and becomes poison then.
pub fn sqs_limit(configured: Option<usize>, read: Option<&LimitRead>) -> SqsLimit {
    match (configured, read) {
        (Some(bytes), _) => SqsLimit::Route(bytes),
        (None, Some(Ok(bytes))) if *bytes > 0 => {
            SqsLimit::Queue((*bytes).min(SQS_MAX_MESSAGE_BYTES))
        }
        _ => SqsLimit::Default,
    }
}

/// Which queue a lookup was for, for the advice in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueRole {
    /// A route's destination (`OUTBOX_ROUTES`, `OUTBOX_DEFAULT_DESTINATION`).
    Route,
    /// The dead-letter queue (`OUTBOX_DLQ_URL`).
    DeadLetter,
}

/// The log line for a queue whose limit could not be read: what is assumed, what
/// happens because of it, and what to do.
pub fn unknown_limit_advice(url: &str, role: QueueRole, error: &str) -> String {
    let what_to_do = match role {
        QueueRole::Route => {
            "grant the function's role sqs:GetQueueAttributes on it, or set max_message_bytes on its route in OUTBOX_ROUTES"
        }
        QueueRole::DeadLetter => {
            "grant the function's role sqs:GetQueueAttributes on it (the dead-letter queue has no size setting)"
        }
    };
    let consequence = match role {
        QueueRole::Route => {
            "a message over the queue's real limit is refused when sent, and only then becomes poison"
        }
        QueueRole::DeadLetter => {
            "a dead-letter copy over the queue's real limit is refused when sent (the item keeps its payload)"
        }
    };
    format!(
        "could not read the MaximumMessageSize of {url} ({error}): assuming SQS's default of {SQS_MAX_MESSAGE_BYTES} bytes until a read succeeds (the functions read it again on their next invocation); {consequence}. To fix it, {what_to_do}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_limit_wins_then_the_queues_then_the_default() {
        let read = |r: LimitRead| Some(r);
        assert_eq!(
            sqs_limit(Some(4096), read(Ok(262_144)).as_ref()),
            SqsLimit::Route(4096)
        );
        assert_eq!(sqs_limit(Some(4096), None), SqsLimit::Route(4096));
        assert_eq!(
            sqs_limit(None, read(Ok(262_144)).as_ref()),
            SqsLimit::Queue(262_144)
        );
        assert_eq!(
            sqs_limit(None, read(Err("AccessDenied".into())).as_ref()),
            SqsLimit::Default
        );
        assert_eq!(sqs_limit(None, None), SqsLimit::Default);
        assert_eq!(SqsLimit::Default.bytes(), 1_048_576);
    }

    #[test]
    fn a_value_sqs_would_never_report_is_not_believed() {
        assert_eq!(sqs_limit(None, Some(&Ok(0))), SqsLimit::Default);
        assert_eq!(
            sqs_limit(None, Some(&Ok(4 * 1_048_576))),
            SqsLimit::Queue(1_048_576)
        );
    }

    #[test]
    fn the_advice_names_the_queue_the_assumption_and_what_to_do() {
        let route = unknown_limit_advice("https://q/a", QueueRole::Route, "AccessDenied: no");
        for part in [
            "https://q/a",
            "AccessDenied: no",
            "1048576 bytes",
            "sqs:GetQueueAttributes",
            "max_message_bytes",
            "OUTBOX_ROUTES",
        ] {
            assert!(route.contains(part), "{part}: {route}");
        }
        let dlq = unknown_limit_advice("https://q/dlq", QueueRole::DeadLetter, "Throttling");
        assert!(dlq.contains("sqs:GetQueueAttributes"), "{dlq}");
        assert!(!dlq.contains("max_message_bytes"), "no such setting: {dlq}");
        assert!(dlq.contains("keeps its payload"), "{dlq}");
    }
}
