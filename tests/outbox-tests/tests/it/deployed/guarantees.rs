//! The guarantees end to end through the deployed functions: every order once, FIFO
//! order per aggregate, poison isolated, through crashes, faults and discards.

use aws_sdk_sqs::types::MessageSystemAttributeName;
use dynamodb_outbox::NewMessage;
use dynamodb_outbox_core::message::{ATTR_ERROR, ATTR_SEQUENCE};
use outbox_devkit::demo::{self, DemoOptions};
use outbox_tests::pipeline::{Faults, Pipeline, PipelineOptions, lambda_dir};
use outbox_tests::{attr, drain, eventually, s, system_attr};
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
    // And every library order's trace (one in seven orders is the minimal producer's,
    // without one) reached its outbox item and, through the deployed publisher or
    // the sweeper's republish, the consumer: every RESULT line read for a traced order
    // names its trace (any other is in `broken`, asserted empty above). A consumer
    // that died after deleting a finished message never logs its line, so not every
    // order has one.
    let traces = &report.traces;
    assert_eq!(
        traces.traced,
        report.committed - report.minimal,
        "{}",
        report.render()
    );
    assert_eq!(traces.on_item, traces.traced, "{}", report.render());
    assert!(traces.at_consumer > 0, "{}", report.render());
    assert!(traces.example.is_some(), "{}", report.render());
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
    // (indexed at commit: the sweeper may pick them up 5 s after their commit)
    let writer = p
        .outbox
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::from_secs(5));
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
async fn five_hundred_messages_through_faults_crashes_and_discards_lose_nothing() {
    // Given the deployed functions, 5% of every function's AWS calls failing (and
    // the producer's), crashes between steps, a stream mapping that discards what
    // keeps failing, the order fence's index reads lagging, the publisher's stream
    // batches delivered again as Lambda redelivers them (from the lowest reported
    // record, and some successful ones) and split into the concurrent batches a
    // parallelization factor of 2 lets AWS run (per-item order only: two messages of
    // one FIFO aggregate may run apart, in either order), SNS and EventBridge
    // destinations with their own consumers; every library message committed in a
    // trace of its own
    let p = Pipeline::deploy(PipelineOptions::default()).await;
    let opts = outbox_devkit::chaos::ChaosOptions {
        messages: 500,
        fault_rate: 0.05,
        seed: 11,
        assets: lambda_dir(),
        settle_timeout: Duration::from_secs(240),
        // shown only if the test fails: where the run stood when it was judged
        progress: true,
        parallelization_factor: 2,
    };
    // When 500 transactions run to quiescence
    let report = outbox_devkit::chaos::run(&p.outbox.clients, &p.deployment, &opts)
        .await
        .expect("the chaos run");
    eprintln!("{}", report.render());
    // Then nothing was lost or phantom, no effect ran twice, FIFO order held, nothing
    // was sent again after its SENT mark, AWS denied no call, and every FAILED
    // message is poison with its dead-letter copy
    assert!(report.held(), "{}", report.render());
    assert_eq!(report.lost, 0);
    assert_eq!(report.phantom, 0);
    assert_eq!(report.effects_twice, 0);
    assert_eq!(report.fifo_violations, 0);
    assert_eq!(report.sent_after_sent, 0);
    assert_eq!(report.iam_denials, 0);
    // and the faults really happened, batches ran as concurrent parts among them
    assert!(
        report.faults_injected > 0 && report.failed_poison > 0 && report.split_batches > 0,
        "{}",
        report.render()
    );
    // and every library message's trace arrived with it, through every kind of
    // destination (the consumers behind the standard queue, the SNS topic and the
    // EventBridge bus name it on their RESULT lines; the FIFO copies carry it),
    // whether the publisher or the sweeper sent it; the minimal producer's messages,
    // committed in none, arrived in none (`held` above counts a change as broken)
    let traces = &report.traces;
    assert_eq!(traces.on_item, traces.traced, "{}", report.render());
    for topic in ["orders", "orders-events", "chaos-sns", "chaos-bus"] {
        let arrived = traces.arrived.get(topic).copied().unwrap_or_default();
        assert!(
            arrived.seen > 0,
            "no trace seen at {topic}: {}",
            report.render()
        );
        assert_eq!(
            arrived.carried,
            arrived.seen,
            "{topic}: {}",
            report.render()
        );
    }
    assert_eq!((traces.wrong, traces.invented), (0, 0));
    // The redeliveries and the lagging reads are drawn per batch and per index read
    // within a 10 s window, so how many a 500-message run meets depends on the local
    // AWS's timing (one CI run met 1 and 0): reported above, not required.
    if report.replays == 0 || report.lagged_reads == 0 {
        eprintln!(
            "this run met {} redelivered batches and {} stale index reads",
            report.replays, report.lagged_reads
        );
    }
}
