//! End to end through the local runner: the event source mappings and the schedule
//! that Lambda and EventBridge provide in AWS, with crashes injected.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use aws_sdk_sqs::types::MessageSystemAttributeName;
use harness::{Outbox, attr, drain, s, system_attr};
use outbox::NewMessage;
use outbox::message::{ATTR_ERROR, ATTR_SEQUENCE};
use outbox::stream::handle_stream_event;
use outbox_local::aws::Clients;
use outbox_local::demo::{self, DemoOptions};
use outbox_local::runner::{MappingSettings, StreamMapping};
use outbox_local::stream::StreamReader;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

#[tokio::test]
async fn hundreds_of_orders_keep_every_guarantee_through_publisher_and_consumer_crashes() {
    // Given the whole pipeline (producer, stream mapping + publisher, SQS mapping +
    // reference consumer, scheduled sweeper) with crashes injected on both sides
    let config = outbox_local::aws::sdk_config(Some(&harness::endpoint())).await;
    let (producer, pipeline) = (Clients::new(&config), Clients::new(&config));
    let opts = DemoOptions {
        orders: 300,
        rate: 0,
        rollback_every: 10,
        publisher_crash: 0.3,
        consumer_crash: 0.3,
        progress: false,
    };
    // When 300 transactions run (30 of them rolled back on purpose)
    let report = demo::run(&producer, &pipeline, &opts)
        .await
        .expect("demo runs");
    // Then every guarantee held
    assert!(report.broken.is_empty(), "{}", report.render());
    assert_eq!(report.committed, 270);
    assert_eq!(report.rolled_back, 30);
    assert_eq!(report.published, 270, "every committed message ends SENT");
    assert_eq!(report.consumed, 270, "every effect applied exactly once");
    assert!(
        report.crashes > 0,
        "crashes were injected: {}",
        report.render()
    );
    assert!(
        report.duplicates > 0,
        "crashes cause redeliveries the consumer suppresses"
    );
}

#[tokio::test]
async fn fifo_order_per_aggregate_holds_and_poison_stays_isolated_across_redeliveries() {
    // Given 5 aggregates × 20 sequenced messages to a FIFO queue, interleaved, with a
    // poison message (no route) every 15th
    let ob = Outbox::new().await;
    let writer = ob.writer();
    let mut poison = 0;
    for n in 0..20u64 {
        for a in 0..5 {
            writer
                .commit(
                    vec![],
                    &[
                        NewMessage::new(format!("ACCOUNT#{a}"), "ledger", format!("{{\"n\":{n}}}"))
                            .sequence(n),
                    ],
                )
                .await
                .expect("commit");
            if (n * 5 + a) % 15 == 14 {
                writer
                    .commit(
                        vec![],
                        &[NewMessage::new(format!("ACCOUNT#{a}"), "unrouted", "{}")],
                    )
                    .await
                    .expect("commit");
                poison += 1;
            }
        }
    }
    // When the stream mapping delivers it in batches of 25 and the first three
    // invocations crash after publishing (Lambda delivers those batches again)
    let publisher = ob.publisher();
    let mut mapping = StreamMapping::new(
        StreamReader::new(
            ob.clients.streams.clone(),
            ob.reader.stream_arn(),
            ob.clients.region.clone(),
        ),
        MappingSettings {
            batch_size: 25,
            max_retry_attempts: 10,
        },
    );
    let invocations = AtomicUsize::new(0);
    let handler = |event| {
        let (publisher, invocations) = (&publisher, &invocations);
        async move {
            let (response, _) = handle_stream_event(publisher, &event).await;
            if invocations.fetch_add(1, Ordering::SeqCst) < 3 {
                return Err("injected crash after publishing".to_owned());
            }
            Ok(response)
        }
    };
    for _ in 0..20 {
        let stats = mapping.poll(&handler).await.expect("poll");
        if stats.delivered == 0 {
            break;
        }
    }
    assert!(invocations.load(Ordering::SeqCst) > 3);
    // Then each group's messages arrive in sequence order, each once (FIFO dedup by MessageId)
    let msgs = drain(&ob.clients.sqs, &ob.fifo.url).await;
    let mut by_group: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for m in &msgs {
        let group = system_attr(m, MessageSystemAttributeName::MessageGroupId).expect("group");
        let seq: u64 = attr(m, ATTR_SEQUENCE)
            .expect("sequence")
            .parse()
            .expect("number");
        by_group.entry(group).or_default().push(seq);
    }
    assert_eq!(by_group.len(), 5);
    for (group, seqs) in &by_group {
        assert_eq!(seqs, &(0..20).collect::<Vec<u64>>(), "group {group}");
    }
    // And every poison message is FAILED with a reason and on the dead-letter queue,
    // without holding back its aggregate
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert!(
        dead.len() >= poison,
        "{} dead letters for {poison} poison",
        dead.len()
    );
    assert!(
        dead.iter()
            .all(|m| attr(m, ATTR_ERROR).is_some_and(|e| e.contains("no route")))
    );
    let items = ob.all_items().await;
    let failed = items
        .iter()
        .filter(|i| s(i, "Status").as_deref() == Some("FAILED"))
        .count();
    let sent = items
        .iter()
        .filter(|i| s(i, "Status").as_deref() == Some("SENT"))
        .count();
    assert_eq!((sent, failed), (100, poison));
}

#[tokio::test]
async fn the_runner_publishes_what_an_existing_table_holds_and_stops_when_told() {
    // Given an existing outbox with committed messages
    let ob = Outbox::new().await;
    let c = ob
        .writer()
        .commit(
            vec![],
            &[
                NewMessage::new("A", "orders", "{}"),
                NewMessage::new("B", "orders", "{}"),
            ],
        )
        .await
        .expect("commit");
    // When `outbox-local run` runs over it from the start of the stream for a moment
    let config = ob.config();
    let sweeper = outbox::sweep::SweeperConfig::new(config.clone());
    let opts = outbox_local::run::RunOptions {
        sweep_every: std::time::Duration::from_secs(1),
        poll_every: std::time::Duration::from_millis(100),
        from_start: true,
        stop_after: Some(std::time::Duration::from_secs(2)),
    };
    outbox_local::run::run(
        &ob.clients,
        config,
        sweeper,
        MappingSettings::default(),
        &opts,
    )
    .await
    .expect("runs and stops");
    // Then both messages are published and SENT
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 2);
    for (pk, sk) in [("A", &c.sort_keys[0]), ("B", &c.sort_keys[1])] {
        let item = ob.item(pk, sk).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    }
}
