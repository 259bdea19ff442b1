//! The bounded check CI runs: every property on every CI instance, exhaustively. One
//! test per instance, so that each has its own time budget and nextest runs them side
//! by side; `every_ci_instance_has_its_test` keeps the lists in step.

use outbox_model::global::props::{FAILOVER_DUPLICATES, SOME_FAILED};
use outbox_model::global::{self, GlobalModel};
use outbox_model::props::{DUPLICATES_HAPPEN, SOME_END};
use outbox_model::{OutboxModel, check, find, presets};

/// Single-region CI instances, and two-region ones, that have a test below.
const SINGLE_REGION: usize = 18;
const TWO_REGION: usize = 5;

/// Every property holds on single-region CI instance `i`, and some run of it ends with
/// every message settled (so the liveness check is not vacuous).
fn single_region(i: usize) {
    let Some((name, params)) = presets::ci().into_iter().nth(i) else {
        panic!("presets::ci() has no instance {i}");
    };
    let report = check(OutboxModel::new(params), 2);
    println!(
        "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
        report.states, report.unique, report.max_depth, report.elapsed
    );
    assert!(
        report.discovery(SOME_END).is_some(),
        "{name}: no run ends with every message settled, so the liveness check is vacuous"
    );
    let failures = report.failures();
    assert!(failures.is_empty(), "{name}: {}", failures.join("\n"));
}

/// The two-region model (`outbox_model::global`): every property on two-region CI
/// instance `i`; the duplicate a failover allows does happen (so the property that
/// excuses it is not vacuous), and with poison some run marks it `FAILED` (so the
/// properties of poison are not vacuous either).
fn two_region(i: usize) {
    let Some((name, params)) = presets::global_ci().into_iter().nth(i) else {
        panic!("presets::global_ci() has no instance {i}");
    };
    let poison = params.msgs.iter().any(|m| m.refused != 0);
    let report = global::check(GlobalModel::new(params), 2);
    println!(
        "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
        report.states, report.unique, report.max_depth, report.elapsed
    );
    assert!(
        report.discovery(SOME_END).is_some(),
        "{name}: no run ends with every message settled, so the liveness check is vacuous"
    );
    let Some((len, trace)) = report.discovery(FAILOVER_DUPLICATES) else {
        panic!("{name}: no failover publishes a message again: the crash is too tame");
    };
    println!("the duplicate a failover allows, in {len} steps:\n{trace}");
    assert!(
        !poison || report.discovery(SOME_FAILED).is_some(),
        "{name}: no run marks the poison FAILED, so the properties of poison are vacuous"
    );
    let failures = report.failures();
    assert!(failures.is_empty(), "{name}: {}", failures.join("\n"));
}

macro_rules! instances {
    ($check:ident: $($test:ident = $i:expr),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                $check($i);
            }
        )*
    };
}

instances! { single_region:
    single_region_0 = 0, single_region_1 = 1, single_region_2 = 2, single_region_3 = 3,
    single_region_4 = 4, single_region_5 = 5, single_region_6 = 6, single_region_7 = 7,
    single_region_8 = 8, single_region_9 = 9, single_region_10 = 10, single_region_11 = 11,
    single_region_12 = 12, single_region_13 = 13, single_region_14 = 14, single_region_15 = 15,
    single_region_16 = 16, single_region_17 = 17,
}

instances! { two_region:
    two_region_0 = 0, two_region_1 = 1, two_region_2 = 2, two_region_3 = 3, two_region_4 = 4,
}

#[test]
fn every_ci_instance_has_its_test() {
    assert_eq!(
        presets::ci().len(),
        SINGLE_REGION,
        "add or remove a single_region_N test"
    );
    assert_eq!(
        presets::global_ci().len(),
        TWO_REGION,
        "add or remove a two_region_N test"
    );
}

/// Some CI instance delivers a copy to a consumer twice: the faults are not too tame.
#[test]
fn duplicates_reach_the_consumer_on_some_ci_instance() {
    let duplicated = presets::ci().into_iter().any(|(name, params)| {
        let report = find(OutboxModel::new(params), 2, DUPLICATES_HAPPEN);
        let found = report.discovery(DUPLICATES_HAPPEN);
        if let Some((len, trace)) = found {
            println!("{name}: a duplicate in {len} steps:\n{trace}");
        }
        found.is_some()
    });
    assert!(
        duplicated,
        "no instance delivers a duplicate: the faults are too tame"
    );
}
