//! `outbox-local`: run the outbox pipeline on this machine.
//!
//! `outbox-local demo` — the whole pipeline on the emulator, with a summary.

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
