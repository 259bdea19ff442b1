//! One failure vocabulary. Every adapter maps what its service said into a
//! [`Failure`] (the AWS adapters do it from the SDK's error metadata); every decision
//! in the core's policy module reads its [`FailureKind`] and nothing else.

mod denial;
pub use denial::{DENIAL_CODES, denied_action, is_denial_code};

/// What kind of failure, which decides what happens next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// Retrying the same request may succeed: throttling, 5xx answers, timeouts,
    /// network failures, and conditions an operator fixes without touching the
    /// message (a missing queue, a missing permission). Reported for retry.
    Transient,
    /// The service refused this message for good (it blames the sender: invalid,
    /// too large). Retrying it as it is cannot succeed: it becomes poison.
    Permanent,
    /// The service refused a request for what it carries. For a batch send (a batch
    /// over the size limit, characters it does not allow) one of its messages may be
    /// to blame, so the messages are worth sending one by one. For a write to an
    /// outbox item (DynamoDB's `ValidationException`: an attribute of the wrong type,
    /// an item that would exceed 400 KB) the item is to blame: the same write will
    /// never succeed, a smaller one may.
    ContentRefused,
}

/// A request, or one entry of a batch, that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Failure {
    /// What kind, for the decisions.
    pub kind: FailureKind,
    /// What the service or the network said, for `LastError` and logs.
    pub reason: String,
}

impl Failure {
    /// A failure of `kind`.
    pub fn new(kind: FailureKind, reason: impl Into<String>) -> Self {
        Failure {
            kind,
            reason: reason.into(),
        }
    }

    /// A failure that retrying the same request may fix.
    pub fn transient(reason: impl Into<String>) -> Self {
        Self::new(FailureKind::Transient, reason)
    }

    /// A message refused for good.
    pub fn permanent(reason: impl Into<String>) -> Self {
        Self::new(FailureKind::Permanent, reason)
    }

    /// A call refused for its content.
    pub fn content_refused(reason: impl Into<String>) -> Self {
        Self::new(FailureKind::ContentRefused, reason)
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind == FailureKind::Transient
    }
}

/// What a failed AWS request says about itself, as the adapters read it from the
/// SDK's error metadata. [`retryable`] decides from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// No answer came: a timeout, a network failure, an unreadable response.
    pub no_answer: bool,
    /// The service models the error as retryable.
    pub modelled_retryable: bool,
    /// The error code is one of the SDK's throttling or transient codes.
    pub throttling_code: bool,
    /// The answer's HTTP status, when there was one.
    pub status: Option<u16>,
}

/// Whether retrying the same request may succeed: no answer, throttling, or trouble
/// on the service's side (5xx, 429). Everything else (validation, missing resources,
/// permissions) needs a change first.
pub fn retryable(s: Signals) -> bool {
    s.no_answer
        || s.modelled_retryable
        || s.throttling_code
        || s.status.is_some_and(|c| c >= 500 || c == 429)
}

/// What an SDK error of any operation says about itself, for [`retryable`]: no
/// answer (timeouts, network, unreadable responses), the modelled retryable kind, the
/// code against the SDK's own throttling and transient lists, and the HTTP status.
/// The one reading of SDK errors that the AWS adapters and the consumer side share.
#[cfg(feature = "aws-sdk-errors")]
pub fn signals<E, R>(err: &aws_smithy_runtime_api::client::result::SdkError<E, R>) -> Signals
where
    E: aws_smithy_types::retry::ProvideErrorKind,
    R: HttpStatus,
{
    use aws_runtime::retries::classifiers::{THROTTLING_ERRORS, TRANSIENT_ERRORS};
    use aws_smithy_runtime_api::client::result::SdkError;
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            Signals {
                no_answer: true,
                ..Signals::default()
            }
        }
        SdkError::ServiceError(s) => Signals {
            no_answer: false,
            modelled_retryable: s.err().retryable_error_kind().is_some(),
            throttling_code: s
                .err()
                .code()
                .is_some_and(|c| THROTTLING_ERRORS.contains(&c) || TRANSIENT_ERRORS.contains(&c)),
            status: Some(s.raw().status_code()),
        },
        _ => Signals::default(),
    }
}

/// The HTTP status of an SDK response, whatever its type.
#[cfg(feature = "aws-sdk-errors")]
pub trait HttpStatus {
    /// The status code.
    fn status_code(&self) -> u16;
}

#[cfg(feature = "aws-sdk-errors")]
impl HttpStatus for aws_smithy_runtime_api::http::Response {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_no_answer_throttling_and_service_trouble_are_retryable() {
        let status = |c| Signals {
            status: Some(c),
            ..Signals::default()
        };
        assert!(retryable(status(503)) && retryable(status(500)) && retryable(status(429)));
        assert!(!retryable(status(400)) && !retryable(status(403)));
        assert!(retryable(Signals {
            no_answer: true,
            ..Signals::default()
        }));
        assert!(retryable(Signals {
            throttling_code: true,
            ..status(400)
        }));
    }
}
