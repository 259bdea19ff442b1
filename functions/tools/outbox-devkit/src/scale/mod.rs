//! Where each ceiling is as the message rate grows: the capacity each component
//! needs per message, the ceilings AWS sets (with the page each comes from) and the
//! ones this project sets itself, and which binds first at a given rate. Plain
//! arithmetic over documented numbers; [`simulate`] steps through time where a
//! ceiling depends on more than one number (a burst against on-demand scaling and the
//! index's partitions; a backlog against the sweeper's cadence).
//!
//! `outbox-devkit scale` prints the table docs/scale.md is written from.

pub mod report;
pub mod simulate;
pub mod sizing;

use dynamodb_outbox::sweep::SweepLimits;
use dynamodb_outbox_core::MAX_SWEEP_SHARDS;
use dynamodb_outbox_core::policy::work_window;
use std::time::Duration;

/// What one published message costs each component, in capacity (happy path: the
/// library producer, one outbox item beside one business item in its transaction,
/// both under 1 KB; published by the stream path; marked `SENT`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerMessage {
    /// Table write units: the transaction (2 per item per KB, two items) and the
    /// `SENT` mark (1).
    pub table_write_units: f64,
    /// Sweeper-index write units: none on the happy path (the item never enters the
    /// sparse index); with the producer's `index_at_commit` it enters at commit (1)
    /// and leaves at the `SENT` mark (1), a `KEYS_ONLY` projection under 1 KB.
    pub index_write_units: f64,
}

impl Default for PerMessage {
    fn default() -> Self {
        PerMessage {
            table_write_units: 2.0 * 2.0 + 1.0,
            index_write_units: 0.0,
        }
    }
}

impl PerMessage {
    /// The happy path of a producer that indexes every message at commit
    /// (`OutboxWriter::index_at_commit(true)`): two index writes more.
    pub fn indexed_at_commit() -> Self {
        PerMessage {
            index_write_units: 2.0,
            ..PerMessage::default()
        }
    }
}

/// The deployment's settings that move a ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Sweeper-index shard values (`SweepShard`): each is one index partition key.
    pub index_shards: u32,
    /// The stream mapping's parallelization factor (1–10; the stacks pin 1).
    pub parallelization_factor: u32,
    /// The table's on-demand write quota (per table, default 40,000 units/s).
    pub table_write_quota: f64,
    /// Lambda's concurrent executions in the region (default 1,000), shared by every
    /// function of the account.
    pub lambda_concurrency: f64,
    /// FIFO routes on a queue in high-throughput mode.
    pub fifo_high_throughput: bool,
    /// Keys a sweep claims and publishes together, claims in flight in each, and
    /// chunks at once (`SweepLimits`: `chunk`, `concurrency`, `chunk_concurrency`).
    pub sweep_chunks: (u32, u32, u32),
    /// Sweeper workers on each tick (`sweep_workers`, 1–5), each sweeping its share of
    /// the index's shards.
    pub sweep_workers: u32,
    /// Minutes between scheduled sweeps (the stacks' sweeper timeout is as long, at
    /// most 5 minutes).
    pub sweep_every_minutes: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            index_shards: 16,
            parallelization_factor: 1,
            table_write_quota: 40_000.0,
            lambda_concurrency: 1_000.0,
            fifo_high_throughput: false,
            sweep_chunks: sweep_chunks(&SweepLimits::default()),
            sweep_workers: 1,
            sweep_every_minutes: 1,
        }
    }
}

fn sweep_chunks(limits: &SweepLimits) -> (u32, u32, u32) {
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    (
        n(limits.chunk),
        n(limits.concurrency),
        n(limits.chunk_concurrency),
    )
}

/// Milliseconds each request of a sweep takes on AWS, assumed (not measured there):
/// DynamoDB answers a single-item write in single-digit milliseconds (developer guide,
/// *What is Amazon DynamoDB*); an SQS batch or a batched mark takes longer. 20 ms
/// covers both.
pub const SWEEP_REQUEST_MS: f64 = 20.0;
/// Index write units a drained message costs its shard's partition: its claim moves
/// its `SweepDueAt` (the index deletes the old entry and puts the new one: 2) and its
/// `SENT` mark takes it out (1).
pub const SWEEP_INDEX_WRITES: f64 = 3.0;

/// Messages one sweeper worker drains a second while it works, by its requests: its
/// chunks at once, each the latency of its claims (`concurrency` at a time), one send
/// round and one mark round. The function's CPU is not counted.
pub fn sweep_worker_rate(settings: &Settings) -> f64 {
    let (chunk, in_flight, at_once) = settings.sweep_chunks;
    let chunk = f64::from(chunk.max(1));
    let requests = (chunk / f64::from(in_flight.max(1))).ceil() + 2.0;
    chunk * f64::from(at_once.max(1)) * 1_000.0 / (requests * SWEEP_REQUEST_MS)
}

/// Messages a second a backlog drains at: each worker at its rate or at what its
/// shards' index partitions take, whichever is lower, for the share of each tick its
/// time budget works (the timeout less the sweep's reserve, `policy::work_window`).
pub fn drain_rate(settings: &Settings) -> f64 {
    let period = 60 * u64::from(settings.sweep_every_minutes.max(1));
    let window = work_window(Duration::from_secs(period.min(300))).as_secs_f64();
    let (shards, workers) = (settings.index_shards.max(1), settings.sweep_workers.max(1));
    let per_shard = PARTITION_WRITE_UNITS / SWEEP_INDEX_WRITES;
    (0..workers)
        .map(|i| {
            // Worker i of n sweeps the shards numbered i mod n (`SweepGroup`).
            let its_shards = (shards + workers - 1 - i) / workers;
            sweep_worker_rate(settings).min(f64::from(its_shards) * per_shard)
        })
        .sum::<f64>()
        * window
        / period as f64
}

/// Write units one DynamoDB partition takes a second, table or index alike
/// (DynamoDB developer guide, "Burst and adaptive capacity": 1,000 WCU and 3,000 RCU
/// per partition, which adaptive capacity does not lift).
pub const PARTITION_WRITE_UNITS: f64 = 1_000.0;
/// Write units a new on-demand table serves at once ("warm throughput": a new
/// on-demand table starts at 4,000 write units/s; it then serves up to twice its
/// previous peak at once).
pub const NEW_TABLE_WARM_WRITE_UNITS: f64 = 4_000.0;
/// Messages a second one standard FIFO queue takes with batches of ten (SQS
/// developer guide, "Amazon SQS message quotas": 300 requests/s per action).
pub const FIFO_QUEUE_BATCHED: f64 = 3_000.0;
/// SNS `Publish`/`PublishBatch` messages a second in us-east-1 (General Reference,
/// "Amazon SNS endpoints and quotas"; 9,000 or fewer in most other regions; soft).
pub const SNS_PUBLISH_US_EAST_1: f64 = 30_000.0;
/// EventBridge `PutEvents` entries a second in us-east-1 (General Reference,
/// "Amazon EventBridge endpoints and quotas"; lower in most regions; soft).
pub const EVENTBRIDGE_PUT_EVENTS_US_EAST_1: f64 = 10_000.0;

/// Who sets a ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// An AWS quota or service limit (adjustable or not, as `lift` says).
    Aws,
    /// A choice of this project's (a setting, or code).
    Ours,
}

/// One component's ceiling, in messages a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// The component and what limits it.
    pub component: &'static str,
    /// Messages a second it carries at most.
    pub messages_per_second: f64,
    /// Who sets it.
    pub owner: Owner,
    /// What lifts it.
    pub lift: &'static str,
}

/// Every ceiling of a deployment with `settings`, each message costing `per`.
/// Destinations are listed apart (a workload without a FIFO route never meets the
/// FIFO queue's).
pub fn ceilings(settings: &Settings, per: &PerMessage) -> Vec<Ceiling> {
    let shards = f64::from(settings.index_shards);
    let factor = f64::from(settings.parallelization_factor.max(1));
    // A stream shard follows a table partition; each carries at most a partition's
    // writes, and each needs `factor` concurrent publishers.
    let per_shard = PARTITION_WRITE_UNITS / per.table_write_units;
    vec![
        Ceiling {
            component: "table: on-demand write quota per table",
            messages_per_second: settings.table_write_quota / per.table_write_units,
            owner: Owner::Aws,
            lift: "a quota increase (Service Quotas, DynamoDB per-table write throughput)",
        },
        Ceiling {
            component: "sweeper index: one partition per shard value, sort key only increasing",
            // Without index writes on the happy path (the default producer) it sets no
            // ceiling on the commit rate: division by zero is +infinity.
            messages_per_second: shards * PARTITION_WRITE_UNITS / per.index_write_units,
            owner: Owner::Ours,
            lift: "more index shards (sweep_shards, up to 1000)",
        },
        Ceiling {
            component: "one aggregate: its partition of the table",
            messages_per_second: per_shard,
            owner: Owner::Aws,
            lift: "none per aggregate: spread hot aggregates over more partition keys",
        },
        Ceiling {
            component: "stream publishers: one per shard and factor, within Lambda's concurrency",
            messages_per_second: settings.lambda_concurrency / factor * per_shard,
            owner: Owner::Aws,
            lift: "a concurrency quota increase; reserved concurrency for the publisher",
        },
        Ceiling {
            component: "sweeper: drains a backlog at its workers' request rate within their shards' index partitions",
            messages_per_second: drain_rate(settings),
            owner: Owner::Ours,
            lift: "more workers (sweep_workers, up to 5) and index shards (sweep_shards) together",
        },
    ]
}

/// The destinations' ceilings: a FIFO queue, an SNS topic, an EventBridge bus.
pub fn destination_ceilings(settings: &Settings) -> Vec<Ceiling> {
    let fifo = if settings.fifo_high_throughput {
        Ceiling {
            component: "SQS FIFO queue, high throughput: per message group (one partition)",
            messages_per_second: FIFO_QUEUE_BATCHED,
            owner: Owner::Aws,
            lift: "more message groups (aggregates); the queue's total is the region's quota",
        }
    } else {
        Ceiling {
            component: "SQS FIFO queue: 300 requests/s per action, batches of ten",
            messages_per_second: FIFO_QUEUE_BATCHED,
            owner: Owner::Aws,
            lift: "high-throughput mode (FifoThroughputLimit perMessageGroupId)",
        }
    };
    vec![
        fifo,
        Ceiling {
            component: "SNS topic: Publish quota (us-east-1)",
            messages_per_second: SNS_PUBLISH_US_EAST_1,
            owner: Owner::Aws,
            lift: "a quota increase",
        },
        Ceiling {
            component: "EventBridge bus: PutEvents quota (us-east-1)",
            messages_per_second: EVENTBRIDGE_PUT_EVENTS_US_EAST_1,
            owner: Owner::Aws,
            lift: "a quota increase",
        },
    ]
}

/// The ceiling that binds first for a sustained `rate` on the happy path (the
/// sweeper's is a backlog's, not a sustained rate's, and is left out): the lowest of
/// those below `rate`, if any.
pub fn binding(rate: f64, all: &[Ceiling]) -> Option<&Ceiling> {
    all.iter()
        .filter(|c| {
            !c.component.starts_with("sweeper:") && !c.component.starts_with("one aggregate")
        })
        .filter(|c| c.messages_per_second < rate)
        .min_by(|a, b| a.messages_per_second.total_cmp(&b.messages_per_second))
}

/// Capacity a sustained `rate` needs: table write units/s, index write units/s per
/// shard, stream shards (at least), and concurrent publishers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Needs {
    /// Table write units a second.
    pub table_write_units: f64,
    /// Index write units a second on each shard value.
    pub index_units_per_shard: f64,
    /// Table partitions, so stream shards, at least.
    pub stream_shards: f64,
    /// Concurrent stream publishers.
    pub publishers: f64,
}

/// What `rate` messages a second need of each component.
pub fn needs(rate: f64, settings: &Settings, per: &PerMessage) -> Needs {
    let table = rate * per.table_write_units;
    let shards = (table / PARTITION_WRITE_UNITS).ceil().max(1.0);
    Needs {
        table_write_units: table,
        index_units_per_shard: rate * per.index_write_units
            / f64::from(settings.index_shards.max(1)),
        stream_shards: shards,
        publishers: shards * f64::from(settings.parallelization_factor.max(1)),
    }
}

/// `settings` with what a sustained `rate` needs lifted: the table's write quota
/// raised to the rate's units, and the sweeper's workers and index shards to what the
/// stacks choose for it as their expected peak ([`sizing`]; never fewer than
/// `settings` has). A producer that indexes at commit writes the index twice a
/// message: sized as for twice the peak, as docs/scale.md tells its users. What a
/// burst on top of that rate meets is then the burst's own, not the rate's.
pub fn lifted_for(rate: f64, settings: &Settings, per: &PerMessage) -> Settings {
    let peak = rate * per.index_write_units.max(1.0);
    let sweep_workers = settings.sweep_workers.max(sizing::sweep_workers(peak));
    let index_shards = settings
        .index_shards
        .max(sizing::sweep_shards(peak, sweep_workers))
        .min(u32::from(MAX_SWEEP_SHARDS));
    Settings {
        index_shards,
        sweep_workers,
        table_write_quota: settings.table_write_quota.max(rate * per.table_write_units),
        ..*settings
    }
}

#[cfg(test)]
mod tests;
