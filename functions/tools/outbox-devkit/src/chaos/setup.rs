//! Turning a deployed stack into a chaos run: an SNS topic and an EventBridge bus as
//! extra destinations, each with a queue and an orders consumer behind it (as a user
//! would add them, with their grants on the publisher's and the sweeper's roles), fault plans on every function (a lagging index for the two that
//! read it), Lambda's stream redelivery applied by the publisher to its own answers
//! (the local AWS ignores partial batch responses), the mapping's parallelization
//! factor applied by the publisher too (the local AWS runs one batch per shard at a
//! time), short visibility timeouts, and a stream mapping that discards records after
//! a few seconds of failure.

use crate::aws::Clients;
use crate::deployment::{Deployment, JSON_LOGS};
use crate::provision;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{Environment, FunctionCode, FunctionResponseType, Runtime};
use aws_sdk_sqs::types::QueueAttributeName;
use aws_smithy_types::error::display::DisplayErrorContext;
use serde_json::{Value, json};
use std::path::Path;

/// The topics the chaos workload writes to, by destination kind.
pub const TOPIC_QUEUE: &str = "orders";
/// FIFO queue, no consumer: drained at the end to check per-group order.
pub const TOPIC_FIFO: &str = "orders-events";
/// SNS topic → SQS queue (not raw: the consumer reads the SNS envelope) → consumer.
pub const TOPIC_SNS: &str = "chaos-sns";
/// EventBridge bus → rule → SQS queue → consumer.
pub const TOPIC_BUS: &str = "chaos-bus";
/// Routed nowhere: poison.
pub const TOPIC_NOWHERE: &str = "nowhere";

/// The resources the setup added.
#[derive(Debug, Clone)]
pub struct ChaosSetup {
    /// Queues whose consumers store orders, with the consumer's function name.
    pub consumer_queues: Vec<(String, String)>,
    /// The FIFO destination queue.
    pub fifo_url: String,
}

fn err(what: &str) -> impl FnOnce(&dyn std::error::Error) -> String + '_ {
    move |e| format!("{what}: {}", DisplayErrorContext(e))
}

/// Adds the SNS and EventBridge destinations with their consumers, routes them,
/// switches the faults on and sets the stream mapping's parallelization factor.
pub async fn prepare(
    clients: &Clients,
    d: &Deployment,
    assets: &Path,
    plans: &FaultPlans,
    parallelization_factor: u32,
) -> Result<ChaosSetup, String> {
    if !(1..=10).contains(&parallelization_factor) {
        return Err(format!(
            "parallelization factor {parallelization_factor}: a stream mapping takes 1 to 10"
        ));
    }
    let sns_queue = format!("{}-chaos-sns", d.prefix);
    let bus_queue = format!("{}-chaos-bus", d.prefix);
    let sns_url = queue_with_dlq(clients, &sns_queue).await?;
    let bus_url = queue_with_dlq(clients, &bus_queue).await?;
    let topic_arn = sns_to_queue(clients, &d.prefix, &sns_url).await?;
    let bus_arn = bus_to_queue(clients, &d.prefix, &bus_url).await?;
    for function in [&d.publisher, &d.sweeper] {
        grant_destinations(clients, function, &topic_arn, &bus_arn).await?;
    }
    let mut routes = d.routes.clone();
    routes.insert(TOPIC_SNS.into(), Value::String(topic_arn));
    routes.insert(TOPIC_BUS.into(), Value::String(bus_arn));
    let routes = serde_json::to_string(&routes).map_err(|e| e.to_string())?;
    let redeliver = plans.redelivery(d);
    // Above 1, the publisher runs each batch as the concurrent batches AWS may run.
    let parallel = (parallelization_factor > 1).then(|| parallelization_factor.to_string());
    for (function, plan, redeliver, parallel) in [
        (
            &d.publisher,
            &plans.publisher,
            Some(redeliver.as_str()),
            parallel.as_deref(),
        ),
        (&d.sweeper, &plans.sweeper, None, None),
    ] {
        set_env(
            clients,
            d,
            function,
            &[
                ("OUTBOX_ROUTES", Some(&routes)),
                ("OUTBOX_FAULTS", Some(plan)),
                (outbox_faults::replay::REDELIVER_VAR, redeliver),
                (outbox_faults::parallel::PARALLEL_VAR, parallel),
            ],
        )
        .await?;
    }
    let recovery = format!("{}-recovery", d.prefix);
    if clients
        .lambda
        .get_function()
        .function_name(&recovery)
        .send()
        .await
        .is_ok()
    {
        set_env(
            clients,
            d,
            &recovery,
            &[("OUTBOX_FAULTS", Some(&plans.recovery))],
        )
        .await?;
    }
    set_env(
        clients,
        d,
        &d.consumer,
        &[("OUTBOX_FAULTS", Some(&plans.consumer))],
    )
    .await?;
    let mut consumer_queues = vec![(d.consumer_queue_url.clone(), d.consumer.clone())];
    for (queue, url) in [(&sns_queue, &sns_url), (&bus_queue, &bus_url)] {
        let function = format!("{queue}-consumer");
        consumer(clients, d, assets, &function, url, &plans.consumer).await?;
        consumer_queues.push((url.clone(), function));
    }
    for (url, _) in &consumer_queues {
        short_visibility(clients, url).await?;
    }
    stream_mapping(clients, d, parallelization_factor).await?;
    let fifo_url = d
        .destination(TOPIC_FIFO)
        .ok_or("the stack routes no `orders-events` (FIFO) topic")?
        .to_owned();
    Ok(ChaosSetup {
        consumer_queues,
        fifo_url,
    })
}

/// Fault plans per function (`OUTBOX_FAULTS` syntax).
#[derive(Debug, Clone)]
pub struct FaultPlans {
    /// The publisher's.
    pub publisher: String,
    /// The sweeper's.
    pub sweeper: String,
    /// The recovery function's.
    pub recovery: String,
    /// Every consumer's.
    pub consumer: String,
    /// The producer's (applied to the workload's own client).
    pub producer: String,
    /// The share of the publisher's successful batches delivered again anyway.
    pub redeliver_after_success: f64,
}

/// The most redeliveries the publisher gives itself per batch (Lambda's budget is the
/// mapping's `MaximumRetryAttempts`, up to 10,000; a few show the rule).
pub const MAX_REDELIVERIES: i32 = 5;

impl FaultPlans {
    /// About `rate` of every function's AWS calls fail, spread over throttling, 5xx,
    /// timeouts, resets and lost answers; crashes come on top. Ten times `rate` of the
    /// index reads of the publisher and the sweeper (the order fence's) lag, and four
    /// times `rate` of the publisher's successful batches are delivered again: an index
    /// lags all the time, not as a rare failure (a read shows it only if the same read
    /// came within the lag window), and a batch delivered again after a success is
    /// the one case of redelivery that does not need a fault first.
    pub fn at(rate: f64) -> Self {
        let share = |f: f64| format!("{:.4}", (rate * f).min(1.0));
        let common = format!(
            "*:throttle:{};*:server_error:{};*:timeout:{};*:reset:{};*:lost_response:{}",
            share(0.3),
            share(0.2),
            share(0.15),
            share(0.15),
            share(0.2)
        );
        FaultPlans {
            publisher: format!(
                "*:index_lag:{lag};SendMessageBatch:crash_after:0.01;UpdateItem:crash_before:0.005;{common}",
                lag = share(10.0)
            ),
            sweeper: format!(
                "*:index_lag:{lag};SendMessageBatch:crash_after:0.01;{common}",
                lag = share(10.0)
            ),
            recovery: common.clone(),
            consumer: format!("PutItem:crash_after:0.005;{common}"),
            producer: format!(
                "TransactWriteItems:lost_response:{};TransactWriteItems:throttle:{}",
                share(0.5),
                share(0.5)
            ),
            redeliver_after_success: (rate * 4.0).min(1.0),
        }
    }

    /// The publisher's `OUTBOX_FAULTS_REDELIVER`: the stream mapping's own
    /// `MaximumRetryAttempts` (at most [`MAX_REDELIVERIES`]), and the share of
    /// successful batches delivered again.
    pub fn redelivery(&self, d: &Deployment) -> String {
        let retries = d
            .stream_mapping
            .maximum_retry_attempts()
            .filter(|n| (0..MAX_REDELIVERIES).contains(n))
            .unwrap_or(MAX_REDELIVERIES);
        format!("{retries}:{:.4}", self.redeliver_after_success)
    }
}

/// Lets `function` publish to the topic and the bus the setup added, as a user adds
/// a destination's grant beside its route: the local AWS checks IAM, and the stack's
/// roles grant only the destinations it was deployed with.
async fn grant_destinations(
    clients: &Clients,
    function: &str,
    topic_arn: &str,
    bus_arn: &str,
) -> Result<(), String> {
    let config = clients
        .lambda
        .get_function_configuration()
        .function_name(function)
        .send()
        .await
        .map_err(|e| err("function configuration")(&e))?;
    let role = config
        .role()
        .and_then(|arn| arn.rsplit('/').next())
        .ok_or_else(|| format!("{function} has no execution role"))?;
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sns:Publish", "Resource": topic_arn},
            {"Effect": "Allow", "Action": "events:PutEvents", "Resource": bus_arn},
        ],
    });
    clients
        .iam
        .put_role_policy()
        .role_name(role)
        .policy_name("chaos-destinations")
        .policy_document(policy.to_string())
        .send()
        .await
        .map(|_| ())
        .map_err(|e| err("the chaos destinations' grant")(&e))
}

async fn set_env(
    clients: &Clients,
    d: &Deployment,
    function: &str,
    vars: &[(&str, Option<&str>)],
) -> Result<(), String> {
    d.set_environment(clients, function, vars)
        .await
        .map_err(|e| e.to_string())
}

async fn queue_with_dlq(clients: &Clients, name: &str) -> Result<String, String> {
    provision::create_queue_with_dlq(&clients.sqs, name, 5, 5)
        .await
        .map(|q| q.url)
        .map_err(|e| e.to_string())
}

async fn sns_to_queue(clients: &Clients, prefix: &str, queue_url: &str) -> Result<String, String> {
    let topic = clients
        .sns
        .create_topic()
        .name(format!("{prefix}-chaos"))
        .send()
        .await
        .map_err(|e| err("SNS topic")(&e))?;
    let topic_arn = topic.topic_arn().unwrap_or_default().to_owned();
    let queue_arn = provision::queue_arn(&clients.sqs, queue_url)
        .await
        .map_err(|e| e.to_string())?;
    clients
        .sns
        .subscribe()
        .topic_arn(&topic_arn)
        .protocol("sqs")
        .endpoint(&queue_arn)
        .send()
        .await
        .map_err(|e| err("SNS subscription")(&e))?;
    provision::allow_delivery(
        &clients.sqs,
        queue_url,
        &queue_arn,
        "sns.amazonaws.com",
        &topic_arn,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(topic_arn)
}

async fn bus_to_queue(clients: &Clients, prefix: &str, queue_url: &str) -> Result<String, String> {
    let bus = format!("{prefix}-chaos");
    let created = clients
        .eventbridge
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .map_err(|e| err("event bus")(&e))?;
    let bus_arn = created.event_bus_arn().unwrap_or_default().to_owned();
    let rule = format!("{prefix}-chaos-to-queue");
    let rule_arn = clients
        .eventbridge
        .put_rule()
        .name(&rule)
        .event_bus_name(&bus)
        .event_pattern(json!({"source": ["dynamodb-outbox"]}).to_string())
        .send()
        .await
        .map_err(|e| err("event rule")(&e))?
        .rule_arn
        .unwrap_or_default();
    let queue_arn = provision::queue_arn(&clients.sqs, queue_url)
        .await
        .map_err(|e| e.to_string())?;
    clients
        .eventbridge
        .put_targets()
        .rule(&rule)
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(&queue_arn)
                .build()
                .map_err(|e| err("event target")(&e))?,
        )
        .send()
        .await
        .map_err(|e| err("event target")(&e))?;
    provision::allow_delivery(
        &clients.sqs,
        queue_url,
        &queue_arn,
        "events.amazonaws.com",
        &rule_arn,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(bus_arn)
}

async fn consumer(
    clients: &Clients,
    d: &Deployment,
    assets: &Path,
    function: &str,
    queue_url: &str,
    faults: &str,
) -> Result<(), String> {
    let zip = std::fs::read(assets.join("orders-consumer/bootstrap.zip"))
        .map_err(|e| format!("{}: {e}", assets.display()))?;
    let role = provision::test_function_role(&clients.iam)
        .await
        .map_err(|e| e.to_string())?;
    clients
        .lambda
        .create_function()
        .function_name(function)
        .runtime(Runtime::Providedal2023)
        .handler("bootstrap")
        .role(role)
        .timeout(30)
        .memory_size(256)
        .code(FunctionCode::builder().zip_file(Blob::new(zip)).build())
        .environment(
            Environment::builder()
                .variables("ORDERS_TABLE_NAME", &d.orders_table)
                .variables("OUTBOX_FAULTS", faults)
                .variables(JSON_LOGS.0, "JSON")
                .build(),
        )
        .send()
        .await
        .map_err(|e| err("consumer function")(&e))?;
    let queue_arn = provision::queue_arn(&clients.sqs, queue_url)
        .await
        .map_err(|e| e.to_string())?;
    clients
        .lambda
        .create_event_source_mapping()
        .function_name(function)
        .event_source_arn(queue_arn)
        .batch_size(10)
        .function_response_types(FunctionResponseType::ReportBatchItemFailures)
        .send()
        .await
        .map_err(|e| err("consumer mapping")(&e))?;
    Ok(())
}

/// Crashed consumer batches come back within 20 s rather than the deployed minutes
/// (long enough that a slow batch is not received twice while it still runs).
async fn short_visibility(clients: &Clients, url: &str) -> Result<(), String> {
    clients
        .sqs
        .set_queue_attributes()
        .queue_url(url)
        .attributes(QueueAttributeName::VisibilityTimeout, "20")
        .send()
        .await
        .map(|_| ())
        .map_err(|e| err("visibility timeout")(&e))
}

/// A batch that keeps failing is discarded after 20 s (its range goes to the
/// on-failure queue and the recovery function), instead of the deployed hour; the
/// mapping runs `factor` batches of a shard at once (on AWS; the local AWS stores it).
async fn stream_mapping(clients: &Clients, d: &Deployment, factor: u32) -> Result<(), String> {
    let uuid = d.stream_mapping.uuid().unwrap_or_default();
    clients
        .lambda
        .update_event_source_mapping()
        .uuid(uuid)
        .maximum_record_age_in_seconds(20)
        .parallelization_factor(i32::try_from(factor).unwrap_or(1))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| err("stream mapping")(&e))
}
