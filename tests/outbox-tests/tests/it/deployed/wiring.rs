//! How the functions are wired: the stream filter, the sweeper binary, a missing
//! variable named, a minimal producer's discarded records still published.

use aws_sdk_lambda::primitives::Blob;
use dynamodb_outbox::NewMessage;
use outbox_devkit::deployment::log_records;
use outbox_tests::pipeline::{Faults, Pipeline, PipelineOptions, create_function, lambda_dir};
use outbox_tests::{Outbox, drain, eventually, s};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn the_stream_mapping_delivers_only_new_pending_outbox_items_to_the_publisher() {
    // Given the deployed FilterCriteria in front of the publisher
    let p = Pipeline::deploy(PipelineOptions {
        consumer: false,
        ..PipelineOptions::default()
    })
    .await;
    let ob = &p.outbox;
    // When the table sees a business item, its update and delete, a FAILED outbox
    // item, and two new pending messages (whose SENT marks are MODIFY records)
    let business = |v: &str| {
        outbox_tests::Item::from([
            ("PK".to_owned(), outbox_tests::sv("USER#1")),
            ("SK".to_owned(), outbox_tests::sv("PROFILE")),
            ("Name".to_owned(), outbox_tests::sv(v)),
        ])
    };
    ob.put_raw(business("a")).await;
    ob.put_raw(business("b")).await;
    ob.clients
        .dynamodb
        .delete_item()
        .table_name(&ob.table)
        .key("PK", outbox_tests::sv("USER#1"))
        .key("SK", outbox_tests::sv("PROFILE"))
        .send()
        .await
        .unwrap();
    ob.put_raw(outbox_tests::Item::from([
        ("PK".to_owned(), outbox_tests::sv("USER#2")),
        ("SK".to_owned(), outbox_tests::sv("MESSAGE#X#1")),
        ("ItemType".to_owned(), outbox_tests::sv("PENDING_MESSAGE")),
        ("Status".to_owned(), outbox_tests::sv("FAILED")),
        ("Topic".to_owned(), outbox_tests::sv("orders")),
        ("Payload".to_owned(), outbox_tests::sv("{}")),
    ]))
    .await;
    let writer = ob.writer();
    for n in 0..2 {
        writer
            .commit(
                vec![],
                &[NewMessage::new("USER#3", "orders", format!("{n}"))],
            )
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(30), || async {
        ob.all_items()
            .await
            .iter()
            .filter(|i| s(i, "Status").as_deref() == Some("SENT"))
            .count()
            == 2
    })
    .await;
    // Let any stray record reach the function before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Then the publisher was handed exactly the two new pending messages
    let logs = p
        .deployment
        .logs(&ob.clients, &p.deployment.publisher, 0)
        .await
        .unwrap();
    let delivered: u64 = log_records(&logs, "stream batch done")
        .iter()
        .map(|r| r["records"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(delivered, 2, "{logs:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweeper_binary_recovers_a_message_the_stream_path_never_published() {
    // Given a message indexed at commit, already due (a zero grace), and no stream
    // mapping at all
    let p = Pipeline::deploy(PipelineOptions {
        stream_mapping: false,
        consumer: false,
        ..PipelineOptions::default()
    })
    .await;
    let ob = &p.outbox;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("USER#2", "orders", r#"{"y":2}"#)])
        .await
        .unwrap();
    // When the deployed sweeper runs, as its schedule runs it
    let summary = p.sweep().await;
    // Then it published the message and marked it SENT
    assert_eq!(summary["published"], 1, "{summary}");
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 1);
    let item = ob.item("USER#2", &committed.sort_keys[0]).await.unwrap();
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_publisher_deployed_without_its_table_variable_fails_naming_it() {
    outbox_tests::pipeline::require_ministack();
    // Given the publisher deployed without OUTBOX_TABLE_NAME
    let ob = Outbox::new().await;
    let name = outbox_tests::unique("no-table-publisher");
    create_function(
        &ob,
        &name,
        &lambda_dir().join("outbox-publisher"),
        vec![
            (
                "OUTBOX_ROUTES".into(),
                format!(r#"{{"orders":"{}"}}"#, ob.queue.url),
            ),
            ("OUTBOX_DLQ_URL".into(), ob.dlq_url.clone()),
        ],
    )
    .await;
    // When it is invoked
    let out = ob
        .clients
        .lambda
        .invoke()
        .function_name(&name)
        .payload(Blob::new(r#"{"Records":[]}"#))
        .send()
        .await
        .expect("invoke");
    // Then the invocation fails at start-up, and the error names the variable
    assert!(out.function_error().is_some(), "{out:?}");
    let payload = String::from_utf8_lossy(out.payload().map(|p| p.as_ref()).unwrap_or_default());
    assert!(payload.contains("OUTBOX_TABLE_NAME"), "{payload}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_minimal_producers_message_whose_stream_records_lambda_discards_is_still_published() {
    // Given a publisher whose every invocation dies before it sends anything, a stream
    // mapping that gives up on records older than 5 s (to its on-failure queue), and
    // the recovery function reading that queue
    let p = Pipeline::deploy(PipelineOptions {
        consumer: false,
        max_record_age_seconds: 5,
        faults: Faults {
            publisher: Some("SendMessageBatch:crash_before:1".into()),
            ..Faults::default()
        },
        ..PipelineOptions::default()
    })
    .await;
    let ob = &p.outbox;
    // When a minimal producer writes a message (no index attributes: no sweep would
    // ever find it)
    ob.put_raw(outbox_tests::Item::from([
        ("PK".to_owned(), outbox_tests::sv("USER#9")),
        ("SK".to_owned(), outbox_tests::sv("MESSAGE#ORDER_PLACED#1")),
        ("ItemType".to_owned(), outbox_tests::sv("PENDING_MESSAGE")),
        ("Topic".to_owned(), outbox_tests::sv("orders")),
        ("Payload".to_owned(), outbox_tests::sv(r#"{"id":"9"}"#)),
        ("Status".to_owned(), outbox_tests::sv("PENDING")),
        ("RetryCount".to_owned(), outbox_tests::nv(0)),
    ]))
    .await;
    // Then, once Lambda discarded its records, the item is back in the sweeper's index
    eventually(Duration::from_secs(60), || async {
        ob.item("USER#9", "MESSAGE#ORDER_PLACED#1")
            .await
            .is_some_and(|i| i.contains_key("SweepDueAt"))
    })
    .await;
    // And the next scheduled sweep publishes it
    let summary = p.sweep().await;
    assert_eq!(summary["published"], 1, "{summary}");
    let item = ob.item("USER#9", "MESSAGE#ORDER_PLACED#1").await.unwrap();
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 1);
}
