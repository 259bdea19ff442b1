//! The fast tier: unit tests, fakes, the model's CI presets, then the doc tests. No
//! emulator, nothing deployed.

use super::Run;
use super::runner::Runner;
use crate::Result;
use crate::session::Session;
use crate::tiers::{self, Tier};

/// The libraries whose doc tests run each on its own, with its documented features
/// (as docs.rs shows them and users build them), then the docs' snippets.
pub const DOC_TESTS: [(&str, &str); 4] = [
    ("dynamodb-outbox-core", "opentelemetry"),
    ("dynamodb-outbox", "lambda,opentelemetry"),
    ("dynamodb-outbox-idempotency", "opentelemetry"),
    ("outbox-docs", ""),
];

/// The fast tier alone: builds only its targets, starts nothing.
pub fn alone(s: &Session, runner: &Runner, run: &Run) -> Result {
    s.step("build the tests (no emulator, nothing deployed)");
    build(s, runner)?;
    tests(s, runner, run)?;
    s.step("all tests passed");
    Ok(())
}

/// Builds the fast tier's test binaries.
pub fn build(s: &Session, runner: &Runner) -> Result {
    runner.build(s, &tiers::fast_targets())
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

/// Each library on its own, as its users build it (in one workspace-wide run, the
/// tools' and tests' features would be on for all of them).
fn doc_tests(s: &Session) -> Result {
    s.step("doc tests: the libraries' examples and the docs' snippets, compiled and run");
    for (package, features) in DOC_TESTS {
        let mut cmd = s.cargo().args(["test", "--doc", "--quiet", "-p", package]);
        if !features.is_empty() {
            cmd = cmd.args(["--features", features]);
        }
        cmd.run()?;
    }
    Ok(())
}
