//! The functions each stack deploys, with their environment.

use super::each_stack;
use aws_sdk_lambda::types::{Architecture, Runtime};

#[tokio::test]
async fn each_stack_deploys_the_functions_with_their_environment() {
    for (tool, c, d) in each_stack().await {
        for (function, timeout, vars) in [
            (
                &d.publisher,
                60,
                &[
                    "OUTBOX_TABLE_NAME",
                    "OUTBOX_ROUTES",
                    "OUTBOX_DLQ_URL",
                    "OUTBOX_TTL_DAYS",
                    "OUTBOX_DEPLOYMENT",
                    "OUTBOX_LARGE_PAYLOAD_BUCKET",
                    "OUTBOX_SWEEP_SHARDS",
                ][..],
            ),
            (
                &d.sweeper,
                60,
                &[
                    "OUTBOX_TABLE_NAME",
                    "OUTBOX_ROUTES",
                    "OUTBOX_DLQ_URL",
                    "OUTBOX_MAX_ATTEMPTS",
                    "OUTBOX_SWEEP_GRACE_SECONDS",
                    "OUTBOX_SWEEP_SCAN_MODE",
                    "OUTBOX_DEPLOYMENT",
                    "OUTBOX_LARGE_PAYLOAD_BUCKET",
                    "OUTBOX_SWEEP_SHARDS",
                ][..],
            ),
            (&d.consumer, 30, &["ORDERS_TABLE_NAME"][..]),
            (
                &format!("{}-recovery", d.prefix),
                60,
                &[
                    "OUTBOX_TABLE_NAME",
                    "OUTBOX_DEPLOYMENT",
                    "OUTBOX_SWEEP_SHARDS",
                ][..],
            ),
        ] {
            let f = c
                .lambda
                .get_function_configuration()
                .function_name(function)
                .send()
                .await
                .unwrap();
            assert_eq!(
                f.runtime(),
                Some(&Runtime::Providedal2023),
                "{tool} {function}"
            );
            assert_eq!(f.handler(), Some("bootstrap"), "{tool} {function}");
            assert_eq!(
                f.architectures(),
                [Architecture::X8664],
                "{tool} {function}: deployed for this machine's build"
            );
            assert_eq!(f.timeout(), Some(timeout), "{tool} {function}: timeout");
            assert_eq!(f.memory_size(), Some(256), "{tool} {function}");
            let env = f.environment().and_then(|e| e.variables()).unwrap();
            for var in vars {
                assert!(env.contains_key(*var), "{tool} {function}: {var}");
            }
            // The sweeper index's layout, the stacks' default: every outbox function reads the
            // same shards the producers write, and no change of the count is under way.
            if env.contains_key("OUTBOX_SWEEP_SHARDS") {
                assert_eq!(env["OUTBOX_SWEEP_SHARDS"], "16", "{tool} {function}");
                assert!(
                    !env.contains_key("OUTBOX_SWEEP_SHARDS_PREVIOUS"),
                    "{tool} {function}"
                );
            }
            if env.contains_key("OUTBOX_DEPLOYMENT") {
                assert_eq!(
                    env["OUTBOX_DEPLOYMENT"], d.prefix,
                    "{tool}: metrics dimension"
                );
            }
        }
        // CDK names the `$LATEST` qualifier, Terraform none; both mean the same.
        let invoke = match c
            .lambda
            .get_function_event_invoke_config()
            .function_name(&d.sweeper)
            .send()
            .await
        {
            Ok(config) => config,
            Err(_) => c
                .lambda
                .get_function_event_invoke_config()
                .function_name(&d.sweeper)
                .qualifier("$LATEST")
                .send()
                .await
                .unwrap_or_else(|e| panic!("{tool}: the sweeper's async invoke config: {e:?}")),
        };
        assert_eq!(
            invoke.maximum_retry_attempts(),
            Some(0),
            "{tool}: a failed sweep is not retried for hours"
        );
        assert_eq!(invoke.maximum_event_age_in_seconds(), Some(120), "{tool}");
    }
}
