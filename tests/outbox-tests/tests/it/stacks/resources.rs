//! The table and the queues each stack creates, as the README describes them.

use super::{each_stack, queue_attributes, queue_url};
use aws_sdk_dynamodb::types::{
    IndexStatus, KeyType, ProjectionType, StreamViewType, TimeToLiveStatus,
};
use dynamodb_outbox_core::schema::TABLE;
use serde_json::Value;

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
        // The example's consumer queues allow 10 receives (consumerMaxReceiveCount:
        // frequent crashes charge the neighbours of a batch), the outbox's own 5.
        let queues = [
            ("orders-queue", Some(("orders-queue-dlq", "10"))),
            ("orders-events.fifo", Some(("orders-events-dlq.fifo", "10"))),
            ("dlq", None),
            ("stream-failures", Some(("stream-failures-dlq", "5"))),
            ("stream-failures-dlq", None),
            ("orders-queue-dlq", None),
            ("orders-events-dlq.fifo", None),
        ];
        for (name, redrive_to) in queues {
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
            if let Some((dlq, receives)) = redrive_to {
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
                    receives,
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
