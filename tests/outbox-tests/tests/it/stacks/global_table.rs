//! The outbox on a global table, deployed: `tests/run` applies
//! infra/terraform/examples/global-table-local (`scripts/deploy-local terraform-global
//! --prefix gt`: replicas in us-east-1 and eu-west-1 of one MiniStack, the module per
//! region with its provider, each region's orders queue as its destination) and names
//! it in `OUTBOX_GLOBAL_STACK`. The deployed publishers behind their replicas' stream
//! mappings, and the sweepers on their schedules, publish; `outbox-devkit regions`
//! drives them (the same run as `scripts/demo --regions`, smaller):
//!
//! - a mixed workload in both regions (library producer, homed where it commits, and a
//!   minimal producer, whose items are the default home's) is published exactly once
//!   across both regions' queues, each message by its home region;
//! - with eu-west-1's mapping disabled and its sweeper throttled to zero, messages
//!   committed there wait; failed over (`outbox_ops::rehome`, as `outbox-ops failover`
//!   does) us-east-1's sweeper publishes each once;
//! - failed over and back, they are published once when eu-west-1 is back, its
//!   sweeper run at once and every few seconds beside its mapping's replay (with the
//!   failback making them due at once, that published 20 of 20 twice);
//! - each region has its own alarms and dashboard, on its own functions.
//!
//! MiniStack replicates synchronously, so the one duplicate the design allows (a
//! message the failed region published whose `SENT` mark had not replicated) cannot
//! happen here: any copy counted twice fails the test. Seen failing with eu-west-1's
//! deployment taking itself for the default home too (its publisher's
//! `OUTBOX_DEFAULT_HOME_REGION` and its mapping's filter as the module writes them for
//! the default home): both regions' publishers took the minimal producer's messages,
//! eu-west-1's first, and us-east-1's status read found them `SENT` (synchronous
//! replication; on AWS the lag would let both publish) — 21 published by the wrong
//! region.

use outbox_devkit::regions::{PhaseCount, RegionsOptions, run};
use outbox_tests::pipeline::require_ministack;
use outbox_tests::sdk_config;
use std::time::Duration;

const US: &str = "us-east-1";
const EU: &str = "eu-west-1";

/// The global-table deployment's prefix, or `None` after saying why the test returns.
fn global_stack(test: &str) -> Option<String> {
    match std::env::var("OUTBOX_GLOBAL_STACK") {
        Ok(prefix) if !prefix.is_empty() => {
            require_ministack();
            Some(prefix)
        }
        _ => {
            eprintln!(
                "{test}: skipped: OUTBOX_GLOBAL_STACK is not set (tests/run deploys \
                 `scripts/deploy-local terraform-global --prefix gt` and sets it)"
            );
            None
        }
    }
}

fn counts(phase: &PhaseCount) -> Vec<(&str, usize)> {
    phase
        .by_region
        .iter()
        .map(|(r, n)| (r.as_str(), *n))
        .collect()
}

fn assert_once(phase: &PhaseCount) {
    assert_eq!(phase.twice, 0, "{}: published twice: {phase:?}", phase.name);
    assert_eq!(
        phase.missing, 0,
        "{}: never published: {phase:?}",
        phase.name
    );
    assert_eq!(
        phase.stray, 0,
        "{}: stray deliveries: {phase:?}",
        phase.name
    );
    assert_eq!(phase.total, phase.committed, "{}: {phase:?}", phase.name);
}

#[tokio::test]
async fn each_message_is_published_once_across_both_regions_and_a_failed_regions_by_the_other() {
    let Some(prefix) = global_stack("stacks::global_table") else {
        return;
    };
    // Given the stack in both regions, 300 messages across both (150 each, 21 of each
    // region's by the minimal producer), 60 committed in eu-west-1 while it is down and
    // failed over, 20 more failed over and back
    let opts = RegionsOptions {
        prefix,
        regions: vec![US.into(), EU.into()],
        messages: 300,
        minimal_every: 7,
        failover_messages: 60,
        failback_messages: 20,
        fail: Some(EU.into()),
        settle_timeout: Duration::from_secs(180),
    };
    // When the run drives them through the deployed functions
    let report = run(&sdk_config().await, &opts)
        .await
        .unwrap_or_else(|e| panic!("the regions run: {e}"));
    println!("{}", report.render());
    let [both_up, failover, failback] = report.phases.as_slice() else {
        panic!("three phases: {report:?}");
    };
    // Then every message of the mixed workload was published once, by its home:
    // us-east-1 its own 150 and both regions' minimal ones (its default home), eu-west-1
    // its library producer's 129
    assert_once(both_up);
    assert_eq!(both_up.wrong_region, 0, "{both_up:?}");
    assert_eq!(counts(both_up), vec![(US, 150 + 21), (EU, 150 - 21)]);
    // and eu-west-1's backlog, failed over, by us-east-1 alone, once
    assert_once(failover);
    assert_eq!(failover.wrong_region, 0, "{failover:?}");
    assert_eq!(counts(failover), vec![(US, 60), (EU, 0)]);
    // and what was failed back, once, by whichever region held it — some by eu-west-1,
    // or the failback and the replay beside the sweep were never exercised
    assert_once(failback);
    let (_, by_eu) = counts(failback)[1];
    assert!(by_eu > 0, "nothing failed back to eu-west-1: {failback:?}");
    assert!(report.held(), "{}", report.render());
}

#[tokio::test]
async fn each_region_has_its_own_alarms_and_dashboard() {
    let Some(prefix) = global_stack("stacks::global_table") else {
        return;
    };
    let base = sdk_config().await;
    for region in [US, EU] {
        // Given the CloudWatch of one region
        let config = base
            .to_builder()
            .region(aws_config::Region::new(region))
            .build();
        let cloudwatch = aws_sdk_cloudwatch::Client::new(&config);
        // When its alarms are listed and its dashboard read
        let alarms = cloudwatch
            .describe_alarms()
            .alarm_name_prefix(format!("{prefix}-"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{region}: describe alarms: {e}"));
        // Then the outbox's alarms are there, those on a function on that region's
        // function, and the dashboard named for the region
        let names: Vec<&str> = alarms
            .metric_alarms()
            .iter()
            .filter_map(|a| a.alarm_name()?.strip_prefix(&format!("{prefix}-")))
            .collect();
        for want in [
            "OutboxDlqNotEmpty",
            "StreamDiscards",
            "RecoveryDlqNotEmpty",
            "RecoveryRangeLost",
            "PublisherIteratorAge",
            "OldestPendingTooOld",
            "PublisherErrors",
            "SweeperErrors",
            "RecoveryErrors",
        ] {
            assert!(names.contains(&want), "{region}: {want} in {names:?}");
        }
        let iterator_age = alarms
            .metric_alarms()
            .iter()
            .find(|a| a.alarm_name() == Some(&format!("{prefix}-PublisherIteratorAge")))
            .unwrap_or_else(|| panic!("{region}: PublisherIteratorAge"));
        let functions: Vec<_> = iterator_age
            .dimensions()
            .iter()
            .filter(|d| d.name() == Some("FunctionName"))
            .filter_map(|d| d.value())
            .collect();
        assert_eq!(functions, [format!("{prefix}-publisher")], "{region}");
        let arn = iterator_age.alarm_arn().unwrap_or_default();
        assert!(arn.contains(&format!(":{region}:")), "{region}: {arn}");
        let dashboard = format!("{prefix}-dashboard-{region}");
        let body = cloudwatch
            .get_dashboard()
            .dashboard_name(&dashboard)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{region}: {dashboard}: {e:?}"));
        assert!(
            body.dashboard_body().is_some_and(|b| b.contains(region)),
            "{region}: {dashboard} shows its region's metrics: {body:?}"
        );
    }
}
