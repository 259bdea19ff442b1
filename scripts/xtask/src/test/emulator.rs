//! The emulator tier: the integration tests on MiniStack and, in the background, on
//! moto (a second, independent emulator); the IAM correction's own tests.

use super::Run;
use super::runner::Runner;
use crate::Result;
use crate::emulator::{Emulator, Kind, StopOnDrop};
use crate::process::Job;
use crate::session::{Session, fresh_state_dir};
use crate::tiers::{self, Tier};
use std::path::{Path, PathBuf};

/// The emulators this run started, stopped when it ends (or fails).
#[derive(Debug, Default)]
pub struct Emulators(Vec<StopOnDrop>);

impl Emulators {
    /// Starts a `kind` emulator in a fresh state directory: its endpoint and directory.
    pub fn start(&mut self, s: &Session, kind: Kind) -> Result<(String, PathBuf)> {
        let state = fresh_state_dir(kind.name())?;
        let emulator = Emulator::at(&state)?;
        self.0.push(StopOnDrop(emulator.clone()));
        let endpoint = emulator.start(s, kind)?;
        eprintln!(
            "tests: {} at {endpoint} (log: {})",
            kind.name(),
            emulator.log().display()
        );
        Ok((endpoint, state))
    }

    /// Stops them and deletes their state directories: for a run that passed. Each
    /// full run left about 870 MB under the temporary directory (the shop's build, the
    /// deployed functions' code, the stacks' state), enough over a day of runs to fill
    /// a CI machine's disk. A failed run keeps them, for their logs.
    pub fn stop_and_remove_state(self) {
        let dirs: Vec<PathBuf> = self.0.iter().map(|e| e.0.state().to_owned()).collect();
        drop(self);
        for dir in dirs {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("tests: could not remove {}: {e}", dir.display());
            }
        }
    }
}

/// Installs what the emulator tiers run (each one time, pinned).
pub fn install_tools(s: &Session, deployed: bool) -> Result {
    crate::emulator::install(s, Kind::Ministack)?;
    crate::emulator::install(s, Kind::Moto)?;
    if deployed {
        crate::deploy::npm_ci(&s.path("infra/cdk"))
    } else {
        Ok(())
    }
}

/// Starts MiniStack: every client from here on trusts its certificate (it serves TLS
/// only, see the emulator module): the Rust SDK, Terraform, the CDK, botocore.
pub fn start_ministack(s: &mut Session, guard: &mut Emulators) -> Result<(String, PathBuf)> {
    let (endpoint, state) = guard.start(s, Kind::Ministack)?;
    for (k, v) in Emulator::at(&state)?.trust_exports() {
        s.set_env(&k, v);
    }
    Ok((endpoint, state))
}

/// The local AWS's IAM correction's own tests, against the pinned MiniStack, in the
/// background: they start MiniStacks of their own and mostly wait on them (47 s of
/// wall time for 9 CPU-s), which was time on the critical path before the tests' build.
pub fn start_iam_correction(s: &Session, ministack_state: &Path) -> Result<Job> {
    s.step("the local AWS's IAM correction (tests/emulator/ministack_iam.py), against the pinned MiniStack, in the background");
    s.cmd(s.path(".venv/ministack/bin/python"))
        .args([
            "-m",
            "unittest",
            "discover",
            "-s",
            "tests/emulator",
            "-p",
            "test_*.py",
        ])
        .spawn_logged(
            "the IAM correction's tests",
            &ministack_state.join("iam-unittest.log"),
        )
}

/// Waits for the IAM correction's tests and shows their summary (unittest's last three
/// lines: every line starts with the empty prefix).
pub fn wait_iam_correction(s: &Session, job: Job) -> Result {
    s.step("wait for the IAM correction's tests");
    job.wait_showing(20, &[""], 3)
}

/// Builds the emulator tiers' test binaries (`it` and the shop's).
pub fn build(s: &Session, runner: &Runner) -> Result {
    runner.build(s, &tiers::emulator_targets())
}

/// The emulator tier's tests on moto, in the background.
pub fn start_moto(s: &Session, runner: &Runner, run: &Run, guard: &mut Emulators) -> Result<Job> {
    s.step("Rust: integration tests on moto (cross-check), in the background");
    let (moto, moto_state) = guard.start(s, Kind::Moto)?;
    // Four at a time, not one per core: they wait on moto and on their own timeouts
    // and hangs (25 CPU-s of 112 tests); two threads left 423 s of sleeping on the
    // critical path, four 226 s.
    runner
        .cmd(
            s,
            &tiers::emulator_targets(),
            Some(&tiers::emulator_filter(Tier::Emulator)),
            Tier::Emulator,
            &run.filters,
        )
        .env("NEXTEST_TEST_THREADS", "4")
        .env("RUST_TEST_THREADS", "4")
        .env("OUTBOX_EMULATOR", "moto")
        .env("OUTBOX_ENDPOINT", &moto)
        .spawn_logged(
            "the integration tests on moto",
            &moto_state.join("tests.log"),
        )
}

/// `tier`'s tests on MiniStack (for `all` and `deployed`, with the deployed
/// functions, the stacks and the shop named for them).
pub fn on_ministack(s: &Session, runner: &Runner, run: &Run, tier: Tier, endpoint: &str) -> Result {
    s.step(match tier {
        Tier::Emulator => "Rust: integration tests on MiniStack",
        Tier::Deployed => {
            "Rust: deployed functions, both stacks, the global table and the shop, on MiniStack"
        }
        _ => "Rust: integration tests, deployed functions, both stacks and the shop, on MiniStack",
    });
    runner
        .cmd(
            s,
            &tiers::emulator_targets(),
            Some(&tiers::emulator_filter(tier)),
            tier,
            &run.filters,
        )
        // Four at a time, as on moto: most of the tier's 1,256 test-seconds (two
        // threads: 629 s of wall time) wait on the deployed functions, the stream and
        // the sweeps, not on the CPU.
        .env("NEXTEST_TEST_THREADS", "4")
        .env("RUST_TEST_THREADS", "4")
        .env("OUTBOX_EMULATOR", "ministack")
        .env("OUTBOX_ENDPOINT", endpoint)
        .env("OUTBOX_STACKS", "terraform:tf,cdk:cdk")
        .env("OUTBOX_GLOBAL_STACK", "gt")
        .env("SHOP_DEPLOYMENTS", "terraform:shop-tf,cdk:shop-cdk")
        .run()
}
