//! `outbox-ops`: operator commands on an outbox table.
//!
//! ```text
//! outbox-ops status                       counts per status, oldest pending age
//! outbox-ops failed [--topic T]           FAILED messages with their LastError
//! outbox-ops redrive --key PK SK ...      chosen FAILED messages back to PENDING
//! outbox-ops redrive --topic T | --all
//! ```
//!
//! `--endpoint URL` talks to the emulator; without it the standard AWS configuration
//! chain picks the account. `--table` defaults to `OUTBOX_TABLE_NAME`. Install it with
//! `cargo install --path functions/tools/outbox-ops` (see its README).

use clap::{ArgGroup, Parser, Subcommand};
use dynamodb_outbox::clock::now_ms;
use dynamodb_outbox::schema::ItemKey;
use outbox_ops::{OpsError, Selection, sdk_config};
use std::process::ExitCode;

/// Shown after `--help`: what a session looks like, and where the account comes from.
const EXAMPLES: &str = "\
Examples:
  outbox-ops --table orders status
  outbox-ops --table orders failed --topic orders-events
  outbox-ops --table orders redrive --key ORDER#42 MESSAGE#ORDER_PLACED#0190f1c2   (PK SK as `failed` lists them)
  outbox-ops --table orders redrive --topic orders-events
  outbox-ops --endpoint http://localhost:4566 --table demo-outbox status

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
    #[arg(long, global = true, value_name = "URL")]
    endpoint: Option<String>,
    /// The outbox table (the table the producers write their messages into).
    #[arg(long, env = "OUTBOX_TABLE_NAME", global = true, value_name = "NAME")]
    table: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Counts per status and the age of the oldest pending message (scans the table).
    Status,
    /// Lists FAILED messages with the reason the outbox gave up.
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
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(table) = cli.table.clone() else {
        eprintln!("outbox-ops: {}", OpsError::NoTable);
        return ExitCode::from(2);
    };
    let client = aws_sdk_dynamodb::Client::new(&sdk_config(cli.endpoint.as_deref()).await);
    match run(&client, &table, cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outbox-ops: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    command: Command,
) -> Result<(), OpsError> {
    let now = now_ms();
    match command {
        Command::Status => print_status(&outbox_ops::status(client, table, now).await?, table),
        Command::Failed { topic } => {
            print_failed(&outbox_ops::failed(client, table, topic.as_deref()).await?);
        }
        Command::Redrive { key, topic, all } => {
            let selection = selection(key, topic, all);
            print_redrive(&outbox_ops::redrive(client, table, selection, now).await?);
        }
    }
    Ok(())
}

fn print_status(report: &outbox_ops::StatusReport, table: &str) {
    println!("table {table} ({} items read)", report.items_read);
    for (status, count) in &report.counts {
        println!("  {status:<12} {count}");
    }
    match report.oldest_pending_age_ms {
        Some(age) => println!("oldest pending: {:.1} s", age as f64 / 1000.0),
        None => println!("oldest pending: -"),
    }
    if report.pending_without_created_at > 0 {
        println!(
            "pending without CreatedAt (age unknown): {}",
            report.pending_without_created_at
        );
    }
    if report.pending_unindexed > 0 {
        println!(
            "pending outside the sweeper index: {} (recovered only with OUTBOX_SWEEP_SCAN_MODE=on)",
            report.pending_unindexed
        );
    }
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

fn print_redrive(report: &outbox_ops::RedriveReport) {
    for k in &report.redriven {
        println!("redriven\t{}\t{}", k.pk, k.sk);
    }
    for k in &report.not_failed {
        println!("not FAILED, left alone\t{}\t{}", k.pk, k.sk);
    }
    for k in &report.payload_elsewhere {
        println!(
            "payload on the dead-letter queue (PayloadOn), left alone\t{}\t{}",
            k.pk, k.sk
        );
    }
    println!(
        "{} redriven, {} left alone; the sweeper republishes them on its next run",
        report.redriven.len(),
        report.not_failed.len() + report.payload_elsewhere.len()
    );
    if !report.payload_elsewhere.is_empty() {
        println!(
            "{} FAILED item(s) gave their payload to the dead-letter copy (they were at the 400 KB limit): put the payload back (or a reference to it), remove PayloadOn, then redrive them",
            report.payload_elsewhere.len()
        );
    }
}
