//! The stream, queue and schedule mappings each stack creates.

use super::{each_stack, queue_attributes};
use aws_sdk_lambda::types::{EventSourcePosition, FunctionResponseType};
use serde_json::Value;

#[tokio::test]
async fn each_stack_maps_the_stream_the_queue_and_the_schedule_as_documented() {
    let filter: Value = serde_json::from_str(dynamodb_outbox::STREAM_FILTER_JSON).unwrap();
    let pattern = filter["Filters"][0]["Pattern"].as_str().unwrap();
    for (tool, c, d) in each_stack().await {
        let m = &d.stream_mapping;
        assert_eq!(
            m.starting_position(),
            Some(&EventSourcePosition::TrimHorizon),
            "{tool}: a new table is read from its start"
        );
        assert_eq!(m.batch_size(), Some(100), "{tool}");
        assert_eq!(m.maximum_retry_attempts(), Some(5), "{tool}");
        assert_eq!(m.maximum_record_age_in_seconds(), Some(3600), "{tool}");
        assert_eq!(m.bisect_batch_on_function_error(), Some(true), "{tool}");
        assert_eq!(m.parallelization_factor(), Some(1), "{tool}");
        assert_eq!(
            m.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        let patterns: Vec<Value> = m
            .filter_criteria()
            .map(|f| f.filters())
            .unwrap_or_default()
            .iter()
            .filter_map(|f| serde_json::from_str(f.pattern()?).ok())
            .collect();
        // infra/stream-filter.json, not a copy, with the home region's clause: the
        // messages homed in the stack's region, and — it being the default home —
        // those naming none (docs/global-tables.md).
        let homed = |rule: Value| {
            let mut p: Value = serde_json::from_str(pattern).unwrap();
            p["dynamodb"]["NewImage"]["HomeRegion"] = serde_json::json!({ "S": [rule] });
            p
        };
        let region = c.region.as_str();
        // Lambda ORs the filters: their order is the tool's, not a rule.
        let mut patterns: Vec<String> = patterns.iter().map(Value::to_string).collect();
        patterns.sort();
        let mut expected: Vec<String> = [
            homed(Value::from(region)),
            homed(serde_json::json!({ "exists": false })),
        ]
        .iter()
        .map(Value::to_string)
        .collect();
        expected.sort();
        assert_eq!(
            patterns, expected,
            "{tool}: infra/stream-filter.json with the home region's clause"
        );
        let on_failure = m
            .destination_config()
            .and_then(|c| c.on_failure())
            .and_then(|o| o.destination())
            .unwrap_or_default();
        assert!(
            on_failure.ends_with(&format!(":{}-stream-failures", d.prefix)),
            "{tool}: {on_failure}"
        );
        let q = &d.queue_mapping;
        assert_eq!(q.batch_size(), Some(10), "{tool}");
        assert_eq!(
            q.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        // The recovery function reads the stream mapping's on-failure queue.
        let recovery = c
            .lambda
            .list_event_source_mappings()
            .function_name(format!("{}-recovery", d.prefix))
            .send()
            .await
            .unwrap();
        let [r] = recovery.event_source_mappings() else {
            panic!("{tool}: one mapping for the recovery function: {recovery:?}")
        };
        assert_eq!(r.event_source_arn(), Some(on_failure), "{tool}");
        assert_eq!(r.batch_size(), Some(10), "{tool}");
        assert_eq!(
            r.function_response_types(),
            [FunctionResponseType::ReportBatchItemFailures],
            "{tool}"
        );
        let failures = queue_attributes(&c, &format!("{}-stream-failures", d.prefix)).await;
        let visibility: u32 = failures["VisibilityTimeout"].parse().unwrap();
        assert!(
            visibility >= 360,
            "{tool}: 6 × the recovery function's timeout"
        );
        // The schedule: a rule whose target is the sweeper.
        let sweeper_arn = c
            .lambda
            .get_function_configuration()
            .function_name(&d.sweeper)
            .send()
            .await
            .unwrap()
            .function_arn()
            .unwrap()
            .to_owned();
        let rules = c
            .eventbridge
            .list_rule_names_by_target()
            .target_arn(&sweeper_arn)
            .send()
            .await
            .unwrap();
        let [rule] = rules.rule_names() else {
            panic!("{tool}: one rule targets the sweeper: {rules:?}")
        };
        let rule = c
            .eventbridge
            .describe_rule()
            .name(rule)
            .send()
            .await
            .unwrap();
        assert_eq!(rule.schedule_expression(), Some("rate(1 minute)"), "{tool}");
    }
}
