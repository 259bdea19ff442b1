//! Operator commands on an outbox table (the `outbox-ops` binary): how many messages
//! are pending and failed, which messages failed and why, redrive of failed
//! messages once their cause is fixed, and one message's whole life ([`show_message`]:
//! its item, and the outbox functions' log lines about it from CloudWatch Logs).
//!
//! Every read goes through the sparse sweeper index (`OutboxSweepIndex`) — or, for
//! [`show`], one aggregate's partition — never a scan of the table: the table may be an application's own, holding millions of
//! business items (`reconcile` alone scans it, once, when asked). Pending messages are in its sixteen partitions `00`..`15`, failed
//! ones in `FAILED#00`..`FAILED#15`; `status` counts them (`Select=COUNT`), `failed`
//! lists the failed partitions' keys and then reads only those items (`BatchGetItem`).
//! `SENT` messages leave the index and are not counted. Each command says what it
//! read ([`Reads`]). Items are read as the schema's [`OutboxItem`], so an item of
//! any producer is listed.
//!
//! ```no_run
//! use outbox_ops::{KeyNames, Table};
//!
//! # async fn example() -> Result<(), outbox_ops::OpsError> {
//! let client = aws_sdk_dynamodb::Client::new(&outbox_ops::sdk_config(None).await);
//! let table = Table::new("app").key_names(KeyNames::new("pk", "sk"));
//! let report = outbox_ops::status(&client, &table).await?;
//! println!("{:?} ({} index entries read)", report.counts, report.reads.index_entries);
//! # Ok(())
//! # }
//! ```
//!
//! [`sdk_config`] is how the commands reach AWS — an account through the standard
//! chain, or an emulator at an endpoint — and the one place the workspace's tools
//! and tests build that configuration.
//!
//! [`OutboxItem`]: dynamodb_outbox_core::schema::OutboxItem

mod check;
mod error;
mod failover;
mod index;
mod keys;
mod logline;
mod logs;
mod message;
mod read;
mod reconcile;
mod redrive;
mod render;
mod sdk;
mod shards;
mod show;

pub use check::{CheckReport, check};
pub use dynamodb_outbox::KeyNames;
pub use error::OpsError;
pub use failover::{HomesReport, Rehome, rehome};
pub use keys::{KeyFlags, table_keyed};
pub use logline::ParsedLine;
pub use logs::{FunctionLogLine, LogGroups, LogSearch, MessageLogs, message_logs};
pub use message::{
    DEFAULT_WINDOW_MS, FoundBy, LogOptions, MessageView, named_aggregates, parse_duration,
    show_message, window,
};
pub use read::{FailedMessage, StatusReport, failed, failed_read, status};
pub use reconcile::{ReconcileReport, reconcile};
pub use redrive::{RedriveReport, Selection, redrive, redrive_dry_run};
pub use render::{render_lives, render_message};
pub use sdk::sdk_config;
pub use shards::{ShardsReport, shards};
pub use show::{MessageLife, show};

use aws_sdk_dynamodb::types::ConsumedCapacity;

/// The outbox table the commands work on: its name and its key attribute names.
///
/// ```
/// use outbox_ops::{KeyNames, Table};
///
/// let table = Table::new("orders");
/// assert_eq!(table.keys, KeyNames::default());
/// let attached = Table::new("app").key_names(KeyNames::new("pk", "sk"));
/// assert_eq!(attached.keys.partition_key, "pk");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name.
    pub name: String,
    /// Its partition and sort key names (`PK`/`SK` unless set).
    pub keys: KeyNames,
}

impl Table {
    /// The table `name`, keyed `PK`/`SK`.
    pub fn new(name: impl Into<String>) -> Self {
        Table {
            name: name.into(),
            keys: KeyNames::default(),
        }
    }

    /// The same table keyed as `keys` says.
    pub fn key_names(mut self, keys: KeyNames) -> Self {
        self.keys = keys;
        self
    }
}

/// What a command read, to say what it cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reads {
    /// Requests made.
    pub requests: u64,
    /// Sweeper index entries the queries read (DynamoDB's `ScannedCount`): only
    /// outbox items have one, so a business item is never among them.
    pub index_entries: u64,
    /// Table items read by key (`BatchGetItem`): only the failed items listed.
    pub table_items: u64,
    /// Read capacity units consumed, as DynamoDB reported them
    /// (`ReturnConsumedCapacity=TOTAL`; 0 where the service reports none).
    pub read_units: f64,
}

impl Reads {
    /// Adds what another read cost.
    pub fn merge(&mut self, other: &Reads) {
        self.requests += other.requests;
        self.index_entries += other.index_entries;
        self.table_items += other.table_items;
        self.read_units += other.read_units;
    }

    fn add(&mut self, capacity: Option<&ConsumedCapacity>, index_entries: i32, table_items: usize) {
        self.requests += 1;
        self.index_entries += u64::try_from(index_entries).unwrap_or(0);
        self.table_items += table_items as u64;
        self.read_units += capacity
            .and_then(ConsumedCapacity::capacity_units)
            .unwrap_or(0.0);
    }
}
