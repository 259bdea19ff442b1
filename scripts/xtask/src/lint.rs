//! `cargo xtask lint`: the static checks CI runs beside the test suite — clippy on every
//! target, rustdoc with warnings denied on the libraries as docs.rs builds them, the
//! publish dry run, each library compiled alone, no OpenTelemetry without its feature, no
//! unused or misplaced dependency (cargo-shear).
//!
//! In its own target directory (`target/lint`, unless `CARGO_TARGET_DIR` is set): none
//! of it shares a compiled unit with the test build (checks, not builds; other feature
//! sets), and with its own build lock it runs beside the test suite instead of after it.
//! CI leaves clippy out (`--without-clippy`): there clippy-driver is the test build's
//! `RUSTC_WORKSPACE_WRAPPER` (`.ci/run`), so the workspace's members are linted as they
//! are compiled, on dependencies compiled once, instead of on a second, check-mode
//! build of every dependency here (about 330 of its 370 CPU-s).

use crate::{Result, session::Session};

/// The libraries users depend on, each with the features docs.rs documents.
pub const LIBRARIES: [(&str, &str); 3] = [
    ("dynamodb-outbox-core", "opentelemetry"),
    ("dynamodb-outbox", "lambda,opentelemetry"),
    ("dynamodb-outbox-idempotency", "opentelemetry"),
];

/// `-p` for each of [`LIBRARIES`], and one `--features` naming each one's, qualified.
pub fn libraries_with_their_features() -> Vec<String> {
    let mut args = Vec::new();
    let mut features = Vec::new();
    for (library, theirs) in LIBRARIES {
        args.extend(["-p".to_owned(), library.to_owned()]);
        features.extend(theirs.split(',').map(|f| format!("{library}/{f}")));
    }
    args.extend(["--features".to_owned(), features.join(",")]);
    args
}

/// `cargo xtask lint`'s options.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Leave clippy out: the build it would repeat ran it already, with clippy-driver as
    /// its `RUSTC_WORKSPACE_WRAPPER` and `-D warnings` in `CLIPPY_ARGS` (as `.ci/run` does).
    #[arg(long)]
    pub without_clippy: bool,
}

/// Runs the checks.
pub fn run(s: &mut Session, opts: &Options) -> Result {
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        let dir = s.target.join("lint");
        s.set_env("CARGO_TARGET_DIR", dir.display().to_string());
        s.target = dir;
    }
    if !opts.without_clippy {
        clippy(s)?;
    }
    // Rustdoc once: the libraries as docs.rs builds them, without the workspace's tools
    // (there the tools' unstable-internals feature is on, so links into private modules
    // would pass). One run for the three, each with its documented features (none turns
    // on another's unstable-internals). The workspace's other crates (functions, tools,
    // tests) are not documented: that needed a check-mode build of all the workspace's
    // dependencies (about 330 CPU-s), which CI no longer makes for clippy.
    s.step("rustdoc, warnings denied, on the libraries as docs.rs builds them (broken links, unclosed tags, missing docs)");
    s.cargo()
        .env("RUSTDOCFLAGS", "-D warnings")
        .args(["doc", "--no-deps", "--quiet"])
        .args(libraries_with_their_features())
        .run()?;

    // The libraries as users get them from crates.io: packaged (metadata, the files each
    // reads inside its own package, versions on the path dependencies), and compiled
    // alone with their default features. `--no-verify` skips the dry run's own build of
    // each package (about 7 CPU-minutes); the checks below compile the same code.
    s.step("cargo publish --dry-run (the three libraries and the operator CLI, which users cargo install)");
    let mut publish = s.cargo().args(["publish", "--dry-run", "--no-verify"]);
    for (library, _) in LIBRARIES {
        publish = publish.args(["-p", library]);
    }
    publish.args(["-p", "outbox-ops"]).run()?;

    s.step("each library compiles alone, with its default features (and the producer with lambda)");
    s.cargo()
        .args([
            "check",
            "--quiet",
            "-p",
            "dynamodb-outbox",
            "--features",
            "lambda",
        ])
        .run()?;
    for (library, _) in LIBRARIES {
        s.cargo().args(["check", "--quiet", "-p", library]).run()?;
    }
    // OpenTelemetry is an optional feature: without it no library depends on any of its
    // crates (the workspace's build turns it on, so only a per-package tree shows this).
    for (library, _) in LIBRARIES {
        let tree = s
            .cargo()
            .args([
                "tree", "--quiet", "-p", library, "-e", "normal", "--prefix", "none",
            ])
            .read()?;
        if tree
            .lines()
            .any(|l| l.starts_with("opentelemetry") || l.starts_with("tracing-opentelemetry"))
        {
            return Err(format!(
                "{library} depends on OpenTelemetry without its opentelemetry feature"
            ));
        }
    }

    no_unstable_internals(s)?;
    unused_dependencies(s)?;
    s.step("lint: all checks passed");
    Ok(())
}

/// Clippy on every target of the workspace, warnings denied.
fn clippy(s: &Session) -> Result {
    s.step("cargo clippy (every target, warnings denied)");
    s.cargo()
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            // `--all-targets` leaves out test targets that say `test = false` (the
            // emulator and deployed tests, which `cargo test` must not run): named here.
            "--test",
            "it",
            "--test",
            "deployed",
            "--",
            "-D",
            "warnings",
        ])
        .run()
}

/// cargo-shear: no dependency unused, or used only by tests but declared for the
/// library. Its prebuilt binary, pinned in `scripts/lint.txt`, from PyPI into
/// `.venv/lint` (compiled from source, cargo-machete cost CI about 100 CPU-s).
fn unused_dependencies(s: &Session) -> Result {
    s.step("cargo-shear (no unused or misplaced dependency)");
    let venv = s.path(".venv/lint");
    crate::venv::ensure(s, &venv, &s.path("scripts/lint.txt"), "cargo-shear")?;
    s.cmd(venv.join("bin/cargo-shear")).run()
}

/// A user's build of a library never turns on a crate's `unstable-internals` (what is
/// not covered by semver stays out of what users compile against): each library's
/// normal dependencies with the features docs.rs documents, as `cargo tree` resolves
/// them for that package alone (in the workspace, the tools turn it on).
fn no_unstable_internals(s: &Session) -> Result {
    s.step("no library turns on unstable-internals in a user's build");
    for (library, features) in LIBRARIES {
        let tree = s
            .cargo()
            .args(["tree", "--quiet", "-p", library, "--features", features])
            .args(["-e", "normal,features", "--prefix", "none"])
            .read()?;
        if let Some(line) = unstable_internals_in(&tree) {
            return Err(format!(
                "a user's build of {library} turns on unstable-internals ({line}): reach \
                 the core's engine through its hidden `__private` module instead"
            ));
        }
    }
    Ok(())
}

/// The first line of a `cargo tree -e features` output that turns on a feature named
/// `unstable-internals`.
fn unstable_internals_in(tree: &str) -> Option<&str> {
    tree.lines()
        .map(str::trim)
        .find(|l| l.contains("feature \"unstable-internals\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_joint_documentation_run_names_each_librarys_features() {
        assert_eq!(
            libraries_with_their_features().join(" "),
            "-p dynamodb-outbox-core -p dynamodb-outbox -p dynamodb-outbox-idempotency --features \
             dynamodb-outbox-core/opentelemetry,dynamodb-outbox/lambda,dynamodb-outbox/opentelemetry,\
             dynamodb-outbox-idempotency/opentelemetry"
        );
    }

    #[test]
    fn a_tree_that_turns_on_unstable_internals_is_named() {
        let tree = "dynamodb-outbox v0.1.0 (/r/functions/lib/dynamodb-outbox)\n\
                    dynamodb-outbox-core feature \"aws-sdk-errors\"\n\
                    dynamodb-outbox-core feature \"unstable-internals\"\n";
        assert_eq!(
            unstable_internals_in(tree),
            Some("dynamodb-outbox-core feature \"unstable-internals\"")
        );
        assert_eq!(
            unstable_internals_in(&tree.replace("unstable-internals", "default")),
            None
        );
    }
}
