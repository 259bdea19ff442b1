//! The mixed workload: the library producer (`OutboxWriter`, which writes the region
//! it commits in as `HomeRegion`) and a minimal hand-written producer (no
//! `HomeRegion`: its items belong to the default home region), in either region.

use super::stack::RegionStack;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_types::error::display::DisplayErrorContext;
use dynamodb_outbox::{NewMessage, OutboxWriter};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Writes in flight at once, per region.
const IN_FLIGHT: usize = 16;

/// How a message is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// `OutboxWriter::commit`: `HomeRegion` is the region it commits in.
    Library,
    /// A `PutItem` of the seed document's minimal item: no `HomeRegion`.
    Minimal,
}

/// One committed message: its name (in its payload, `{"n": name}`) and its home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Unique in the run.
    pub name: String,
    /// The region whose deployment owns it.
    pub home: String,
}

/// Commits `count` messages named `{tag}-{i}` in `stack`'s region, each in a
/// transaction of its own (one aggregate each).
pub async fn commit(
    stack: &RegionStack,
    producer: Producer,
    tag: &str,
    count: usize,
) -> Result<Vec<Committed>, String> {
    let home = match producer {
        Producer::Library => stack.region.clone(),
        Producer::Minimal => stack.default_home.clone(),
    };
    // On a global table the library's producer indexes at commit: `outbox-ops failover`
    // finds a failed region's pending messages in the sweeper index
    // (docs/global-tables.md), and nothing else would hand them to the surviving region.
    let writer =
        OutboxWriter::new(stack.clients.dynamodb.clone(), &stack.table).index_at_commit(true);
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let name = format!("{tag}-{i:05}");
        let permit = permits.clone().acquire_owned().await;
        let (writer, stack) = (writer.clone(), stack.clone());
        tasks.spawn(async move {
            let _permit = permit;
            let written = match producer {
                Producer::Library => commit_library(&writer, &name).await,
                Producer::Minimal => put_minimal(&stack, &name).await,
            };
            written.map(|()| name)
        });
    }
    let mut committed = Vec::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        let name = joined.map_err(|e| format!("a commit task: {e}"))??;
        committed.push(Committed {
            name,
            home: home.clone(),
        });
    }
    Ok(committed)
}

fn payload(name: &str) -> String {
    serde_json::json!({ "n": name }).to_string()
}

async fn commit_library(writer: &OutboxWriter, name: &str) -> Result<(), String> {
    writer
        .commit(
            vec![],
            &[NewMessage::new(
                format!("ORDER#{name}"),
                "orders",
                payload(name),
            )],
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("commit {name}: {e}"))
}

/// As the seed document's boto3 producer writes it.
async fn put_minimal(stack: &RegionStack, name: &str) -> Result<(), String> {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    stack
        .clients
        .dynamodb
        .put_item()
        .table_name(&stack.table)
        .item("PK", s(&format!("ORDER#{name}")))
        .item("SK", s(&format!("MESSAGE#ORDER_PLACED#{name}")))
        .item("ItemType", s("PENDING_MESSAGE"))
        .item("Topic", s("orders"))
        .item("Payload", s(&payload(name)))
        .item("Status", s("PENDING"))
        .item("RetryCount", AttributeValue::N("0".into()))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| format!("put {name}: {}", DisplayErrorContext(&e)))
}
