//! `cargo xtask release X.Y.Z [--dry-run]`: a release users can pin. Checks, in order:
//! the versions and the tag, a clean tree, `cargo semver-checks` against the last tag,
//! `cargo publish --dry-run` of every library, `npm publish --dry-run` of the CDK
//! construct; builds the functions for arm64 and x86_64 as Lambda zips with a
//! `SHA256SUMS` into `<target>/dist/vX.Y.Z/`; then (not with `--dry-run`) moves
//! CHANGELOG.md's Unreleased section under the version, commits it and creates the
//! annotated tag `vX.Y.Z`. Nothing is pushed or published: it prints what to run.
//!
//! Every check runs before the changelog is written, so a failed release leaves
//! neither a commit nor a tag.

mod artifacts;
mod changelog;
mod checks;

use crate::lint::LIBRARIES;
use crate::process::Cmd;
use crate::{Result, session::Session};
use artifacts::{build_zips, dist_dir};
use changelog::{commit_and_tag, last_tag, release_changelog, section};
use checks::{check_versions, npm_dry_run, parse_version, publish_dry_run, semver_checks};

/// The functions a release ships (the example consumer is not one).
pub const FUNCTIONS: [&str; 3] = ["outbox-publisher", "outbox-sweeper", "outbox-recovery"];

/// The architectures a release ships, as Lambda names them.
pub const ARCHITECTURES: [&str; 2] = ["arm64", "x86_64"];

/// The crates published to crates.io: the libraries (`lint`'s list) and the operator
/// CLI, which users cargo install.
pub const CRATES: [&str; LIBRARIES.len() + 1] = {
    let mut crates = ["outbox-ops"; LIBRARIES.len() + 1];
    let mut i = 0;
    while i < LIBRARIES.len() {
        crates[i] = LIBRARIES[i].0;
        i += 1;
    }
    crates
};

/// The CDK construct's package, published to npm.
const CONSTRUCT: &str = "infra/cdk";

/// What to release.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The version, X.Y.Z (the tag is vX.Y.Z); the crates and the construct must carry it.
    pub version: String,
    /// Every check and build, but no changelog commit and no tag (a dirty tree is
    /// allowed, with a warning).
    #[arg(long)]
    pub dry_run: bool,
    /// A smoke run: only these functions (repeatable; default all three). Dry runs only.
    #[arg(long = "only", value_name = "FUNCTION", requires = "dry_run",
          value_parser = clap::builder::PossibleValuesParser::new(FUNCTIONS))]
    pub only: Vec<String>,
    /// A smoke run: only these architectures (repeatable; default both). Dry runs only.
    #[arg(long = "arch", value_name = "ARCH", requires = "dry_run",
          value_parser = clap::builder::PossibleValuesParser::new(ARCHITECTURES))]
    pub arch: Vec<String>,
    /// A smoke run: `cargo publish --dry-run --no-verify` (packaged, not compiled).
    /// Dry runs only.
    #[arg(long, requires = "dry_run")]
    pub no_verify: bool,
}

impl Options {
    fn functions(&self) -> Vec<&str> {
        chosen(&FUNCTIONS, &self.only)
    }

    fn architectures(&self) -> Vec<&str> {
        chosen(&ARCHITECTURES, &self.arch)
    }
}

/// `all`, narrowed to `only` when it names any, in `all`'s order.
fn chosen<'a>(all: &[&'a str], only: &[String]) -> Vec<&'a str> {
    all.iter()
        .copied()
        .filter(|a| only.is_empty() || only.iter().any(|o| o == a))
        .collect()
}

/// What each step did, for the summary at the end.
#[derive(Debug, Default)]
struct Report(Vec<(String, String)>);

impl Report {
    fn add(&mut self, step: &str, outcome: impl Into<String>) {
        self.0.push((step.to_owned(), outcome.into()));
    }

    fn print(&self) {
        eprintln!("\n=== release summary ===");
        for (step, outcome) in &self.0 {
            eprintln!("{step:<24} {outcome}");
        }
    }
}

/// Runs the release (or its dry run).
pub fn run(s: &Session, opts: &Options) -> Result {
    let version = &opts.version;
    parse_version(version)?;
    let tag = format!("v{version}");
    let mut report = Report::default();
    let result = steps(s, opts, &tag, &mut report);
    report.print();
    result?;
    if opts.dry_run {
        eprintln!("release: dry run of {tag} passed; nothing committed, no tag created");
    } else {
        eprintln!(
            "release: {tag} tagged. Next: `git push origin HEAD {tag}`; `cargo publish -p {}`; \
             `npm publish` in {CONSTRUCT}; attach {}/* to the GitHub release {tag}",
            CRATES.join(" -p "),
            dist_dir(s, &tag).display()
        );
    }
    Ok(())
}

fn steps(s: &Session, opts: &Options, tag: &str, report: &mut Report) -> Result {
    s.step("versions and tag");
    check_versions(s, &opts.version)?;
    if git(
        s,
        &["rev-parse", "-q", "--verify", &format!("refs/tags/{tag}")],
    )
    .is_ok()
    {
        return Err(format!("the tag {tag} exists already"));
    }
    report.add(
        "versions",
        format!("{} everywhere; {tag} is new", opts.version),
    );

    s.step("clean tree");
    let dirty = git(s, &["status", "--porcelain"])?;
    match (dirty.trim().is_empty(), opts.dry_run) {
        (true, _) => report.add("tree", "clean"),
        (false, true) => {
            eprintln!("release: the tree is not clean (a real release refuses):\n{dirty}");
            report.add("tree", "NOT clean (allowed in a dry run only)");
        }
        (false, false) => {
            return Err(format!(
                "the tree is not clean; commit or stash first:\n{dirty}"
            ));
        }
    }

    s.step("CHANGELOG.md");
    let today = Cmd::new("date").args(["-u", "+%F"]).read()?;
    let previous = last_tag(s);
    let changelog_path = s.path("CHANGELOG.md");
    let changelog = std::fs::read_to_string(&changelog_path)
        .map_err(|e| format!("cannot read {}: {e}", changelog_path.display()))?;
    let released = release_changelog(&changelog, &opts.version, today.trim(), previous.as_deref())?;
    report.add(
        "changelog",
        format!("Unreleased -> [{}] - {}", opts.version, today.trim()),
    );
    eprintln!("{}", section(&released, &opts.version));

    semver_checks(s, opts, previous.as_deref(), report)?;
    publish_dry_run(s, opts, !dirty.trim().is_empty(), report)?;
    npm_dry_run(s, report)?;
    build_zips(s, opts, tag, report)?;

    if opts.dry_run {
        report.add("commit and tag", "not in a dry run");
        return Ok(());
    }
    commit_and_tag(s, &changelog_path, &released, tag, &opts.version)?;
    report.add(
        "commit and tag",
        format!("`Release {tag}`, annotated tag {tag}"),
    );
    Ok(())
}

/// `git` in the repository; its output.
fn git(s: &Session, args: &[&str]) -> Result<String> {
    s.cmd("git").args(args).read()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_crates_are_the_libraries_then_the_operator_cli() {
        assert_eq!(
            CRATES[..LIBRARIES.len()],
            LIBRARIES.map(|(library, _)| library)
        );
        assert_eq!(CRATES.last(), Some(&"outbox-ops"));
    }

    #[test]
    fn a_smoke_run_narrows_functions_and_architectures_in_their_order() {
        let only = vec!["outbox-recovery".to_owned()];
        assert_eq!(chosen(&FUNCTIONS, &only), ["outbox-recovery"]);
        assert_eq!(chosen(&ARCHITECTURES, &[]), ["arm64", "x86_64"]);
        assert_eq!(
            artifacts::artifact_name("outbox-recovery", "arm64"),
            "outbox-recovery-arm64.zip"
        );
    }
}
