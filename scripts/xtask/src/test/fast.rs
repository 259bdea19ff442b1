//! The fast tier: unit tests, fakes, the model's CI presets, then the doc tests. No
//! emulator, nothing deployed.

use super::Run;
use super::runner::Runner;
use crate::Result;
use crate::lint::libraries_with_their_features;
use crate::session::Session;
use crate::tiers::{self, Tier};

/// The fast tier alone: builds only its targets, starts nothing.
pub fn alone(s: &Session, runner: &Runner, run: &Run) -> Result {
    s.step("build the tests (no emulator, nothing deployed)");
    build(s, runner)?;
    tests(s, runner, run)?;
    s.step("all tests passed");
    Ok(())
}

/// Builds the fast tier's test binaries, and the benchmarks (run by `cargo xtask bench`
/// only): so that they compile after every change, and so that clippy, which CI runs
/// inside this build, sees every target.
pub fn build(s: &Session, runner: &Runner) -> Result {
    runner.build(s, &tiers::fast_targets())?;
    s.cargo()
        .args(["test", "--no-run", "--quiet", "--workspace", "--bench", "*"])
        .run()
}

/// The fast tier's tests, then (without a filter) the doc tests.
pub fn tests(s: &Session, runner: &Runner, run: &Run) -> Result {
    s.step("Rust: unit tests, fakes, the model's CI presets (no emulator)");
    runner
        .cmd(s, &tiers::fast_targets(), None, Tier::Fast, &run.filters)
        .run()?;
    if run.full() {
        doc_tests(s)?;
    }
    Ok(())
}

/// Every crate's examples and the docs' snippets in one run over the whole workspace,
/// whose features resolve as in the test build: it compiles no unit that build did not
/// (with `--exclude` of the libraries, cargo resolved features without their
/// dev-dependencies and compiled 25 units again, 71 CPU-s in CI). Then the libraries'
/// own examples again, together, with the features docs.rs documents (the lint's
/// [`LIBRARIES`](crate::lint::LIBRARIES)), as their users build them: there none turns on another's
/// `unstable-internals`, which the workspace's tools do, so an example naming a module
/// users cannot reach fails. That run reuses the test build's tokio and AWS SDK too:
/// dynamodb-outbox-idempotency's dev-dependencies turn on what the tools turn on.
fn doc_tests(s: &Session) -> Result {
    s.step("doc tests: the libraries' examples and the docs' snippets, compiled and run");
    s.cargo()
        .args(["test", "--doc", "--quiet", "--workspace"])
        .run()?;
    s.cargo()
        .args(["test", "--doc", "--quiet"])
        .args(libraries_with_their_features())
        .run()
}
