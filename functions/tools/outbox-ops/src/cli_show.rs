//! `outbox-ops show`: its arguments, and which of its two forms runs.

use super::print_reads;
use outbox_ops::{LogGroups, LogOptions, OpsError, Table};

/// Shown after `show --help`.
pub const EXAMPLES: &str = "\
Examples:
  outbox-ops --table orders show ORDER#42                      that order's messages (the table only)
  outbox-ops --table orders show ORDER#42 --message-id ID      one of them, with the functions' log lines
  outbox-ops --table orders show --message-id ID --since 2h    by its id alone
  outbox-ops --table app show --message-id ID --deployment shop --log-group /aws/lambda/shop-consumer

A message asked for by its id is read from its aggregate's partition (one query) and
its log lines from CloudWatch Logs: FilterLogEvents on /aws/lambda/<prefix>-publisher,
-sweeper and -recovery (and each --log-group) for its id, and for its sort key (the
sweeper's lines name the key), from a minute before its commit. Without its aggregate,
the log lines that name it say which aggregate to read; else the FAILED messages are
searched. Logs that cannot be read (no group, no logs:FilterLogEvents) are a note:
the table's part is printed all the same.";

/// The arguments of `show`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).multiple(true).args(["aggregate", "id"])))]
pub struct ShowArgs {
    /// The aggregate: the messages' partition key.
    aggregate: Option<String>,
    /// Only this message (its outbox message id); its log lines are read too.
    #[arg(conflicts_with = "id")]
    message_id: Option<String>,
    /// One message by its id, with or without its aggregate.
    #[arg(long = "message-id", value_name = "ID")]
    id: Option<String>,
    /// The deployment whose functions' logs are read: the stacks' prefix, the
    /// functions' OUTBOX_DEPLOYMENT (log groups /aws/lambda/PREFIX-publisher,
    /// -sweeper, -recovery). Default: the table's name without `-table`, when it ends
    /// so (the table the stacks create).
    #[arg(long, env = "OUTBOX_DEPLOYMENT", value_name = "PREFIX")]
    deployment: Option<String>,
    /// Another log group to search too, e.g. a consumer's (repeatable).
    #[arg(long = "log-group", value_name = "NAME")]
    log_groups: Vec<String>,
    /// How far back the logs are searched: 90s, 30m, 2h, 7d (default: from a minute
    /// before the message's commit, or the last 24 h when its commit is unknown).
    #[arg(long, value_name = "DURATION", value_parser = outbox_ops::parse_duration)]
    since: Option<i64>,
}

/// The log groups to search: the deployment's (named, or read from the table's name)
/// and the extra ones; `Err` with why when there are none.
fn log_groups(args: &ShowArgs, table: &Table) -> Result<LogGroups, String> {
    let prefix = args
        .deployment
        .clone()
        .or_else(|| table.name.strip_suffix("-table").map(str::to_owned))
        .filter(|p| !p.is_empty());
    let groups = prefix
        .as_deref()
        .map(LogGroups::of_deployment)
        .unwrap_or_default();
    let groups = args
        .log_groups
        .iter()
        .fold(groups, |groups, g| groups.and_group(g));
    if groups.groups.is_empty() {
        return Err(format!(
            "no deployment named and table {} is not `<prefix>-table`: pass --deployment PREFIX (OUTBOX_DEPLOYMENT) or --log-group NAME",
            table.name
        ));
    }
    Ok(groups)
}

/// Runs `show` in the form its arguments ask for.
pub async fn run(
    dynamodb: &aws_sdk_dynamodb::Client,
    config: &aws_config::SdkConfig,
    table: &Table,
    args: ShowArgs,
    now: i64,
) -> Result<(), OpsError> {
    let Some(id) = args.id.clone().or_else(|| args.message_id.clone()) else {
        // The aggregate's messages: the table only (one log search per message
        // would be many requests for a question about the table).
        let aggregate = args.aggregate.unwrap_or_default();
        let (lives, reads) = outbox_ops::show(dynamodb, table, &aggregate, None).await?;
        print!("{}", outbox_ops::render_lives(&lives, &aggregate, now));
        print_reads(&reads);
        return Ok(());
    };
    let options = LogOptions {
        groups: log_groups(&args, table),
        since_ms: args.since,
    };
    let logs = aws_sdk_cloudwatchlogs::Client::new(config);
    let view = outbox_ops::show_message(
        dynamodb,
        Some(&logs),
        table,
        args.aggregate.as_deref(),
        &id,
        &options,
        now,
    )
    .await?;
    print!("{}", outbox_ops::render_message(&view, now));
    print_reads(&view.reads);
    Ok(())
}
