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
use dynamodb_outbox_core::{Failure, FailureKind};
use dynamodb_outbox_core::failure::retryable;
use dynamodb_outbox_core::__private::metrics::{ACCESS_DENIED, Emitter, Metric};
use dynamodb_outbox_core::__private::policy::{DESTINATION_REFUSED, blames_the_destination};

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

/// What the error says, with its sources, for `LastError` and logs; a
/// [`SetupFault`] is named first, with what to do.
pub fn describe<E>(err: &AwsError<E>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let said = DisplayErrorContext(err).to_string();
    match setup_fault(err) {
        Some(fault) => format!("{fault}. {said}"),
        None => said,
    }
}

/// A request that failed for the caller's own setup, not for the service or the
/// message: the connection's trust or the credentials. The SDK reads these as a failed
/// dispatch (no answer) or a refusal like any other, so they read "transient" or
/// "denied"; each is named here with what to do, since retrying the same request
/// cannot fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupFault {
    /// The endpoint's TLS certificate was refused (unknown issuer, expired, another
    /// name): what the TLS library said.
    UntrustedCertificate(String),
    /// No credentials could be loaded (none configured, an expired SSO session, a
    /// failing credential process): what the provider said.
    NoCredentials(String),
    /// AWS refused the credentials it was sent: the error code.
    RejectedCredentials(String),
}

/// The codes with which AWS refuses the credentials themselves (not a permission):
/// an unknown access key, a secret that does not match, a session token expired or
/// malformed, a request signed too long ago (a clock off by minutes).
const CREDENTIAL_CODES: &[&str] = &[
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidAccessKeyId",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "IncompleteSignature",
    "IncompleteSignatureException",
    "MissingAuthenticationToken",
    "MissingAuthenticationTokenException",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidToken",
    "RequestExpired",
];

impl std::fmt::Display for SetupFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupFault::UntrustedCertificate(said) => write!(
                f,
                "the endpoint's TLS certificate is not trusted ({said}): add its issuer to this machine's trust store, or set SSL_CERT_FILE to a PEM bundle that holds it (the Rust SDK does not read AWS_CA_BUNDLE)"
            ),
            SetupFault::NoCredentials(said) => write!(
                f,
                "no AWS credentials could be loaded ({said}): set AWS_PROFILE (after `aws sso login` for an SSO profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where a role is attached"
            ),
            SetupFault::RejectedCredentials(code) if code.starts_with("Expired") || code == "RequestExpired" => write!(
                f,
                "AWS refused the credentials as expired ({code}): refresh them (`aws sso login`, a new session token), and check the clock if it is minutes off"
            ),
            SetupFault::RejectedCredentials(code) => write!(
                f,
                "AWS refused the credentials ({code}): the access key is unknown here or the secret or session token does not match it; check AWS_PROFILE or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, and the region's partition"
            ),
        }
    }
}

/// The [`SetupFault`] behind a failed request, if it is one: a refused credential by
/// its error code; a refused certificate or credentials that could not be loaded by
/// the typed errors in the failed dispatch's chain (rustls' `InvalidCertificate`,
/// the SDK's `CredentialsError`), never by their text.
pub fn setup_fault<E>(err: &AwsError<E>) -> Option<SetupFault>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    if let Some(service) = err.as_service_error() {
        let code = service.code()?;
        return CREDENTIAL_CODES
            .contains(&code)
            .then(|| SetupFault::RejectedCredentials(code.to_owned()));
    }
    let mut next = std::error::Error::source(err);
    while let Some(e) = next {
        if let Some(fault) = fault_of(e) {
            return Some(fault);
        }
        next = e.source();
    }
    None
}

/// One error of a chain as a [`SetupFault`].
fn fault_of(e: &(dyn std::error::Error + 'static)) -> Option<SetupFault> {
    if let Some(credentials) =
        e.downcast_ref::<aws_credential_types::provider::error::CredentialsError>()
    {
        return Some(SetupFault::NoCredentials(
            DisplayErrorContext(credentials).to_string(),
        ));
    }
    let tls = tls_error(e)?;
    matches!(tls, rustls::Error::InvalidCertificate(_))
        .then(|| SetupFault::UntrustedCertificate(tls.to_string()))
}

/// The TLS library's error in `e`, through the `io::Error`s around it: the connector
/// hands it on as an `io::Error` (`Other`) around hyper-rustls' `io::Error`
/// (`InvalidData`), and an `io::Error`'s `source()` skips the error it wraps, so each
/// is opened with `get_ref`.
fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current = e;
    loop {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        current = current.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
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

/// Reports a denied call ([`report_denied`]) or a [`SetupFault`] (an error naming it),
/// whatever the caller does next. Every failure built here passes through it.
pub fn report_denial<E>(err: &AwsError<E>)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    if let Some(action) = denial(err) {
        report_denied(&action, &describe(err));
    } else if let Some(fault) = setup_fault(err) {
        // Every call of the function fails alike until an operator fixes its setup:
        // said once a failure as an error, not left to read as a transient warning.
        tracing::error!(error = %DisplayErrorContext(err), "{fault}");
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
    // A setup fault (an untrusted certificate, credentials missing or refused) stays
    // transient here, on purpose: the message is not to blame, so it must not become
    // poison, and its dead-letter send would most likely fail alike. It stays PENDING:
    // the stream retries it until the record ages out, then the sweeper with backoff
    // until its retry budget is spent, so the attempts are bounded; `report_denial` has
    // logged the fault as an error naming the fix, and `LastError` names it (`describe`).
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
    // A setup fault keeps the kind the SDK's signals give it: an untrusted certificate
    // (no answer) is transient, credentials the service refused are permanent. Neither
    // blames the item (permanent here means "nothing to do with the item", never
    // poison), so the item is left as it was, and a function's role credentials are
    // renewed by Lambda, not by retrying this request; the fault is logged as an error
    // and named in the reason.
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

    fn dispatch_failure(source: impl std::error::Error + Send + Sync + 'static) -> AwsError<SendMessageBatchError> {
        use aws_smithy_runtime_api::client::result::ConnectorError;
        SdkError::dispatch_failure(ConnectorError::io(Box::new(source)))
    }

    /// rustls' refusal as a real client hands it on (tests/it/ops_keys.rs reads one from
    /// the local AWS): an `io::Error` (`Other`) around an `io::Error` (`InvalidData`).
    fn untrusted() -> AwsError<SendMessageBatchError> {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        dispatch_failure(std::io::Error::other(inner))
    }

    #[test]
    fn an_untrusted_certificate_is_named_with_the_trust_store_to_fix_not_as_a_network_blip() {
        let err = untrusted();
        assert!(
            matches!(setup_fault(&err), Some(SetupFault::UntrustedCertificate(ref said)) if said.contains("UnknownIssuer")),
            "{:?}",
            setup_fault(&err)
        );
        let said = describe(&err);
        assert!(said.starts_with("the endpoint's TLS certificate is not trusted"), "{said}");
        assert!(said.contains("SSL_CERT_FILE") && said.contains("trust store"), "{said}");
        // A refused connection is no setup fault: it stays a plain transient failure.
        let refused = dispatch_failure(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(setup_fault(&refused), None);
        assert!(is_retryable(&refused));
    }

    #[test]
    fn credentials_that_could_not_be_loaded_are_named_with_where_they_come_from() {
        use aws_credential_types::provider::error::CredentialsError;
        use aws_smithy_runtime_api::client::result::ConnectorError;
        // How the orchestrator hands on a credential provider's error: a dispatch
        // failure around it.
        let err: AwsError<SendMessageBatchError> = SdkError::dispatch_failure(ConnectorError::other(
            Box::new(CredentialsError::not_loaded("no providers in chain provided credentials")),
            None,
        ));
        assert!(matches!(setup_fault(&err), Some(SetupFault::NoCredentials(_))));
        let said = describe(&err);
        assert!(said.starts_with("no AWS credentials could be loaded"), "{said}");
        assert!(said.contains("AWS_PROFILE") && said.contains("aws sso login"), "{said}");
    }

    #[test]
    fn credentials_aws_refused_are_named_apart_from_a_missing_permission() {
        let expired = setup_fault(&service_error("ExpiredTokenException", 400));
        assert_eq!(expired, Some(SetupFault::RejectedCredentials("ExpiredTokenException".into())));
        let said = describe(&service_error("ExpiredTokenException", 400));
        assert!(said.contains("as expired") && said.contains("refresh them"), "{said}");
        let unknown = describe(&service_error("UnrecognizedClientException", 400));
        assert!(unknown.contains("AWS refused the credentials (UnrecognizedClientException)"), "{unknown}");
        for other in ["AccessDeniedException", "ThrottlingException", "ValidationException"] {
            assert_eq!(setup_fault(&service_error(other, 400)), None, "{other}");
        }
    }

    #[tokio::test]
    async fn a_real_clients_missing_credentials_are_found_in_the_error_it_returns() {
        use aws_credential_types::provider::{ProvideCredentials, error::CredentialsError, future};
        #[derive(Debug)]
        struct Nothing;
        impl ProvideCredentials for Nothing {
            fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
            where
                Self: 'a,
            {
                future::ProvideCredentials::ready(Err(CredentialsError::not_loaded(
                    "no profile, no environment variables",
                )))
            }
        }
        // The credentials are asked for before any connection: nothing listens here.
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .endpoint_url("http://127.0.0.1:9")
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .credentials_provider(Nothing)
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .build();
        let err = aws_sdk_dynamodb::Client::from_conf(config)
            .describe_table()
            .table_name("orders")
            .send()
            .await
            .expect_err("no credentials");
        assert!(matches!(setup_fault(&err), Some(SetupFault::NoCredentials(_))), "{err:?}");
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
