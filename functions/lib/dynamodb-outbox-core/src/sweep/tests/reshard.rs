//! A live change of the sweeper index's shard count, against the in-memory fakes:
//! while it changes, the sweep reads the shards of both counts, its claims move what
//! they take into the new shard, and the order fence reads an aggregate's shard
//! under each count.

use super::fence::NOW;
use crate::KeyNames;
use crate::clock::ManualClock;
use crate::config::PublisherConfig;
use crate::fakes::{MemoryStore, RecordingSink, Refusals, library_item, library_key};
use crate::route::{Destination, Routes};
use crate::schema::{Status, SweepShards};
use crate::sweep::*;
use std::time::Duration;

/// A sweeper of `layout` at `NOW`: topic `up` goes to a standard queue, `ledger` to a
/// FIFO one, `down` to a queue whose calls fail.
fn sweeper(layout: SweepShards) -> Sweeper<RecordingSink, MemoryStore> {
    let publisher_config = PublisherConfig {
        table_name: "t".into(),
        routes: Routes::new(
            [
                ("up".to_owned(), Destination::sqs("https://q/up")),
                ("down".to_owned(), Destination::sqs("https://q/down")),
                ("ledger".to_owned(), Destination::sqs("https://q/ledger.fifo")),
            ],
            None,
        ),
        dead_letter: Destination::sqs("https://q/dlq"),
        ttl_days: 7,
        key_names: KeyNames::default().sweep_shards(layout),
    };
    let sink = RecordingSink::new(Refusals {
        down: vec!["down".into()],
        ..Refusals::default()
    });
    let store = MemoryStore::default().with_sweep_shards(layout);
    let publisher =
        Publisher::new(sink, store, publisher_config.clone()).with_clock(ManualClock::at(NOW));
    Sweeper::new(publisher, SweeperConfig::new(publisher_config))
}

fn layout(count: u32, previous: Option<u32>) -> SweepShards {
    let shards = SweepShards::new(count).unwrap_or_default();
    previous.map_or(shards, |p| shards.changing_from(p).unwrap_or(shards))
}

/// Aggregates whose shard under `old` is a shard only `old` has (so a sweep of the
/// new count alone never reads it).
fn only_in_old_shards(old: SweepShards, new: SweepShards, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("ORDER#{i}"))
        .filter(|pk| !new.is_shard(&old.shard_of(pk)))
        .take(n)
        .collect()
}

/// Puts one due message of each aggregate, in its shard under `written`, on `topic`.
fn write_due(
    sw: &Sweeper<RecordingSink, MemoryStore>,
    pks: &[String],
    written: SweepShards,
    topic: &str,
) -> Vec<crate::schema::ItemKey> {
    pks.iter()
        .map(|pk| {
            let key = library_key(pk, 1_000, 0);
            let mut item = library_item(&key, topic, NOW - 1, 1_000);
            item.sweep_shard = Some(written.shard_of(pk));
            sw.publisher.store.put(key.clone(), item);
            key
        })
        .collect()
}

async fn sweep(sw: &Sweeper<RecordingSink, MemoryStore>) -> SweepSummary {
    sw.sweep(Budget::for_window(NOW, Duration::from_secs(30)))
        .await
}

#[tokio::test]
async fn going_down_from_64_to_16_shards_sweeps_what_is_in_the_old_shards() {
    // Given messages written under 64 shards, each in a shard that 16 does not have
    let (old, new) = (layout(64, None), layout(16, None));
    let pks = only_in_old_shards(old, new, 10);

    // When the sweeper runs with the change declared (16, previous 64)
    let sw = sweeper(layout(16, Some(64)));
    let keys = write_due(&sw, &pks, old, "up");
    let summary = sweep(&sw).await;

    // Then every one is found and sent
    assert_eq!((summary.found, summary.published), (10, 10), "{summary:?}");
    assert!(
        keys.iter()
            .all(|k| sw.publisher.store.get(k).and_then(|i| i.status()) == Some(Status::Sent))
    );

    // And a sweeper told only the new count (the previous one dropped too early, or
    // the fixed 16 shards of before) finds none of them in the index: only the
    // backstop scan, 100 items a sweep, would put them back
    let mut early = sweeper(new);
    early.config.scan_mode = ScanMode::Off;
    write_due(&early, &pks, old, "up");
    assert_eq!(sweep(&early).await.found, 0);
}

#[tokio::test]
async fn a_claim_moves_the_item_into_its_shard_under_the_new_count() {
    // Given messages written under 16 shards whose topic's queue fails
    let (old, changing) = (layout(16, None), layout(64, Some(16)));
    let pks: Vec<String> = (0..40)
        .map(|i| format!("ORDER#{i}"))
        .filter(|pk| changing.shard_of(pk) != old.shard_of(pk))
        .take(10)
        .collect();
    let sw = sweeper(changing);
    let keys = write_due(&sw, &pks, old, "down");

    // When a sweep claims them and the publish fails
    let summary = sweep(&sw).await;
    assert_eq!((summary.claimed, summary.published), (10, 0), "{summary:?}");

    // Then each is still pending, rescheduled, in the shard 64 gives it
    for (key, pk) in keys.iter().zip(&pks) {
        let item = sw.publisher.store.get(key).unwrap_or_default();
        assert_eq!(item.status(), Some(Status::Pending));
        assert_eq!(item.sweep_shard, Some(changing.shard_of(pk)), "{pk}");
    }
}

#[tokio::test]
async fn while_the_count_changes_the_fence_finds_an_earlier_message_in_the_old_shard() {
    // Given aggregate A's first message backing off in its shard under 16, and its
    // second, written after the change, due now in its shard under 64
    let (old, changing) = (layout(16, None), layout(64, Some(16)));
    let pk = (0..)
        .map(|i| format!("LEDGER#{i}"))
        .find(|pk| changing.shard_of(pk) != old.shard_of(pk))
        .unwrap_or_default();
    let run = |layout: SweepShards| {
        let pk = pk.clone();
        async move {
        let sw = sweeper(layout);
        let (a1, a2) = (library_key(&pk, 1_000, 0), library_key(&pk, 2_000, 0));
        let mut first = library_item(&a1, "ledger", NOW + 600_000, 1_000);
        first.sweep_shard = Some(old.shard_of(&pk));
        let mut second = library_item(&a2, "ledger", NOW - 1, 2_000);
        second.sweep_shard = Some(changing.shard_of(&pk));
        sw.publisher.store.put(a1, first);
        sw.publisher.store.put(a2, second);
        let summary = sweep(&sw).await;
        (summary.published, sw.publisher.sink.delivered("ledger").len())
        }
    };

    // When the sweep runs with the change declared, the second waits for the first
    assert_eq!(run(changing).await, (0, 0));

    // And with the previous count dropped before the old shard was empty, the fence
    // reads only the new shard and the second would overtake the first: why
    // `outbox-ops shards` must count 0 before the previous count is dropped
    assert_eq!(run(layout(64, None)).await, (1, 1));
}

#[tokio::test]
async fn a_sweep_of_256_shards_queries_each_once_and_finds_what_is_due_in_any() {
    // Given 256 shards and one due message in each of a few of the highest ones
    let wide = layout(256, None);
    let pks: Vec<String> = (0..)
        .map(|i| format!("ORDER#{i}"))
        .filter(|pk| wide.shard_of(pk).parse::<u32>().is_ok_and(|n| n >= 200))
        .take(5)
        .collect();
    let sw = sweeper(wide);
    write_due(&sw, &pks, wide, "up");

    // When it sweeps (16 queries in flight at a time)
    let summary = sweep(&sw).await;

    // Then every shard was read once and every message sent
    assert_eq!(summary.index_queries, 256, "{summary:?}");
    assert_eq!((summary.found, summary.published), (5, 5), "{summary:?}");
}
