//! Which AWS failures are worth retrying.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

/// Error codes AWS uses for throttling and server-side trouble.
const RETRYABLE_CODES: &[&str] = &[
    "ThrottlingException",
    "Throttling",
    "ThrottledException",
    "RequestThrottled",
    "RequestLimitExceeded",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "TransactionConflictException",
    "InternalServerError",
    "InternalFailure",
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
];

/// Whether retrying the same request may succeed: timeouts, network failures,
/// unreadable responses, throttling and 5xx answers. Everything else (validation,
/// missing resources, permissions) needs a change first.
pub fn is_retryable<E, R>(err: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
    R: std::fmt::Debug,
{
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(s) => {
            s.err().code().is_some_and(|c| RETRYABLE_CODES.contains(&c))
                || format!("{:?}", s.raw()).contains("status: 5")
        }
        _ => false,
    }
}

/// Error codes with which SQS, SNS and EventBridge refuse a request for what it
/// carries (matched as substrings: SQS prefixes some with `AWS.SimpleQueueService.`).
const CONTENT_CODES: &[&str] = &[
    "BatchRequestTooLong",
    "InvalidMessageContents",
    "MessageTooLong",
    "InvalidParameterValue",
    "InvalidParameterException",
    "InvalidParameter",
    "ValidationException",
];

/// Whether the service refused a batch call because of the messages in it.
pub fn refuses_content<E, R>(err: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    match err {
        SdkError::ServiceError(s) => s
            .err()
            .code()
            .is_some_and(|c| CONTENT_CODES.iter().any(|k| c.contains(k))),
        _ => false,
    }
}
