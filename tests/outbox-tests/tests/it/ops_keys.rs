//! The operator's commands on a table keyed otherwise, with no key names given: they
//! read them from the table (`DescribeTable`), and say which table, why and what to
//! pass when they cannot — an untrusted certificate named as such, not "transient".

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use dynamodb_outbox::{KeyNames, NewMessage};
use dynamodb_outbox_core::schema::Status;
use outbox_ops::{KeyFlags, OpsError};
use outbox_tests::{Outbox, unique};

#[tokio::test]
async fn show_without_key_flags_lists_an_aggregates_messages_on_a_table_keyed_tenant_id_and_entity_id()
 {
    // Given a table keyed tenant_id/entity_id and two messages of one tenant
    let ob = Outbox::keyed(KeyNames::new("tenant_id", "entity_id")).await;
    let messages = [
        NewMessage::new("TENANT#7", "orders", r#"{"n":1}"#),
        NewMessage::new("TENANT#7", "orders", r#"{"n":2}"#),
    ];
    let committed = ob.writer().commit(vec![], &messages).await.expect("commit");
    // When the operator names only the table (no --partition-key, no --sort-key), as
    // `outbox-ops --table T show TENANT#7` does
    let db = &ob.clients.dynamodb;
    let table = outbox_ops::table_keyed(db, &ob.table, &KeyFlags::default(), KeyNames::default())
        .await
        .expect("the key names read from the table");
    let (lives, _) = outbox_ops::show(db, &table, "TENANT#7", None)
        .await
        .expect("show");
    // Then the table's own names are used, and both messages are shown, pending
    assert_eq!(
        (
            table.keys.partition_key.as_str(),
            table.keys.sort_key.as_str()
        ),
        ("tenant_id", "entity_id")
    );
    let mut shown: Vec<String> = lives.iter().map(|l| l.key.sk.clone()).collect();
    let mut written = committed.sort_keys.clone();
    shown.sort();
    written.sort();
    assert_eq!(shown, written, "{lives:?}");
    assert!(
        lives.iter().all(|l| l.status == Some(Status::Pending)),
        "{lives:?}"
    );
}

#[tokio::test]
async fn a_table_that_does_not_exist_is_said_to_be_missing_not_read_as_keyed_pk_sk() {
    let ob = Outbox::new().await;
    let missing = unique("no-such-table");
    let error = outbox_ops::table_keyed(
        &ob.clients.dynamodb,
        &missing,
        &KeyFlags::default(),
        KeyNames::default(),
    )
    .await
    .expect_err("no such table");
    assert!(matches!(error, OpsError::TableNotFound { .. }), "{error:?}");
    assert!(error.to_string().contains(&missing), "{error}");
}

#[tokio::test]
async fn a_table_that_cannot_be_described_is_named_with_the_cause_and_the_flags_to_pass() {
    // Given an endpoint nothing listens on (no emulator needed), and no retries
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url("http://127.0.0.1:9")
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    // When a command needs the key names
    let error =
        outbox_ops::table_keyed(&client, "orders", &KeyFlags::default(), KeyNames::default())
            .await
            .expect_err("unreachable");
    // Then one line names the table, the call, the cause and the flags
    let line = error.to_string();
    for part in [
        "table orders",
        "DescribeTable",
        "--partition-key",
        "--sort-key",
    ] {
        assert!(line.contains(part), "{part} missing from: {line}");
    }
    // And both names given, the table is not described at all
    let given = KeyFlags {
        partition_key: Some("tenant_id".into()),
        sort_key: Some("entity_id".into()),
    };
    let table = outbox_ops::table_keyed(&client, "orders", &given, KeyNames::default())
        .await
        .expect("no request made");
    assert_eq!(table.keys.partition_key, "tenant_id");
}

#[tokio::test]
async fn an_endpoint_whose_certificate_is_not_trusted_is_named_so_not_called_transient() {
    let endpoint = outbox_tests::endpoint();
    if !endpoint.starts_with("https://") {
        eprintln!("skipped: {endpoint} serves plain HTTP (moto, or MiniStack without IAM)");
        return;
    }
    // Given a client that trusts no certificate at all (this process's own trust
    // store holds the local AWS's, from SSL_CERT_FILE)
    use aws_smithy_http_client::{Builder, tls};
    let context = tls::TlsContext::builder()
        .with_trust_store(tls::TrustStore::empty())
        .build()
        .expect("TLS context");
    let http = Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .tls_context(context)
        .build_https();
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .http_client(http)
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    // When a command reads the table
    let error =
        outbox_ops::table_keyed(&client, "orders", &KeyFlags::default(), KeyNames::default())
            .await
            .expect_err("the certificate is refused");
    // Then the refusal is named with its fix, and not called transient
    let line = error.to_string();
    assert!(
        line.contains("the endpoint's TLS certificate is not trusted"),
        "{line}"
    );
    assert!(line.contains("SSL_CERT_FILE"), "{line}");
    assert!(!line.contains("run the command again"), "{line}");
}
