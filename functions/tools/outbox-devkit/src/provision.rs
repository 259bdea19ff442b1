//! Creates what the outbox needs, for local runs and tests: the outbox table (stream,
//! sparse sweeper index, TTL) and queues with dead-letter queues. On AWS, deploy with
//! the CDK app or the Terraform module instead.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;
use aws_smithy_types::error::display::DisplayErrorContext;
use dynamodb_outbox::KeyNames;
use dynamodb_outbox_core::schema::{ScalarType, TABLE};

/// Provisioning failed.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {detail}")]
pub struct ProvisionError {
    what: String,
    detail: String,
}

fn perr(what: impl Into<String>) -> impl FnOnce(&dyn std::error::Error) -> ProvisionError {
    let what = what.into();
    move |e| ProvisionError {
        what,
        detail: DisplayErrorContext(e).to_string(),
    }
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, ProvisionError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(|e| perr("key schema")(&e))
}

fn attr(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, ProvisionError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(|e| perr("attribute definition")(&e))
}

/// Creates the outbox table: `PK`/`SK`, stream `NEW_IMAGE`, the sparse sweeper
/// index, TTL on `ExpiresAt`. Returns the stream ARN.
pub async fn create_outbox_table(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<String, ProvisionError> {
    create_outbox_table_keyed(client, table, &KeyNames::default()).await
}

/// [`create_outbox_table`] keyed and with the TTL attribute `keys` names: the table
/// of an application whose own design names them (`pk`/`sk`, say).
pub async fn create_outbox_table_keyed(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    keys: &KeyNames,
) -> Result<String, ProvisionError> {
    let index = GlobalSecondaryIndex::builder()
        .index_name(TABLE.sweep_index)
        .key_schema(key(TABLE.sweep_index_partition_key, KeyType::Hash)?)
        .key_schema(key(TABLE.sweep_index_sort_key, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )
        .build()
        .map_err(|e| perr("sweeper index")(&e))?;
    let out = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key(&keys.partition_key, KeyType::Hash)?)
        .key_schema(key(&keys.sort_key, KeyType::Range)?)
        .set_attribute_definitions(Some(
            TABLE
                .key_attributes()
                .into_iter()
                .map(|(name, kind)| match name {
                    _ if name == TABLE.partition_key => (keys.partition_key.as_str(), kind),
                    _ if name == TABLE.sort_key => (keys.sort_key.as_str(), kind),
                    _ => (name, kind),
                })
                .map(|(name, kind)| match kind {
                    ScalarType::S => attr(name, ScalarAttributeType::S),
                    ScalarType::N => attr(name, ScalarAttributeType::N),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ))
        .global_secondary_indexes(index)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build()
                .map_err(|e| perr("stream specification")(&e))?,
        )
        .send()
        .await
        .map_err(|e| perr(format!("creating table {table}"))(&e))?;
    enable_ttl_on(client, table, &keys.ttl_attribute).await?;
    out.table_description()
        .and_then(|t| t.latest_stream_arn())
        .map(str::to_owned)
        .ok_or_else(|| ProvisionError {
            what: format!("creating table {table}"),
            detail: "no stream ARN in the answer".into(),
        })
}

/// Turns on TTL on the attribute `name`.
pub async fn enable_ttl_on(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    name: &str,
) -> Result<(), ProvisionError> {
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(name)
                .build()
                .map_err(|e| perr("TTL specification")(&e))?,
        )
        .send()
        .await
        .map_err(|e| perr(format!("enabling TTL on {table}"))(&e))?;
    Ok(())
}

/// Creates a table with a single string hash key (the reference consumer's orders).
pub async fn create_keyed_table(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    hash_key: &str,
) -> Result<(), ProvisionError> {
    client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key(hash_key, KeyType::Hash)?)
        .attribute_definitions(attr(hash_key, ScalarAttributeType::S)?)
        .send()
        .await
        .map_err(|e| perr(format!("creating table {table}"))(&e))?;
    Ok(())
}

/// A queue and its dead-letter queue.
#[derive(Debug, Clone)]
pub struct QueuePair {
    /// The queue's URL.
    pub url: String,
    /// Its dead-letter queue's URL.
    pub dlq_url: String,
}

/// Creates a queue (FIFO when `name` ends in `.fifo`) with server-side encryption and
/// the service's default `MaximumMessageSize`.
pub async fn create_queue(
    client: &aws_sdk_sqs::Client,
    name: &str,
    visibility_timeout_s: u32,
) -> Result<String, ProvisionError> {
    create_queue_sized(client, name, visibility_timeout_s, None).await
}

/// [`create_queue`] with `MaximumMessageSize` set to `max_message_bytes` (1024 to
/// 1048576) when given.
pub async fn create_queue_sized(
    client: &aws_sdk_sqs::Client,
    name: &str,
    visibility_timeout_s: u32,
    max_message_bytes: Option<u32>,
) -> Result<String, ProvisionError> {
    let mut req = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::SqsManagedSseEnabled, "true")
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility_timeout_s.to_string(),
        );
    if let Some(max) = max_message_bytes {
        req = req.attributes(QueueAttributeName::MaximumMessageSize, max.to_string());
    }
    if name.ends_with(".fifo") {
        req = req.attributes(QueueAttributeName::FifoQueue, "true");
    }
    let out = req
        .send()
        .await
        .map_err(|e| perr(format!("creating queue {name}"))(&e))?;
    out.queue_url()
        .map(str::to_owned)
        .ok_or_else(|| ProvisionError {
            what: format!("creating queue {name}"),
            detail: "no URL in the answer".into(),
        })
}

/// Creates `name` and `name-dlq` (keeping a `.fifo` suffix last) with a redrive policy
/// that moves a message to the dead-letter queue after `max_receives` receives.
pub async fn create_queue_with_dlq(
    client: &aws_sdk_sqs::Client,
    name: &str,
    visibility_timeout_s: u32,
    max_receives: u32,
) -> Result<QueuePair, ProvisionError> {
    let dlq_name = match name.strip_suffix(".fifo") {
        Some(base) => format!("{base}-dlq.fifo"),
        None => format!("{name}-dlq"),
    };
    let dlq_url = create_queue(client, &dlq_name, visibility_timeout_s).await?;
    let arn = queue_arn(client, &dlq_url).await?;
    let url = create_queue(client, name, visibility_timeout_s).await?;
    let policy = serde_json::json!({"deadLetterTargetArn": arn, "maxReceiveCount": max_receives.to_string()});
    client
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::RedrivePolicy, policy.to_string())
        .send()
        .await
        .map_err(|e| perr(format!("setting the redrive policy of {name}"))(&e))?;
    Ok(QueuePair { url, dlq_url })
}

/// A queue's ARN.
pub async fn queue_arn(client: &aws_sdk_sqs::Client, url: &str) -> Result<String, ProvisionError> {
    let out = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| perr(format!("reading attributes of {url}"))(&e))?;
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .ok_or_else(|| ProvisionError {
            what: format!("reading attributes of {url}"),
            detail: "no QueueArn".into(),
        })
}

/// Lets `service` (`sns.amazonaws.com`, `events.amazonaws.com`) send to the queue at
/// `url` (ARN `queue_arn`) on behalf of `source_arn` only — a topic, or an EventBridge
/// rule — as AWS requires of a queue that a topic or a rule delivers to (the local AWS
/// with IAM enforced refuses the delivery without it). The statement is added to the
/// queue's policy, so one queue can take several sources.
pub async fn allow_delivery(
    client: &aws_sdk_sqs::Client,
    url: &str,
    queue_arn: &str,
    service: &str,
    source_arn: &str,
) -> Result<(), ProvisionError> {
    let what = || format!("letting {service} ({source_arn}) send to {url}");
    let current = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::Policy)
        .send()
        .await
        .map_err(|e| perr(what())(&e))?;
    let mut policy = current
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::Policy))
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .filter(|p| p["Statement"].is_array())
        .unwrap_or_else(|| serde_json::json!({ "Version": "2012-10-17", "Statement": [] }));
    if let Some(statements) = policy["Statement"].as_array_mut() {
        statements.push(serde_json::json!({
            "Effect": "Allow",
            "Principal": { "Service": service },
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
            "Condition": { "ArnEquals": { "aws:SourceArn": source_arn } },
        }));
    }
    client
        .set_queue_attributes()
        .queue_url(url)
        .attributes(QueueAttributeName::Policy, policy.to_string())
        .send()
        .await
        .map_err(|e| perr(what())(&e))?;
    Ok(())
}

/// The ARN of the execution role `name`, made if it does not exist, that Lambda may
/// assume and whose inline policy `policy` (a policy document) is set every time. With
/// IAM enforced, the local AWS evaluates every call a function makes against its role.
#[cfg(feature = "chaos")]
pub async fn function_role(
    client: &aws_sdk_iam::Client,
    name: &str,
    policy: &serde_json::Value,
) -> Result<String, ProvisionError> {
    let trust = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Service": "lambda.amazonaws.com" },
            "Action": "sts:AssumeRole",
        }],
    });
    let arn = match client
        .create_role()
        .role_name(name)
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
    {
        Ok(out) => out.role().map(|r| r.arn().to_owned()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_entity_already_exists_exception()) =>
        {
            let out = client
                .get_role()
                .role_name(name)
                .send()
                .await
                .map_err(|e| perr(format!("reading role {name}"))(&e))?;
            out.role().map(|r| r.arn().to_owned())
        }
        Err(e) => return Err(perr(format!("creating role {name}"))(&e)),
    }
    .ok_or_else(|| ProvisionError {
        what: format!("creating role {name}"),
        detail: "no role in the answer".into(),
    })?;
    client
        .put_role_policy()
        .role_name(name)
        .policy_name(name)
        .policy_document(policy.to_string())
        .send()
        .await
        .map_err(|e| perr(format!("setting the policy of role {name}"))(&e))?;
    Ok(arn)
}

/// The role of the functions the dev kit and the tests deploy outside the stacks (the
/// chaos run's consumer, the tests' own pipelines): every call of the services our
/// functions use, on every resource. Those deployments test behaviour under faults, on
/// resources they make themselves; least privilege is the stacks' job, and their own
/// roles are what the deployed tests and the removed-grant test run under.
#[cfg(feature = "chaos")]
pub async fn test_function_role(client: &aws_sdk_iam::Client) -> Result<String, ProvisionError> {
    let actions = [
        "dynamodb:*",
        "sqs:*",
        "sns:*",
        "events:*",
        "s3:*",
        "logs:*",
        "cloudwatch:PutMetricData",
    ];
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{ "Effect": "Allow", "Action": actions, "Resource": "*" }],
    });
    function_role(client, "outbox-test-function", &policy).await
}
