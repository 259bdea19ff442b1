//! A deployed stack, read back from what it created: the functions' configuration
//! names the table, the routes and the queues, the event source mappings name the
//! stream and the failure destination. Works the same for a stack applied with
//! Terraform or CDK, on the local AWS or an account — nothing is taken from the tool's
//! own outputs, so what is checked is what was deployed.

mod logs;
mod resources;

pub use logs::{JSON_LOGS, LogLine, emf_sum, function_logs, log_records};
pub use resources::environment;

use crate::aws::Clients;
use aws_sdk_lambda::types::EventSourceMappingConfiguration;
use aws_smithy_types::error::display::DisplayErrorContext;
use resources::{dead_letter_arn, only_mapping, queue_url};
use serde_json::Value;
use std::collections::BTreeMap;

/// The deployment could not be read or changed.
#[derive(Debug, thiserror::Error)]
#[error("deployment `{prefix}`: {what}")]
pub struct DeploymentError {
    prefix: String,
    what: String,
}

/// The three functions and what they point at.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// The prefix of every physical name.
    pub prefix: String,
    /// `<prefix>-publisher`.
    pub publisher: String,
    /// `<prefix>-sweeper`.
    pub sweeper: String,
    /// `<prefix>-orders-consumer`.
    pub consumer: String,
    /// The outbox table (`OUTBOX_TABLE_NAME`).
    pub table: String,
    /// The consumer's orders table (`ORDERS_TABLE_NAME`).
    pub orders_table: String,
    /// Topic → destination, as `OUTBOX_ROUTES` says (a string, or an object).
    pub routes: BTreeMap<String, Value>,
    /// The outbox dead-letter queue (`OUTBOX_DLQ_URL`).
    pub dlq_url: String,
    /// The queue the consumer reads.
    pub consumer_queue_url: String,
    /// Its dead-letter queue, from its redrive policy.
    pub consumer_dlq_url: Option<String>,
    /// The stream the publisher's mapping reads.
    pub stream_arn: String,
    /// The publisher mapping itself.
    pub stream_mapping: EventSourceMappingConfiguration,
    /// The consumer's mapping.
    pub queue_mapping: EventSourceMappingConfiguration,
}

impl Deployment {
    /// Reads the deployment with this prefix.
    pub async fn discover(clients: &Clients, prefix: &str) -> Result<Self, DeploymentError> {
        let fail = |what: String| DeploymentError {
            prefix: prefix.to_owned(),
            what,
        };
        let publisher = format!("{prefix}-publisher");
        let consumer = format!("{prefix}-orders-consumer");
        let publisher_env = environment(clients, &publisher).await.map_err(fail)?;
        let consumer_env = environment(clients, &consumer).await.map_err(fail)?;
        let var = |env: &BTreeMap<String, String>, name: &str| {
            env.get(name)
                .cloned()
                .ok_or_else(|| fail(format!("the function has no {name} in its environment")))
        };
        let routes: BTreeMap<String, Value> =
            serde_json::from_str(&var(&publisher_env, "OUTBOX_ROUTES")?)
                .map_err(|e| fail(format!("OUTBOX_ROUTES is not a JSON object: {e}")))?;
        let stream_mapping = only_mapping(clients, &publisher).await.map_err(fail)?;
        let queue_mapping = only_mapping(clients, &consumer).await.map_err(fail)?;
        let stream_arn = stream_mapping
            .event_source_arn()
            .unwrap_or_default()
            .to_owned();
        let queue_arn = queue_mapping.event_source_arn().unwrap_or_default();
        let consumer_queue_url = queue_url(clients, queue_arn).await.map_err(fail)?;
        let consumer_dlq_url = match dead_letter_arn(clients, &consumer_queue_url).await {
            Some(arn) => Some(queue_url(clients, &arn).await.map_err(fail)?),
            None => None,
        };
        Ok(Deployment {
            prefix: prefix.to_owned(),
            sweeper: format!("{prefix}-sweeper"),
            table: var(&publisher_env, "OUTBOX_TABLE_NAME")?,
            dlq_url: var(&publisher_env, "OUTBOX_DLQ_URL")?,
            orders_table: var(&consumer_env, "ORDERS_TABLE_NAME")?,
            publisher,
            consumer,
            routes,
            consumer_queue_url,
            consumer_dlq_url,
            stream_arn,
            stream_mapping,
            queue_mapping,
        })
    }

    /// The destination of `topic` (its URL or ARN), when it is routed.
    pub fn destination(&self, topic: &str) -> Option<&str> {
        match self.routes.get(topic)? {
            Value::String(d) => Some(d),
            other => other.get("destination")?.as_str(),
        }
    }

    /// Changes environment variables of one of its functions: `Some` sets, `None`
    /// removes; the others stay. The next invocation starts with the new values.
    pub async fn set_environment(
        &self,
        clients: &Clients,
        function: &str,
        changes: &[(&str, Option<&str>)],
    ) -> Result<(), DeploymentError> {
        let fail = |what: String| DeploymentError {
            prefix: self.prefix.clone(),
            what,
        };
        let mut env = environment(clients, function).await.map_err(fail)?;
        for (name, value) in changes {
            match value {
                Some(v) => env.insert((*name).to_owned(), (*v).to_owned()),
                None => env.remove(*name),
            };
        }
        clients
            .lambda
            .update_function_configuration()
            .function_name(function)
            .environment(
                aws_sdk_lambda::types::Environment::builder()
                    .set_variables(Some(env.into_iter().collect()))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| fail(format!("updating {function}: {}", DisplayErrorContext(&e))))?;
        Ok(())
    }

    /// Everything `function` printed since `since_ms` (epoch ms), oldest first.
    pub async fn logs(
        &self,
        clients: &Clients,
        function: &str,
        since_ms: i64,
    ) -> Result<Vec<LogLine>, DeploymentError> {
        function_logs(clients, function, since_ms)
            .await
            .map_err(|what| DeploymentError {
                prefix: self.prefix.clone(),
                what,
            })
    }
}
