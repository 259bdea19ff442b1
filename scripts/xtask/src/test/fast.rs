//! The fast tier: unit tests, fakes, the model's CI presets, then the doc tests. No
//! emulator, nothing deployed.

use super::Run;
use super::runner::Runner;
use crate::Result;
use crate::session::Session;
use crate::tiers::{self, Tier};

/// The libraries whose doc tests run apart from the workspace's, each with the
/// features docs.rs documents: neither turns on another's `unstable-internals`, which
/// the workspace's tools do, so there an example naming a module users cannot reach
/// would pass. Not `dynamodb-outbox`: alone it builds every SDK client it uses once more,
/// with a feature set of its own (with it here, the doc-test step took 193 s of CI's
/// critical path). Its examples run with the workspace's, where its own
/// `unstable-internals` is on; the lint's rustdoc run documents it alone.
pub const ALONE_DOC_TESTS: [(&str, &str); 2] = [
    ("dynamodb-outbox-core", "opentelemetry"),
    ("dynamodb-outbox-idempotency", "opentelemetry"),
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

/// The other libraries' examples and the docs' snippets in one run, with the features
/// the whole workspace resolves: it reuses every unit the test build compiled (run
/// library by library, each with its own features, they rebuilt tokio, hyper and the
/// AWS SDK once more: about 130 CPU-s). Then [`ALONE_DOC_TESTS`]' together, as their
/// users build them; each library's documentation as docs.rs builds it is
/// `cargo xtask lint`'s.
fn doc_tests(s: &Session) -> Result {
    s.step("doc tests: the libraries' examples and the docs' snippets, compiled and run");
    let mut workspace = s.cargo().args(["test", "--doc", "--quiet", "--workspace"]);
    let mut alone = s.cargo().args(["test", "--doc", "--quiet"]);
    for (package, features) in ALONE_DOC_TESTS {
        workspace = workspace.args(["--exclude", package]);
        alone = alone.args(["-p", package, "--features"]).arg(
            features
                .split(',')
                .map(|f| format!("{package}/{f}"))
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    workspace.run()?;
    alone.run()
}
