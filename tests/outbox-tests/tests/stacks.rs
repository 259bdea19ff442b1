//! Both stacks, applied to the local AWS by `tests/run` (`scripts/deploy-local`), read
//! back from what they created and checked against the README and infra/README.md —
//! then messages run through each.
//!
//! `OUTBOX_STACKS` names the deployments: `terraform:<prefix>,cdk:<prefix>`.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_sdk_dynamodb::types::{
    AttributeValue, IndexStatus, KeyType, ProjectionType, StreamViewType, TimeToLiveStatus,
};
use aws_sdk_lambda::types::{Architecture, EventSourcePosition, FunctionResponseType, Runtime};
use aws_sdk_sqs::types::QueueAttributeName;
use dynamodb_outbox::schema::TABLE;
use outbox_devkit::aws::Clients;
use outbox_devkit::deployment::Deployment;
use outbox_tests::pipeline::require_ministack;
use outbox_tests::{clients, drain, endpoint};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The deployments `tests/run` applied.
fn stacks() -> Vec<(String, String)> {
    require_ministack();
    let list = std::env::var("OUTBOX_STACKS").expect(
        "OUTBOX_STACKS is not set: tests/run applies both stacks to MiniStack and names them here (terraform:<prefix>,cdk:<prefix>)",
    );
    list.split(',')
        .filter_map(|s| s.split_once(':'))
        .map(|(tool, prefix)| (tool.to_owned(), prefix.to_owned()))
        .collect()
}

async fn each_stack() -> Vec<(String, Clients, Deployment)> {
    let mut out = Vec::new();
    for (tool, prefix) in stacks() {
        let clients = clients().await;
        let deployment = Deployment::discover(&clients, &prefix)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        out.push((tool, clients, deployment));
    }
    assert_eq!(out.len(), 2, "both stacks: {:?}", stacks());
    out
}

#[tokio::test]
async fn each_stack_creates_the_table_the_readme_describes() {
    for (tool, c, d) in each_stack().await {
        let table = c
            .dynamodb
            .describe_table()
            .table_name(&d.table)
            .send()
            .await
            .unwrap()
            .table
            .unwrap();
        let keys: Vec<(&str, &KeyType)> = table
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type()))
            .collect();
        // The Rust side declares the table once (`schema::TABLE`); both stacks must
        // have built exactly that.
        assert_eq!(
            keys,
            [
                (TABLE.partition_key, &KeyType::Hash),
                (TABLE.sort_key, &KeyType::Range)
            ],
            "{tool}"
        );
        let stream = table.stream_specification().unwrap();
        assert!(stream.stream_enabled(), "{tool}: stream on");
        assert_eq!(
            stream.stream_view_type() == Some(&StreamViewType::NewImage),
            TABLE.stream_new_image,
            "{tool}: the stream's view type"
        );
        assert_eq!(table.latest_stream_arn(), Some(d.stream_arn.as_str()));
        let index = table
            .global_secondary_indexes()
            .iter()
            .find(|i| i.index_name() == Some(TABLE.sweep_index))
            .unwrap_or_else(|| panic!("{tool}: the sparse sweeper index"));
        let index_keys: Vec<(&str, &KeyType)> = index
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type()))
            .collect();
        assert_eq!(
            index_keys,
            [
                ("SweepShard", &KeyType::Hash),
                ("SweepDueAt", &KeyType::Range)
            ],
            "{tool}"
        );
        assert_eq!(
            index.projection().and_then(|p| p.projection_type()),
            Some(&ProjectionType::KeysOnly),
            "{tool}"
        );
        assert_ne!(index.index_status(), Some(&IndexStatus::Deleting));
        let ttl = c
            .dynamodb
            .describe_time_to_live()
            .table_name(&d.table)
            .send()
            .await
            .unwrap()
            .time_to_live_description
            .unwrap();
        if tool == "cdk" && ttl.attribute_name().is_none() {
            // infra/README.md, "On the local AWS": MiniStack's CloudFormation does not
            // apply TimeToLiveSpecification. The CDK assertions check the template.
            eprintln!("cdk: TTL not applied by the emulator's CloudFormation (known gap)");
            continue;
        }
        assert_eq!(ttl.attribute_name(), Some(TABLE.ttl_attribute), "{tool}");
        assert_eq!(
            ttl.time_to_live_status(),
            Some(&TimeToLiveStatus::Enabled),
            "{tool}"
        );
    }
}

#[tokio::test]
async fn each_stack_creates_encrypted_tls_only_queues_with_their_dead_letter_queues() {
    for (tool, c, d) in each_stack().await {
        // The local Terraform root keeps 256 KiB (hashicorp/aws 5.x allows no more);
        // CDK states the 1 MiB default.
        let size = if tool == "terraform" {
            "262144"
        } else {
            "1048576"
        };
        let queues = [
            ("orders-queue", Some("orders-queue-dlq")),
            ("orders-events.fifo", Some("orders-events-dlq.fifo")),
            ("dlq", None),
            ("stream-failures", Some("stream-failures-dlq")),
            ("stream-failures-dlq", None),
            ("orders-queue-dlq", None),
            ("orders-events-dlq.fifo", None),
        ];
        for (name, dlq) in queues {
            let name = format!("{}-{name}", d.prefix);
            let attrs = queue_attributes(&c, &name).await;
            assert_eq!(
                attrs.get("MaximumMessageSize").map(String::as_str),
                Some(size),
                "{tool} {name}: MaximumMessageSize stated"
            );
            assert!(
                attrs.get("SqsManagedSseEnabled").map(String::as_str) == Some("true")
                    || attrs.contains_key("KmsMasterKeyId"),
                "{tool} {name}: encrypted at rest"
            );
            let policy: Value = serde_json::from_str(attrs.get("Policy").expect("a policy"))
                .unwrap_or_else(|e| panic!("{tool} {name}: policy JSON: {e}"));
            assert!(
                policy.to_string().contains("aws:SecureTransport"),
                "{tool} {name}: TLS only: {policy}"
            );
            if let Some(dlq) = dlq {
                let redrive: Value =
                    serde_json::from_str(attrs.get("RedrivePolicy").expect("redrive")).unwrap();
                assert!(
                    redrive["deadLetterTargetArn"]
                        .as_str()
                        .unwrap()
                        .ends_with(&format!("{}-{dlq}", d.prefix)),
                    "{tool} {name}: {redrive}"
                );
                assert_eq!(
                    redrive["maxReceiveCount"].to_string().trim_matches('"'),
                    "5",
                    "{tool} {name}: maxReceiveCount default"
                );
            }
        }
        assert_eq!(
            d.destination("orders"),
            Some(
                queue_url(&c, &format!("{}-orders-queue", d.prefix))
                    .await
                    .as_str()
            )
        );
    }
}

#[tokio::test]
async fn each_stack_deploys_the_functions_with_their_environment() {
    for (tool, c, d) in each_stack().await {
        for (function, timeout, vars) in [
            (
                &d.publisher,
                60,
                &[
                    "OUTBOX_TABLE_NAME",
                    "OUTBOX_ROUTES",
                    "OUTBOX_DLQ_URL",
                    "OUTBOX_TTL_DAYS",
                    "OUTBOX_DEPLOYMENT",
                    "OUTBOX_LARGE_PAYLOAD_BUCKET",
                ][..],
            ),
            (
                &d.sweeper,
                60,
                &[
                    "OUTBOX_TABLE_NAME",
                    "OUTBOX_ROUTES",
                    "OUTBOX_DLQ_URL",
                    "OUTBOX_MAX_ATTEMPTS",
                    "OUTBOX_SWEEP_GRACE_SECONDS",
                    "OUTBOX_SWEEP_SCAN_MODE",
                    "OUTBOX_DEPLOYMENT",
                    "OUTBOX_LARGE_PAYLOAD_BUCKET",
                ][..],
            ),
            (&d.consumer, 30, &["ORDERS_TABLE_NAME"][..]),
            (
                &format!("{}-recovery", d.prefix),
                60,
                &["OUTBOX_TABLE_NAME", "OUTBOX_DEPLOYMENT"][..],
            ),
        ] {
            let f = c
                .lambda
                .get_function_configuration()
                .function_name(function)
                .send()
                .await
                .unwrap();
            assert_eq!(
                f.runtime(),
                Some(&Runtime::Providedal2023),
                "{tool} {function}"
            );
            assert_eq!(f.handler(), Some("bootstrap"), "{tool} {function}");
            assert_eq!(
                f.architectures(),
                [Architecture::X8664],
                "{tool} {function}: deployed for this machine's build"
            );
            assert_eq!(f.timeout(), Some(timeout), "{tool} {function}: timeout");
            assert_eq!(f.memory_size(), Some(256), "{tool} {function}");
            let env = f.environment().and_then(|e| e.variables()).unwrap();
            for var in vars {
                assert!(env.contains_key(*var), "{tool} {function}: {var}");
            }
            if env.contains_key("OUTBOX_DEPLOYMENT") {
                assert_eq!(
                    env["OUTBOX_DEPLOYMENT"], d.prefix,
                    "{tool}: metrics dimension"
                );
            }
        }
        // CDK names the `$LATEST` qualifier, Terraform none; both mean the same.
        let invoke = match c
            .lambda
            .get_function_event_invoke_config()
            .function_name(&d.sweeper)
            .send()
            .await
        {
            Ok(config) => config,
            Err(_) => c
                .lambda
                .get_function_event_invoke_config()
                .function_name(&d.sweeper)
                .qualifier("$LATEST")
                .send()
                .await
                .unwrap_or_else(|e| panic!("{tool}: the sweeper's async invoke config: {e:?}")),
        };
        assert_eq!(
            invoke.maximum_retry_attempts(),
            Some(0),
            "{tool}: a failed sweep is not retried for hours"
        );
        assert_eq!(invoke.maximum_event_age_in_seconds(), Some(120), "{tool}");
    }
}

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

#[tokio::test]
async fn each_stack_maps_the_stream_the_queue_and_the_schedule_as_documented() {
    let filter: Value = serde_json::from_str(dynamodb_outbox::STREAM_FILTER_JSON).unwrap();
    let pattern = filter["Filters"][0]["Pattern"].as_str().unwrap();
    for (tool, c, d) in each_stack().await {
        let m = &d.stream_mapping;
        assert_eq!(
            m.starting_position(),
            Some(&EventSourcePosition::TrimHorizon),
            "{tool}: a new table is read from its start"
        );
        assert_eq!(m.batch_size(), Some(100), "{tool}");
        assert_eq!(m.maximum_retry_attempts(), Some(5), "{tool}");
        assert_eq!(m.maximum_record_age_in_seconds(), Some(3600), "{tool}");
        assert_eq!(m.bisect_batch_on_function_error(), Some(true), "{tool}");
        assert_eq!(m.parallelization_factor(), Some(1), "{tool}");
        assert_eq!(
            m.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        let patterns: Vec<Value> = m
            .filter_criteria()
            .map(|f| f.filters())
            .unwrap_or_default()
            .iter()
            .filter_map(|f| serde_json::from_str(f.pattern()?).ok())
            .collect();
        assert_eq!(
            patterns,
            [serde_json::from_str::<Value>(pattern).unwrap()],
            "{tool}: infra/stream-filter.json, not a copy"
        );
        let on_failure = m
            .destination_config()
            .and_then(|c| c.on_failure())
            .and_then(|o| o.destination())
            .unwrap_or_default();
        assert!(
            on_failure.ends_with(&format!(":{}-stream-failures", d.prefix)),
            "{tool}: {on_failure}"
        );
        let q = &d.queue_mapping;
        assert_eq!(q.batch_size(), Some(10), "{tool}");
        assert_eq!(
            q.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        // The recovery function reads the stream mapping's on-failure queue.
        let recovery = c
            .lambda
            .list_event_source_mappings()
            .function_name(format!("{}-recovery", d.prefix))
            .send()
            .await
            .unwrap();
        let [r] = recovery.event_source_mappings() else {
            panic!("{tool}: one mapping for the recovery function: {recovery:?}")
        };
        assert_eq!(r.event_source_arn(), Some(on_failure), "{tool}");
        assert_eq!(r.batch_size(), Some(10), "{tool}");
        assert_eq!(
            r.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        let failures = queue_attributes(&c, &format!("{}-stream-failures", d.prefix)).await;
        let visibility: u32 = failures["VisibilityTimeout"].parse().unwrap();
        assert!(
            visibility >= 360,
            "{tool}: 6 × the recovery function's timeout"
        );
        // The schedule: a rule whose target is the sweeper.
        let sweeper_arn = c
            .lambda
            .get_function_configuration()
            .function_name(&d.sweeper)
            .send()
            .await
            .unwrap()
            .function_arn()
            .unwrap()
            .to_owned();
        let rules = c
            .eventbridge
            .list_rule_names_by_target()
            .target_arn(&sweeper_arn)
            .send()
            .await
            .unwrap();
        let [rule] = rules.rule_names() else {
            panic!("{tool}: one rule targets the sweeper: {rules:?}")
        };
        let rule = c
            .eventbridge
            .describe_rule()
            .name(rule)
            .send()
            .await
            .unwrap();
        assert_eq!(rule.schedule_expression(), Some("rate(1 minute)"), "{tool}");
    }
}

#[tokio::test]
async fn each_stack_creates_its_alarms_and_dashboard() {
    let config = outbox_tests::sdk_config().await;
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&config);
    for (tool, _, d) in each_stack().await {
        let alarms = cloudwatch
            .describe_alarms()
            .alarm_name_prefix(format!("{}-", d.prefix))
            .send()
            .await
            .unwrap();
        let names: Vec<String> = alarms
            .metric_alarms()
            .iter()
            .filter_map(|a| a.alarm_name())
            .map(|n| n.trim_start_matches(&format!("{}-", d.prefix)).to_owned())
            .collect();
        for want in [
            "OutboxDlqNotEmpty",
            "ConsumerDlqNotEmpty",
            "OrdersEventsDlqNotEmpty",
            "StreamDiscards",
            "RecoveryDlqNotEmpty",
            "RecoveryRangeLost",
            "RecoveryErrors",
            "RecoveryThrottles",
            "PublisherIteratorAge",
            "SweeperRecovering",
            "OldestPendingTooOld",
            "PublisherErrors",
            "SweeperErrors",
            "ConsumerErrors",
            "PublisherThrottles",
            "SweeperThrottles",
            "ConsumerThrottles",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{tool}: {want} in {names:?}"
            );
        }
        let oldest = alarms
            .metric_alarms()
            .iter()
            .find(|a| {
                a.alarm_name()
                    .is_some_and(|n| n.ends_with("OldestPendingTooOld"))
            })
            .unwrap();
        assert_eq!(
            oldest.treat_missing_data(),
            Some("breaching"),
            "{tool}: a dead sweeper is not silent"
        );
        assert!(
            oldest
                .dimensions()
                .iter()
                .any(|dim| dim.name() == Some("Service") && dim.value() == Some(&d.prefix)),
            "{tool}: the deployment's own metrics"
        );
        let dashboard = cloudwatch
            .get_dashboard()
            .dashboard_name(format!("{}-dashboard", d.prefix))
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_str(dashboard.dashboard_body().unwrap()).unwrap();
        assert!(
            body["widgets"].as_array().is_some_and(|w| w.len() >= 7),
            "{tool}: {body}"
        );
    }
}

#[tokio::test]
async fn the_labs_orders_flow_through_each_stack_and_copies_are_suppressed() {
    for (tool, c, d) in each_stack().await {
        // Given the lab's orders written as a minimal producer writes them: one order
        // three times (a producer that retried), and another
        let run = outbox_tests::unique("lab");
        let jobs = [("dedup", 4), ("dedup", 4), ("dedup", 4), ("other", 1)];
        for (i, (name, quantity)) in jobs.iter().enumerate() {
            let id = format!("{run}-{name}");
            let item: HashMap<String, AttributeValue> = [
                ("PK", format!("ORDER#{id}")),
                ("SK", format!("MESSAGE#ORDER_PLACED#{i}")),
                ("ItemType", "PENDING_MESSAGE".to_owned()),
                ("Topic", "orders".to_owned()),
                (
                    "Payload",
                    format!(r#"{{"id":"{id}","quantity":{quantity}}}"#),
                ),
                ("Status", "PENDING".to_owned()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), AttributeValue::S(v)))
            .chain([("RetryCount".to_owned(), AttributeValue::N("0".into()))])
            .collect();
            c.dynamodb
                .put_item()
                .table_name(&d.table)
                .set_item(Some(item))
                .send()
                .await
                .unwrap();
        }
        // Then the real publisher and consumer store two orders with the lab's totals
        let wanted = [
            (format!("{run}-dedup"), 1100),
            (format!("{run}-other"), 350),
        ];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let mut found = Vec::new();
            for (id, _) in &wanted {
                let got = c
                    .dynamodb
                    .get_item()
                    .table_name(&d.orders_table)
                    .key("id", AttributeValue::S(id.clone()))
                    .consistent_read(true)
                    .send()
                    .await
                    .unwrap()
                    .item;
                if let Some(item) = got {
                    found.push((id.clone(), outbox_tests::n(&item, "total_cents").unwrap()));
                }
            }
            if found.len() == wanted.len() {
                assert_eq!(found, wanted, "{tool}");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{tool}: only {found:?} after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        // And every copy was acknowledged: nothing waits on the consumer's queue
        outbox_tests::eventually(Duration::from_secs(30), || async {
            outbox_devkit::demo::observe::queue_depth(&c, &d.consumer_queue_url)
                .await
                .unwrap()
                == 0
        })
        .await;
    }
}

#[tokio::test]
async fn each_stack_routes_orders_events_to_its_fifo_queue_with_the_aggregate_as_group() {
    for (tool, c, d) in each_stack().await {
        let writer = dynamodb_outbox::OutboxWriter::new(c.dynamodb.clone(), &d.table);
        let aggregate = outbox_tests::unique("ORDER#fifo");
        let committed = writer
            .commit(
                vec![],
                &[dynamodb_outbox::NewMessage::new(
                    &aggregate,
                    "orders-events",
                    r#"{"n":1}"#,
                )],
            )
            .await
            .unwrap();
        let url = queue_url(&c, &format!("{}-orders-events.fifo", d.prefix)).await;
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while got.is_empty() && tokio::time::Instant::now() < deadline {
            got = drain(&c.sqs, &url).await;
        }
        let [m] = &got[..] else {
            panic!("{tool}: one message on the FIFO queue, got {got:?}")
        };
        assert_eq!(
            outbox_tests::attr(m, "outbox-message-id").as_deref(),
            Some(committed.message_ids[0].as_str()),
            "{tool}"
        );
        assert_eq!(
            outbox_tests::system_attr(
                m,
                aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId
            )
            .as_deref(),
            Some(aggregate.as_str()),
            "{tool}"
        );
    }
}

async fn queue_url(c: &Clients, name: &str) -> String {
    c.sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("queue {name}: {e:?}"))
        .queue_url()
        .unwrap()
        .to_owned()
}

async fn queue_attributes(c: &Clients, name: &str) -> HashMap<String, String> {
    let url = queue_url(c, name).await;
    c.sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.as_str().to_owned(), v))
        .collect()
}
