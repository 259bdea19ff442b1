//! The alarms and the dashboard each stack creates.

use super::each_stack;
use serde_json::Value;

#[tokio::test]
async fn each_stack_creates_its_alarms_and_dashboard() {
    let config = outbox_tests::sdk_config().await;
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&config);
    for (tool, _, d) in each_stack().await {
        let alarms = cloudwatch
            .describe_alarms()
            .alarm_name_prefix(format!("{}-", d.prefix))
            .send()
            .await
            .unwrap();
        let names: Vec<String> = alarms
            .metric_alarms()
            .iter()
            .filter_map(|a| a.alarm_name())
            .map(|n| n.trim_start_matches(&format!("{}-", d.prefix)).to_owned())
            .collect();
        for want in [
            "OutboxDlqNotEmpty",
            "ConsumerDlqNotEmpty",
            "OrdersEventsDlqNotEmpty",
            "StreamDiscards",
            "RecoveryDlqNotEmpty",
            "RecoveryRangeLost",
            "RecoveryErrors",
            "RecoveryThrottles",
            "PublisherIteratorAge",
            "SweeperRecovering",
            "OldestPendingTooOld",
            "PublisherErrors",
            "SweeperErrors",
            "ConsumerErrors",
            "PublisherThrottles",
            "SweeperThrottles",
            "ConsumerThrottles",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{tool}: {want} in {names:?}"
            );
        }
        let oldest = alarms
            .metric_alarms()
            .iter()
            .find(|a| {
                a.alarm_name()
                    .is_some_and(|n| n.ends_with("OldestPendingTooOld"))
            })
            .unwrap();
        assert_eq!(
            oldest.treat_missing_data(),
            Some("breaching"),
            "{tool}: a dead sweeper is not silent"
        );
        assert!(
            oldest
                .dimensions()
                .iter()
                .any(|dim| dim.name() == Some("Service") && dim.value() == Some(&d.prefix)),
            "{tool}: the deployment's own metrics"
        );
        let dashboard = cloudwatch
            .get_dashboard()
            .dashboard_name(format!("{}-dashboard", d.prefix))
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_str(dashboard.dashboard_body().unwrap()).unwrap();
        assert!(
            body["widgets"].as_array().is_some_and(|w| w.len() >= 7),
            "{tool}: {body}"
        );
    }
}
