//! Order per aggregate in the sweeper: a later message waits behind a failed earlier
//! one, or one whose claim answer was lost; a message whose order fence cannot read
//! its aggregate's pending messages ends FAILED, never parked.

use super::{config, sweep_at, sweeper};
use dynamodb_outbox::sweep::AwsSweeper;
use dynamodb_outbox::{Destination, FromSdkConfig, NewMessage, Routes};
use dynamodb_outbox_core::clock::now_ms;
use outbox_tests::{Outbox, drain, drain_bodies, endpoint, n, s, unique};
use std::time::Duration;

#[tokio::test]
async fn a_later_message_waits_behind_a_failed_earlier_one_in_another_chunk() {
    // Given two due messages of one aggregate, the earlier to a failing queue, and a
    // sweeper that claims one item per chunk
    let ob = Outbox::new().await;
    let missing = format!("{}/123456789012/{}", endpoint(), unique("no-such-queue"));
    let mut publisher = ob.config();
    publisher.routes = Routes::new(
        [
            ("orders".to_owned(), Destination::sqs(&ob.queue.url)),
            ("broken".to_owned(), Destination::sqs(&missing)),
        ],
        None,
    );
    let mut cfg = config(publisher);
    cfg.limits.chunk = 1;
    let w = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO);
    let first = w
        .commit(vec![], &[NewMessage::new("ACCOUNT#1", "broken", "first")])
        .await
        .expect("commit");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = w
        .commit(vec![], &[NewMessage::new("ACCOUNT#1", "orders", "second")])
        .await
        .expect("commit");

    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, cfg), now_ms() + 1_000).await;

    // Then the later message was not published, and is due after the earlier one
    assert_eq!(summary.published, 0, "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.queue.url).await.is_empty());
    let a1 = ob
        .item("ACCOUNT#1", &first.sort_keys[0])
        .await
        .expect("item");
    let a2 = ob
        .item("ACCOUNT#1", &second.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&a2, "Status").as_deref(), Some("PENDING"));
    assert!(
        n(&a2, "SweepDueAt") > n(&a1, "SweepDueAt"),
        "{:?} {:?}",
        n(&a1, "SweepDueAt"),
        n(&a2, "SweepDueAt")
    );
}

#[tokio::test]
async fn a_later_fifo_message_waits_behind_an_earlier_one_whose_claim_answer_was_lost() {
    // Given two FIFO messages of one account, the earlier due now, the later in 30 s
    let ob = Outbox::new().await;
    let w = ob.writer();
    let first = w
        .clone()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("ACCOUNT#5", "ledger", "first")])
        .await
        .expect("commit");
    let second = w
        .index_at_commit(true)
        .sweep_grace(Duration::from_secs(30))
        .commit(vec![], &[NewMessage::new("ACCOUNT#5", "ledger", "second")])
        .await
        .expect("commit");
    let t0 = now_ms() + 1_000;
    // And a sweep whose claim of the earlier one takes effect while its answer is lost
    // (it leases the message for the sweep's time, and cannot publish it)
    let plan = "UpdateItem:lost_response:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(3));
    let lost = AwsSweeper::with_sink(
        config(ob.config()),
        aws_sdk_dynamodb::Client::new(&faulty),
        ob.clients.sink(),
    );
    let summary = sweep_at(&lost, t0).await;
    assert_eq!((summary.found, summary.published), (1, 0), "{summary:?}");
    let leased = ob
        .item("ACCOUNT#5", &first.sort_keys[0])
        .await
        .expect("item");
    let lease = n(&leased, "SweepDueAt").expect("leased");
    assert!(lease > t0 + 60_000, "{lease}");

    // When a healthy sweep runs a minute later: the later message is due, the earlier
    // one is still leased
    let sweeper = sweeper(&ob.clients, config(ob.config()));
    let summary = sweep_at(&sweeper, t0 + 60_000).await;

    // Then the later message is not published before the earlier one, and waits until
    // after the lease
    assert_eq!((summary.claimed, summary.published), (1, 0), "{summary:?}");
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
    let held = ob
        .item("ACCOUNT#5", &second.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&held, "Status").as_deref(), Some("PENDING"));
    assert!(n(&held, "SweepDueAt") > Some(lease), "{held:?}");
    assert_eq!(n(&held, "RetryCount"), Some(0), "its attempt given back");

    // And once the lease is over, one sweep publishes both in order
    let summary = sweep_at(&sweeper, n(&held, "SweepDueAt").expect("due")).await;
    assert_eq!(summary.published, 2, "{summary:?}");
    let bodies = drain_bodies(&ob.clients.sqs, &ob.fifo.url).await;
    assert_eq!(bodies, ["first", "second"]);
}

#[tokio::test]
async fn a_fifo_message_whose_fence_read_keeps_failing_ends_failed_with_the_reason_and_a_dead_letter_copy()
 {
    // Given a FIFO message due now, and a sweeper whose order fence read (the PartiQL
    // select on the sweep index, its only ExecuteStatement) fails every time: the
    // fault layer answers each with DynamoDB's 500 InternalFailure
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("ACCOUNT#9", "ledger", "only")])
        .await
        .expect("commit");
    let sk = committed.sort_keys[0].clone();
    let plan = "ExecuteStatement:server_error:1".parse().expect("plan");
    let faulty = outbox_faults::with_plan(outbox_tests::sdk_config().await, plan, Some(5));
    let failing = AwsSweeper::with_sink(
        config(ob.config()),
        aws_sdk_dynamodb::Client::new(&faulty),
        ob.clients.sink(),
    );

    // When it sweeps each time the message comes due, up to the limit (3)
    let mut now = now_ms() + 1_000;
    for attempt in 1..=3 {
        let summary = sweep_at(&failing, now).await;
        // Then it is not sent (the fence cannot tell whether an earlier message is
        // pending), and each attempt counts — before, each was given back and the
        // message was parked for ever — with the truth in LastError
        assert_eq!(
            (summary.claimed, summary.published),
            (1, 0),
            "attempt {attempt}: {summary:?}"
        );
        let item = ob.item("ACCOUNT#9", &sk).await.expect("item");
        assert_eq!(n(&item, "RetryCount"), Some(attempt), "{item:?}");
        let reason = s(&item, "LastError").unwrap_or_default();
        assert!(
            reason.contains("order fence could not read")
                && reason.contains("ExecuteStatement (dynamodb:PartiQLSelect)")
                && !reason.contains("an earlier message of the same aggregate is still pending"),
            "{reason}"
        );
        now = n(&item, "SweepDueAt").expect("due again");
    }

    // And past the limit it is FAILED with the reason, its payload on the dead-letter
    // queue, nothing on its FIFO queue
    let summary = sweep_at(&failing, now).await;
    assert_eq!((summary.claimed, summary.failed), (1, 1), "{summary:?}");
    let item = ob.item("ACCOUNT#9", &sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"));
    let reason = s(&item, "LastError").unwrap_or_default();
    assert!(
        reason.starts_with("gave up after 3 attempts: not sent: the order fence could not read"),
        "{reason}"
    );
    let dead = drain(&ob.clients.sqs, &ob.dlq_url).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body(), Some("only"));
    assert!(drain(&ob.clients.sqs, &ob.fifo.url).await.is_empty());
}
