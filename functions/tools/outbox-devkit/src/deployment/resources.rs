//! Reading a deployed function's configuration and the queues it points at.

use crate::aws::Clients;
use aws_sdk_lambda::types::EventSourceMappingConfiguration;
use aws_smithy_types::error::display::DisplayErrorContext;
use serde_json::Value;
use std::collections::BTreeMap;

/// The environment variables a deployed function is configured with.
pub async fn environment(
    clients: &Clients,
    function: &str,
) -> Result<BTreeMap<String, String>, String> {
    let config = clients
        .lambda
        .get_function_configuration()
        .function_name(function)
        .send()
        .await
        .map_err(|e| format!("function {function}: {}", DisplayErrorContext(&e)))?;
    Ok(config
        .environment()
        .and_then(|e| e.variables())
        .map(|v| v.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default())
}

pub(super) async fn only_mapping(
    clients: &Clients,
    function: &str,
) -> Result<EventSourceMappingConfiguration, String> {
    let out = clients
        .lambda
        .list_event_source_mappings()
        .function_name(function)
        .send()
        .await
        .map_err(|e| format!("mappings of {function}: {}", DisplayErrorContext(&e)))?;
    match out.event_source_mappings() {
        [one] => Ok(one.clone()),
        many => Err(format!(
            "{function} has {} event source mappings; expected one",
            many.len()
        )),
    }
}

/// The dead-letter queue of a queue, from its redrive policy.
pub(super) async fn dead_letter_arn(clients: &Clients, url: &str) -> Option<String> {
    let out = clients
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .ok()?;
    let policy = out
        .attributes()?
        .get(&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)?;
    let policy: Value = serde_json::from_str(policy).ok()?;
    policy["deadLetterTargetArn"].as_str().map(str::to_owned)
}

pub(super) async fn queue_url(clients: &Clients, queue_arn: &str) -> Result<String, String> {
    let name = queue_arn.rsplit(':').next().unwrap_or_default();
    let out = clients
        .sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| format!("queue {queue_arn}: {}", DisplayErrorContext(&e)))?;
    out.queue_url()
        .map(str::to_owned)
        .ok_or_else(|| format!("queue {queue_arn} has no URL"))
}
