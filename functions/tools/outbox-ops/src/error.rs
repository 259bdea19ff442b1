//! What can go wrong at the operator's terminal, each with what to do about it.

use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use aws_smithy_types::retry::ProvideErrorKind;
use dynamodb_outbox::sdk_error::{AwsError, SetupFault, describe, is_retryable, setup_fault};
use dynamodb_outbox_core::schema::ItemKey;

/// An operator command failed.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// No table was named.
    #[error("no table: pass --table NAME or set OUTBOX_TABLE_NAME")]
    NoTable,
    /// The table does not exist where the command looked.
    #[error(
        "table {table} does not exist here: check --table, the region (AWS_REGION or the profile's) and, for the emulator, --endpoint"
    )]
    TableNotFound {
        /// The table.
        table: String,
        /// What AWS said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The caller may not do this.
    #[error(
        "not allowed to {action} table {table}: the caller needs dynamodb:{permission} on it ({message})"
    )]
    AccessDenied {
        /// What was attempted.
        action: &'static str,
        /// The table.
        table: String,
        /// The IAM action needed.
        permission: &'static str,
        /// What AWS said.
        message: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The caller's own setup failed the request: the endpoint's certificate is not
    /// trusted, or credentials are missing or refused. Running the command again as it
    /// is cannot help: the message says what to fix.
    #[error("could not {action} table {table}: {fault}")]
    Setup {
        /// What was attempted.
        action: &'static str,
        /// The table.
        table: String,
        /// Which fault, with what to do.
        fault: SetupFault,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Any other AWS error.
    #[error("could not {action} table {table}: {message}{}", if *.retryable { " (a transient failure: run the command again)" } else { "" })]
    Aws {
        /// What was attempted.
        action: &'static str,
        /// The table.
        table: String,
        /// What AWS said, with its context.
        message: String,
        /// Whether running the command again may succeed.
        retryable: bool,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `check` found the table unlike the configuration.
    #[error(
        "table {table} does not match the configuration ({count} mismatch(es) above): the outbox functions refuse work on it until it does"
    )]
    TableMismatch {
        /// The table.
        table: String,
        /// How many checks failed.
        count: usize,
    },
    /// `check` could not describe the table.
    #[error("could not check table {table}: {message}")]
    Unchecked {
        /// The table.
        table: String,
        /// What failed and what to do.
        message: String,
    },
    /// No flag gave the table's key names and the table could not be described.
    #[error(
        "could not read the key names of table {table} (DescribeTable): {source}. Or name them: --partition-key NAME --sort-key NAME (OUTBOX_PARTITION_KEY, OUTBOX_SORT_KEY)"
    )]
    KeyNamesUnread {
        /// The table.
        table: String,
        /// Why it could not be described.
        #[source]
        source: Box<OpsError>,
    },
    /// The table's key names cannot be an outbox table's.
    #[error("table {table} cannot hold outbox items: {reason}")]
    UnusableKeys {
        /// The table.
        table: String,
        /// Why.
        reason: String,
    },
    /// The command needs the region it runs against, and none is configured.
    #[error(
        "no region: set AWS_REGION (or the profile's region) to the region that takes the messages over"
    )]
    NoRegion,
    /// A failover named the region it runs against as the failed one, or a failback
    /// as the recovered one.
    #[error(
        "{0} is the region this command reaches: run it against the surviving region (AWS_REGION)"
    )]
    SameRegion(String),
    /// A request could not be built (a key the service would refuse).
    #[error("could not build the request: {0}")]
    Request(String),
    /// A reconciliation pass could not read part of the table.
    #[error(
        "reconcile read only part of table {table}: {failed_segments} segment(s) stopped ({reason}); {adopted} message(s) were put in the index and stay there. Run it again"
    )]
    ReconcileIncomplete {
        /// The table.
        table: String,
        /// Segments that stopped.
        failed_segments: u32,
        /// Messages adopted before.
        adopted: usize,
        /// Why the first stopped.
        reason: String,
    },
    /// A redrive stopped part-way.
    #[error(
        "redrive stopped at {key} after {redriven} message(s) were redriven: {source}. Run the same command again: messages already redriven are no longer FAILED and are left alone"
    )]
    RedriveStopped {
        /// The item it stopped at.
        key: ItemKey,
        /// Messages redriven before it.
        redriven: usize,
        /// Why.
        #[source]
        source: Box<OpsError>,
    },
}

impl OpsError {
    /// Classifies an SDK error of `action` (`query`, `batch get`, `update`,
    /// `describe`) on `table`: a setup fault first (retrying cannot help), then by the
    /// service's code, then whether a retry may help.
    pub(crate) fn aws<E>(action: &'static str, table: &str, err: AwsError<E>) -> Self
    where
        E: ProvideErrorKind + ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let table = table.to_owned();
        if let Some(fault) = setup_fault(&err) {
            return OpsError::Setup {
                action,
                table,
                fault,
                source: Box::new(err),
            };
        }
        let code = err
            .as_service_error()
            .and_then(|e| ProvideErrorMetadata::code(e))
            .unwrap_or_default()
            .to_owned();
        let message = describe(&err);
        let retryable = is_retryable(&err);
        let source = Box::new(err);
        match code.as_str() {
            "ResourceNotFoundException" => OpsError::TableNotFound { table, source },
            "AccessDeniedException" => OpsError::AccessDenied {
                permission: permission(action),
                action,
                table,
                message,
                source,
            },
            _ => OpsError::Aws {
                action,
                table,
                message,
                retryable,
                source,
            },
        }
    }
}

/// The IAM action a command's `action` needs.
fn permission(action: &str) -> &'static str {
    match action {
        "scan" => "Scan",
        "query" => "Query",
        "batch get" => "BatchGetItem",
        "describe" => "DescribeTable",
        _ => "UpdateItem",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::scan::ScanError;
    use aws_smithy_runtime_api::client::result::SdkError;
    use aws_smithy_runtime_api::http::{Response, StatusCode};
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    fn scan_error(code: &str, status: u16) -> OpsError {
        let meta = ErrorMetadata::builder()
            .code(code)
            .message("said so")
            .build();
        let raw = Response::new(
            StatusCode::try_from(status).expect("status"),
            SdkBody::empty(),
        );
        OpsError::aws(
            "scan",
            "outbox",
            SdkError::service_error(ScanError::generic(meta), raw),
        )
    }

    #[test]
    fn every_error_says_what_to_do() {
        let missing = scan_error("ResourceNotFoundException", 400).to_string();
        assert!(missing.contains("check --table, the region"), "{missing}");
        let denied = scan_error("AccessDeniedException", 400).to_string();
        assert!(denied.contains("needs dynamodb:Scan"), "{denied}");
        assert_eq!(permission("query"), "Query");
        assert_eq!(permission("batch get"), "BatchGetItem");
        assert_eq!(permission("describe"), "DescribeTable");
        let throttled = scan_error("ThrottlingException", 400).to_string();
        assert!(throttled.contains("run the command again"), "{throttled}");
        let refused = scan_error("UnrecognizedClientException", 400).to_string();
        assert!(
            refused.contains("AWS refused the credentials") && !refused.contains("needs dynamodb:"),
            "an unknown access key is no missing permission: {refused}"
        );
        let other = scan_error("ValidationException", 400).to_string();
        assert!(
            !other.contains("again") && other.contains("said so"),
            "{other}"
        );
    }
}

#[cfg(test)]
mod setup_tests {
    use super::*;
    use aws_sdk_dynamodb::operation::query::QueryError;
    use aws_smithy_runtime_api::client::result::{ConnectorError, SdkError};

    #[test]
    fn an_untrusted_certificate_says_so_and_not_to_run_the_command_again() {
        // Before, a refused certificate was a failed dispatch like a dropped
        // connection: "(a transient failure: run the command again)".
        let tls = rustls_refusal();
        let err: SdkError<QueryError, _> =
            SdkError::dispatch_failure(ConnectorError::io(Box::new(tls)));
        let line = OpsError::aws("query", "orders", err).to_string();
        assert!(
            line.starts_with(
                "could not query table orders: the endpoint's TLS certificate is not trusted"
            ),
            "{line}"
        );
        assert!(
            line.contains("SSL_CERT_FILE") && !line.contains("again"),
            "{line}"
        );
    }

    /// rustls' refusal of an unknown issuer, as the connector hands it on.
    fn rustls_refusal() -> std::io::Error {
        // The TLS library's own error, found by type: built from the SDK client's
        // real refusal in the emulator test (tests/it/ops_keys.rs).
        std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        ))
    }
}
