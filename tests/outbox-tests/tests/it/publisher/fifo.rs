//! FIFO: the aggregate is the group and the message id the dedup id, in order; a
//! message whose earlier one is still pending is left for the sweeper; one whose place
//! the fence cannot tell keeps its shard's later records behind it.

use aws_sdk_sqs::types::MessageSystemAttributeName;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{AwsPublisher, FromSdkConfig, NewMessage};
use outbox_tests::minimal_item;
use outbox_tests::{Outbox, drain, drain_bodies, n, s, system_attr};

#[tokio::test]
async fn fifo_messages_carry_the_aggregate_as_group_and_message_id_as_dedup_id_in_order() {
    let mut ob = Outbox::new().await;
    let w = ob.writer();
    let mut ids = Vec::new();
    for i in 0..5 {
        let c = w
            .commit(
                vec![],
                &[NewMessage::new("ACCOUNT#7", "ledger", format!("{{\"n\":{i}}}")).sequence(i)],
            )
            .await
            .expect("commit");
        ids.push(c.message_ids[0].clone());
    }
    let event = ob.filtered_event().await;
    let (response, _) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty());
    let msgs = drain(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(msgs.len(), 5);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageGroupId).as_deref(),
            Some("ACCOUNT#7")
        );
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageDeduplicationId).as_deref(),
            Some(ids[i].as_str())
        );
        assert_eq!(
            m.body(),
            Some(format!("{{\"n\":{i}}}").as_str()),
            "order kept"
        );
    }
}

/// The sort keys of an event's records.
fn record_sks(event: &aws_lambda_events::event::dynamodb::Event) -> Vec<String> {
    event
        .records
        .iter()
        .filter_map(|r| dynamodb_outbox_core::schema::item_key(&r.change.keys).map(|k| k.sk))
        .collect()
}

#[tokio::test]
async fn a_fifo_message_whose_earlier_one_is_still_pending_is_left_for_the_sweeper_in_order() {
    // Given two FIFO messages of one account, indexed at commit (so the sweeper holds
    // the earlier one without the recovery function), and a batch holding only the
    // later one: the mapping discarded the earlier one's records (it is still PENDING)
    let mut ob = Outbox::new().await;
    let w = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(std::time::Duration::ZERO);
    let mut sks = Vec::new();
    for n in 0..2 {
        let c = w
            .commit(
                vec![],
                &[NewMessage::new("ACCOUNT#9", "ledger", format!("m{n}"))],
            )
            .await
            .expect("commit");
        sks.push(c.sort_keys[0].clone());
    }
    let event = ob.filtered_event().await;
    assert_eq!(record_sks(&event), sks);
    let later = outbox_tests::stream::event_of(event.records[1..].to_vec());

    // When the stream publisher handles it
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;

    // Then it is neither published (it would overtake) nor reported for retry (which
    // would stall the shard): it waits, PENDING, in the sweeper index
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.sent, summary.deferred), (0, 1), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let item = ob.item("ACCOUNT#9", &sks[1]).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert!(n(&item, "SweepDueAt").is_some());

    // And the sweeper publishes both, in order
    let sweeper = dynamodb_outbox::sweep::AwsSweeper::with_sink(
        dynamodb_outbox::sweep::SweeperConfig::new(ob.config()),
        ob.clients.dynamodb.clone(),
        ob.clients.sink(),
    );
    let budget = dynamodb_outbox_core::policy::Budget::for_window(
        dynamodb_outbox_core::clock::now_ms() + 1_000,
        std::time::Duration::from_secs(30),
    );
    let swept = sweeper.sweep(budget).await;
    assert_eq!(swept.published, 2, "{swept:?}");
    let bodies = drain_bodies(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(bodies, ["m0", "m1"]);
}

#[tokio::test]
async fn a_minimal_producers_fifo_message_behind_a_pending_one_waits_in_the_sweeper_index() {
    // Given two FIFO items of a minimal producer (no index attributes), and a batch
    // holding only the later one
    let mut ob = Outbox::new().await;
    let (first, second) = ("MESSAGE#POSTED#0001", "MESSAGE#POSTED#0002");
    for sk in [first, second] {
        ob.put_raw(minimal_item("LEDGER#3", sk, "ledger", sk)).await;
    }
    let event = ob.filtered_event().await;
    assert_eq!(record_sks(&event), [first, second]);
    let later = outbox_tests::stream::event_of(event.records[1..].to_vec());

    // When the stream publisher handles it
    let (response, summary) = handle_stream_event(&ob.publisher(), &later).await;

    // Then it waits, not retried, and is put in the sweeper index so that it is found
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.deferred, 1, "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let item = ob.item("LEDGER#3", second).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
    assert_eq!(
        s(&item, "SweepShard"),
        Some(dynamodb_outbox_core::SweepShards::default().shard_of("LEDGER#3"))
    );
}

#[tokio::test]
async fn a_fifo_message_the_fence_cannot_place_is_reported_so_no_later_one_overtakes_it() {
    // Given two FIFO messages of one account in one batch, indexed at commit (so the
    // fence reads their index shard, not their partition), and a publisher whose
    // order fence read (the PartiQL select on the sweep index, its only
    // ExecuteStatement) fails every time: the fault layer answers DynamoDB's 500
    let mut ob = Outbox::new().await;
    let w = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(std::time::Duration::ZERO);
    for n in 0..2 {
        w.commit(
            vec![],
            &[NewMessage::new("ACCOUNT#7", "ledger", format!("m{n}"))],
        )
        .await
        .expect("commit");
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), 2);
    let first = event.records[0].change.sequence_number.clone();
    let plan = "ExecuteStatement:server_error:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(5));
    let failing = AwsPublisher::with_sink(
        ob.config(),
        aws_sdk_dynamodb::Client::new(&faulty),
        ob.clients.sink(),
    );

    // When the stream publisher handles the batch
    let (response, summary) = handle_stream_event(&failing, &event).await;

    // Then nothing goes out, and the first message is reported for retry: Lambda
    // delivers the shard again from it, so the later one cannot meet a fence whose
    // index does not list the first yet (AWS's indexes lag writes) and overtake it.
    // Before, neither was reported and the mapping moved on.
    let reported: Vec<Option<String>> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(reported.first(), Some(&first), "{summary:?}");
    assert_eq!((summary.sent, summary.fence_unread), (0, 1), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());

    // And delivered again once the fence can read, both go out, in order
    let (response, summary) = handle_stream_event(&ob.publisher(), &event).await;
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    let bodies = drain_bodies(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(bodies, ["m0", "m1"]);
}
