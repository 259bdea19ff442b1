//! A deployment whose key name is not its table's (issue 39): the functions look at
//! the table on their first invocation and refuse work, naming the setting, the
//! configured and the actual name — the batch is failed whole, so the stream retries
//! it and nothing is dead-lettered — and `outbox-ops check` says the same. Before, the
//! publisher dead-lettered every message and the sweeper's errors read like IAM's.

use dynamodb_outbox::lambda::{PublisherFunction, SweeperFunction};
use dynamodb_outbox::lambda_runtime::{Context, LambdaEvent};
use dynamodb_outbox::sweep::SweeperConfig;
use dynamodb_outbox::{KeyNames, NewMessage};
use outbox_tests::{Outbox, drain_bodies, s};

/// An application's table: keyed `tenant_id`/`entity_id`, TTL on `expires_at`.
fn table_names() -> KeyNames {
    KeyNames::new("tenant_id", "entity_id").ttl_attribute("expires_at")
}

/// The deployment's names: the partition key left at its default, `PK`.
fn wrong_names() -> KeyNames {
    KeyNames::new("PK", "entity_id").ttl_attribute("expires_at")
}

fn assert_names_the_setting(error: &str) {
    for part in [
        "OUTBOX_PARTITION_KEY",
        "configured `PK`",
        "the table has `tenant_id`",
    ] {
        assert!(error.contains(part), "`{part}` not in: {error}");
    }
}

#[tokio::test]
async fn functions_configured_with_a_wrong_key_name_refuse_work_and_check_names_the_setting() {
    // Given a message committed to a table keyed tenant_id/entity_id
    let mut ob = Outbox::keyed(table_names()).await;
    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("TENANT#1", "orders", r#"{"n":1}"#)],
        )
        .await
        .expect("commit");
    let sort_key = committed.sort_keys[0].clone();
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 1, "{event:?}");
    let aws = outbox_tests::sdk_config().await;

    // When a publisher configured with the partition key `PK` is handed its batch
    let mut wrong = ob.config();
    wrong.key_names = wrong_names();
    let publisher = PublisherFunction::new(wrong.clone(), "table-check", &aws).await;
    for _ in 0..2 {
        let refused = publisher
            .handle(LambdaEvent::new(event.clone(), Context::default()))
            .await
            .expect_err("a table unlike the configuration refuses the batch");
        // Then the whole invocation fails, naming the setting and both names (again
        // on the stream's retry)
        assert_names_the_setting(&refused.to_string());
    }
    // And the message is still PENDING: nothing published, nothing dead-lettered
    let item = ob.item("TENANT#1", &sort_key).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"), "{item:?}");
    assert_eq!(
        drain_bodies(&ob.clients.sqs, &ob.dlq_url).await,
        Vec::<String>::new()
    );
    assert_eq!(
        drain_bodies(&ob.clients.sqs, &ob.queue.url).await,
        Vec::<String>::new()
    );

    // And the sweeper, configured the same, fails its invocation without touching it
    let sweeper = SweeperFunction::new(SweeperConfig::new(wrong), "table-check", &aws).await;
    let refused = sweeper
        .handle(LambdaEvent::new(serde_json::json!({}), Context::default()))
        .await
        .expect_err("the sweeper refuses too");
    assert_names_the_setting(&refused.to_string());
    let after = ob.item("TENANT#1", &sort_key).await.expect("item");
    assert_eq!(after, item, "the sweeper touched the item");

    // And `outbox-ops check` finds the one mismatch, naming the setting
    let table = outbox_ops::Table::new(&ob.table).key_names(wrong_names());
    let report = outbox_ops::check(&ob.clients.dynamodb, &table)
        .await
        .expect("described");
    assert_eq!(report.mismatches(), 1, "{:?}", report.lines());
    let lines = report.lines().join("\n");
    assert!(lines.contains("MISMATCH  partition key"), "{lines}");
    assert_names_the_setting(&lines);

    // When the configuration names the table's keys
    let right = outbox_ops::check(&ob.clients.dynamodb, &ob.ops_table())
        .await
        .expect("described");
    // Then every check passes, and the publisher publishes the same batch
    assert_eq!(right.mismatches(), 0, "{:?}", right.lines());
    let publisher = PublisherFunction::new(ob.config(), "table-check", &aws).await;
    let response = publisher
        .handle(LambdaEvent::new(event, Context::default()))
        .await
        .expect("the matching table is worked on");
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let item = ob.item("TENANT#1", &sort_key).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{item:?}");
    assert_eq!(
        drain_bodies(&ob.clients.sqs, &ob.queue.url).await,
        [r#"{"n":1}"#]
    );
}
