//! `outbox-ops failover` and `failback`: their arguments and their report.

use super::print_reads;
use outbox_ops::{HomesReport, OpsError, Rehome, Table};

/// Shown after `failover --help` and `failback --help`.
pub const EXAMPLES: &str = "\
Examples (on a global table with the outbox deployed in us-east-1 and eu-west-1):
  AWS_REGION=eu-west-1 outbox-ops --table orders failover --from us-east-1
  AWS_REGION=eu-west-1 outbox-ops --table orders failback --to us-east-1

Both run against the surviving region (its replica; AWS_REGION or the profile's region):
failback leaves a message a sweep there holds (it is being published).
A message the failed region published whose SENT mark had not replicated is published
again (same outbox-message-id: consumers deduplicate). Runbook: docs/global-tables.md.";

/// The arguments of `failover`.
#[derive(clap::Args, Debug)]
pub struct FailoverArgs {
    /// The failed region whose pending messages this region takes over.
    #[arg(long, value_name = "REGION")]
    from: String,
    /// The home region of messages that name none, as the deployments set it: when it
    /// is the failed region, those are taken over too.
    #[arg(long, env = "OUTBOX_DEFAULT_HOME_REGION", value_name = "REGION")]
    default_home: Option<String>,
}

/// The arguments of `failback`.
#[derive(clap::Args, Debug)]
pub struct FailbackArgs {
    /// The recovered region: the messages failed over from it go back to it.
    #[arg(long, value_name = "REGION")]
    to: String,
    /// Seconds before the recovered region's sweeper takes them, as after a commit:
    /// its stream mapping, enabled again before the failback, replays their `INSERT`s
    /// and publishes them first.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    due_after_seconds: u64,
    /// Seconds each pending message must stay as read (unclaimed by a sweep of this
    /// region) before it goes back: at least the longest lease a sweep holds, the
    /// sweeper's timeout + 60 s (the stacks' sweeper timeout is at most 300 s).
    #[arg(long, default_value_t = 360, value_name = "SECONDS")]
    settle_seconds: u64,
}

/// `failover`: the failed region's pending messages re-homed into the region the
/// client reaches.
pub async fn failover(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    args: FailoverArgs,
    now: i64,
) -> Result<(), OpsError> {
    let here = region_of(client)?;
    if here == args.from {
        return Err(OpsError::SameRegion(here));
    }
    let rehome = Rehome::Failover {
        from_is_default_home: args.default_home.as_deref() == Some(args.from.as_str()),
        from: args.from,
        to: here.clone(),
    };
    let report = outbox_ops::rehome(client, table, &rehome, now).await?;
    print_homes(&report, &format!("failed over into {here}"));
    Ok(())
}

/// `failback`: what was failed over from a region, back to it.
pub async fn failback(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    args: FailbackArgs,
    now: i64,
) -> Result<(), OpsError> {
    // In the recovered region's copy the failback could not see a claim of the
    // surviving region's sweep (docs/protocol.md: FailbackFromRecoveredRegion).
    if region_of(client)? == args.to {
        return Err(OpsError::SameRegion(args.to));
    }
    let rehome = Rehome::Failback {
        to: args.to.clone(),
        grace: std::time::Duration::from_secs(args.due_after_seconds),
        settle: std::time::Duration::from_secs(args.settle_seconds),
    };
    println!(
        "reading the pending messages failed over from {}; each goes back if no sweep here claims it within {} s",
        args.to, args.settle_seconds
    );
    let report = outbox_ops::rehome(client, table, &rehome, now).await?;
    print_homes(&report, &format!("returned to {}", args.to));
    Ok(())
}

/// The region `client` reaches.
fn region_of(client: &aws_sdk_dynamodb::Client) -> Result<String, OpsError> {
    client
        .config()
        .region()
        .map(|r| r.as_ref().to_owned())
        .ok_or(OpsError::NoRegion)
}

fn print_homes(report: &HomesReport, what: &str) {
    println!("{} pending messages {what}:", report.moved.len());
    for key in &report.moved {
        println!("  {}  {}", key.pk, key.sk);
    }
    println!(
        "{} other pending messages left alone (another region's, or finished meanwhile)",
        report.left
    );
    print_reads(&report.reads);
}
