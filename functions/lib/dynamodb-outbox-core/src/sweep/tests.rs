//! The sweep against the in-memory fakes: the logic only (the conditional writes
//! themselves are tested against the emulator).

mod claim_lost;
mod fence;
mod reshard;
mod wave;

use super::*;
use crate::clock::ManualClock;
use crate::config::PublisherConfig;
use crate::fakes::{MemoryStore, RecordingSink, Refusals, StoreFaults, key, pending_item};
use crate::message::{ATTR_ERROR, OutboundMessage};
use crate::policy::{backoff, jitter_of, millis};
use crate::ports::DueKey;
use crate::route::{Destination, Routes};
use crate::schema::{OutboxItem, Status, SweepShards};
use std::time::Duration;

const NOW: i64 = 1_000_000;

type TestSweeper = Sweeper<RecordingSink, MemoryStore>;

/// Routes `up` to a queue that works and `down` to one whose calls all fail.
fn sweeper() -> TestSweeper {
    let publisher_config = PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                ("up".to_owned(), Destination::sqs("https://q/up")),
                ("down".to_owned(), Destination::sqs("https://q/down")),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: Default::default(),
    };
    let mut config = SweeperConfig::new(publisher_config.clone());
    config.max_attempts = 3;
    let sink = RecordingSink::new(Refusals {
        down: vec!["down".into()],
        ..Refusals::default()
    });
    let publisher = Publisher::new(sink, MemoryStore::default(), publisher_config)
        .with_clock(ManualClock::at(NOW));
    Sweeper::new(publisher, config)
}

fn put(sw: &TestSweeper, pk: &str, sk: &str, item: OutboxItem) {
    sw.publisher.store.put(key(pk, sk), item);
}

fn pending(pk: &str, sk: &str, topic: &str, retry: u32, due: i64, created: i64) -> OutboxItem {
    pending_item(&key(pk, sk), topic, retry, due, created)
}

fn get(sw: &TestSweeper, pk: &str, sk: &str) -> OutboxItem {
    sw.publisher.store.get(&key(pk, sk)).unwrap_or_default()
}

async fn run(sw: &TestSweeper, window: Duration) -> SweepSummary {
    sw.sweep(Budget::for_window(NOW, window)).await
}

fn sent_to(sw: &TestSweeper, dest: &str) -> Vec<OutboundMessage> {
    sw.publisher.sink.delivered(dest)
}

#[tokio::test]
async fn only_due_items_are_taken_and_a_sent_one_is_marked() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 1, 1));
    put(&sw, "B", "1", pending("B", "1", "up", 0, NOW + 1, 2));
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!(
        (summary.found, summary.published, summary.marked),
        (1, 1, 1)
    );
    assert_eq!(get(&sw, "A", "1").status(), Some(Status::Sent));
    assert_eq!(get(&sw, "A", "1").retry_count, Some(1));
    assert_eq!(get(&sw, "B", "1").retry_count, Some(0));
    assert_eq!(summary.oldest_pending_age_ms, Some(NOW - 1));
}

#[tokio::test]
async fn a_transient_failure_records_the_reason_and_backs_off() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "down", 1, NOW, 1));
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.claimed, summary.retried), (1, 1), "{summary:?}");
    let item = get(&sw, "A", "1");
    assert_eq!(
        (item.status(), item.retry_count),
        (Some(Status::Pending), Some(2))
    );
    assert!(
        item.last_error
            .as_deref()
            .is_some_and(|e| e.contains("Throttled"))
    );
    let expected = backoff(
        2,
        sw.config.base_backoff,
        sw.config.max_backoff,
        jitter_of(&key("A", "1"), 2),
    );
    assert_eq!(item.sweep_due_at, Some(NOW + millis(expected)));
}

#[tokio::test]
async fn past_the_limit_the_item_is_dead_lettered_with_its_last_error_not_sent() {
    let sw = sweeper();
    let mut item = pending("A", "1", "up", 3, NOW, 1);
    item.last_error = Some("sending to sqs:x failed: Throttled".into());
    put(&sw, "A", "1", item);
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.failed, summary.published), (1, 0), "{summary:?}");
    assert!(sent_to(&sw, "up").is_empty());
    let dead = sent_to(&sw, "dlq");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, "payload-1");
    let reason = "gave up after 3 attempts: sending to sqs:x failed: Throttled";
    assert!(
        dead[0]
            .attributes
            .iter()
            .any(|(n, v)| *n == ATTR_ERROR && v.text() == reason)
    );
    let stored = get(&sw, "A", "1");
    assert_eq!(stored.status(), Some(Status::Failed));
    assert_eq!(stored.last_error.as_deref(), Some(reason));
    // Out of the shards a sweep queries: in its aggregate's FAILED partition, due at
    // the failure, where `outbox-ops failed` finds it.
    assert_eq!(
        stored.sweep_shard.as_deref(),
        Some(crate::schema::failed_sweep_shard("A").as_str())
    );
    assert_eq!(stored.sweep_due_at, stored.failed_at);
    assert!(stored.failed_at.is_some());
}

#[tokio::test]
async fn an_item_that_does_not_decode_is_dead_lettered_with_its_content() {
    let sw = sweeper();
    let mut item = pending("A", "1", "up", 0, NOW, 1);
    item.topic = None;
    put(&sw, "A", "1", item);
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!(summary.failed, 1, "{summary:?}");
    let dead = sent_to(&sw, "dlq");
    assert!(dead[0].body.contains("payload-1"), "{:?}", dead[0].body);
    let stored = get(&sw, "A", "1");
    assert!(stored.last_error.is_some_and(|e| e.contains("Topic")));
}

#[tokio::test]
async fn a_later_message_waits_behind_a_failed_earlier_one_of_its_aggregate() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "down", 0, NOW - 5, 1));
    put(&sw, "A", "2", pending("A", "2", "up", 0, NOW - 9, 2));
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.retried, summary.published), (2, 0), "{summary:?}");
    assert!(
        sent_to(&sw, "up").is_empty(),
        "order kept: A/2 not sent before A/1"
    );
    let later = get(&sw, "A", "2");
    assert!(
        later
            .last_error
            .is_some_and(|e| e.contains("earlier message"))
    );
}

#[tokio::test]
async fn an_item_changed_since_the_query_is_skipped() {
    // A claim with a stale due time is refused, as the conditional update would.
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW, 1));
    let stale = DueKey::new(key("A", "1"), NOW - 1);
    let mut summary = SweepSummary::default();
    let budget = Budget::for_window(NOW, Duration::from_secs(5));
    let window = Window {
        budget,
        stop_at_ms: budget.stop_at_ms(NOW),
        group: SweepGroup::ALL,
    };
    sw.attempt(&[stale], &window, &mut summary).await;
    assert_eq!((summary.claimed, summary.skipped), (0, 1));
    assert_eq!(get(&sw, "A", "1").retry_count, Some(0));
}

#[tokio::test]
async fn an_exhausted_budget_leaves_due_items_for_the_next_sweep() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW, 1));
    let summary = run(&sw, Duration::ZERO).await;
    assert_eq!((summary.found, summary.claimed, summary.skipped), (1, 0, 1));
    assert_eq!(get(&sw, "A", "1").status(), Some(Status::Pending));
}

#[tokio::test]
async fn the_invocation_deadline_is_read_against_the_sweepers_clock() {
    // A minute left on the sweeper's clock: the sweep runs.
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW, 1));
    let deadline = |ms: i64| u64::try_from(ms).unwrap_or(0);
    let summary = handle_scheduled_event(&sw, deadline(NOW + 60_000), SweepGroup::ALL).await;
    assert_eq!((summary.found, summary.published), (1, 1), "{summary:?}");
    // Past the deadline on that clock: nothing new is started.
    put(&sw, "B", "1", pending("B", "1", "up", 0, NOW, 1));
    let late = handle_scheduled_event(&sw, deadline(NOW - 1_000), SweepGroup::ALL).await;
    assert_eq!(
        (late.found, late.claimed, late.skipped),
        (1, 0, 1),
        "{late:?}"
    );
}

#[tokio::test]
async fn scan_mode_adopts_an_unindexed_item_due_after_the_grace_from_its_write() {
    let mut sw = sweeper();
    sw.config.scan_mode = ScanMode::On;
    for (sk, created) in [("old", 1_000), ("new", NOW - 1_000)] {
        let mut item = pending("A", sk, "up", 0, NOW, created);
        item.sweep_shard = None;
        item.sweep_due_at = None;
        put(&sw, "A", sk, item);
    }
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.adopted, summary.published), (2, 1), "{summary:?}");
    // Written long ago: due at once, swept in the same run.
    assert_eq!(get(&sw, "A", "old").status(), Some(Status::Sent));
    // Written a second ago: due once the grace has passed, for the stream path first.
    let fresh = get(&sw, "A", "new");
    assert_eq!(fresh.sweep_due_at, Some(NOW - 1_000 + 60_000));
    assert_eq!(fresh.status(), Some(Status::Pending));
}

#[tokio::test]
async fn a_shard_whose_query_fails_is_reported_not_taken_for_empty() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 60_000, 1));
    let broken = crate::schema::SweepShards::default().shard_of("A");
    sw.publisher.store.fail(StoreFaults {
        queries: vec![broken],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!(
        (summary.unread_shards, summary.errors),
        (1, 1),
        "{summary:?}"
    );
    assert_eq!(summary.found, 0);
    let names: Vec<&str> = crate::metrics::sweeper_metrics(&summary)
        .iter()
        .map(|m| m.name)
        .collect();
    assert!(!names.contains(&"OldestPendingAgeSeconds"), "{names:?}");
}

#[tokio::test]
async fn a_later_message_waits_behind_an_earlier_one_whose_claim_failed() {
    // A1's claim is throttled: A2, written after it, must not overtake it.
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 9, 1));
    put(&sw, "A", "2", pending("A", "2", "up", 0, NOW - 5, 2));
    put(&sw, "B", "1", pending("B", "1", "up", 0, NOW - 5, 3));
    sw.publisher.store.fail(StoreFaults {
        claims: vec![key("A", "1")],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.published, summary.errors), (1, 1), "{summary:?}");
    let bodies: Vec<String> = sent_to(&sw, "up").into_iter().map(|m| m.body).collect();
    assert_eq!(bodies, ["payload-3"], "only B went out");
    // A2 is due again only after the lease A1's claim may have taken, and was given
    // its attempt back: it was never sent.
    let later = get(&sw, "A", "2");
    assert_eq!(later.retry_count, Some(0));
    assert!(
        later
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("earlier message"))
    );
    let lease_until = NOW + millis(Budget::for_window(NOW, Duration::from_secs(5)).lease);
    assert!(later.sweep_due_at > Some(lease_until), "{later:?}");
}

#[tokio::test]
async fn a_later_message_waits_behind_an_earlier_one_another_sweep_holds() {
    // A1 is under another sweep's lease (its due time changed since the query).
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 9, 1));
    put(&sw, "A", "2", pending("A", "2", "up", 0, NOW - 5, 2));
    let mut summary = SweepSummary::default();
    let budget = Budget::for_window(NOW, Duration::from_secs(5));
    let window = Window {
        budget,
        stop_at_ms: budget.stop_at_ms(NOW),
        group: SweepGroup::ALL,
    };
    let other_lease = NOW + 600_000;
    let mut held = get(&sw, "A", "1");
    held.sweep_due_at = Some(other_lease);
    put(&sw, "A", "1", held);
    let keys = [
        DueKey::new(key("A", "1"), NOW - 9),
        DueKey::new(key("A", "2"), NOW - 5),
    ];
    sw.attempt(&keys, &window, &mut summary).await;
    assert_eq!((summary.published, summary.retried), (0, 1), "{summary:?}");
    assert!(sent_to(&sw, "up").is_empty());
    assert_eq!(get(&sw, "A", "2").sweep_due_at, Some(other_lease + 1));
}

#[tokio::test]
async fn messages_of_one_aggregate_are_claimed_together_whatever_the_chunk_size() {
    // Chunks of one key: before, A1 failed in one chunk and A2 went out in the next.
    let mut sw = sweeper();
    sw.config.limits.chunk = 1;
    put(&sw, "A", "1", pending("A", "1", "down", 0, NOW - 9, 1));
    put(&sw, "A", "2", pending("A", "2", "up", 0, NOW - 5, 2));
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.published, summary.retried), (0, 2), "{summary:?}");
    assert!(sent_to(&sw, "up").is_empty());
    let (a1, a2) = (get(&sw, "A", "1"), get(&sw, "A", "2"));
    assert!(a2.sweep_due_at > a1.sweep_due_at, "{a1:?} {a2:?}");
}

#[tokio::test]
async fn an_item_that_refuses_every_claim_is_dead_lettered_once_with_the_reason() {
    let sw = sweeper();
    put(&sw, "A", "1", pending("A", "1", "up", 0, NOW - 9, 1));
    sw.publisher.store.fail(StoreFaults {
        unclaimable: vec![key("A", "1")],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.failed, summary.errors), (1, 0), "{summary:?}");
    let stored = get(&sw, "A", "1");
    assert_eq!(stored.status(), Some(Status::Failed));
    assert!(
        stored
            .last_error
            .is_some_and(|e| e.contains("cannot claim"))
    );
    assert_eq!(sent_to(&sw, "dlq").len(), 1);
    // Out of the index: later sweeps do not see it, nor copy it again.
    let later = sw
        .sweep(Budget::for_window(NOW + 3_600_000, Duration::from_secs(5)))
        .await;
    assert_eq!(later.found, 0);
    assert_eq!(sent_to(&sw, "dlq").len(), 1);
}

#[tokio::test]
async fn an_item_at_its_size_limit_gives_its_payload_to_the_dead_letter_copy_to_be_failed() {
    let sw = sweeper();
    let mut item = pending("A", "1", "nowhere", 0, NOW - 9, 1);
    item.payload = Some("big".into());
    put(&sw, "A", "1", item);
    sw.publisher.store.fail(StoreFaults {
        full: vec![key("A", "1")],
        ..StoreFaults::default()
    });
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!(summary.failed, 1, "{summary:?}");
    let stored = get(&sw, "A", "1");
    assert_eq!(stored.status(), Some(Status::Failed));
    assert_eq!(stored.payload, None);
    assert_eq!(stored.payload_on.as_deref(), Some("dead-letter queue"));
    assert!(stored.last_error.is_some_and(|e| e.contains("no route")));
    let dead = sent_to(&sw, "dlq");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, "big");
}

#[tokio::test]
async fn the_default_sweeper_scans_nothing_and_a_reconciliation_pass_adopts_what_it_left() {
    // Given an item written without index attributes (its stream records lost), one
    // already indexed and one SENT
    let sw = sweeper();
    let mut lost = pending("A", "lost", "up", 0, NOW, 1_000);
    lost.sweep_shard = None;
    lost.sweep_due_at = None;
    put(&sw, "A", "lost", lost);
    put(&sw, "B", "indexed", pending("B", "indexed", "up", 0, NOW + 600_000, 1_000));
    let mut sent = pending("C", "sent", "up", 0, NOW, 1_000);
    sent.status = Some(Status::Sent.as_str().to_owned());
    sent.sweep_shard = None;
    sent.sweep_due_at = None;
    put(&sw, "C", "sent", sent);

    // When the sweeper with the default configuration runs
    assert_eq!(sw.config.scan_mode, ScanMode::Off, "the default");
    let summary = run(&sw, Duration::from_secs(5)).await;
    // Then it read no table item and left the lost one alone
    assert_eq!((summary.scan_items_read, summary.adopted), (0, 0), "{summary:?}");
    assert_eq!(get(&sw, "A", "lost").sweep_due_at, None);

    // When an operator runs one reconciliation pass (outbox-ops reconcile)
    let shards = SweepShards::default();
    let pass = adopt_pass(&sw.publisher.store, &shards, Duration::from_secs(60), NOW, (4, 100)).await;
    // Then the lost item alone went into the index, due a grace after its write, and the
    // next sweep publishes it
    assert_eq!((pass.adopted, pass.failed_segments), (1, 0), "{pass:?}");
    let adopted = get(&sw, "A", "lost");
    assert_eq!(adopted.sweep_shard.as_deref(), Some(shards.shard_of("A").as_str()));
    assert_eq!(adopted.sweep_due_at, Some(1_000 + 60_000));
    assert_eq!(get(&sw, "B", "indexed").sweep_due_at, Some(NOW + 600_000));
    assert_eq!(get(&sw, "C", "sent").sweep_shard, None);
    let next = run(&sw, Duration::from_secs(5)).await;
    assert_eq!(next.published, 1, "{next:?}");
    assert_eq!(get(&sw, "A", "lost").status(), Some(Status::Sent));
}

#[tokio::test]
async fn scan_mode_saves_where_each_segment_stopped_and_adopts_foreign_index_values() {
    let mut sw = sweeper();
    sw.config.scan_mode = ScanMode::On;
    let mut foreign = pending("A", "1", "up", 0, NOW - 9, 1);
    foreign.sweep_shard = Some("99".into());
    put(&sw, "A", "1", foreign);
    let summary = run(&sw, Duration::from_secs(5)).await;
    assert_eq!((summary.adopted, summary.published), (1, 1), "{summary:?}");
    assert_eq!(get(&sw, "A", "1").status(), Some(Status::Sent));
}

/// `n` messages of as many aggregates, all due (the index spreads them over its 16
/// shards).
fn backlog(sw: &TestSweeper, n: i64) {
    for i in 0..n {
        let pk = format!("ORDER#{i}");
        put(sw, &pk, "1", pending(&pk, "1", "up", 0, NOW - 1, i));
    }
}

#[tokio::test]
async fn a_backlog_larger_than_a_round_drains_in_one_sweep_of_several_rounds() {
    // Given 2,500 messages due, more than the 1,000 a round takes
    let sw = sweeper();
    backlog(&sw, 2_500);

    // When one sweep runs
    let summary = run(&sw, Duration::from_secs(30)).await;

    // Then it read the index again after each full round and sent them all (before
    // rounds: 1,000 a sweep, so a backlog drained at 1,000 a minute)
    assert_eq!(
        (summary.published, summary.marked, summary.skipped),
        (2_500, 2_500, 0),
        "{summary:?}"
    );
    assert_eq!(sent_to(&sw, "up").len(), 2_500);
    // Three rounds of sixteen shards, and a fourth was not needed
    assert_eq!(summary.index_queries, 3 * 16, "{summary:?}");
}

#[tokio::test]
async fn a_round_reads_about_as_many_index_keys_as_it_claims() {
    // Given 2,500 messages due over 16 shards, 1,000 a round
    let sw = sweeper();
    backlog(&sw, 2_500);

    // When one sweep drains them
    let summary = run(&sw, Duration::from_secs(30)).await;

    // Then each round read its share of each shard, not every shard's due keys: about
    // one index key read per message, at most a key per shard and round over (before:
    // 4,500 read here; 241,684 for a drain of 20,000 on the local AWS)
    assert_eq!(summary.published, 2_500, "{summary:?}");
    assert!(
        summary.index_items_read <= 2_500 + 3 * 16,
        "{} index keys read for 2,500 messages: {summary:?}",
        summary.index_items_read
    );
}

#[tokio::test]
async fn a_round_passes_over_what_the_lagging_index_still_lists_as_due() {
    // Given 2,500 messages due one after another, and an index that still lists
    // each claimed message where it was (a global secondary index lags the table)
    let sw = sweeper();
    for i in 0..2_500 {
        let pk = format!("ORDER#{i}");
        put(&sw, &pk, "1", pending(&pk, "1", "up", 0, NOW - 10_000 + i, i));
    }
    sw.publisher.store.fail(StoreFaults {
        stale_index: true,
        ..StoreFaults::default()
    });

    // When one sweep runs
    let summary = run(&sw, Duration::from_secs(30)).await;

    // Then each later round read past the claims before it, which the index lists
    // first, and it sent them all (not passed over, they would be all a round read
    // first: it would claim none and end the sweep with 1,500 left)
    assert_eq!((summary.published, summary.skipped), (2_500, 0), "{summary:?}");
}

#[tokio::test]
async fn a_sweep_goes_on_past_twenty_rounds_while_its_budget_lasts() {
    // Given rounds of 100 and 2,500 messages due: 25 rounds' worth
    let mut sw = sweeper();
    sw.config.limits.max_items = 100;
    backlog(&sw, 2_500);

    // When one sweep runs, with time to spare
    let summary = run(&sw, Duration::from_secs(30)).await;

    // Then the time budget, not a count of rounds, ended it: all went out (before: 20
    // rounds, 2,000 sent and 500 left)
    assert_eq!((summary.published, summary.skipped), (2_500, 0), "{summary:?}");
}

#[tokio::test]
async fn chunks_of_a_round_go_at_once_and_each_aggregate_keeps_its_order() {
    // Given 40 aggregates of 5 messages each, chunks of 10 keys, 4 chunks at once, and
    // the first message of aggregate 0 routed to a destination that fails
    let mut sw = sweeper();
    sw.config.limits.chunk = 10;
    sw.config.limits.chunk_concurrency = 4;
    for a in 0..40 {
        let pk = format!("ORDER#{a:02}");
        for m in 0..5 {
            let (sk, created) = (m.to_string(), 1 + 100 * a + m);
            let topic = if a == 0 && m == 0 { "down" } else { "up" };
            put(&sw, &pk, &sk, pending(&pk, &sk, topic, 0, NOW - 10 + m, created));
        }
    }

    // When one sweep runs
    let summary = run(&sw, Duration::from_secs(30)).await;

    // Then the other 39 aggregates went out, each in its order, and nothing of
    // aggregate 0 overtook its failed first message
    assert_eq!(summary.published, 39 * 5, "{summary:?}");
    let sent: Vec<i64> = sent_to(&sw, "up")
        .iter()
        .filter_map(|m| m.body.strip_prefix("payload-")?.parse().ok())
        .collect();
    for a in 0..40 {
        let order: Vec<i64> = sent.iter().copied().filter(|c| c / 100 == a).collect();
        let expected: Vec<i64> = if a == 0 { vec![] } else { (1..=5).map(|m| 100 * a + m).collect() };
        assert_eq!(order, expected, "aggregate {a}");
    }
}

#[tokio::test]
async fn a_sweep_counts_the_payloads_it_wrote_to_s3() {
    // Given a sweeper whose routes offload payloads over 1000 bytes to a bucket, and
    // two due messages: one over the threshold, one small
    let mut sw = sweeper();
    let config = sw.publisher.config.clone();
    sw.publisher.config = PublisherConfig {
        routes: config.routes.with_large_payloads(Some("large".into()), Some(1000)),
        ..config
    };
    let mut large = pending("A", "1", "up", 0, NOW - 1, 1);
    large.payload = Some("p".repeat(1001));
    put(&sw, "A", "1", large);
    put(&sw, "B", "1", pending("B", "1", "up", 0, NOW - 1, 2));
    // When it sweeps
    let summary = run(&sw, Duration::from_secs(5)).await;
    // Then both went out, and the one written to S3 is counted
    assert_eq!((summary.published, summary.offloaded), (2, 1), "{summary:?}");
    assert_eq!(sw.publisher.sink.object_counts(), (1, 1));
}
