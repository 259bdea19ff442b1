//! The bounded check CI runs: every property on every CI instance, exhaustively.

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
