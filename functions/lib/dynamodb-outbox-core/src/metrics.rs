//! CloudWatch metrics as Embedded Metric Format (EMF) lines on stdout: Lambda ships
//! stdout to CloudWatch Logs, which extracts the metrics, so alarms need no agent,
//! no `PutMetricData` call and no extra permission.
//!
//! Names are shared with the infrastructure's alarms (`infra/CONTRACT.md`). The
//! value of the one dimension is the deployment's name (`OUTBOX_DEPLOYMENT`, default
//! `outbox`), so two deployments in one account keep their metrics apart.

use crate::config::ConfigError;
use crate::publish::Summary;
use crate::sweep::SweepSummary;
use serde_json::{Map, Value, json};

/// CloudWatch namespace of every outbox metric.
pub const NAMESPACE: &str = "DynamoDbOutbox";
/// The one dimension, so alarms can select one deployment's metrics.
pub const DIMENSION: &str = "Service";
/// Its value when the deployment has no name of its own.
pub const SERVICE: &str = "outbox";
/// The variable naming the deployment: the value of the [`DIMENSION`].
pub const DEPLOYMENT: &str = "OUTBOX_DEPLOYMENT";
/// CloudWatch's longest dimension value.
const MAX_DIMENSION_VALUE: usize = 1024;

/// Messages published (stream path).
pub const PUBLISHED: &str = "Published";
/// Messages whose publish failed transiently and will be retried.
pub const PUBLISH_FAILED: &str = "PublishFailed";
/// Messages given up on: `FAILED`, copied to the dead-letter queue.
pub const FAILED: &str = "Failed";
/// Stream records delivered again whose messages were already `SENT`, `FAILED` or
/// gone: skipped, not published again. Lambda redelivers after a partial batch
/// response, an error or a timeout; a steady count means steady redeliveries.
pub const ALREADY_SETTLED_SKIPPED: &str = "AlreadySettledSkipped";
/// Stream records reported for retry because the current status of their messages
/// could not be read (throttling, a missing `dynamodb:BatchGetItem` grant): none is
/// published unread.
pub const STATUS_READ_FAILED: &str = "StatusReadFailed";
/// FIFO messages held because the order fence could not read their aggregates'
/// pending messages (a read refused or failing, more pending keys than its bound):
/// the sweeper charges each an attempt, so a lasting cause ends them `FAILED`.
pub const FENCE_UNREAD: &str = "FenceUnread";
/// FIFO messages the stream publisher left for the sweeper behind an earlier pending
/// message of their aggregate (the order fence held them: they go out at a sweep, up to
/// a sweep period later). A steady count means bursty FIFO aggregates split across
/// batches (a parallelization factor above 1) or earlier messages stuck in the sweeper.
pub const FENCE_DEFERRED: &str = "FenceDeferred";
/// DynamoDB requests the order fence made to read the pending messages of a batch's
/// FIFO-routed aggregates (index select pages, per-shard and partition query pages)
/// and that answered; a read that failed is seen in `FenceUnread` instead. The fence's
/// cost: 0 for batches with no FIFO route, about one per batch otherwise; more means
/// pages of pending keys (aggregates with a long backlog) or a store serving no
/// PartiQL select on the index (one query per shard). Its consistent status read of
/// the siblings it found is not counted here.
pub const FENCE_READS: &str = "FenceReads";
/// Payloads the publisher or the sweeper wrote to S3 and sent as a pointer instead of
/// inline (the large-payload offload: over the destination's limit or the threshold),
/// and dead-letter copies too large for the queue written there as claim checks; only
/// writes that succeeded. Each is an S3 `PutObject` billed and an object kept until
/// the bucket's lifecycle rule removes it; a rise with no change of payloads means
/// the threshold or a destination changed.
pub const PAYLOADS_OFFLOADED: &str = "PayloadsOffloaded";
/// Calls AWS denied for a missing permission, whatever the function did next (a
/// fallback that worked does not hide one): each is also logged as an error naming the
/// IAM action to grant. Any value above zero is a role missing a grant (docs/iam.md).
pub const ACCESS_DENIED: &str = "AccessDenied";
/// Messages the sweeper published (the stream path had not).
pub const RECOVERED_BY_SWEEPER: &str = "RecoveredBySweeper";
/// Pending items the sweeper's scan (scan mode `backstop` or `on`) found outside the
/// sweeper index and put into it: messages no stream record brought (a minimal
/// producer's items whose records were trimmed or past retention) and that only the
/// scan saved; a sweep publishes them later (`RecoveredBySweeper`). Beside the recovery
/// function's `RecoveredFromStream` (items of discarded stream records), it says
/// which path recovered a message; a steady count means records lost before anyone
/// read them (a mapping disabled, `RecoveryRangeLost`).
pub const RECOVERED_BY_SCAN: &str = "RecoveredByScan";
/// Sweeper attempts that failed and were rescheduled with backoff.
pub const SWEEP_RETRIES: &str = "SweepRetries";
/// Age of the oldest pending message the sweeper found due.
pub const OLDEST_PENDING_AGE_SECONDS: &str = "OldestPendingAgeSeconds";
/// Store requests of a sweep that failed (index queries, scan pages, claims,
/// reschedules): a sweeper that cannot do its work.
pub const SWEEP_ERRORS: &str = "SweepErrors";

/// CloudWatch unit of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count of messages.
    Count,
    /// A duration in seconds.
    Seconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Seconds => "Seconds",
        }
    }
}

/// One metric value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// Metric name.
    pub name: &'static str,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: Unit,
}

impl Metric {
    /// A count.
    pub fn count(name: &'static str, value: usize) -> Self {
        Metric {
            name,
            // Counts per invocation are small; f64 represents them exactly.
            value: value as f64,
            unit: Unit::Count,
        }
    }
}

/// The publisher's metrics for one stream batch.
pub fn publisher_metrics(summary: &Summary) -> Vec<Metric> {
    vec![
        Metric::count(PUBLISHED, summary.sent),
        Metric::count(PUBLISH_FAILED, summary.retried),
        Metric::count(FAILED, summary.dead_lettered),
        Metric::count(ALREADY_SETTLED_SKIPPED, summary.already_settled),
        Metric::count(STATUS_READ_FAILED, summary.status_unread),
        Metric::count(FENCE_UNREAD, summary.fence_unread),
        Metric::count(FENCE_DEFERRED, summary.deferred),
        Metric::count(FENCE_READS, summary.fence_reads),
        Metric::count(PAYLOADS_OFFLOADED, summary.offloaded),
    ]
}

/// The sweeper's metrics for one sweep. The oldest pending age is 0 when nothing was
/// due, so an alarm on it sees data every run — but only when the sweep read every
/// shard: a sweep that could not look cannot say that nothing is pending, so the age
/// is left out (the alarm treats missing data as breaching) and `SweepErrors` says why.
pub fn sweeper_metrics(summary: &SweepSummary) -> Vec<Metric> {
    let mut metrics = vec![
        Metric::count(RECOVERED_BY_SWEEPER, summary.published),
        Metric::count(SWEEP_RETRIES, summary.retried),
        Metric::count(FAILED, summary.failed),
        Metric::count(SWEEP_ERRORS, summary.errors),
    ];
    if summary.unread_shards == 0 {
        metrics.push(Metric {
            name: OLDEST_PENDING_AGE_SECONDS,
            value: summary.oldest_pending_age_ms.unwrap_or(0).max(0) as f64 / 1000.0,
            unit: Unit::Seconds,
        });
    }
    metrics.push(Metric::count(FENCE_UNREAD, summary.fence_unread));
    metrics.push(Metric::count(FENCE_READS, summary.fence_reads));
    metrics.push(Metric::count(PAYLOADS_OFFLOADED, summary.offloaded));
    metrics.push(Metric::count(RECOVERED_BY_SCAN, summary.adopted));
    metrics
}

/// Prints one deployment's metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitter {
    service: String,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter::new(SERVICE)
    }
}

impl Emitter {
    /// Metrics under `deployment` as the value of the [`DIMENSION`].
    pub fn new(deployment: impl Into<String>) -> Self {
        Emitter {
            service: deployment.into(),
        }
    }

    /// Reads `OUTBOX_DEPLOYMENT` from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads `OUTBOX_DEPLOYMENT` through `lookup`: absent or blank means [`SERVICE`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        match lookup(DEPLOYMENT).map(|v| v.trim().to_owned()) {
            None => Ok(Emitter::default()),
            Some(v) if v.is_empty() => Ok(Emitter::default()),
            Some(v) if v.chars().count() > MAX_DIMENSION_VALUE => Err(ConfigError::Invalid {
                name: DEPLOYMENT,
                reason: format!(
                    "the deployment name is {} characters; CloudWatch dimension values hold at most {MAX_DIMENSION_VALUE}",
                    v.chars().count()
                ),
            }),
            Some(v) => Ok(Emitter::new(v)),
        }
    }

    /// The deployment's name: the value of the [`DIMENSION`].
    pub fn service(&self) -> &str {
        &self.service
    }

    /// One EMF document (see [`emf`]).
    pub fn emf(&self, timestamp_ms: i64, metrics: &[Metric]) -> Value {
        emf(&self.service, timestamp_ms, metrics)
    }

    /// Prints one EMF line to stdout (one line: CloudWatch Logs reads line by line).
    pub fn emit(&self, timestamp_ms: i64, metrics: &[Metric]) {
        println!("{}", self.emf(timestamp_ms, metrics));
    }
}

/// One EMF document: the `_aws` metadata declaring the metrics, the dimension value
/// `service` and the values as top-level members.
pub fn emf(service: &str, timestamp_ms: i64, metrics: &[Metric]) -> Value {
    let declared: Vec<Value> = metrics
        .iter()
        .map(|m| json!({"Name": m.name, "Unit": m.unit.as_str()}))
        .collect();
    let mut doc = Map::new();
    doc.insert(
        "_aws".to_owned(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[DIMENSION]],
                "Metrics": declared,
            }],
        }),
    );
    doc.insert(DIMENSION.to_owned(), Value::from(service));
    for m in metrics {
        doc.insert(m.name.to_owned(), json!(m.value));
    }
    Value::Object(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emf_line_declares_namespace_dimension_and_every_metric_with_its_value() {
        let summary = Summary {
            sent: 7,
            unmarked: 1,
            dead_lettered: 2,
            retried: 3,
            deferred: 5,
            already_settled: 4,
            status_unread: 1,
            fence_unread: 2,
            fence_reads: 6,
            offloaded: 8,
        };
        let doc = Emitter::default().emf(1_700_000_000_000, &publisher_metrics(&summary));
        assert_eq!(
            doc,
            json!({
                "_aws": {
                    "Timestamp": 1_700_000_000_000i64,
                    "CloudWatchMetrics": [{
                        "Namespace": "DynamoDbOutbox",
                        "Dimensions": [["Service"]],
                        "Metrics": [
                            {"Name": "Published", "Unit": "Count"},
                            {"Name": "PublishFailed", "Unit": "Count"},
                            {"Name": "Failed", "Unit": "Count"},
                            {"Name": "AlreadySettledSkipped", "Unit": "Count"},
                            {"Name": "StatusReadFailed", "Unit": "Count"},
                            {"Name": "FenceUnread", "Unit": "Count"},
                            {"Name": "FenceDeferred", "Unit": "Count"},
                            {"Name": "FenceReads", "Unit": "Count"},
                            {"Name": "PayloadsOffloaded", "Unit": "Count"},
                        ],
                    }],
                },
                "Service": "outbox",
                "Published": 7.0,
                "PublishFailed": 3.0,
                "Failed": 2.0,
                "AlreadySettledSkipped": 4.0,
                "StatusReadFailed": 1.0,
                "FenceUnread": 2.0,
                "FenceDeferred": 5.0,
                "FenceReads": 6.0,
                "PayloadsOffloaded": 8.0,
            })
        );
        // One line: CloudWatch Logs parses each line as one document.
        assert!(!doc.to_string().contains('\n'));
    }

    #[test]
    fn sweeper_metrics_report_recoveries_retries_failures_and_age_in_seconds() {
        let summary = SweepSummary {
            published: 4,
            retried: 2,
            failed: 1,
            oldest_pending_age_ms: Some(90_500),
            ..SweepSummary::default()
        };
        let doc = Emitter::default().emf(1, &sweeper_metrics(&summary));
        assert_eq!(doc["RecoveredBySweeper"], json!(4.0));
        assert_eq!(doc["SweepRetries"], json!(2.0));
        assert_eq!(doc["Failed"], json!(1.0));
        assert_eq!(doc["OldestPendingAgeSeconds"], json!(90.5));
        assert_eq!(doc["SweepErrors"], json!(0.0));
        let declared = &doc["_aws"]["CloudWatchMetrics"][0]["Metrics"];
        assert_eq!(
            declared[4],
            json!({"Name": "OldestPendingAgeSeconds", "Unit": "Seconds"})
        );
        // Nothing due: the age is reported as 0, not left out.
        let idle = Emitter::default().emf(1, &sweeper_metrics(&SweepSummary::default()));
        assert_eq!(idle["OldestPendingAgeSeconds"], json!(0.0));
    }

    #[test]
    fn sweeper_metrics_report_offloads_fence_reads_and_scan_recoveries() {
        let summary = SweepSummary {
            offloaded: 3,
            fence_reads: 5,
            adopted: 7,
            ..SweepSummary::default()
        };
        let doc = Emitter::default().emf(1, &sweeper_metrics(&summary));
        assert_eq!(doc["PayloadsOffloaded"], json!(3.0));
        assert_eq!(doc["FenceReads"], json!(5.0));
        assert_eq!(doc["RecoveredByScan"], json!(7.0));
        let declared = &doc["_aws"]["CloudWatchMetrics"][0]["Metrics"];
        for name in ["PayloadsOffloaded", "FenceReads", "RecoveredByScan"] {
            let entry = json!({"Name": name, "Unit": "Count"});
            let listed = declared.as_array().is_some_and(|a| a.contains(&entry));
            assert!(listed, "{name} not declared in {declared}");
        }
        // Declared on every sweep, 0 when nothing happened: a gap is a sweeper not
        // running, not a quiet one.
        let idle = Emitter::default().emf(1, &sweeper_metrics(&SweepSummary::default()));
        assert_eq!(idle["RecoveredByScan"], json!(0.0));
    }

    #[test]
    fn a_sweep_that_could_not_read_every_shard_reports_errors_and_no_age() {
        // Before, a sweep whose every query failed reported an age of 0: "nothing is
        // pending", from a sweeper that had looked at nothing.
        let blind = SweepSummary {
            unread_shards: 16,
            errors: 16,
            ..SweepSummary::default()
        };
        let doc = Emitter::default().emf(1, &sweeper_metrics(&blind));
        assert_eq!(doc["SweepErrors"], json!(16.0));
        assert!(doc.get("OldestPendingAgeSeconds").is_none(), "{doc}");
        let declared = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"].to_string();
        assert!(!declared.contains("OldestPendingAgeSeconds"), "{declared}");
    }

    fn deployment(value: Option<String>) -> impl Fn(&str) -> Option<String> {
        move |name| (name == DEPLOYMENT).then(|| value.clone()).flatten()
    }

    #[test]
    fn the_service_dimension_is_the_deployment_named_by_outbox_deployment() {
        let staging = Emitter::from_lookup(deployment(Some(" orders-staging ".into())));
        let doc = staging
            .expect("valid")
            .emf(1, &[Metric::count(PUBLISHED, 1)]);
        assert_eq!(doc["Service"], json!("orders-staging"));
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Service"]])
        );
        for default in [None, Some(String::new()), Some("  ".into())] {
            let emitter = Emitter::from_lookup(deployment(default)).expect("valid");
            assert_eq!(emitter.service(), "outbox");
        }
        let err = Emitter::from_lookup(deployment(Some("x".repeat(1025)))).expect_err("long");
        assert!(err.to_string().contains("OUTBOX_DEPLOYMENT"), "{err}");
    }
}
