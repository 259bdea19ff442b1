//! Redriven FAILED messages are republished once and end SENT, and a sweep that
//! claimed one before its redrive does not fail it again.

use super::{config, sweep_at, sweeper};
use crate::marks::partiql_conditions_enforced;
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox::{Destination, NewMessage, Routes};
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use dynamodb_outbox_core::policy::failed_marks;
use dynamodb_outbox_core::ports::{
    Claim, MarkChange, MarkCondition, MarkOutcome, OutboxStore, SweepStore,
};
use dynamodb_outbox_core::schema::ItemKey;
use outbox_ops::{self as ops, Selection};
use outbox_tests::{Outbox, attr, drain, n, s};
use std::time::Duration;

#[tokio::test]
async fn redriven_failed_messages_are_republished_once_and_end_sent() {
    // Given two messages on a topic with no route: the sweeper gives up on them
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(
            vec![],
            &[
                NewMessage::new("REFUND#1", "refunds", r#"{"refund":1}"#),
                NewMessage::new("REFUND#2", "refunds", r#"{"refund":2}"#),
            ],
        )
        .await
        .expect("commit");
    let first = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    assert_eq!(first.failed, 2, "{first:?}");
    drain(&ob.clients.sqs, &ob.dlq_url).await;
    let db = &ob.clients.dynamodb;

    // Then the operator sees them with their reason
    let failed = ops::failed(db, &ob.ops_table(), Some("refunds"))
        .await
        .expect("failed");
    assert_eq!(failed.len(), 2);
    assert!(
        failed.iter().all(|f| f
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("no route for topic `refunds`"))),
        "{failed:?}"
    );
    let status = ops::status(db, &ob.ops_table()).await.expect("status");
    assert_eq!(status.counts.get("FAILED"), Some(&2));

    // When the route is fixed and one message is redriven by key, the other by topic
    let mut fixed = ob.config();
    fixed.routes = Routes::new(
        [("refunds".to_owned(), Destination::sqs(&ob.queue.url))],
        None,
    );
    let fixed_sweeper = sweeper(&ob.clients, config(fixed));
    let by_key = ops::redrive(
        db,
        &ob.ops_table(),
        Selection::Keys(vec![ItemKey {
            pk: "REFUND#1".into(),
            sk: committed.sort_keys[0].clone(),
        }]),
        now_ms(),
    )
    .await
    .expect("redrive");
    assert_eq!(by_key.redriven.len(), 1);
    let by_topic = ops::redrive(
        db,
        &ob.ops_table(),
        Selection::Topic("refunds".into()),
        now_ms(),
    )
    .await
    .expect("redrive");
    assert_eq!(by_topic.redriven.len(), 1, "only the one still FAILED");
    // Then they are PENDING with a fresh budget, back in the index, without the old reason
    for (pk, sk) in [("REFUND#1", 0), ("REFUND#2", 1)] {
        let item = ob.item(pk, &committed.sort_keys[sk]).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"));
        assert_eq!(n(&item, "RetryCount"), Some(0));
        assert_eq!(
            s(&item, "SweepShard"),
            Some(SweepShards::default().shard_of(pk))
        );
        assert!(!item.contains_key("LastError") && !item.contains_key("FailedAt"));
    }
    // And a second redrive of the same key changes nothing
    let again = ops::redrive(db, &ob.ops_table(), Selection::All, now_ms())
        .await
        .expect("redrive");
    assert!(again.redriven.is_empty());

    // When the sweeper runs
    let summary = sweep_at(&fixed_sweeper, now_ms()).await;
    // Then both are published once and SENT
    assert_eq!((summary.published, summary.marked), (2, 2), "{summary:?}");
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    let mut ids: Vec<String> = msgs
        .iter()
        .filter_map(|m| attr(m, ATTR_MESSAGE_ID))
        .collect();
    ids.sort();
    let mut expected = committed.message_ids.clone();
    expected.sort();
    assert_eq!(ids, expected, "each consumed once");
    for (pk, sk) in [("REFUND#1", 0), ("REFUND#2", 1)] {
        let item = ob.item(pk, &committed.sort_keys[sk]).await.expect("item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
    }
    // (`status` reads the sweeper index, which SENT items have left: they are
    // counted in the table.)
    let sent = ob
        .all_items()
        .await
        .iter()
        .filter(|i| s(i, "Status").as_deref() == Some("SENT"))
        .count();
    assert_eq!(sent, 2);
    let status = ops::status(db, &ob.ops_table()).await.expect("status");
    assert_eq!(status.counts.get("FAILED"), None);
}

/// Issue 22, defect 8 (found by the model, `known_gap_a_redrive_…`): a sweep claims a
/// message; the stream publisher fails it meanwhile; an operator redrives it. The
/// first sweep's `FAILED` mark, conditional on its claim (`SweepDueAt` still its
/// lease), is refused — one by one, and batched (PartiQL, on MiniStack: moto's PartiQL
/// enforces no condition) — so the redrive stands; a newer claim's mark is taken.
#[tokio::test]
async fn a_failed_mark_under_a_claim_the_redrive_replaced_is_refused() {
    // Given a message due now, claimed by a sweep
    let ob = Outbox::new().await;
    let committed = ob
        .writer()
        .index_at_commit(true)
        .sweep_grace(Duration::ZERO)
        .commit(vec![], &[NewMessage::new("RACE#1", "refunds", "{}")])
        .await
        .expect("commit");
    let key = ItemKey {
        pk: "RACE#1".into(),
        sk: committed.sort_keys[0].clone(),
    };
    let store = DynamoStore::new(ob.clients.dynamodb.clone(), &ob.table);
    let now = now_ms();
    let stored = ob.item(&key.pk, &key.sk).await.expect("item");
    let seen_due = n(&stored, "SweepDueAt").expect("due").to_string();
    let lease = now + 600_000;
    let claim = store
        .claim(
            &key,
            &seen_due,
            lease,
            &SweepShards::default().shard_of(&key.pk),
        )
        .await
        .expect("claim");
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    // When the stream publisher fails it (it holds no claim) and an operator redrives it
    let mark = failed_marks("no route for topic `refunds`", true, None).remove(0);
    let failed = store
        .mark_failed(&key, &mark, now, &MarkCondition::Pending)
        .await;
    assert_eq!(failed, Ok(MarkOutcome::Marked));
    let db = &ob.clients.dynamodb;
    let selection = Selection::Keys(vec![key.clone()]);
    let redriven = ops::redrive(db, &ob.ops_table(), selection, now)
        .await
        .expect("redrive");
    assert_eq!(redriven.redriven, std::slice::from_ref(&key));

    // Then the first sweep's FAILED mark under its old claim is refused, one by one
    // and batched
    let old_claim = MarkCondition::claim(lease);
    let one = store.mark_failed(&key, &mark, now + 1, &old_claim).await;
    assert_eq!(one, Ok(MarkOutcome::AlreadyFinished));
    let batches = partiql_conditions_enforced("the batched FAILED mark under a lost claim");
    let change = |condition: MarkCondition| MarkChange::Failed {
        mark: mark.clone(),
        failed_at_ms: now + 1,
        condition,
    };
    if batches {
        let batched = store
            .mark_batch(&[(key.clone(), change(old_claim))])
            .await
            .expect("batch");
        assert!(
            matches!(&batched[..], [Err(e)] if e.code == "ConditionalCheckFailed"),
            "{batched:?}"
        );
    }
    // And the item is as the redrive left it
    let item = ob.item(&key.pk, &key.sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("PENDING"), "{item:?}");
    assert_eq!(n(&item, "RetryCount"), Some(0));
    assert_eq!(n(&item, "SweepDueAt"), Some(now));
    assert!(!item.contains_key("LastError") && !item.contains_key("FailedAt"));

    // When a newer sweep claims it, its own mark is taken
    let newer = now + 900_000;
    let claim = store
        .claim(
            &key,
            &now.to_string(),
            newer,
            &SweepShards::default().shard_of(&key.pk),
        )
        .await
        .expect("claim");
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    let newer_claim = MarkCondition::claim(newer);
    if batches {
        let batched = store
            .mark_batch(&[(key.clone(), change(newer_claim))])
            .await
            .expect("batch");
        assert!(matches!(&batched[..], [Ok(())]), "{batched:?}");
    } else {
        let one = store.mark_failed(&key, &mark, now + 2, &newer_claim).await;
        assert_eq!(one, Ok(MarkOutcome::Marked));
    }
    let item = ob.item(&key.pk, &key.sk).await.expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("FAILED"), "{item:?}");
    assert_eq!(n(&item, "RetryCount"), Some(1));
}
