//! The sweeper against the emulator: stuck messages recovered through the same publish
//! path, retries with growing delays, FAILED + dead-letter queue at the limit, races
//! with the stream publisher, minimal producers in scan mode, redrive, and the cost of
//! a sweep when nothing is stuck.
//!
//! Time is the sweep's own notion of now ([`Budget::for_window`]), so retries that
//! would be minutes apart run back to back. The library's messages here are indexed
//! at commit (`OutboxWriter::index_at_commit`): the sweeper's from their write, as
//! the stream path's adoption leaves those it could not finish.

mod claims;
mod failures;
mod home;
mod keyed;
mod order;
mod reads;
mod recovery;
mod redrive;
mod reshard;
mod scan;

use dynamodb_outbox::sweep::{AwsSweeper, ScanMode, SweepSummary, SweeperConfig};
use dynamodb_outbox::{FromSdkConfig, PublisherConfig};
use dynamodb_outbox_core::policy::Budget;
use outbox_devkit::aws::Clients;
use outbox_tests::{Outbox, sv};
use std::time::Duration;

/// Retry policy short enough to follow in a test; the index only (the backstop scan,
/// on by default, has tests of its own).
pub(crate) fn config(publisher: PublisherConfig) -> SweeperConfig {
    let mut c = SweeperConfig::new(publisher);
    c.scan_mode = ScanMode::Off;
    c.max_attempts = 3;
    c.grace = Duration::ZERO;
    c.base_backoff = Duration::from_secs(2);
    c.max_backoff = Duration::from_secs(60);
    c
}

pub(crate) fn sweeper(clients: &Clients, config: SweeperConfig) -> AwsSweeper {
    AwsSweeper::with_sink(config, clients.dynamodb.clone(), clients.sink())
}

/// The sweeper as the Lambda binary builds it at a cold start: every SQS
/// destination's size limit learned from the queue.
async fn sweeper_learning(clients: &Clients, mut config: SweeperConfig) -> AwsSweeper {
    config.publisher = clients.sink().learn_limits(config.publisher).await;
    sweeper(clients, config)
}

/// A sweep at (virtual) time `now_ms` with 30 s of budget.
pub(crate) async fn sweep_at(sweeper: &AwsSweeper, now_ms: i64) -> SweepSummary {
    sweeper
        .sweep(Budget::for_window(now_ms, Duration::from_secs(30)))
        .await
}

/// Items in the sweeper index, counted shard by shard.
pub(crate) async fn index_size(ob: &Outbox) -> i32 {
    let mut total = 0;
    for shard in dynamodb_outbox_core::SweepShards::default().all() {
        let mut start = None;
        loop {
            let out = ob
                .clients
                .dynamodb
                .query()
                .table_name(&ob.table)
                .index_name(dynamodb_outbox_core::schema::SWEEP_INDEX)
                .key_condition_expression("SweepShard = :s")
                .expression_attribute_values(":s", sv(&shard))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("query");
            total += out.count();
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
    }
    total
}

/// Runs `futures`, `limit` at a time, and collects their outputs.
async fn futures_join<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
    limit: usize,
) -> Vec<F::Output> {
    use futures::StreamExt;
    futures::stream::iter(futures)
        .buffer_unordered(limit)
        .collect()
        .await
}
