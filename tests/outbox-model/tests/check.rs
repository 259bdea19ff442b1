//! The bounded check CI runs: every property on every CI instance, exhaustively.

use outbox_model::global::props::{FAILOVER_DUPLICATES, SOME_FAILED};
use outbox_model::global::{self, GlobalModel};
use outbox_model::props::{DUPLICATES_HAPPEN, SOME_END};
use outbox_model::{OutboxModel, check, presets};

#[test]
fn every_property_holds_on_the_bounded_instances() {
    let mut failures = Vec::new();
    let mut duplicates = false;
    for (name, params) in presets::ci() {
        let report = check(OutboxModel::new(params), 2);
        println!(
            "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
            report.states, report.unique, report.max_depth, report.elapsed
        );
        assert!(
            report.discovery(SOME_END).is_some(),
            "{name}: no run ends with every message settled, so the liveness check is vacuous"
        );
        duplicates |= report.discovery(DUPLICATES_HAPPEN).is_some();
        failures.extend(
            report
                .failures()
                .into_iter()
                .map(|f| format!("{name}: {f}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        duplicates,
        "no instance delivers a duplicate: the faults are too tame"
    );
}

/// The two-region model (`outbox_model::global`): every property on every two-region
/// CI instance, and on each the duplicate a failover allows does happen (so the
/// property that excuses it is not vacuous), and on each with poison some run marks it
/// `FAILED` (so the properties of poison are not vacuous either).
#[test]
fn every_property_holds_on_the_two_region_instances() {
    let mut failures = Vec::new();
    for (name, params) in presets::global_ci() {
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
        failures.extend(
            report
                .failures()
                .into_iter()
                .map(|f| format!("{name}: {f}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
