//! Which AWS failures are which [`Failure`], from the SDK's own error metadata: the
//! kind of `SdkError` (timeouts, network, unreadable answers), the modelled
//! retryable kind ([`ProvideErrorKind::retryable_error_kind`]), the error code
//! against the SDK's own throttling and transient lists
//! (`aws_runtime::retries::classifiers`), the raw HTTP status, and each
//! operation's modelled error variants for content refusals. The one place the
//! adapters read errors; the decision itself is the core's
//! ([`dynamodb_outbox_core::failure::retryable`]), which the consumer side shares.

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use aws_smithy_types::retry::ProvideErrorKind;
pub use dynamodb_outbox_core::failure::signals;
use dynamodb_outbox_core::failure::{Failure, FailureKind, retryable};
use dynamodb_outbox_core::metrics::{ACCESS_DENIED, Emitter, Metric};
use dynamodb_outbox_core::policy::{DESTINATION_REFUSED, blames_the_destination};

/// Codes with which SQS, SNS and EventBridge refuse a request for what it carries
/// when the operation does not model them (or an emulator answers without the
/// query-compatible code that selects the modelled variant).
const CONTENT_CODES: &[&str] = &[
    "BatchRequestTooLong",
    "InvalidMessageContents",
    "MessageTooLong",
    "InvalidParameterValue",
    "InvalidParameterException",
    "InvalidParameter",
    "ValidationException",
];

/// SQS's prefix of query-compatible error codes (`AWS.SimpleQueueService.…`).
const SQS_CODE_PREFIX: &str = "AWS.SimpleQueueService.";

/// An SDK error of any operation of any AWS client.
pub type AwsError<E> = SdkError<E, Response>;

/// Whether retrying the same request may succeed ([`retryable`] of its [`signals`]).
pub fn is_retryable<E: ProvideErrorKind>(err: &AwsError<E>) -> bool {
    retryable(signals(err))
}

/// Whether an error code says the request was refused for its content.
pub fn is_content_code(code: Option<&str>) -> bool {
    code.map(|c| c.strip_prefix(SQS_CODE_PREFIX).unwrap_or(c))
        .is_some_and(|c| CONTENT_CODES.contains(&c))
}

/// What the error says, with its sources, for `LastError` and logs.
pub fn describe<E: std::error::Error + 'static>(err: &AwsError<E>) -> String {
    DisplayErrorContext(err).to_string()
}

/// The IAM action a denied call names (`Some("")` when AWS named none), or `None` when
/// the error is no denial.
pub fn denial<E: ProvideErrorMetadata>(err: &AwsError<E>) -> Option<String> {
    let e = err.as_service_error()?;
    let code = e.code()?;
    if !dynamodb_outbox_core::failure::is_denial_code(code) {
        return None;
    }
    let message = e.message().unwrap_or_default();
    Some(
        dynamodb_outbox_core::failure::denied_action(message)
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Reports a denied call, whatever the caller does next ([`report_denied`]). Every
/// failure built here passes through it.
pub fn report_denial<E>(err: &AwsError<E>)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    if let Some(action) = denial(err) {
        report_denied(&action, &describe(err));
    }
}

/// Reports a call denied for `action` (empty when AWS named none): an error naming
/// the IAM action to grant, and one `AccessDenied` metric on its own EMF line, so a
/// fallback that then succeeds cannot hide it.
pub fn report_denied(action: &str, error: &str) {
    let action = if action.is_empty() { "(not named)" } else { action };
    tracing::error!(action, error,
        "AWS denied a call: the function's role lacks this action (docs/iam.md lists each role's grants)");
    let emitter = Emitter::from_env().unwrap_or_default();
    emitter.emit(
        dynamodb_outbox_core::clock::now_ms(),
        &[Metric::count(ACCESS_DENIED, 1)],
    );
}

/// A batch send that failed as a whole: refused for its content (`refuses_content`
/// reads the operation's modelled variants; unmodelled codes are checked too), or
/// else transient — a whole call failing for throttling, an outage, a missing queue
/// or a permission is never the message's fault, so its messages are retried.
///
/// A refusal that names the destination's address (`Invalid parameter: TopicArn`,
/// SNS's answer for a topic in another region) is the route's, not the content's:
/// transient, with [`DESTINATION_REFUSED`] in its reason.
pub fn send_failure<E>(err: &AwsError<E>, refuses_content: impl Fn(&E) -> bool) -> Failure
where
    E: ProvideErrorKind + ProvideErrorMetadata + std::error::Error + 'static,
{
    report_denial(err);
    let service = err.as_service_error();
    if service.is_some_and(|e| blames_the_destination(e.message())) {
        return Failure::transient(format!("{DESTINATION_REFUSED}: {}", describe(err)));
    }
    let content = service
        .is_some_and(|e| refuses_content(e) || is_content_code(ProvideErrorKind::code(e)));
    let kind = if content {
        FailureKind::ContentRefused
    } else {
        FailureKind::Transient
    };
    Failure::new(kind, describe(err))
}

/// DynamoDB's code for a request refused for what it carries or would make an item
/// hold: an operand of the wrong type, an item over 400 KB.
const VALIDATION: &str = "ValidationException";

/// A table operation that failed: transient when retrying may help; refused for its
/// content (`ValidationException`: the item, as it is, cannot take this write — a
/// smaller write may fit, the same one never will); else permanent (a missing table,
/// a missing permission: nothing to do with the item).
///
/// A refusal's reason is the service's own words (`ValidationException: Item size to
/// update has exceeded the maximum allowed size`): it ends up in `LastError`.
pub fn store_failure<E>(err: &AwsError<E>) -> Failure
where
    E: ProvideErrorKind + ProvideErrorMetadata + std::error::Error + 'static,
{
    report_denial(err);
    if is_retryable(err) {
        return Failure::transient(describe(err));
    }
    match err.as_service_error() {
        Some(e) if ProvideErrorKind::code(e) == Some(VALIDATION) => Failure::content_refused(
            format!("{VALIDATION}: {}", e.message().unwrap_or("(no message)")),
        ),
        _ => Failure::permanent(describe(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    fn service_error(code: &str, status: u16) -> AwsError<SendMessageBatchError> {
        let meta = ErrorMetadata::builder()
            .code(code)
            .message("said so")
            .build();
        let raw = Response::new(
            StatusCode::try_from(status).expect("status"),
            SdkBody::empty(),
        );
        SdkError::service_error(SendMessageBatchError::generic(meta), raw)
    }

    #[test]
    fn throttling_codes_and_server_errors_are_retryable_by_the_sdks_own_lists_and_status() {
        assert!(is_retryable(&service_error("ThrottlingException", 400)));
        assert!(is_retryable(&service_error("RequestThrottled", 400)));
        assert!(is_retryable(&service_error("SomethingNew", 503)));
        assert!(is_retryable(&service_error("SomethingNew", 429)));
        assert!(!is_retryable(&service_error("AccessDenied", 403)));
        assert!(!is_retryable(&service_error("QueueDoesNotExist", 400)));
        assert!(is_retryable(
            &AwsError::<SendMessageBatchError>::timeout_error("slow")
        ));
    }

    #[test]
    fn a_server_error_is_retryable_by_its_status_not_by_its_debug_text() {
        // Before, a 5xx was recognised by `format!("{:?}", raw).contains("status: 5")`,
        // but the raw response prints `status: StatusCode(503)`: a 5xx with a code
        // outside the list was never retryable. A 4xx whose body says "status: 500"
        // must not be either.
        assert!(is_retryable(&service_error("ServiceHiccup", 503)));
        let meta = ErrorMetadata::builder().code("AccessDenied").build();
        let raw = Response::new(
            StatusCode::try_from(403).expect("status"),
            SdkBody::from("status: 500"),
        );
        let err = SdkError::service_error(SendMessageBatchError::generic(meta), raw);
        assert!(!is_retryable(&err));
    }

    #[test]
    fn a_call_refused_for_its_content_is_told_apart_from_one_to_retry() {
        let refused = send_failure(
            &service_error("AWS.SimpleQueueService.BatchRequestTooLong", 400),
            SendMessageBatchError::is_batch_request_too_long,
        );
        assert_eq!(refused.kind, FailureKind::ContentRefused);
        let unmodelled = send_failure(&service_error("InvalidParameterValue", 400), |_| false);
        assert_eq!(unmodelled.kind, FailureKind::ContentRefused);
        // SNS's answer for a topic in another region than the client's: the route's
        // fault, retried, never a refusal that fails every message.
        let elsewhere = {
            let meta = ErrorMetadata::builder()
                .code("InvalidParameter")
                .message("Invalid parameter: TopicArn")
                .build();
            let raw = Response::new(StatusCode::try_from(400).expect("status"), SdkBody::empty());
            SdkError::service_error(SendMessageBatchError::generic(meta), raw)
        };
        let wrong_region = send_failure(&elsewhere, |_| false);
        assert_eq!(wrong_region.kind, FailureKind::Transient);
        assert!(wrong_region.reason.contains("another region"), "{}", wrong_region.reason);
        let missing = send_failure(&service_error("QueueDoesNotExist", 400), |_| false);
        assert_eq!(missing.kind, FailureKind::Transient, "an operator fixes it");
        assert!(missing.reason.contains("said so"), "{}", missing.reason);
    }

    #[test]
    fn a_store_error_is_transient_only_when_retrying_may_help() {
        assert!(
            store_failure(&service_error(
                "ProvisionedThroughputExceededException",
                400
            ))
            .is_retryable()
        );
        assert_eq!(
            store_failure(&service_error("ResourceNotFoundException", 400)).kind,
            FailureKind::Permanent
        );
        // The item is to blame: a write it refuses for size or type never succeeds.
        let refused = store_failure(&service_error("ValidationException", 400));
        assert_eq!(refused.kind, FailureKind::ContentRefused);
        assert_eq!(refused.reason, "ValidationException: said so");
    }
}
