//! A private pipeline per test on MiniStack: the compiled functions behind real event
//! source mappings, on fresh resources.
//!
//! Why not deploy one of our stacks per test? Tests need variants a stack does not
//! offer — a fault plan on one function, a short maximum record age, no stream
//! mapping at all — and a Terraform apply takes a minute and a half. So this builds
//! the same wiring through the Lambda API, from the same sources of truth: the
//! stream filter is `infra/stream-filter.json`, the settings are the stacks'
//! defaults, the names follow the stacks' (`<prefix>-publisher`, ...), so
//! [`outbox_devkit::deployment::Deployment`] reads a pipeline exactly as it reads a stack.
//! That the stacks themselves wire the functions this way is checked against the
//! applied stacks in the integration tests' `deployed` module.

use crate::{Outbox, unique};
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{
    DestinationConfig, Environment, EventSourcePosition, FilterCriteria, FunctionCode,
    FunctionResponseType, OnFailure, Runtime,
};
use outbox_devkit::deployment::Deployment;
use outbox_devkit::provision;
use std::path::PathBuf;

/// Which functions run and how their mappings behave.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    /// Map the table's stream to the publisher.
    pub stream_mapping: bool,
    /// Map the orders queue to the consumer.
    pub consumer: bool,
    /// Map the stream mapping's on-failure queue to the recovery function.
    pub recovery: bool,
    /// `OUTBOX_FAULTS` of the publisher, consumer and sweeper.
    pub faults: Faults,
    /// The stream mapping's batch size.
    pub batch_size: i32,
    /// The stream mapping's `MaximumRetryAttempts`.
    pub retries: i32,
    /// The stream mapping's `MaximumRecordAgeInSeconds`.
    pub max_record_age_seconds: i32,
    /// Extra environment of the sweeper (its retry policy, scan mode).
    pub sweeper_env: Vec<(String, String)>,
}

/// Fault plans per function (see `outbox-faults`).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The publisher's.
    pub publisher: Option<String>,
    /// The consumer's.
    pub consumer: Option<String>,
    /// The sweeper's.
    pub sweeper: Option<String>,
}

impl Default for PipelineOptions {
    /// The stacks' defaults (infra/README.md, Parameters).
    fn default() -> Self {
        PipelineOptions {
            stream_mapping: true,
            consumer: true,
            recovery: true,
            faults: Faults::default(),
            batch_size: 100,
            retries: 5,
            max_record_age_seconds: 3600,
            sweeper_env: Vec::new(),
        }
    }
}

/// A pipeline: the outbox resources, the orders table and queue, the functions.
#[derive(Debug)]
pub struct Pipeline {
    /// Table, stream, destination queues, dead-letter queue.
    pub outbox: Outbox,
    /// The functions, read back as a deployment.
    pub deployment: Deployment,
    /// Where the stream mapping sends its on-failure records.
    pub stream_failures_url: String,
}

/// The directory holding `<bin>/bootstrap.zip`, debug builds with fault injection.
pub fn lambda_dir() -> PathBuf {
    let dir = std::env::var_os("OUTBOX_LAMBDA_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/lambda-dev"),
        PathBuf::from,
    );
    let probe = dir.join("outbox-publisher/bootstrap.zip");
    assert!(
        probe.exists(),
        "{} is missing: build the functions with `OUTBOX_LAMBDA_DIR={} scripts/package --debug --features fault-injection` (tests/run does)",
        probe.display(),
        dir.display()
    );
    dir
}

/// Panics with an explanation unless the emulator runs Lambda functions.
pub fn require_ministack() {
    let kind = std::env::var("OUTBOX_EMULATOR").unwrap_or_else(|_| "ministack".into());
    assert_eq!(
        kind, "ministack",
        "this test runs our compiled functions behind event source mappings, which only MiniStack does; tests/run runs it there"
    );
}

impl Pipeline {
    /// Builds a pipeline with `opts` and waits until its mappings are enabled.
    pub async fn deploy(opts: PipelineOptions) -> Self {
        require_ministack();
        let outbox = Outbox::new().await;
        let clients = &outbox.clients;
        let prefix = unique("p");
        let orders_table = format!("{prefix}-orders");
        provision::create_keyed_table(&clients.dynamodb, &orders_table, "id")
            .await
            .expect("orders table");
        let failures = provision::create_queue(&clients.sqs, &format!("{prefix}-failures"), 30)
            .await
            .expect("failure queue");
        let routes = serde_json::json!({
            "orders": outbox.queue.url,
            "ledger": outbox.fifo.url,
            "orders-events": outbox.fifo.url,
        })
        .to_string();
        let outbox_env = vec![
            ("OUTBOX_TABLE_NAME".to_owned(), outbox.table.clone()),
            ("OUTBOX_ROUTES".to_owned(), routes),
            ("OUTBOX_DLQ_URL".to_owned(), outbox.dlq_url.clone()),
            ("OUTBOX_DEPLOYMENT".to_owned(), prefix.clone()),
        ];
        create_functions(&outbox, &prefix, &outbox_env, &orders_table, &opts).await;
        let (publisher, consumer) = (
            format!("{prefix}-publisher"),
            format!("{prefix}-orders-consumer"),
        );
        let failures_arn = provision::queue_arn(&clients.sqs, &failures)
            .await
            .expect("failure queue arn");
        let recovery = format!("{prefix}-recovery");
        create_function(
            &outbox,
            &recovery,
            &lambda_dir().join("outbox-recovery"),
            vec![
                ("OUTBOX_TABLE_NAME".to_owned(), outbox.table.clone()),
                ("OUTBOX_DEPLOYMENT".to_owned(), prefix.clone()),
            ],
        )
        .await;
        map_queue(&outbox, &recovery, &failures_arn, opts.recovery).await;
        let stream_arn = outbox.reader.stream_arn().to_owned();
        map_stream(&outbox, &publisher, &stream_arn, &failures_arn, &opts).await;
        let queue_arn = provision::queue_arn(&clients.sqs, &outbox.queue.url)
            .await
            .expect("queue arn");
        // maxReceiveCount 5, the least AWS recommends for a Lambda consumer, so that a poison
        // message reaches the DLQ within a test (the example stacks allow 10:
        // consumerMaxReceiveCount, infra/README.md).
        let dlq_arn = provision::queue_arn(&clients.sqs, &outbox.queue.dlq_url)
            .await
            .expect("dlq arn");
        clients
            .sqs
            .set_queue_attributes()
            .queue_url(&outbox.queue.url)
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
                serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
                    .to_string(),
            )
            .send()
            .await
            .expect("redrive policy");
        map_queue(&outbox, &consumer, &queue_arn, opts.consumer).await;
        let deployment = Deployment::discover(clients, &prefix)
            .await
            .expect("the pipeline reads back as a deployment");
        Pipeline {
            outbox,
            deployment,
            stream_failures_url: failures,
        }
    }

    /// Invokes the sweeper once, as its schedule does, and returns its summary.
    pub async fn sweep(&self) -> serde_json::Value {
        let out = self
            .outbox
            .clients
            .lambda
            .invoke()
            .function_name(&self.deployment.sweeper)
            .payload(Blob::new(SCHEDULED_EVENT))
            .send()
            .await
            .expect("invoke the sweeper");
        let body = out
            .payload()
            .map(|p| p.as_ref().to_vec())
            .unwrap_or_default();
        assert!(
            out.function_error().is_none(),
            "the sweeper failed: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).expect("the sweep summary is JSON")
    }
}

/// The publisher, sweeper and consumer, from the packaged zips, with the pipeline's
/// environment and fault plans.
async fn create_functions(
    outbox: &Outbox,
    prefix: &str,
    outbox_env: &[(String, String)],
    orders_table: &str,
    opts: &PipelineOptions,
) {
    let dir = lambda_dir();
    let with_faults = |mut env: Vec<(String, String)>, plan: &Option<String>| {
        if let Some(plan) = plan {
            env.push(("OUTBOX_FAULTS".to_owned(), plan.clone()));
        }
        env
    };
    let publisher = format!("{prefix}-publisher");
    create_function(
        outbox,
        &publisher,
        &dir.join("outbox-publisher"),
        with_faults(outbox_env.to_vec(), &opts.faults.publisher),
    )
    .await;
    let mut sweeper_env = outbox_env.to_vec();
    sweeper_env.extend(opts.sweeper_env.iter().cloned());
    create_function(
        outbox,
        &format!("{prefix}-sweeper"),
        &dir.join("outbox-sweeper"),
        with_faults(sweeper_env, &opts.faults.sweeper),
    )
    .await;
    let consumer = format!("{prefix}-orders-consumer");
    create_function(
        outbox,
        &consumer,
        &dir.join("orders-consumer"),
        with_faults(
            vec![("ORDERS_TABLE_NAME".to_owned(), orders_table.to_owned())],
            &opts.faults.consumer,
        ),
    )
    .await;
}

/// EventBridge's scheduled event, as the sweeper's rule delivers it.
pub const SCHEDULED_EVENT: &[u8] = br#"{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event","source":"aws.events","account":"000000000000","time":"2026-11-29T10:00:00Z","region":"us-east-1","resources":["arn:aws:events:us-east-1:000000000000:rule/outbox-sweep"],"detail":{}}"#;

/// Creates a `provided.al2023` function from `<dir>/bootstrap.zip`, with the role of
/// the functions the tests deploy themselves (`provision::test_function_role`).
pub async fn create_function(
    outbox: &Outbox,
    name: &str,
    dir: &std::path::Path,
    env: Vec<(String, String)>,
) {
    let role = provision::test_function_role(&outbox.clients.iam)
        .await
        .expect("the test functions' role");
    create_function_as(outbox, name, dir, env, &role).await;
}

/// Creates a `provided.al2023` function from `<dir>/bootstrap.zip` that runs as `role`.
pub async fn create_function_as(
    outbox: &Outbox,
    name: &str,
    dir: &std::path::Path,
    env: Vec<(String, String)>,
    role: &str,
) {
    let zip = std::fs::read(dir.join("bootstrap.zip")).expect("read bootstrap.zip");
    outbox
        .clients
        .lambda
        .create_function()
        .function_name(name)
        .runtime(Runtime::Providedal2023)
        .handler("bootstrap")
        .role(role)
        .timeout(30)
        .memory_size(256)
        .code(FunctionCode::builder().zip_file(Blob::new(zip)).build())
        .environment(
            Environment::builder()
                .set_variables(Some(
                    env.into_iter()
                        // As Lambda sets it from a JSON LoggingConfig (the stacks').
                        .chain([("AWS_LAMBDA_LOG_FORMAT".to_owned(), "JSON".to_owned())])
                        .collect(),
                ))
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "create {name}: {}",
                aws_smithy_types::error::display::DisplayErrorContext(&e)
            )
        });
}

async fn map_stream(
    outbox: &Outbox,
    function: &str,
    stream_arn: &str,
    failures_arn: &str,
    opts: &PipelineOptions,
) {
    let filter: serde_json::Value =
        serde_json::from_str(dynamodb_outbox::STREAM_FILTER_JSON).expect("stream-filter.json");
    let mut criteria = FilterCriteria::builder();
    for f in filter["Filters"].as_array().expect("Filters") {
        criteria = criteria.filters(
            aws_sdk_lambda::types::Filter::builder()
                .pattern(f["Pattern"].as_str().expect("Pattern"))
                .build(),
        );
    }
    outbox
        .clients
        .lambda
        .create_event_source_mapping()
        .function_name(function)
        .event_source_arn(stream_arn)
        .enabled(opts.stream_mapping)
        .starting_position(EventSourcePosition::TrimHorizon)
        .batch_size(opts.batch_size)
        .maximum_retry_attempts(opts.retries)
        .maximum_record_age_in_seconds(opts.max_record_age_seconds)
        .bisect_batch_on_function_error(true)
        .parallelization_factor(1)
        .function_response_types(FunctionResponseType::ReportBatchItemFailures)
        .filter_criteria(criteria.build())
        .destination_config(
            DestinationConfig::builder()
                .on_failure(OnFailure::builder().destination(failures_arn).build())
                .build(),
        )
        .send()
        .await
        .expect("stream mapping");
}

async fn map_queue(outbox: &Outbox, function: &str, queue_arn: &str, enabled: bool) {
    outbox
        .clients
        .lambda
        .create_event_source_mapping()
        .function_name(function)
        .event_source_arn(queue_arn)
        .enabled(enabled)
        .batch_size(10)
        .function_response_types(FunctionResponseType::ReportBatchItemFailures)
        .send()
        .await
        .expect("queue mapping");
}
