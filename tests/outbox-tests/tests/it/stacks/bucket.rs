//! The large-payload bucket each stack creates and names to the writers.

use super::each_stack;
use aws_sdk_s3::error::ProvideErrorMetadata;
use serde_json::Value;

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

        let s3 = &c.s3;
        s3.head_bucket()
            .bucket(&bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{tool} {bucket}: the bucket exists: {e:?}"));

        let block = s3
            .get_public_access_block()
            .bucket(&bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{tool} {bucket}: public access block: {e:?}"));
        let block = block
            .public_access_block_configuration()
            .unwrap_or_else(|| panic!("{tool} {bucket}: no public access block"));
        for (setting, on) in [
            ("BlockPublicAcls", block.block_public_acls()),
            ("IgnorePublicAcls", block.ignore_public_acls()),
            ("BlockPublicPolicy", block.block_public_policy()),
            ("RestrictPublicBuckets", block.restrict_public_buckets()),
        ] {
            assert_eq!(on, Some(true), "{tool} {bucket}: {setting}: {block:?}");
        }

        let policy = s3
            .get_bucket_policy()
            .bucket(&bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{tool} {bucket}: bucket policy: {e:?}"));
        let policy = policy.policy().unwrap_or_default();
        let policy: Value = serde_json::from_str(policy)
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
        let encryption = s3
            .get_bucket_encryption()
            .bucket(&bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{tool} {bucket}: encryption: {e:?}"));
        // Without a KMS key both stacks ask for SSE-S3 -- which is also what S3 (and
        // MiniStack) report for a bucket without a configuration, so this cannot tell a
        // CDK bucket whose configuration was dropped; the CDK assertions do.
        let algorithms: Vec<String> = encryption
            .server_side_encryption_configuration()
            .map(|c| c.rules())
            .unwrap_or_default()
            .iter()
            .filter_map(|r| r.apply_server_side_encryption_by_default())
            .map(|d| d.sse_algorithm().as_str().to_owned())
            .collect();
        assert_eq!(algorithms, ["AES256"], "{tool} {bucket}: SSE-S3");

        match s3
            .get_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .send()
            .await
        {
            Err(e) if e.code() == Some("NoSuchLifecycleConfiguration") => {
                gap("LifecycleConfiguration")
            }
            Err(e) => panic!("{tool} {bucket}: lifecycle: {e:?}"),
            Ok(lifecycle) => {
                // One rule or two: payloads under outbox/ expire after 30 days, and
                // unfinished uploads are aborted after a day.
                let enabled = || {
                    lifecycle
                        .rules()
                        .iter()
                        .filter(|r| r.status().as_str() == "Enabled")
                };
                assert!(
                    enabled().any(|r| r.filter().and_then(|f| f.prefix()) == Some("outbox/")
                        && r.expiration().and_then(|e| e.days()) == Some(30)),
                    "{tool} {bucket}: outbox/ expires after 30 days: {lifecycle:?}"
                );
                assert!(
                    enabled().any(|r| r
                        .abort_incomplete_multipart_upload()
                        .and_then(|a| a.days_after_initiation())
                        == Some(1)),
                    "{tool} {bucket}: uploads aborted after a day: {lifecycle:?}"
                );
            }
        }

        // S3 (and MiniStack) report BucketOwnerEnforced for a bucket never configured.
        match s3
            .get_bucket_ownership_controls()
            .bucket(&bucket)
            .send()
            .await
        {
            Err(e) if e.code() == Some("OwnershipControlsNotFoundError") => {
                gap("OwnershipControls")
            }
            Err(e) => panic!("{tool} {bucket}: ownership: {e:?}"),
            Ok(ownership) => {
                let rules: Vec<String> = ownership
                    .ownership_controls()
                    .map(|c| c.rules())
                    .unwrap_or_default()
                    .iter()
                    .map(|r| r.object_ownership().as_str().to_owned())
                    .collect();
                assert_eq!(
                    rules,
                    ["BucketOwnerEnforced"],
                    "{tool} {bucket}: ACLs disabled"
                );
            }
        }
    }
}
