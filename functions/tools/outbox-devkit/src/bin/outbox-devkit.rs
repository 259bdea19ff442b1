//! `outbox-devkit`: development commands around a stack deployed into the local AWS.
//!
//! `scripts/demo` builds, deploys and then runs `outbox-devkit demo`; see `--help`.

use clap::{Parser, Subcommand};
use outbox_devkit::aws::{Clients, sdk_config};
use outbox_devkit::demo::{self, DemoOptions};
use outbox_devkit::deployment::Deployment;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Development commands for dynamodb-outbox on the local AWS"
)]
struct Cli {
    /// The local AWS (MiniStack); without it, the standard AWS configuration is used.
    #[arg(long, env = "OUTBOX_ENDPOINT", global = true)]
    endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drives orders through a deployed stack and checks every guarantee.
    Demo(DemoArgs),
    /// The chaos benchmark: faults in every call, crashes, discards; then the counts.
    Chaos(ChaosArgs),
    /// Benchmarks: cold start and memory of each binary, latency on a deployed stack.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The outbox on a global table deployed in two regions (scripts/deploy-local
    /// terraform-global): published once across both, a failover, a failback.
    Regions(RegionsArgs),
    /// Where each ceiling is at 1k, 10k and 100k messages a second, and which binds
    /// first (arithmetic over AWS's documented limits; no AWS calls).
    Scale(ScaleArgs),
}

#[derive(Debug, clap::Args)]
struct RegionsArgs {
    /// The deployment's prefix (scripts/deploy-local terraform-global --prefix).
    #[arg(long, default_value = "gt")]
    prefix: String,
    /// The global table's two regions.
    #[arg(long, value_delimiter = ',', default_value = "us-east-1,eu-west-1")]
    regions: Vec<String>,
    /// Messages of the mixed workload, across both regions.
    #[arg(long, default_value_t = 2_000)]
    messages: usize,
    /// One message in N of the mixed workload written by the minimal producer (0: none).
    #[arg(long, default_value_t = 7)]
    minimal_every: usize,
    /// Messages committed in the failed region and failed over.
    #[arg(long, default_value_t = 200)]
    failover_messages: usize,
    /// Messages committed in the failed region, failed over and back.
    #[arg(long, default_value_t = 50)]
    failback_messages: usize,
    /// The region that goes down (default: the second).
    #[arg(long)]
    fail: Option<String>,
    /// Seconds each phase may take to publish everything.
    #[arg(long, default_value_t = 240)]
    settle_seconds: u64,
}

#[derive(Debug, clap::Args)]
struct ScaleArgs {
    /// Sweeper-index shard values.
    #[arg(long, default_value_t = 16)]
    index_shards: u32,
    /// The stream mapping's parallelization factor.
    #[arg(long, default_value_t = 1)]
    parallelization_factor: u32,
    /// The table's on-demand write quota, units a second.
    #[arg(long, default_value_t = 40_000.0)]
    table_write_quota: f64,
    /// Lambda's concurrent executions in the region.
    #[arg(long, default_value_t = 1_000.0)]
    lambda_concurrency: f64,
    /// Sweeper workers on each tick (the stacks' `sweep_workers`, 1–5).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=5))]
    sweep_workers: u32,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Init time to the first `/next`, first invocation, peak RSS and size of each
    /// function, under a one-shot Lambda Runtime API on loopback, its AWS calls going to
    /// the local AWS (`--endpoint`); without one, the sizes only.
    Coldstart {
        /// The functions as `scripts/package` laid them out (`<dir>/<name>/bootstrap`).
        #[arg(long, default_value = "target/lambda")]
        dir: std::path::PathBuf,
        /// Runs per function.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// The stack deployed on the local AWS (scripts/deploy-local --prefix) whose
        /// table and queues the functions use, each with its deployed configuration;
        /// without it, a table and queues are made for the bench and removed after.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Commit -> publish percentiles, the highest rate with p99 under 1 s, and the
    /// sweeper's recovery of a stuck item, on a deployed stack.
    Latency(LatencyArgs),
    /// The sweeper's drain of a backlog of due items on a deployed stack, beside the
    /// local AWS's raw read rates in the same run.
    Drain(DrainArgs),
    /// The local AWS's raw write rates alone: PutItems into a scratch table, then the
    /// producers' TransactWriteItems on a deployed stack's table, pipeline running.
    Raw(RawArgs),
}

#[derive(Debug, clap::Args)]
struct RawArgs {
    /// The deployment's prefix (scripts/deploy-local --prefix); the scratch table's
    /// name starts with it.
    #[arg(long)]
    prefix: String,
    /// Seconds of PutItems into a scratch table (0: skip).
    #[arg(long, default_value_t = 10)]
    put_seconds: u32,
    /// Seconds of TransactWriteItems on the deployed table (0: skip).
    #[arg(long, default_value_t = 10)]
    transact_seconds: u32,
    /// Milliseconds after which a DynamoDB request attempt is retried (0: no limit).
    #[arg(long, default_value_t = 2_000)]
    attempt_timeout_ms: u64,
}

#[derive(Debug, clap::Args)]
struct DrainArgs {
    /// The deployment's prefix (scripts/deploy-local --prefix).
    #[arg(long)]
    prefix: String,
    /// Items in the backlog.
    #[arg(long, default_value_t = 20_000)]
    items: usize,
    /// Seconds of each raw read measurement (consistent GetItems, index Query pages; 0: skip).
    #[arg(long, default_value_t = 10)]
    raw_seconds: u32,
    /// Sweeper workers at once (default: as many as the stack's schedule invokes).
    #[arg(long)]
    workers: Option<usize>,
    /// How the deployed functions were built, printed with the figures.
    #[arg(long, default_value = "release")]
    build: String,
    /// Minutes the drain may take before it is reported unfinished.
    #[arg(long, default_value_t = 30)]
    limit_minutes: u64,
}

#[derive(Debug, clap::Args)]
struct LatencyArgs {
    /// The deployment's prefix (scripts/deploy-local --prefix).
    #[arg(long)]
    prefix: String,
    /// Rates for the percentiles, messages per second (`--rates` alone: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "50,500")]
    rates: Vec<u32>,
    /// Rates tried in order for the highest with p99 under 1 s (stops at the first
    /// that does not hold; the low steps are there because the local AWS on a small
    /// machine holds well under 100/s).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "5,10,15,20,25,50,100,200,400,800"
    )]
    ladder: Vec<u32>,
    /// Seconds of load per rate: 60 makes the ladder's rate a sustained one; fewer
    /// for a quick check.
    #[arg(long, default_value_t = 60)]
    seconds: u32,
    /// Seconds of load through the pipeline before anything is measured (0: none).
    #[arg(long, default_value_t = 20)]
    warm_seconds: u32,
    /// The warm-up's rate, messages per second.
    #[arg(long, default_value_t = 20)]
    warm_rate: u32,
    /// Seconds of the producers' TransactWriteItems, unpaced, on the deployed table:
    /// the raw rate beside the held rate (0: skip).
    #[arg(long, default_value_t = 10)]
    raw_seconds: u32,
    /// Seconds of plain PutItems into a scratch table, beside it (0: skip).
    #[arg(long, default_value_t = 0)]
    raw_put_seconds: u32,
    /// Skip the sweeper's recovery (it waits up to a schedule period).
    #[arg(long)]
    no_stuck: bool,
    /// Milliseconds after which a DynamoDB request attempt of the bench is retried
    /// (0: no limit; MiniStack over TLS leaves a request unanswered for 75 s now and then).
    #[arg(long, default_value_t = 2_000)]
    attempt_timeout_ms: u64,
    /// Where to write the billed durations (JSON) for the cost bench.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
struct ChaosArgs {
    /// The deployment's prefix (a fresh one: the run changes its routes and faults).
    #[arg(long)]
    prefix: String,
    /// Transactions.
    #[arg(long, default_value_t = 10_000)]
    messages: usize,
    /// Share of every function's AWS calls that fail (crashes come on top).
    #[arg(long, default_value_t = 0.05)]
    fault_rate: f64,
    /// Seed of the workload and the faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The functions as `scripts/package --debug --features fault-injection` laid them out.
    #[arg(long, default_value = "target/lambda-dev")]
    assets: std::path::PathBuf,
    /// Seconds to wait for quiescence after the last commit.
    #[arg(long, default_value_t = 900)]
    settle_seconds: u64,
    /// The stream mapping's ParallelizationFactor, 1 to 10; above 1 the publisher also
    /// runs each batch as the concurrent batches AWS may run (the local AWS does not).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=10))]
    parallelization_factor: u32,
}

#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// The deployment's prefix (scripts/deploy-local --prefix).
    #[arg(long)]
    prefix: String,
    /// The tool that deployed it, for the summary.
    #[arg(long, default_value = "terraform")]
    tool: String,
    /// Orders to commit.
    #[arg(long, default_value_t = 200)]
    orders: usize,
    /// Orders per second (0: as fast as the local AWS takes them).
    #[arg(long, default_value_t = 50)]
    rate: u32,
    /// One transaction in N rolls back on purpose (0: none).
    #[arg(long, default_value_t = 10)]
    rollback_every: usize,
    /// One order in N is written the way a minimal hand-written producer writes it (0: none).
    #[arg(long, default_value_t = 7)]
    minimal_every: usize,
    /// Probability, per call to a destination, that the publisher dies after the call and before marking its batch SENT.
    #[arg(long, default_value_t = 0.0)]
    publisher_crash: f64,
    /// Probability, per order stored, that the consumer dies after the write and before answering the queue (its batch comes back).
    #[arg(long, default_value_t = 0.0)]
    consumer_crash: f64,
    /// Seconds to wait for the pipeline to settle after the last commit.
    #[arg(long, default_value_t = 180)]
    settle_seconds: u64,
    /// No live counters.
    #[arg(long)]
    quiet: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Scale(args) = &cli.command {
        let settings = outbox_devkit::scale::Settings {
            index_shards: args.index_shards,
            parallelization_factor: args.parallelization_factor,
            table_write_quota: args.table_write_quota,
            lambda_concurrency: args.lambda_concurrency,
            sweep_workers: args.sweep_workers,
            ..outbox_devkit::scale::Settings::default()
        };
        print!("{}", outbox_devkit::scale::report::report(&settings));
        return ExitCode::SUCCESS;
    }
    if let Command::Bench(BenchCommand::Coldstart { dir, runs, prefix }) = &cli.command {
        return coldstart_command(cli.endpoint.as_deref(), dir, *runs, prefix.as_deref()).await;
    }
    let clients = Clients::new(&sdk_config(cli.endpoint.as_deref()).await);
    match cli.command {
        Command::Demo(args) => demo_command(&clients, args).await,
        Command::Chaos(args) => chaos_command(&clients, args).await,
        Command::Bench(BenchCommand::Latency(args)) => latency_command(&clients, args).await,
        Command::Bench(BenchCommand::Raw(args)) => raw_command(&clients, args).await,
        Command::Bench(BenchCommand::Drain(args)) => drain_command(&clients, args).await,
        Command::Regions(args) => regions_command(&clients, args).await,
        Command::Bench(BenchCommand::Coldstart { .. }) | Command::Scale(_) => ExitCode::SUCCESS,
    }
}

/// The cold-start table, the functions calling the local AWS at `endpoint` (a
/// deployment's resources, or ones made for the bench); without an endpoint, the
/// sizes only and a line saying why.
async fn coldstart_command(
    endpoint: Option<&str>,
    dir: &std::path::Path,
    runs: usize,
    prefix: Option<&str>,
) -> ExitCode {
    use outbox_devkit::coldstart;
    let Some(endpoint) = endpoint else {
        if prefix.is_some() {
            eprintln!(
                "bench coldstart: --prefix names a deployment on a local AWS: pass --endpoint (or OUTBOX_ENDPOINT) too"
            );
            return ExitCode::from(2);
        }
        return print_coldstart(coldstart::report(dir, runs, None));
    };
    let clients = Clients::new(&sdk_config(Some(endpoint)).await);
    let aws = match prefix {
        Some(prefix) => coldstart::deployed(&clients, endpoint, prefix).await,
        None => coldstart::provisioned(&clients, endpoint).await,
    };
    let aws = match aws {
        Ok(aws) => aws,
        Err(e) => {
            eprintln!("bench coldstart: {e}");
            return ExitCode::from(2);
        }
    };
    let table = coldstart::report(dir, runs, Some(&aws));
    aws.remove_made(&clients).await;
    print_coldstart(table)
}

/// Prints the cold-start table, or why it could not be made.
fn print_coldstart(table: Result<String, outbox_devkit::coldstart::ColdStartError>) -> ExitCode {
    match table {
        Ok(table) => {
            print!("{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench coldstart: {e}");
            ExitCode::from(2)
        }
    }
}

/// The deployment `prefix` names, or exit code 2 after saying on stderr why it could
/// not be read (the line starts with `command`; `hint`, when given, follows it).
async fn discover(
    clients: &Clients,
    prefix: &str,
    command: &str,
    hint: Option<String>,
) -> Result<Deployment, ExitCode> {
    Deployment::discover(clients, prefix).await.map_err(|e| {
        match hint {
            Some(hint) => eprintln!("{command}: {e}\n  {hint}"),
            None => eprintln!("{command}: {e}"),
        }
        ExitCode::from(2)
    })
}

async fn demo_command(clients: &Clients, args: DemoArgs) -> ExitCode {
    for (name, p) in [
        ("--publisher-crash", args.publisher_crash),
        ("--consumer-crash", args.consumer_crash),
    ] {
        if !(0.0..1.0).contains(&p) {
            eprintln!("demo: {name} is a probability from 0 to below 1, got {p}");
            return ExitCode::from(2);
        }
    }
    let hint = format!(
        "deploy first: scripts/deploy-local terraform --prefix {}",
        args.prefix
    );
    let deployment = match discover(clients, &args.prefix, "demo", Some(hint)).await {
        Ok(d) => d,
        Err(code) => return code,
    };
    let opts = DemoOptions {
        orders: args.orders,
        rate: args.rate,
        rollback_every: args.rollback_every,
        minimal_every: args.minimal_every,
        publisher_crash: args.publisher_crash,
        consumer_crash: args.consumer_crash,
        settle_timeout: Duration::from_secs(args.settle_seconds),
        progress: !args.quiet,
        ..DemoOptions::default()
    };
    eprintln!(
        "demo: {} orders into {} ({} stack `{}`), through {} -> {} -> {}",
        opts.orders,
        deployment.table,
        args.tool,
        deployment.prefix,
        deployment.publisher,
        deployment.consumer_queue_url,
        deployment.consumer
    );
    match demo::run(clients, &deployment, &opts).await {
        Ok(mut report) => {
            report.deployment = format!(
                "{} stack `{}` on {}",
                args.tool, deployment.prefix, clients.region
            );
            println!("{}", report.render());
            if report.broken.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("\ndemo: {e}");
            ExitCode::from(2)
        }
    }
}

/// Without the `chaos` feature the command is there, saying how to get it.
#[cfg(not(feature = "chaos"))]
async fn chaos_command(_: &Clients, _: ChaosArgs) -> ExitCode {
    eprintln!(
        "chaos: this dev kit was built without its chaos feature (the demo needs none); \
         build it with `cargo build -p outbox-devkit --features chaos`"
    );
    ExitCode::from(2)
}

#[cfg(feature = "chaos")]
async fn chaos_command(clients: &Clients, args: ChaosArgs) -> ExitCode {
    let deployment = match discover(clients, &args.prefix, "chaos", None).await {
        Ok(d) => d,
        Err(code) => return code,
    };
    let opts = outbox_devkit::chaos::ChaosOptions {
        messages: args.messages,
        fault_rate: args.fault_rate,
        seed: args.seed,
        assets: args.assets,
        settle_timeout: Duration::from_secs(args.settle_seconds),
        progress: true,
        parallelization_factor: args.parallelization_factor,
    };
    match outbox_devkit::chaos::run(clients, &deployment, &opts).await {
        Ok(report) => {
            println!("{}", report.render());
            if report.held() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("chaos: {e}");
            ExitCode::from(2)
        }
    }
}

async fn latency_command(clients: &Clients, args: LatencyArgs) -> ExitCode {
    let deployment = match discover(clients, &args.prefix, "bench latency", None).await {
        Ok(d) => d,
        Err(code) => return code,
    };
    let opts = outbox_devkit::latency::LatencyOptions {
        rates: args.rates,
        ladder: args.ladder,
        seconds: args.seconds,
        warm_seconds: args.warm_seconds,
        warm_rate: args.warm_rate,
        raw_seconds: args.raw_seconds,
        raw_put_seconds: args.raw_put_seconds,
        stuck: !args.no_stuck,
        attempt_timeout: attempt_timeout(args.attempt_timeout_ms),
    };
    match outbox_devkit::latency::run(clients, &deployment, &opts).await {
        Ok((report, json)) => {
            print!("{report}");
            if let Some(path) = args.json
                && let Err(e) = std::fs::write(&path, json.to_string())
            {
                eprintln!("bench latency: writing {}: {e}", path.display());
                return ExitCode::from(2);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench latency: {e}");
            ExitCode::from(2)
        }
    }
}

/// A limit in milliseconds, 0 for none.
fn attempt_timeout(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

async fn raw_command(clients: &Clients, args: RawArgs) -> ExitCode {
    // PutItems alone need no deployment: a look at the local AWS before one.
    let deployment = match args.transact_seconds {
        0 => None,
        _ => match discover(clients, &args.prefix, "bench raw", None).await {
            Ok(d) => Some(d),
            Err(code) => return code,
        },
    };
    let rates = outbox_devkit::latency::raw_rates(
        clients,
        &args.prefix,
        deployment.as_ref(),
        args.put_seconds,
        args.transact_seconds,
        attempt_timeout(args.attempt_timeout_ms),
    );
    match rates.await {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench raw: {e}");
            ExitCode::from(2)
        }
    }
}

async fn drain_command(clients: &Clients, args: DrainArgs) -> ExitCode {
    let deployment = match discover(clients, &args.prefix, "bench drain", None).await {
        Ok(d) => d,
        Err(code) => return code,
    };
    let opts = outbox_devkit::drain::DrainOptions {
        items: args.items,
        raw_seconds: args.raw_seconds,
        workers: args.workers,
        build: args.build,
        limit: Duration::from_secs(args.limit_minutes * 60),
    };
    match outbox_devkit::drain::run(clients, &deployment, &opts).await {
        Ok(report) => {
            print!("{}", report.render());
            if report.drained() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("bench drain: {e}");
            ExitCode::from(2)
        }
    }
}

async fn regions_command(clients: &Clients, args: RegionsArgs) -> ExitCode {
    let opts = outbox_devkit::regions::RegionsOptions {
        prefix: args.prefix,
        regions: args.regions,
        messages: args.messages,
        minimal_every: args.minimal_every,
        failover_messages: args.failover_messages,
        failback_messages: args.failback_messages,
        fail: args.fail,
        settle_timeout: Duration::from_secs(args.settle_seconds),
    };
    match outbox_devkit::regions::run(&clients.sdk_config, &opts).await {
        Ok(report) => {
            print!("{}", report.render());
            if report.held() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("regions: {e}");
            ExitCode::from(2)
        }
    }
}
