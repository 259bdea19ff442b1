//! `outbox-ops`: operator commands on an outbox table.
//!
//! ```text
//! outbox-ops status                       pending and failed counts, earliest due
//! outbox-ops check                        the table against the configuration: keys,
//!                                         sweeper index, stream, TTL (non-zero exit on
//!                                         a mismatch)
//! outbox-ops failed [--topic T]           FAILED messages with their LastError
//! outbox-ops redrive --key PK SK ...      chosen FAILED messages back to PENDING
//! outbox-ops redrive --topic T | --all [--dry-run]
//! outbox-ops reconcile [--segments N]     one scan of the whole table putting pending
//!                                         messages no index knows about into it
//! outbox-ops shards [--move]              pending messages outside their shard while
//!                                         the sweeper index's shard count changes
//! outbox-ops show AGGREGATE               an aggregate's messages: state, attempts,
//!                                         last error, when sent, their trace id
//! outbox-ops show [AGGREGATE] --message-id ID [--since 2h]
//!                                         one message's whole life: its item and the
//!                                         functions' log lines about it
//! ```
//!
//! Every read goes through the sweeper index (`show`: one aggregate's partition, and
//! the functions' CloudWatch Logs), never a scan of the table but by `reconcile`. `--endpoint
//! URL` (or `OUTBOX_ENDPOINT`) talks to the emulator; without it the standard AWS
//! configuration chain picks the account. `--table` defaults to `OUTBOX_TABLE_NAME`,
//! `--partition-key`/`--sort-key` to `OUTBOX_PARTITION_KEY`/`OUTBOX_SORT_KEY` (else
//! the table's, read with `DescribeTable`; `check` compares the table with `PK`/`SK`),
//! `--sweep-shards`/`--sweep-shards-previous` to `OUTBOX_SWEEP_SHARDS`/
//! `OUTBOX_SWEEP_SHARDS_PREVIOUS` (else 16 and none). Install it with `cargo install --path functions/tools/outbox-ops`
//! (see its README).

mod cli_homes;
mod cli_show;

use clap::{ArgGroup, Parser, Subcommand};
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::schema::ItemKey;
use outbox_ops::{KeyFlags, KeyNames, OpsError, Reads, Selection, Table, sdk_config};
use std::process::ExitCode;

/// Shown after `--help`: what a session looks like, and where the account comes from.
const EXAMPLES: &str = "\
Examples:
  outbox-ops --table orders status
  outbox-ops --table app --partition-key tenant_id --sort-key entity_id check
  outbox-ops --table orders failed --topic orders-events
  outbox-ops --table orders redrive --key ORDER#42 MESSAGE#ORDER_PLACED#0190f1c2   (partition and sort key, as `failed` lists them)
  outbox-ops --table orders redrive --topic orders-events --dry-run
  outbox-ops --table app --partition-key pk --sort-key sk failed
  outbox-ops --endpoint http://localhost:4566 --table orders status
  outbox-ops --table orders --sweep-shards 64 --sweep-shards-previous 16 shards --move
  outbox-ops --table orders reconcile                  (after RecoveryRangeLost: scans the whole table once)
  outbox-ops --table orders show ORDER#42
  outbox-ops --table orders show --message-id 0190f1c2-7d7c-7cc0-8b6e-3f1d2c4b5a69

status and failed read only the sweeper index (OutboxSweepIndex) and the failed
items, never the whole table: SENT messages are not counted.

The account, region and credentials come from the standard AWS configuration
(AWS_PROFILE, AWS_REGION, environment variables, SSO, an instance or task role);
--endpoint sends every request to an emulator instead, with test credentials.
Exit status: 0 done; 1 the command failed (the message says what to do); 2 a usage
error or no table named.";

#[derive(Parser, Debug)]
#[command(
    name = "outbox-ops",
    version,
    about = "Operator commands on a dynamodb-outbox table: status, failed messages, redrive",
    after_help = EXAMPLES
)]
struct Cli {
    /// Send every request to this endpoint (an emulator such as MiniStack or
    /// LocalStack) with test credentials. Without it, the standard AWS configuration
    /// picks the account and region.
    #[arg(long, env = "OUTBOX_ENDPOINT", global = true, value_name = "URL")]
    endpoint: Option<String>,
    /// The outbox table (the table the producers write their messages into).
    #[arg(long, env = "OUTBOX_TABLE_NAME", global = true, value_name = "NAME")]
    table: Option<String>,
    /// The table's partition key attribute. Default: the table's, read with
    /// DescribeTable (`check` compares the table with `PK`).
    #[arg(long, env = "OUTBOX_PARTITION_KEY", global = true, value_name = "NAME")]
    partition_key: Option<String>,
    /// The table's sort key attribute. Default: the table's, read with DescribeTable
    /// (`check` compares the table with `SK`).
    #[arg(long, env = "OUTBOX_SORT_KEY", global = true, value_name = "NAME")]
    sort_key: Option<String>,
    /// The table's TTL attribute (what `check` compares with the table's TTL setting).
    #[arg(
        long,
        env = "OUTBOX_TTL_ATTRIBUTE",
        global = true,
        value_name = "NAME",
        default_value = "ExpiresAt"
    )]
    ttl_attribute: String,
    /// The number of sweeper index shards the deployment writes (its
    /// `sweep_shards` setting).
    #[arg(
        long,
        env = "OUTBOX_SWEEP_SHARDS",
        global = true,
        value_name = "N",
        default_value_t = 16
    )]
    sweep_shards: u32,
    /// While the shard count changes: the count it changes from.
    #[arg(
        long,
        env = "OUTBOX_SWEEP_SHARDS_PREVIOUS",
        global = true,
        value_name = "N"
    )]
    sweep_shards_previous: Option<u32>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Counts the pending and failed messages from the sweeper index (SENT messages
    /// are not counted) and says how overdue the earliest pending one is.
    Status,
    /// Compares the table with the configuration, as the functions do before their
    /// first piece of work: its key names (--partition-key, --sort-key, else
    /// OUTBOX_PARTITION_KEY/OUTBOX_SORT_KEY, else PK/SK) and types, the sweeper index,
    /// a stream of new images, the TTL attribute (OUTBOX_TTL_ATTRIBUTE, else
    /// ExpiresAt). Prints each check; exits 1 on a mismatch, naming the setting to change.
    Check,
    /// Lists FAILED messages with the reason the outbox gave up (the index's FAILED
    /// partitions, then those items by key).
    Failed {
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
    },
    /// Moves FAILED messages back to PENDING with a fresh retry budget; the sweeper
    /// republishes them (same MessageId: consumers deduplicate).
    #[command(group(ArgGroup::new("which").required(true).args(["key", "topic", "all"])))]
    Redrive {
        /// One message by its key (repeatable).
        #[arg(long, num_args = 2, value_names = ["PK", "SK"], action = clap::ArgAction::Append)]
        key: Vec<String>,
        /// Every FAILED message of this topic.
        #[arg(long)]
        topic: Option<String>,
        /// Every FAILED message.
        #[arg(long)]
        all: bool,
        /// List what would be redriven and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// One pass over the whole table (a parallel Scan, business items included: billed
    /// for every item) that puts each PENDING message no index knows about into the
    /// sweeper index, due a grace after its write; the sweeper publishes it. For a
    /// sweeper that does not scan (sweep_scan_mode off, the default), after a stream
    /// range was lost: RecoveryRangeLost, RecoveryDlqNotEmpty, a mapping stalled past
    /// the stream's 24 hours. Needs dynamodb:Scan and dynamodb:UpdateItem.
    Reconcile {
        /// Parallel scan segments.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
        segments: u32,
        /// Seconds after its write before an adopted message is due (the sweeper's
        /// sweep_grace_seconds).
        #[arg(
            long,
            env = "OUTBOX_SWEEP_GRACE_SECONDS",
            default_value_t = 60,
            value_name = "SECONDS"
        )]
        grace_seconds: u64,
    },
    /// While the sweeper index's shard count changes: counts the pending messages
    /// still in a shard of the previous count, which must reach 0 before
    /// OUTBOX_SWEEP_SHARDS_PREVIOUS is dropped (sweeps move what they claim).
    Shards {
        /// Move them into their new shard now (each conditional on it being
        /// unchanged since the read).
        #[arg(long = "move")]
        move_them: bool,
    },
    /// Shows an aggregate's messages (its partition key, e.g. ORDER#42), or one
    /// message's whole life: its item (state, sweeper attempts, last error, when it
    /// was sent or given up on, its dead-letter copy, the trace id it was committed in,
    /// to open in X-Ray or any OpenTelemetry backend) and the outbox functions' log
    /// lines about it (CloudWatch Logs). One query of the aggregate's partition; a
    /// message asked for by its id alone is found through the log lines that name its
    /// aggregate, else among the FAILED messages.
    #[command(after_help = cli_show::EXAMPLES)]
    Show(cli_show::ShowArgs),
    /// On a global table: re-homes a failed region's PENDING messages into the region
    /// this command reaches (each with a conditional write there, due now), so that
    /// region's sweeper publishes them.
    #[command(after_help = cli_homes::EXAMPLES)]
    Failover(cli_homes::FailoverArgs),
    /// On a global table: returns the messages still PENDING that were failed over from
    /// a region, once it is back.
    #[command(after_help = cli_homes::EXAMPLES)]
    Failback(cli_homes::FailbackArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(table) = cli.table.clone() else {
        eprintln!("outbox-ops: {}", OpsError::NoTable);
        return ExitCode::from(2);
    };
    let layout = match layout(&cli) {
        Ok(layout) => layout,
        Err(e) => {
            eprintln!("outbox-ops: {e}");
            return ExitCode::from(2);
        }
    };
    let config = sdk_config(cli.endpoint.as_deref()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let flags = KeyFlags {
        partition_key: cli.partition_key.clone(),
        sort_key: cli.sort_key.clone(),
    };
    let table = match table_of(&client, &cli.command, table, &flags, layout).await {
        Ok(table) => table,
        Err(e) => {
            eprintln!("outbox-ops: {e}");
            return ExitCode::from(exit_code(&e));
        }
    };
    match run(&client, &config, &table, cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outbox-ops: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The table's layout from the flags: TTL attribute and sweeper index shards, the key
/// names left at `PK`/`SK` (what the functions read unless configured otherwise).
fn layout(cli: &Cli) -> Result<KeyNames, dynamodb_outbox::ConfigError> {
    let mut shards = SweepShards::new(cli.sweep_shards)?;
    if let Some(previous) = cli.sweep_shards_previous {
        shards = shards.changing_from(previous)?;
    }
    let keys = KeyNames::default()
        .ttl_attribute(cli.ttl_attribute.clone())
        .sweep_shards(shards);
    keys.validate()?;
    Ok(keys)
}

/// The table `name` as `command` needs it. `check` compares the table with the
/// configuration, so it takes the names as configured (the flags, else `PK`/`SK`,
/// the functions' default); `status` reads only the sweeper index, whose names are
/// fixed; every other command reads and writes items by key, so the names the flags
/// leave out are the table's own ([`outbox_ops::table_keyed`]).
async fn table_of(
    client: &aws_sdk_dynamodb::Client,
    command: &Command,
    name: String,
    flags: &KeyFlags,
    layout: KeyNames,
) -> Result<Table, OpsError> {
    if matches!(command, Command::Check | Command::Status) {
        let defaults = KeyNames::default();
        let keys = KeyNames {
            partition_key: flags
                .partition_key
                .clone()
                .unwrap_or(defaults.partition_key),
            sort_key: flags.sort_key.clone().unwrap_or(defaults.sort_key),
            ..layout
        };
        keys.validate().map_err(|e| OpsError::UnusableKeys {
            table: name.clone(),
            reason: e.to_string(),
        })?;
        return Ok(Table::new(name).key_names(keys));
    }
    outbox_ops::table_keyed(client, &name, flags, layout).await
}

/// A configuration the operator gave that cannot work is a usage error (2); anything
/// else is a failed command (1).
fn exit_code(error: &OpsError) -> u8 {
    match error {
        OpsError::UnusableKeys { .. } => 2,
        _ => 1,
    }
}

async fn run(
    client: &aws_sdk_dynamodb::Client,
    config: &aws_config::SdkConfig,
    table: &Table,
    command: Command,
) -> Result<(), OpsError> {
    let now = now_ms();
    match command {
        Command::Status => print_status(&outbox_ops::status(client, table).await?, table, now),
        Command::Check => {
            let report = outbox_ops::check(client, table).await?;
            println!("table {} against the configuration:", table.name);
            for line in report.lines() {
                println!("  {line}");
            }
            if report.mismatches() > 0 {
                return Err(OpsError::TableMismatch {
                    table: table.name.clone(),
                    count: report.mismatches(),
                });
            }
        }
        Command::Failed { topic } => {
            let (failed, reads) = outbox_ops::failed_read(client, table, topic.as_deref()).await?;
            print_failed(&failed);
            print_reads(&reads);
        }
        Command::Redrive {
            key,
            topic,
            all,
            dry_run,
        } => {
            let selection = selection(key, topic, all);
            if dry_run {
                let report = outbox_ops::redrive_dry_run(client, table, selection).await?;
                print_redrive(&report, true);
            } else {
                print_redrive(
                    &outbox_ops::redrive(client, table, selection, now).await?,
                    false,
                );
            }
        }
        Command::Reconcile {
            segments,
            grace_seconds,
        } => {
            let grace = std::time::Duration::from_secs(grace_seconds);
            let report = outbox_ops::reconcile(client, table, segments, grace, now).await?;
            println!(
                "table {}: {} item(s) scanned (business items included), {} pending message(s) put in the sweeper index; the sweeper publishes them once due",
                table.name, report.scanned, report.adopted
            );
        }
        Command::Shards { move_them } => {
            print_shards(&outbox_ops::shards(client, table, move_them).await?, table);
        }
        Command::Show(args) => cli_show::run(client, config, table, args, now).await?,
        Command::Failover(args) => cli_homes::failover(client, table, args, now).await?,
        Command::Failback(args) => cli_homes::failback(client, table, args, now).await?,
    }
    Ok(())
}

fn print_shards(report: &outbox_ops::ShardsReport, table: &Table) {
    let layout = table.keys.sweep_shards;
    match layout.previous() {
        Some(previous) => println!(
            "table {}: sweeper index changing from {previous} to {} shards ({} read)",
            table.name,
            layout.count(),
            report.shards_read
        ),
        None => println!(
            "table {}: sweeper index of {} shards",
            table.name,
            layout.count()
        ),
    }
    println!("  pending in their shard        {}", report.in_place);
    println!("  pending outside their shard   {}", report.misplaced);
    if report.moved + report.changed_meanwhile > 0 {
        println!("    moved now                   {}", report.moved);
        println!(
            "    changed meanwhile (claimed) {}",
            report.changed_meanwhile
        );
    }
    if report.done() {
        println!(
            "nothing left outside its shard: OUTBOX_SWEEP_SHARDS_PREVIOUS (sweep_shards_previous) can be dropped"
        );
    } else {
        println!("not yet: run `shards --move`, or wait for the sweeper to claim them");
    }
    print_reads(&report.reads);
}

fn print_status(report: &outbox_ops::StatusReport, table: &Table, now: i64) {
    println!(
        "table {} (sweeper index only; SENT messages are not counted)",
        table.name
    );
    for status in ["PENDING", "FAILED"] {
        let count = report.counts.get(status).copied().unwrap_or(0);
        println!("  {status:<12} {count}");
    }
    match report.earliest_due_ms {
        Some(due) if due <= now => println!(
            "earliest pending due {:.1} s ago",
            (now - due) as f64 / 1000.0
        ),
        Some(due) => println!(
            "earliest pending due in {:.1} s",
            (due - now) as f64 / 1000.0
        ),
        None => println!("earliest pending due: -"),
    }
    if let Some(items) = report.approximate_table_items {
        println!("table items, approximate (DescribeTable, business items included): {items}");
    }
    print_reads(&report.reads);
}

/// What the command read, so that its cost is never a surprise.
fn print_reads(reads: &Reads) {
    println!(
        "read: {} request(s), {} index entries, {} table item(s), {:.1} read units",
        reads.requests, reads.index_entries, reads.table_items, reads.read_units
    );
}

fn print_failed(failed: &[outbox_ops::FailedMessage]) {
    for f in failed {
        println!(
            "{}\t{}\t{}\t{}\tattempts={}\t{}",
            f.key.pk,
            f.key.sk,
            f.topic.as_deref().unwrap_or("-"),
            f.message_id,
            f.retry_count.unwrap_or(0),
            f.last_error.as_deref().unwrap_or("-"),
        );
    }
    println!("{} failed message(s)", failed.len());
}

fn selection(key: Vec<String>, topic: Option<String>, all: bool) -> Selection {
    if all {
        return Selection::All;
    }
    if let Some(topic) = topic {
        return Selection::Topic(topic);
    }
    Selection::Keys(
        key.chunks(2)
            .filter_map(|pair| match pair {
                [pk, sk] => Some(ItemKey {
                    pk: pk.clone(),
                    sk: sk.clone(),
                }),
                _ => None,
            })
            .collect(),
    )
}

/// What a redrive did, or with `dry_run` what it would do.
fn print_redrive(report: &outbox_ops::RedriveReport, dry_run: bool) {
    let (redriven, left) = if dry_run {
        ("would redrive", "would leave alone")
    } else {
        ("redriven", "left alone")
    };
    for k in &report.redriven {
        println!("{redriven}\t{}\t{}", k.pk, k.sk);
    }
    for k in &report.not_failed {
        println!("not FAILED, {left}\t{}\t{}", k.pk, k.sk);
    }
    for k in &report.payload_elsewhere {
        println!(
            "payload on the dead-letter queue (PayloadOn), {left}\t{}\t{}",
            k.pk, k.sk
        );
    }
    let (count, rest) = (
        report.redriven.len(),
        report.not_failed.len() + report.payload_elsewhere.len(),
    );
    if dry_run {
        println!("dry run: {count} would be redriven, {rest} left alone; nothing changed");
    } else {
        println!(
            "{count} redriven, {rest} left alone; the sweeper republishes them on its next run"
        );
    }
    if !report.payload_elsewhere.is_empty() {
        println!(
            "{} FAILED item(s) gave their payload to the dead-letter copy (they were at the 400 KB limit): put the payload back (or a reference to it), remove PayloadOn, then redrive them",
            report.payload_elsewhere.len()
        );
    }
}
