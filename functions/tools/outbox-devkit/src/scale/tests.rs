use super::simulate::{Burst, burst, drain_minutes};
use super::*;

fn at(rate: f64) -> Option<String> {
    let all = ceilings(&Settings::default(), &PerMessage::default());
    binding(rate, &all).map(|c| c.component.to_owned())
}

#[test]
fn the_default_deployment_carries_a_thousand_a_second_and_binds_at_eight_thousand() {
    assert_eq!(at(1_000.0), None);
    // 40,000 table units / 5 per message = 8,000; the index takes no write on the
    // happy path, so it sets no ceiling on the commit rate
    let all = ceilings(&Settings::default(), &PerMessage::default());
    let table = &all[0];
    let index = &all[1];
    assert_eq!(table.messages_per_second, 8_000.0);
    assert_eq!(index.messages_per_second, f64::INFINITY);
    assert_eq!(
        at(10_000.0).as_deref(),
        Some("table: on-demand write quota per table")
    );
    // Indexed at commit (2 units a message), 16 shards x 1,000 / 2 = 8,000 too
    let indexed = ceilings(&Settings::default(), &PerMessage::indexed_at_commit());
    assert_eq!(indexed[1].messages_per_second, 8_000.0);
}

#[test]
fn more_index_shards_and_a_higher_quota_move_the_ceiling_to_the_next_component() {
    let settings = Settings {
        index_shards: 256,
        table_write_quota: 1_000_000.0,
        ..Settings::default()
    };
    let all = ceilings(&settings, &PerMessage::default());
    let first = binding(100_000.0, &all).map(|c| c.component);
    // 1,000 concurrent executions x 200 messages per shard = 200,000: nothing binds
    // at 100,000 a second
    assert_eq!(first, None);
    let factor_ten = Settings {
        parallelization_factor: 10,
        ..settings
    };
    let all = ceilings(&factor_ten, &PerMessage::default());
    assert_eq!(
        binding(100_000.0, &all).map(|c| c.owner),
        Some(Owner::Aws),
        "ten publishers per shard use up Lambda's concurrency at 20,000 a second"
    );
}

#[test]
fn what_a_rate_needs_follows_from_the_units_per_message() {
    let n = needs(10_000.0, &Settings::default(), &PerMessage::default());
    assert_eq!(n.table_write_units, 50_000.0);
    assert_eq!(n.index_units_per_shard, 0.0);
    let indexed = needs(
        10_000.0,
        &Settings::default(),
        &PerMessage::indexed_at_commit(),
    );
    assert_eq!(indexed.index_units_per_shard, 1_250.0);
    assert_eq!(n.stream_shards, 50.0);
    assert_eq!(n.publishers, 50.0);
}

#[test]
fn a_burst_within_twice_the_previous_peak_is_not_throttled() {
    let r = burst(
        &Burst {
            base_rate: 1_000.0,
            factor: 2.0,
            seconds: 60,
        },
        &Settings::default(),
        &PerMessage::default(),
    );
    assert_eq!((r.throttled, r.bound_by), (0.0, "nothing"));
}

#[test]
fn a_tenfold_burst_is_throttled_by_the_table_then_drains_at_its_limit() {
    let r = burst(
        &Burst {
            base_rate: 1_000.0,
            factor: 10.0,
            seconds: 60,
        },
        &Settings::default(),
        &PerMessage::default(),
    );
    // twice the previous peak: 10,000 units = 2,000 messages a second; 8,000 a second
    // over the limit for 60 s, then 1,000 a second of headroom clears them
    assert_eq!(r.bound_by, "table");
    assert_eq!(r.throttled, 480_000.0);
    assert_eq!(r.peak_backlog, 480_000.0);
    assert_eq!(r.seconds_to_clear, Some(60 + 480));
}

#[test]
fn indexed_at_commit_a_burst_that_the_table_could_take_is_throttled_by_the_index() {
    let settings = Settings {
        table_write_quota: 1_000_000.0,
        ..Settings::default()
    };
    let r = burst(
        &Burst {
            base_rate: 5_000.0,
            factor: 1.5,
            seconds: 60,
        },
        &settings,
        &PerMessage::indexed_at_commit(),
    );
    // 7,500 a second offered; the table takes 10,000; the index 8,000: nothing; at 2x
    // (10,000 a second) the index binds
    assert_eq!(r.bound_by, "nothing");
    let r = burst(
        &Burst {
            factor: 2.0,
            ..Burst {
                base_rate: 5_000.0,
                factor: 1.5,
                seconds: 60,
            }
        },
        &settings,
        &PerMessage::indexed_at_commit(),
    );
    assert_eq!(r.bound_by, "index");
    assert_eq!(r.seconds_to_clear, Some(60 + 40));
    // The default producer writes no index entry: the same burst is not throttled
    let r = burst(
        &Burst {
            base_rate: 5_000.0,
            factor: 2.0,
            seconds: 60,
        },
        &settings,
        &PerMessage::default(),
    );
    assert_eq!(r.bound_by, "nothing");
}

#[test]
fn a_worker_drains_at_its_chunks_request_latencies_for_its_time_budget() {
    let settings = Settings::default();
    // Chunks of 100, 16 claims in flight: 7 claim latencies, a send and a mark of 20 ms
    // = 180 ms; four chunks at once: 2,222 a second while it works
    assert_eq!(settings.sweep_chunks, (100, 16, 4));
    assert_eq!(sweep_worker_rate(&settings).round(), 2_222.0);
    // It works 48 s of each minute (a 60 s timeout less its reserve): 1,778 a second
    assert_eq!(drain_rate(&settings).round(), 1_778.0);
    // ten minutes of a 10,000 a second outage: 6 million in 56 minutes
    assert_eq!(drain_minutes(6_000_000.0, &settings).round(), 56.0);
}

#[test]
fn five_workers_are_bound_by_their_shards_index_partitions_unless_the_shards_grow() {
    // Each drained message writes its shard's index partition 3 times: 333 a second
    // per shard. Five workers over 16 shards (4, 3, 3, 3, 3): 4,267 a second
    let five = Settings {
        sweep_workers: 5,
        ..Settings::default()
    };
    assert_eq!(drain_rate(&five).round(), 4_267.0);
    // over 32 shards (7, 7, 6, 6, 6): 8,356 a second, over 5,000
    let wide = Settings {
        index_shards: 32,
        ..five
    };
    assert_eq!(drain_rate(&wide).round(), 8_356.0);
    assert_eq!(drain_minutes(6_000_000.0, &wide).round(), 12.0);
}

#[test]
fn the_settings_lifted_for_a_rate_carry_it_and_a_tenfold_burst_meets_the_two_times_rule() {
    let per = PerMessage::indexed_at_commit();
    let lifted = lifted_for(100_000.0, &Settings::default(), &per);
    assert_eq!(lifted.index_shards, 256);
    let unindexed = lifted_for(100_000.0, &Settings::default(), &PerMessage::default());
    assert_eq!(
        unindexed.index_shards, 16,
        "no index writes on the happy path: no shards to add"
    );
    assert_eq!(lifted.table_write_quota, 500_000.0);
    let all = ceilings(&lifted, &per);
    assert_eq!(binding(100_000.0, &all).map(|c| c.component), None);
    let r = burst(
        &Burst {
            base_rate: 100_000.0,
            factor: 10.0,
            seconds: 60,
        },
        &lifted,
        &per,
    );
    // the quota, raised to the sustained need, is what the 10x burst meets first
    assert_eq!(r.bound_by, "table");
    assert_eq!(r.peak_backlog, 900_000.0 * 60.0);
    assert_eq!(r.seconds_to_clear, None, "no headroom left to retry into");
}

/// The stacks choose `sweep_workers` and `sweep_shards` from the expected peak with this
/// model's numbers (infra/contract/settings.json `sweep_sizing`; the stacks' tests check
/// theirs against it): a change of `SweepLimits` or the time budget must be carried there.
#[test]
fn the_stacks_sweeper_sizing_uses_this_models_rates_and_holds_at_a_hundred_thousand() {
    let contract: serde_json::Value =
        serde_json::from_str(include_str!("../../../../../infra/contract/settings.json"))
            .unwrap_or_default();
    let sizing = &contract["sweep_sizing"];
    let number = |k: &str| sizing[k].as_f64().unwrap_or(f64::NAN);
    let one = Settings::default();
    assert_eq!(
        number("worker_attempts_per_second"),
        sweep_worker_rate(&one).floor()
    );
    assert_eq!(number("worker_drain_per_second"), drain_rate(&one).round());
    // A failed attempt moves the item's due time twice (claim, reschedule): 2 index
    // writes each, as a claim's in SWEEP_INDEX_WRITES
    assert_eq!(
        number("attempt_index_writes"),
        2.0 * (SWEEP_INDEX_WRITES - 1.0)
    );
    // What the stacks choose at 100,000 a second (their tests: 159 shards, 3 workers)
    let chosen = Settings {
        index_shards: 159,
        sweep_workers: 3,
        ..one
    };
    let outage_per_shard = (100_000.0 + 3.0 * sweep_worker_rate(&chosen) * 4.0) / 159.0;
    assert!(
        outage_per_shard <= 0.8 * PARTITION_WRITE_UNITS,
        "{outage_per_shard}"
    );
    assert_eq!(drain_rate(&chosen).round(), 5_333.0);
}
