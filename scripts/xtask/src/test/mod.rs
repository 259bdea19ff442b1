//! `cargo xtask test [fast|emulator|deployed|all] [FILTER...]`: the suite in tiers
//! (see [`crate::tiers`]; each tier's steps are in its own file here). `all` (the
//! default, and `tests/run`) runs the three as one job graph, overlapping what waits
//! on the emulator with what needs the CPU:
//!
//! 1. starts packaging the release artifacts in the background at a lower CPU priority
//!    (nice 10, its own target directory), unless `OUTBOX_SKIP_RELEASE=1`; builds and
//!    packages the functions (debug, fault injection compiled in) and the shop's own;
//! 2. starts MiniStack and, in the background, the IAM correction's own tests and
//!    applies both our stacks, the global
//!    table's and the shop's (the deployments wait on the emulator most of the time);
//! 3. meanwhile builds the emulator tiers' test binaries and starts their run on moto
//!    (in the background: they sleep on moto's timeouts), then builds and runs the fast
//!    tier and the doc tests;
//! 4. once the stacks are applied, runs the infrastructure checks in the background
//!    (`bash infra/check.sh`, nice 5) and the integration and deployed tests on
//!    MiniStack, in one run; beside it, once the release packaging ends, the
//!    publisher's binary test on the release artifacts;
//! 5. waits for everything in the background; a run that passes then removes the
//!    emulators' state directories (a failed one keeps them, for their logs).
//!
//! Every debug build resolves features for the whole workspace (`--workspace`), so the
//! functions, the shop's and the tests share one build of the AWS SDK.
//! Filters (test names, or nextest options) go to every test run of the tier, and only
//! the parts of the tier where they name a test start (listed first with nextest: one
//! unit test starts no emulator, one integration test deploys nothing); a filter that
//! names no test fails. With a filter, the doc tests, moto, the IAM correction's tests,
//! the infrastructure checks and the release packaging are skipped. `OUTBOX_SKIP_MOTO=1`, `OUTBOX_SKIP_INFRA=1`, `OUTBOX_SKIP_RELEASE=1` skip
//! those steps.

mod deployed;
mod emulator;
mod fast;
mod runner;

use crate::Result;
use crate::package;
use crate::session::Session;
use crate::tiers::{self, Matched, Parts, Tier};
use emulator::Emulators;
use runner::Runner;
use std::path::PathBuf;

/// What to run.
#[derive(Debug)]
pub struct Run {
    /// The tier.
    pub tier: Tier,
    /// Test-name filters and test-runner options.
    pub filters: Vec<String>,
}

impl Run {
    /// From the command line: an optional tier name, then filters.
    pub fn parse(args: Vec<String>) -> Self {
        let mut args = args.into_iter().peekable();
        let tier = args.peek().and_then(|a| Tier::parse(a));
        if tier.is_some() {
            args.next();
        }
        Self {
            tier: tier.unwrap_or(Tier::All),
            filters: args.collect(),
        }
    }

    fn full(&self) -> bool {
        self.filters.is_empty()
    }
}

fn skip(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Runs the tier.
pub fn run(s: &mut Session, run: &Run) -> Result {
    let runner = Runner::detect(s);
    let parts = if run.full() {
        Parts::of(run.tier)
    } else {
        narrowed(s, &runner, run)?
    };
    if !parts.emulator && !parts.deployed {
        return fast::alone(s, &runner, run);
    }
    // The emulators' virtual environments and the CDK's npm packages (first run only,
    // downloads) install beside the build.
    let deployed = parts.deployed;
    let installs = std::thread::spawn(move || emulator::install_tools(&Session::new(), deployed));
    // The release packaging first: it shares no unit with the debug build, and at nice
    // 10 it takes what the suite leaves idle from the start (begun after the debug build,
    // it ended last, and its test ran alone on a half-idle machine).
    let release = (deployed && run.full() && !skip("OUTBOX_SKIP_RELEASE"))
        .then(|| deployed::start_release(s))
        .transpose()?;
    let lambda_dir = package_debug(s, deployed)?;
    installs
        .join()
        .map_err(|_| "the install thread panicked".to_owned())??;

    let mut guard = Emulators::default();
    s.step(if deployed {
        "start MiniStack; apply both stacks and the adoption example's (examples/shop) in the background"
    } else {
        "start MiniStack"
    });
    let (ministack, ms_state) = emulator::start_ministack(s, &mut guard)?;
    let deploys = if deployed {
        deployed::start_deploys(s, &ministack, &ms_state, &lambda_dir)?
    } else {
        Vec::new()
    };
    let iam = (parts.emulator && run.full())
        .then(|| emulator::start_iam_correction(s, &ms_state))
        .transpose()?;

    s.step("build the tests on the emulators (it, the shop's)");
    emulator::build(s, &runner)?;
    let moto = (parts.emulator && run.full() && !skip("OUTBOX_SKIP_MOTO"))
        .then(|| emulator::start_moto(s, &runner, run, &mut guard))
        .transpose()?;
    if parts.fast {
        s.step("build the fast tier's tests");
        fast::build(s, &runner)?;
        fast::tests(s, &runner, run)?;
    }

    let infra = if deployed {
        deployed::wait_deploys(s, deploys)?;
        (run.full() && !skip("OUTBOX_SKIP_INFRA"))
            .then(|| deployed::start_infra_checks(s, &ms_state))
            .transpose()?
    } else {
        None
    };
    let tier = parts.ministack_tier().unwrap_or(run.tier);
    let s: &Session = s;
    // The release publisher's test starts when its packaging ends, beside the MiniStack
    // run (it runs the binary under its own local runtime, on tables of its own).
    let (ministack_result, release_result) = std::thread::scope(|scope| {
        let release =
            release.map(|job| scope.spawn(|| deployed::release_test(s, &runner, job, &ministack)));
        let ministack_result = emulator::on_ministack(s, &runner, run, tier, &ministack);
        let release_result = release.map(|thread| {
            thread
                .join()
                .unwrap_or_else(|_| Err("the release test's thread panicked".to_owned()))
        });
        (ministack_result, release_result)
    });

    if let Some(job) = moto {
        s.step("wait for the integration tests on moto");
        job.wait_showing(60, &SUMMARY, 3)?;
    }
    ministack_result?;
    if let Some(job) = iam {
        emulator::wait_iam_correction(s, job)?;
    }
    if let Some(job) = infra {
        deployed::wait_infra_checks(s, job)?;
    }
    release_result.transpose()?;
    guard.stop_and_remove_state();
    s.step("all tests passed");
    Ok(())
}

/// The parts of `run`'s tier where its filters name tests, found by listing them
/// (which builds the test binaries the run needs anyway): a run for one unit test
/// starts no emulator, one for an integration test deploys nothing, and one whose
/// filters name no test fails instead of passing having run nothing. Without nextest
/// (no listing) the whole tier runs.
fn narrowed(s: &Session, runner: &Runner, run: &Run) -> Result<Parts> {
    let parts = Parts::of(run.tier);
    s.step(&format!(
        "find the tests named by {} (builds the tests)",
        run.filters.join(" ")
    ));
    let count =
        |targets: Vec<String>, expr: Option<String>, wanted: bool| -> Result<Option<usize>> {
            if !wanted {
                return Ok(Some(0));
            }
            runner.count(s, &targets, expr.as_deref(), &run.filters)
        };
    let fast = count(tiers::fast_targets(), None, parts.fast)?;
    let emulator = count(
        tiers::emulator_targets(),
        Some(tiers::emulator_filter(Tier::Emulator)),
        parts.emulator,
    )?;
    let deployed = count(
        tiers::emulator_targets(),
        Some(tiers::emulator_filter(Tier::Deployed)),
        parts.deployed,
    )?;
    let (Some(fast), Some(emulator), Some(deployed)) = (fast, emulator, deployed) else {
        return Ok(parts);
    };
    eprintln!("tests: named {fast} fast, {emulator} emulator, {deployed} deployed");
    parts.narrowed(
        Matched {
            fast,
            emulator,
            deployed,
        },
        &run.filters,
    )
}

/// Builds and packages the functions (debug, fault injection compiled in) into
/// `target/lambda-dev`, with the shop's own functions when the deployed tier runs: in the
/// same cargo run: as the shop depends on no function crate, the functions'
/// fault-injection feature leaves it as the test build has it.
fn package_debug(s: &mut Session, deployed: bool) -> Result<PathBuf> {
    let lambda_dir = s.target.join("lambda-dev");
    s.set_env("OUTBOX_LAMBDA_DIR", lambda_dir.display().to_string());
    s.step(if deployed {
        "build and package the functions (debug, with fault injection) and the shop's own"
    } else {
        "build and package the functions (debug, with fault injection)"
    });
    let also: &[&str] = if deployed {
        &crate::shop::BINARIES
    } else {
        &[]
    };
    let mut opts = package::Options::debug_with_faults(lambda_dir.clone());
    opts.share_with_tests = true;
    package::package(s, &opts, also)?;
    Ok(lambda_dir)
}

/// The lines of a test run's log that sum it up (nextest's, then cargo test's).
const SUMMARY: [&str; 2] = ["     Summary", "test result"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_argument_that_names_a_tier_picks_it_and_the_rest_are_filters() {
        let run = Run::parse(vec!["fast".into(), "publisher".into()]);
        assert_eq!(
            (run.tier, run.filters),
            (Tier::Fast, vec!["publisher".to_owned()])
        );
        let run = Run::parse(vec!["publisher".into()]);
        assert_eq!(
            (run.tier, run.filters),
            (Tier::All, vec!["publisher".to_owned()])
        );
        assert_eq!(Run::parse(Vec::new()).tier, Tier::All);
    }
}
