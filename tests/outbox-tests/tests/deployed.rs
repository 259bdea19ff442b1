//! The compiled functions behind MiniStack's real event source mappings, on a private
//! pipeline per test (see `outbox_tests::pipeline`), with crashes injected into the
//! processes themselves.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox::message::{ATTR_ERROR, ATTR_SEQUENCE};
use outbox_devkit::demo::{self, DemoOptions};
use outbox_devkit::deployment::log_records;
use outbox_tests::pipeline::{Faults, Pipeline, PipelineOptions, create_function, lambda_dir};
use outbox_tests::{Outbox, attr, drain, eventually, s, system_attr};
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn hundreds_of_orders_keep_every_guarantee_through_publisher_and_consumer_crashes() {
    // Given the deployed pipeline, whose publisher and consumer processes abort at
    // random after their writes took effect (the demo switches the faults on): one
    // publish call in ten, one stored order in thirty
    let p = Pipeline::deploy(PipelineOptions::default()).await;
    let opts = DemoOptions {
        orders: 300,
        rate: 0,
        publisher_crash: 0.1,
        consumer_crash: 0.03,
        progress: false,
        ..DemoOptions::default()
    };
    // When 300 transactions run (30 of them rolled back on purpose)
    let report = demo::run(&p.outbox.clients, &p.deployment, &opts)
        .await
        .expect("the demo runs");
    // Then every guarantee held
    assert!(report.broken.is_empty(), "{}", report.render());
    assert_eq!(report.committed, 270);
    assert_eq!(report.rolled_back, 30);
    assert_eq!(report.sent, 270, "every committed message ends SENT");
    assert_eq!(report.applied, 270, "every order stored exactly once");
    assert!(report.crashes > 0, "crashes happened: {}", report.render());
    assert!(
        report.duplicates > 0,
        "crashes cause redeliveries the consumer suppresses: {}",
        report.render()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_order_per_aggregate_holds_and_poison_stays_isolated_across_crashed_invocations() {
    // Given a publisher that dies after one send in five, behind batches of 10 (a
    // batch of 100 to a FIFO queue takes about 20 calls: it would almost never get
    // through; MiniStack does not bisect a failing batch as Lambda does)
    let p = Pipeline::deploy(PipelineOptions {
        consumer: false,
        batch_size: 10,
        faults: Faults {
            publisher: Some("SendMessageBatch:crash_after:0.2".into()),
            ..Faults::default()
        },
        ..PipelineOptions::default()
    })
    .await;
    // When 5 aggregates × 20 sequenced messages to the FIFO queue are committed,
    // interleaved, with a poison message (a topic without a route) every 15th
    // (the sweeper may pick them up 5 s after their commit)
    let writer = p.outbox.writer().sweep_grace(Duration::from_secs(5));
    let mut poison = 0;
    for n in 0..20u64 {
        for a in 0..5 {
            let mut messages = vec![
                NewMessage::new(format!("ACC#{a}"), "ledger", format!(r#"{{"n":{n}}}"#))
                    .sequence(n),
            ];
            if (n * 5 + a) % 15 == 14 {
                poison += 1;
                messages.push(NewMessage::new(format!("ACC#{a}"), "nowhere", "{}"));
            }
            writer.commit(vec![], &messages).await.expect("commit");
        }
    }
    // Then, once every item is finished — by the stream path, or by the sweeper, here
    // invoked as its schedule would: a FIFO message whose earlier sibling is still
    // pending waits for it in the sweeper index (the stream orders records per item,
    // so a transaction's poison message may come after the next message's record) —
    let ob = &p.outbox;
    eventually(Duration::from_secs(120), || async {
        let pending = ob
            .all_items()
            .await
            .iter()
            .any(|i| s(i, "Status").as_deref() == Some("PENDING"));
        if pending {
            p.sweep().await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        !pending
    })
    .await;
    // each aggregate's messages arrived in order, each once (FIFO deduplication
    // absorbs the republished batches)
    let mut per_group: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for m in drain(&ob.clients.sqs, &ob.fifo.url).await {
        let group = system_attr(&m, MessageSystemAttributeName::MessageGroupId).unwrap();
        let seq: u64 = attr(&m, ATTR_SEQUENCE).unwrap().parse().unwrap();
        per_group.entry(group).or_default().push(seq);
    }
    assert_eq!(per_group.len(), 5, "{per_group:?}");
    for (group, seqs) in &per_group {
        assert_eq!(seqs, &(0..20).collect::<Vec<u64>>(), "group {group}");
    }
    // and the poison went to the dead-letter queue with its reason, FAILED
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    let unique: std::collections::BTreeSet<String> = dead
        .iter()
        .filter_map(|m| attr(m, "outbox-message-id"))
        .collect();
    assert_eq!(
        unique.len(),
        poison,
        "one dead-letter copy per poison message"
    );
    assert!(
        dead.iter()
            .all(|m| attr(m, ATTR_ERROR).is_some_and(|e| e.contains("no route")))
    );
    let failed = ob
        .all_items()
        .await
        .into_iter()
        .filter(|i| s(i, "Status").as_deref() == Some("FAILED"))
        .count();
    assert_eq!(failed, poison);
    // and the processes really died and were restarted by the event source mapping
    let logs = p
        .deployment
        .logs(&ob.clients, &p.deployment.publisher, 0)
        .await
        .unwrap();
    assert!(
        logs.iter().any(|l| l.message.starts_with("injected crash")),
        "no crash happened"
    );
}

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
    // Given a message already due (a zero grace) and no stream mapping at all
    let p = Pipeline::deploy(PipelineOptions {
        stream_mapping: false,
        consumer: false,
        ..PipelineOptions::default()
    })
    .await;
    let ob = &p.outbox;
    let committed = ob
        .writer()
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

#[tokio::test(flavor = "multi_thread")]
async fn five_hundred_messages_through_faults_crashes_and_discards_lose_nothing() {
    // Given the deployed functions, 5% of every function's AWS calls failing (and
    // the producer's), crashes between steps, a stream mapping that discards what
    // keeps failing, SNS and EventBridge destinations with their own consumers
    let p = Pipeline::deploy(PipelineOptions::default()).await;
    let opts = outbox_devkit::chaos::ChaosOptions {
        messages: 500,
        fault_rate: 0.05,
        seed: 11,
        assets: lambda_dir(),
        settle_timeout: Duration::from_secs(240),
        progress: false,
    };
    // When 500 transactions run to quiescence
    let report = outbox_devkit::chaos::run(&p.outbox.clients, &p.deployment, &opts)
        .await
        .expect("the chaos run");
    // Then nothing was lost or phantom, no effect ran twice, FIFO order held, and
    // every FAILED message is poison with its dead-letter copy
    assert!(report.held(), "{}", report.render());
    assert_eq!(report.lost, 0);
    assert_eq!(report.phantom, 0);
    assert_eq!(report.effects_twice, 0);
    assert_eq!(report.fifo_violations, 0);
    assert!(
        report.faults_injected > 0 && report.failed_poison > 0,
        "{}",
        report.render()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_functions_log_is_read_whole_past_the_local_aws_page_of_ten_thousand_events() {
    outbox_tests::pipeline::require_ministack();
    // Given a function's log group with 12,500 lines (the local AWS answers a
    // FilterLogEvents with at most 10,000 events and no token)
    let ob = Outbox::new().await;
    let function = outbox_tests::unique("chatty");
    let group = format!("/aws/lambda/{function}");
    let logs = &ob.clients.logs;
    logs.create_log_group()
        .log_group_name(&group)
        .send()
        .await
        .expect("group");
    logs.create_log_stream()
        .log_group_name(&group)
        .log_stream_name("s")
        .send()
        .await
        .expect("stream");
    let start = dynamodb_outbox::clock::now_ms() - 60_000;
    for batch in 0..5 {
        let events: Vec<_> = (0..2_500)
            .map(|i| {
                aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
                    // Many lines share a millisecond, as a busy function's do.
                    .timestamp(start + (batch * 2_500 + i) / 4)
                    .message(format!("line {}", batch * 2_500 + i))
                    .build()
                    .expect("event")
            })
            .collect();
        logs.put_log_events()
            .log_group_name(&group)
            .log_stream_name("s")
            .set_log_events(Some(events))
            .send()
            .await
            .expect("put");
    }
    // When the dev kit reads it
    let lines = outbox_devkit::deployment::function_logs(&ob.clients, &function, start)
        .await
        .expect("read");
    // Then every line is there, once
    let distinct: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l.message.as_str()).collect();
    assert_eq!((lines.len(), distinct.len()), (12_500, 12_500));
}
