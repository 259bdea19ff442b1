//! `outbox-local`: run the outbox pipeline on this machine.
//!
//! `outbox-local demo` — the whole pipeline on the emulator, with a summary.
//! `outbox-local run`  — the publisher and sweeper for an existing table (emulator or
//! a real account), configured with the same environment variables as the Lambdas.

use clap::{Parser, Subcommand};
use outbox_local::aws::{Clients, sdk_config};
use outbox_local::demo::{self, DemoOptions};

#[derive(Parser, Debug)]
#[command(
    name = "outbox-local",
    about = "Run the dynamodb-outbox pipeline locally"
)]
struct Cli {
    /// AWS endpoint (the emulator). Without it, the standard AWS configuration picks
    /// a real account.
    #[arg(long, env = "OUTBOX_ENDPOINT", global = true)]
    endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Commit orders through the transactional API and watch them flow: publisher
    /// behind a local event source mapping, idempotent consumer, guarantee check.
    Demo {
        /// Orders to commit.
        #[arg(long, default_value_t = 200)]
        orders: usize,
        /// Orders per second (0: as fast as possible).
        #[arg(long, default_value_t = 100)]
        rate: u32,
        /// One transaction in this many rolls back on purpose (0: none).
        #[arg(long, default_value_t = 10)]
        rollback_every: usize,
        /// Probability of a publisher crash between publish and mark, per batch.
        #[arg(long, default_value_t = 0.0)]
        publisher_crash: f64,
        /// Probability of a consumer crash between effect and delete, per message.
        #[arg(long, default_value_t = 0.0)]
        consumer_crash: f64,
        /// No live counters.
        #[arg(long)]
        quiet: bool,
    },
    /// Run the publisher (behind a local stream event source mapping) and the sweeper
    /// (on a timer) for an existing outbox table. Reads OUTBOX_TABLE_NAME,
    /// OUTBOX_ROUTES, OUTBOX_DLQ_URL, ... exactly as the Lambda functions do.
    Run {
        /// Seconds between sweeps (0: no sweeper).
        #[arg(long, default_value_t = 60)]
        sweep_every: u64,
        /// Milliseconds between stream polls.
        #[arg(long, default_value_t = 250)]
        poll_ms: u64,
        /// Records per handler invocation (the mapping's BatchSize).
        #[arg(long, default_value_t = 100)]
        batch_size: usize,
        /// Start at the oldest stream record instead of the newest.
        #[arg(long)]
        from_start: bool,
        /// Stop after this many seconds (0: run until interrupted).
        #[arg(long, default_value_t = 0)]
        seconds: u64,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let config = sdk_config(cli.endpoint.as_deref()).await;
    match cli.command {
        Command::Run {
            sweep_every,
            poll_ms,
            batch_size,
            from_start,
            seconds,
        } => {
            let clients = Clients::new(&config);
            let settings = outbox_local::runner::MappingSettings {
                batch_size,
                ..Default::default()
            };
            let opts = outbox_local::run::RunOptions {
                sweep_every: std::time::Duration::from_secs(sweep_every),
                poll_every: std::time::Duration::from_millis(poll_ms),
                from_start,
                stop_after: (seconds > 0).then(|| std::time::Duration::from_secs(seconds)),
            };
            let configs = outbox::PublisherConfig::from_env()
                .and_then(|p| outbox::sweep::SweeperConfig::from_env().map(|s| (p, s)));
            let (publisher_config, sweeper_config) = match configs {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("outbox-local run: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            };
            match outbox_local::run::run(
                &clients,
                publisher_config,
                sweeper_config,
                settings,
                &opts,
            )
            .await
            {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("outbox-local run: {e}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
        Command::Demo {
            orders,
            rate,
            rollback_every,
            publisher_crash,
            consumer_crash,
            quiet,
        } => {
            if cli.endpoint.is_none() {
                eprintln!(
                    "outbox-local demo: no --endpoint given; using the AWS account of the standard configuration"
                );
            }
            let opts = DemoOptions {
                orders,
                rate,
                rollback_every,
                publisher_crash,
                consumer_crash,
                progress: !quiet,
            };
            // Separate clients so the publisher's requests are counted on their own.
            let producer = Clients::new(&config);
            let pipeline = Clients::new(&config);
            match demo::run(&producer, &pipeline, &opts).await {
                Ok(report) => {
                    println!("{}", report.render());
                    if report.broken.is_empty() {
                        std::process::ExitCode::SUCCESS
                    } else {
                        std::process::ExitCode::from(2)
                    }
                }
                Err(e) => {
                    eprintln!("outbox-local demo failed: {e}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
    }
}
