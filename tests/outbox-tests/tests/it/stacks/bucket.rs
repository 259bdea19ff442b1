//! The large-payload bucket each stack creates and names to the writers.

use super::each_stack;
use outbox_tests::endpoint;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The large-payload bucket (S3 large-payload offload, infra/CONTRACT.md): created by both stacks,
/// named to the publisher and the sweeper, private, encrypted, TLS only, payloads under
/// `outbox/` expiring after 30 days. MiniStack's CloudFormation stores the public access
/// block and the bucket policy but not `BucketEncryption`, `LifecycleConfiguration` or
/// `OwnershipControls` (infra/README.md, "On the local AWS"): the CDK stack's lifecycle is
/// checked when the emulator kept it and reported as the known gap otherwise; its encryption
/// and ownership read back as S3's defaults for a new bucket (SSE-S3, `BucketOwnerEnforced`),
/// which are also what the stacks ask for. The CDK assertions check the template. Terraform
/// sets each through the S3 API: all are checked.
#[tokio::test]
async fn each_stack_creates_the_large_payload_bucket_and_names_it_to_the_writers() {
    for (tool, c, d) in each_stack().await {
        let mut buckets = Vec::new();
        for function in [
            &d.publisher,
            &d.sweeper,
            &d.consumer,
            &format!("{}-recovery", d.prefix),
        ] {
            let f = c
                .lambda
                .get_function_configuration()
                .function_name(function)
                .send()
                .await
                .unwrap();
            let env = f.environment().and_then(|e| e.variables()).unwrap();
            buckets.push(env.get("OUTBOX_LARGE_PAYLOAD_BUCKET").cloned());
            assert!(
                !env.contains_key("OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES"),
                "{tool} {function}: no threshold unless the setting is given"
            );
        }
        let bucket = buckets[0]
            .clone()
            .unwrap_or_else(|| panic!("{tool}: the publisher's OUTBOX_LARGE_PAYLOAD_BUCKET"));
        assert_eq!(
            buckets[1].as_ref(),
            Some(&bucket),
            "{tool}: the sweeper's bucket is the publisher's"
        );
        assert_eq!(
            buckets[2..],
            [None, None],
            "{tool}: only the writers are told the bucket"
        );

        let (status, _) = s3_get(&bucket, "").await;
        assert_eq!(status, 200, "{tool} {bucket}: the bucket exists");

        let (status, block) = s3_get(&bucket, "publicAccessBlock").await;
        assert_eq!(status, 200, "{tool} {bucket}: public access block: {block}");
        for setting in [
            "BlockPublicAcls",
            "IgnorePublicAcls",
            "BlockPublicPolicy",
            "RestrictPublicBuckets",
        ] {
            assert!(
                block.contains(&format!("<{setting}>true</{setting}>")),
                "{tool} {bucket}: {setting}: {block}"
            );
        }

        let (status, policy) = s3_get(&bucket, "policy").await;
        assert_eq!(status, 200, "{tool} {bucket}: bucket policy: {policy}");
        let policy: Value = serde_json::from_str(&policy)
            .unwrap_or_else(|e| panic!("{tool}: policy JSON: {e}: {policy}"));
        let statements = policy["Statement"].as_array().cloned().unwrap_or_default();
        assert!(
            statements.iter().any(|s| s["Effect"] == "Deny"
                && s["Action"] == "s3:*"
                && s["Condition"]["Bool"]["aws:SecureTransport"] == "false"),
            "{tool} {bucket}: TLS only: {policy}"
        );

        // What MiniStack's CloudFormation does not apply (the CDK stack): checked if kept.
        let gap = |what: &str| {
            assert_eq!(tool, "cdk", "{tool} {bucket}: {what} missing");
            eprintln!(
                "cdk: {what} of the large-payload bucket not applied by the emulator's CloudFormation (known gap)"
            );
        };
        let (status, encryption) = s3_get(&bucket, "encryption").await;
        assert_eq!(status, 200, "{tool} {bucket}: encryption: {encryption}");
        // Without a KMS key both stacks ask for SSE-S3 -- which is also what S3 (and
        // MiniStack) report for a bucket without a configuration, so this cannot tell a
        // CDK bucket whose configuration was dropped; the CDK assertions do.
        assert!(
            encryption.contains("<SSEAlgorithm>AES256</SSEAlgorithm>"),
            "{tool} {bucket}: SSE-S3: {encryption}"
        );

        let (status, lifecycle) = s3_get(&bucket, "lifecycle").await;
        if status == 404 && lifecycle.contains("NoSuchLifecycleConfiguration") {
            gap("LifecycleConfiguration");
        } else {
            assert_eq!(status, 200, "{tool} {bucket}: lifecycle: {lifecycle}");
            for part in [
                "<Status>Enabled</Status>",
                "<Prefix>outbox/</Prefix>",
                "<Days>30</Days>",
                "<DaysAfterInitiation>1</DaysAfterInitiation>",
            ] {
                assert!(
                    lifecycle.contains(part),
                    "{tool} {bucket}: lifecycle {part}: {lifecycle}"
                );
            }
        }

        // S3 (and MiniStack) report BucketOwnerEnforced for a bucket never configured.
        let (status, ownership) = s3_get(&bucket, "ownershipControls").await;
        if status == 404 {
            gap("OwnershipControls");
        } else {
            assert!(
                ownership.contains("<ObjectOwnership>BucketOwnerEnforced</ObjectOwnership>"),
                "{tool} {bucket}: ACLs disabled: {ownership}"
            );
        }
    }
}

/// GET `/<bucket>?<subresource>` on the local AWS: status and body. The tests crate has no
/// S3 client; MiniStack on loopback takes unsigned path-style requests. HTTP/1.0, so the
/// body is never chunked.
async fn s3_get(bucket: &str, subresource: &str) -> (u16, String) {
    let endpoint = endpoint();
    let host = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let path = if subresource.is_empty() {
        format!("/{bucket}")
    } else {
        format!("/{bucket}?{subresource}")
    };
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&host).unwrap_or_else(|e| panic!("{host}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: */*\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response
            .split_once("\r\n\r\n")
            .unwrap_or((response.as_str(), ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("GET {path}: no status in {head}"));
        (status, body.to_owned())
    })
    .await
    .unwrap()
}
