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
    // Indexed at commit: sized as the stacks size twice the peak, 200,000 a second
    // (5 workers; (200,000 + 5 x 2,222 x 4) / 800 = 305.55)
    assert_eq!((lifted.index_shards, lifted.sweep_workers), (306, 5));
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

/// The scale model lifts a deployment to what the stacks deploy for that peak (their
/// tests: 16 shards and 1 worker at 3,000 a second, 159 and 3 at 100,000, 181 for 5
/// workers given): the shards are sized for an outage, not only for the happy path's
/// index writes, which are none.
#[test]
fn the_settings_lifted_for_a_rate_are_what_the_stacks_choose_for_that_peak() {
    let lifted = |rate: f64, settings: &Settings| {
        let l = lifted_for(rate, settings, &PerMessage::default());
        (l.index_shards, l.sweep_workers)
    };
    let default = Settings::default();
    assert_eq!(lifted(3_000.0, &default), (16, 1));
    assert_eq!(lifted(10_000.0, &default), (24, 1));
    assert_eq!(lifted(100_000.0, &default), (159, 3));
    let five = Settings {
        sweep_workers: 5,
        ..default
    };
    assert_eq!(
        lifted(100_000.0, &five),
        (181, 5),
        "shards for the workers given"
    );
    let wide = Settings {
        index_shards: 256,
        ..default
    };
    assert_eq!(lifted(100_000.0, &wide), (256, 3), "lifting never lowers");
}

/// For every peak the stacks accept (1 to 700,000), the chosen shards keep an outage's
/// index writes under 800 units a second per shard within the core's 1,000 shards, and
/// the workers drain at a twentieth of the peak unless all five are needed.
#[test]
fn the_sweeper_sizing_holds_for_every_peak_the_stacks_accept() {
    for peak in (1..=700_000_u32).step_by(997) {
        let peak = f64::from(peak);
        let workers = sizing::sweep_workers(peak);
        let shards = sizing::sweep_shards(peak, workers);
        let per_shard = sizing::outage_index_writes(peak, workers) / f64::from(shards);
        assert!(
            per_shard <= sizing::SHARD_WRITE_UNITS,
            "peak {peak}: {per_shard}"
        );
        assert!(
            shards <= u32::from(MAX_SWEEP_SHARDS),
            "peak {peak}: {shards}"
        );
        assert!(
            workers == sizing::MAX_WORKERS
                || f64::from(workers) * sizing::WORKER_DRAIN_PER_SECOND >= peak / 20.0,
            "peak {peak}: {workers}"
        );
    }
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
    // The dev kit's rule (sizing) has the contract's numbers, and no other
    let ours = [
        ("shard_write_units", sizing::SHARD_WRITE_UNITS),
        ("attempt_index_writes", sizing::ATTEMPT_INDEX_WRITES),
        (
            "worker_attempts_per_second",
            sizing::WORKER_ATTEMPTS_PER_SECOND,
        ),
        ("worker_drain_per_second", sizing::WORKER_DRAIN_PER_SECOND),
        ("drain_within_outage", sizing::DRAIN_WITHIN_OUTAGE),
        ("min_shards", f64::from(sizing::MIN_SHARDS)),
    ];
    for (key, value) in ours {
        assert_eq!(number(key), value, "sweep_sizing.{key}");
    }
    let keys = sizing
        .as_object()
        .map_or(0, |o| o.keys().filter(|k| !k.starts_with('$')).count());
    assert_eq!(
        keys,
        ours.len(),
        "sweep_sizing has a number the dev kit lacks"
    );
    let workers_max = contract["settings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == "sweep_workers")
        .and_then(|s| s["max"].as_f64());
    assert_eq!(workers_max, Some(f64::from(sizing::MAX_WORKERS)));
    // ... and those numbers are this model's
    let one = Settings::default();
    assert_eq!(number("min_shards"), f64::from(one.index_shards));
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
    // A partition's units less one aggregate's messages a second (1 unit each entering)
    assert_eq!(
        number("shard_write_units"),
        PARTITION_WRITE_UNITS - PARTITION_WRITE_UNITS / PerMessage::default().table_write_units
    );
    // What the stacks choose at 100,000 a second (their tests: 159 shards, 3 workers)
    let chosen = lifted_for(100_000.0, &one, &PerMessage::default());
    assert_eq!((chosen.index_shards, chosen.sweep_workers), (159, 3));
    let outage_per_shard = (100_000.0 + 3.0 * sweep_worker_rate(&chosen) * 4.0) / 159.0;
    assert!(
        outage_per_shard <= 0.8 * PARTITION_WRITE_UNITS,
        "{outage_per_shard}"
    );
    assert_eq!(drain_rate(&chosen).round(), 5_333.0);
}
