//! `reconcile`: one pass over the whole table that puts every `PENDING` message no
//! index knows about into the sweeper index, for the sweeper to publish. The one
//! command that scans the table (business items included), run when the stream path
//! lost a range (`RecoveryRangeLost`, `RecoveryDlqNotEmpty`, a mapping stalled past the
//! stream's 24 hours) and the sweeper does not scan (`sweep_scan_mode` `off`, the
//! default). The pass is the sweeper's own adoption ([`adopt_pass`]): each write is
//! conditional on the item being unchanged since the scan read it.

use crate::{OpsError, Table};
use dynamodb_outbox::dynamo::DynamoStore;
use dynamodb_outbox::sweep::{PassSummary, adopt_pass};
use std::time::Duration;

/// Items each scan page reads at most.
const PAGE_SIZE: i32 = 1000;

/// What a reconciliation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Table items read, matching or not: what the pass is billed for.
    pub scanned: u64,
    /// Pending messages put into the sweeper index.
    pub adopted: usize,
}

/// One whole pass over `table`, `segments` parallel scan segments, each adopted item
/// due `grace` after its write. An incomplete pass is an error saying to run it again
/// (what it adopted stays adopted).
pub async fn reconcile(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    segments: u32,
    grace: Duration,
    now_ms: i64,
) -> Result<ReconcileReport, OpsError> {
    let store =
        DynamoStore::new(client.clone(), table.name.clone()).with_key_names(table.keys.clone());
    let pass = adopt_pass(
        &store,
        &table.keys.sweep_shards,
        grace,
        now_ms,
        (segments, PAGE_SIZE),
    )
    .await;
    report(&table.name, pass)
}

fn report(table: &str, pass: PassSummary) -> Result<ReconcileReport, OpsError> {
    if pass.failed_segments > 0 {
        return Err(OpsError::ReconcileIncomplete {
            table: table.to_owned(),
            failed_segments: pass.failed_segments,
            adopted: pass.adopted,
            reason: pass.error.unwrap_or_default(),
        });
    }
    Ok(ReconcileReport {
        scanned: pass.scanned,
        adopted: pass.adopted,
    })
}
