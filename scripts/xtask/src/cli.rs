//! The command line.

use crate::emulator::{self, Emulator};
use crate::session::Session;
use crate::{Result, bench, demo, deploy, lint, package, release, shop, test};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The project's tasks.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "dynamodb-outbox's tasks: tests in tiers, the local AWS, packaging, deploys, the demo"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// The test suite: `test [fast|emulator|deployed|all] [FILTER...]` (default all).
    ///
    /// fast: unit tests, fakes, the model's CI presets, doc tests; no emulator.
    /// emulator: integration tests on MiniStack and on moto.
    /// deployed: the functions behind the applied stacks, chaos, the shop, the
    /// infrastructure checks, the release artifacts.
    /// FILTER: test names (and nextest options): only the parts of the tier where they
    /// name a test run (none named is an error); the doc tests, moto, the infrastructure
    /// checks and the release packaging are then skipped.
    Test {
        /// A tier, then filters.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The deployed pipeline on a local AWS, every guarantee checked (`demo --help`).
    #[command(disable_help_flag = true)]
    Demo {
        /// --stack cdk|terraform, --regions R1,R2, then the dev kit's options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The local AWS (MiniStack, or moto's server) in OUTBOX_EMULATOR_STATE (default .emulator/).
    Emulator {
        #[command(subcommand)]
        action: EmulatorAction,
    },
    /// Build the Lambda functions and lay them out as both stacks read them.
    Package(package::Options),
    /// Deploy one of our stacks into the local AWS (prints one JSON line).
    Deploy(deploy::Options),
    /// Deploy the adoption example (examples/shop) into the local AWS, after checking
    /// that the outbox adds only its own resources (examples/shop/deploy-local).
    Shop(shop::Options),
    /// The figures of docs/benchmarks.md (about 11 minutes).
    Bench,
    /// CI's static checks: clippy, rustdoc, publish dry run, each library alone, cargo-shear.
    Lint(lint::Options),
    /// Release X.Y.Z: semver and publish checks, the function zips with checksums, the
    /// changelog and the tag (`--dry-run`: no commit, no tag).
    Release(release::Options),
}

#[derive(Debug, Subcommand)]
enum EmulatorAction {
    /// Install if needed, start, print the endpoint.
    Start { kind: Option<emulator::Kind> },
    /// Stop the one this state directory started.
    Stop,
    /// Print the exports a client needs: OUTBOX_ENDPOINT and, for MiniStack, the CA bundle.
    Env,
    /// Print only the exports that trust MiniStack's certificate (nothing for moto).
    Trust,
    /// Install only.
    Install { kind: Option<emulator::Kind> },
}

/// Runs the command line; the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.task) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> Result {
    let mut s = Session::new();
    match task {
        Task::Test { args } => test::run(&mut s, &test::Run::parse(args)),
        Task::Demo { args } => demo::run(&mut s, args),
        Task::Emulator { action } => emulator_action(&s, action),
        Task::Package(opts) => package::package(&s, &opts, &[]),
        Task::Deploy(opts) => {
            let line = deploy::deploy(&s, &opts)?;
            if !line.is_empty() {
                println!("{line}");
            }
            Ok(())
        }
        Task::Shop(opts) => shop::deploy(&s, &opts),
        Task::Bench => bench::run(&mut s),
        Task::Lint(opts) => lint::run(&mut s, &opts),
        Task::Release(opts) => release::run(&s, &opts),
    }
}

fn emulator_action(s: &Session, action: EmulatorAction) -> Result {
    let emulator = Emulator::from_env(s)?;
    let kind = |k: Option<emulator::Kind>| k.map_or_else(emulator::Kind::from_env, Ok);
    match action {
        EmulatorAction::Start { kind: k } => println!("{}", emulator.start(s, kind(k)?)?),
        EmulatorAction::Stop => emulator.stop(),
        EmulatorAction::Install { kind: k } => emulator::install(s, kind(k)?)?,
        EmulatorAction::Env => {
            if let Some(url) = emulator.endpoint() {
                println!("export OUTBOX_ENDPOINT={url}");
                println!("{}", emulator::shell_exports(&emulator.trust_exports()));
            }
        }
        EmulatorAction::Trust => {
            if emulator.endpoint().is_some() {
                println!("{}", emulator::shell_exports(&emulator.trust_exports()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_partial_release_is_a_dry_run_only() {
        let smoke = [
            "xtask",
            "release",
            "0.1.0",
            "--dry-run",
            "--only",
            "outbox-recovery",
            "--arch",
            "arm64",
        ];
        assert!(Cli::try_parse_from(smoke).is_ok());
        assert!(Cli::try_parse_from(["xtask", "release", "0.1.0", "--arch", "arm64"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "release", "0.1.0", "--no-verify"]).is_err());
    }

    #[test]
    fn tiers_and_filters_reach_the_test_task_as_given() {
        let cli =
            Cli::try_parse_from(["xtask", "test", "fast", "publisher", "--no-capture"]).unwrap();
        let Task::Test { args } = cli.task else {
            panic!("not the test task")
        };
        assert_eq!(args, ["fast", "publisher", "--no-capture"]);
    }
}
