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

use crate::process::Cmd;
use crate::{Result, package, session::Session};
use std::path::{Path, PathBuf};

/// The functions a release ships (the example consumer is not one).
pub const FUNCTIONS: [&str; 3] = ["outbox-publisher", "outbox-sweeper", "outbox-recovery"];

/// The architectures a release ships, as Lambda names them.
pub const ARCHITECTURES: [&str; 2] = ["arm64", "x86_64"];

/// The crates published to crates.io: the libraries and the operator CLI.
pub const CRATES: [&str; 4] = [
    "dynamodb-outbox-core",
    "dynamodb-outbox",
    "dynamodb-outbox-idempotency",
    "outbox-ops",
];

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
    s.step(&format!("commit CHANGELOG.md and tag {tag}"));
    std::fs::write(&changelog_path, released)
        .map_err(|e| format!("cannot write {}: {e}", changelog_path.display()))?;
    git(
        s,
        &[
            "commit",
            "--quiet",
            "-m",
            &format!("Release {tag}"),
            "--",
            "CHANGELOG.md",
        ],
    )?;
    git(
        s,
        &[
            "tag",
            "-a",
            tag,
            "-m",
            &format!("dynamodb-outbox {}", opts.version),
        ],
    )?;
    report.add(
        "commit and tag",
        format!("`Release {tag}`, annotated tag {tag}"),
    );
    Ok(())
}

/// `X.Y.Z`, each a number.
fn parse_version(version: &str) -> Result<(u64, u64, u64)> {
    let bad = || format!("`{version}` is not a version X.Y.Z (e.g. 0.1.0; the tag adds the v)");
    let mut parts = version
        .split('.')
        .map(|p| p.parse::<u64>().map_err(|_| bad()));
    let parsed = (
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
    );
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(parsed)
}

/// The published crates and the construct carry `version` (the crates' exact pins on
/// each other follow: cargo refuses a pin that does not match).
fn check_versions(s: &Session, version: &str) -> Result {
    let metadata = s
        .cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .read()?;
    let metadata: serde_json::Value =
        serde_json::from_str(&metadata).map_err(|e| format!("cannot read cargo metadata: {e}"))?;
    let mut wrong = Vec::new();
    for name in CRATES {
        let have = metadata["packages"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .and_then(|p| p["version"].as_str())
            .unwrap_or("none");
        if have != version {
            wrong.push(format!("{name} is {have}"));
        }
    }
    let package_json = s.path(CONSTRUCT).join("package.json");
    let construct: serde_json::Value = std::fs::read_to_string(&package_json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| format!("cannot read {}", package_json.display()))?;
    let have = construct["version"].as_str().unwrap_or("none");
    if have != version {
        wrong.push(format!("{CONSTRUCT}/package.json is {have}"));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(format!(
        "not every package is at {version}: {}. Set `version` in Cargo.toml's \
         [workspace.package], the `=` pins on our crates and {CONSTRUCT}/package.json, \
         commit, and run again",
        wrong.join(", ")
    ))
}

/// The newest release tag (`vX.Y.Z`, by version) reachable from HEAD, if any.
fn last_tag(s: &Session) -> Option<String> {
    let tags = git(
        s,
        &[
            "tag",
            "--list",
            "v[0-9]*.[0-9]*.[0-9]*",
            "--merged",
            "HEAD",
            "--sort=-v:refname",
        ],
    )
    .ok()?;
    tags.lines().next().map(str::to_owned)
}

/// CHANGELOG.md with its Unreleased section's entries moved under
/// `## [version] - date`, an empty Unreleased above it, and the links at the bottom
/// (Keep a Changelog's layout). Refused when Unreleased has nothing.
fn release_changelog(
    text: &str,
    version: &str,
    date: &str,
    previous: Option<&str>,
) -> Result<String> {
    const UNRELEASED: &str = "## [Unreleased]";
    let start = text
        .find(UNRELEASED)
        .ok_or_else(|| format!("CHANGELOG.md has no `{UNRELEASED}` heading"))?;
    let body_start = start + UNRELEASED.len();
    let rest = &text[body_start..];
    // The section ends at the next release heading, else at the link definitions.
    let end = rest
        .find("\n## [")
        .or_else(|| rest.find("\n[Unreleased]:"))
        .unwrap_or(rest.len());
    let entries = rest[..end].trim();
    if entries.is_empty() {
        return Err("CHANGELOG.md's Unreleased section is empty: say what changed first".into());
    }
    if text.contains(&format!("## [{version}]")) {
        return Err(format!("CHANGELOG.md has a section for {version} already"));
    }
    let repo = "https://github.com/dynamodb-outbox/dynamodb-outbox";
    let mut out = format!(
        "{}{UNRELEASED}\n\n## [{version}] - {date}\n\n{entries}\n{}",
        &text[..start],
        &rest[end..]
    );
    // The links: Unreleased compares from this tag; this version from the previous.
    let links_at = out.find("\n[Unreleased]:").unwrap_or(out.len());
    out.truncate(links_at);
    let this = match previous {
        Some(p) => format!("[{version}]: {repo}/compare/{p}...v{version}"),
        None => format!("[{version}]: {repo}/releases/tag/v{version}"),
    };
    let older: String = text
        .find("\n[Unreleased]:")
        .map(|i| &text[i + 1..])
        .unwrap_or("")
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    Ok(format!(
        "{}\n\n[Unreleased]: {repo}/compare/v{version}...HEAD\n{this}\n{older}",
        out.trim_end()
    ))
}

/// The section of `version` in a released changelog, shown by the run.
fn section<'a>(changelog: &'a str, version: &str) -> &'a str {
    let heading = format!("## [{version}]");
    let Some(start) = changelog.find(&heading) else {
        return "";
    };
    let rest = &changelog[start..];
    let body = &rest[heading.len()..];
    let end = body
        .find("\n## [")
        .or_else(|| body.find("\n[Unreleased]:"))
        .map_or(rest.len(), |i| heading.len() + i);
    rest[..end].trim_end()
}

/// `cargo semver-checks` of the libraries against the last tag; says plainly when
/// there is none (a first release has no baseline) or the tool is missing.
fn semver_checks(
    s: &Session,
    opts: &Options,
    previous: Option<&str>,
    report: &mut Report,
) -> Result {
    s.step("cargo semver-checks against the last tag");
    let Some(baseline) = previous else {
        eprintln!(
            "release: no baseline: no release tag (v*) exists yet, so this is the first \
             release and cargo semver-checks has nothing to compare against; skipped"
        );
        report.add(
            "semver-checks",
            "skipped: no baseline (no earlier release tag)",
        );
        return Ok(());
    };
    let install = "cargo install cargo-semver-checks --locked";
    if !s.cargo().args(["semver-checks", "--version"]).succeeds() {
        if opts.dry_run {
            eprintln!(
                "release: cargo-semver-checks is not installed ({install}); a real release refuses"
            );
            report.add(
                "semver-checks",
                format!("NOT RUN: not installed (`{install}`)"),
            );
            return Ok(());
        }
        return Err(format!(
            "cargo-semver-checks is not installed: `{install}` (several CPU-minutes), then run again"
        ));
    }
    let mut cmd = s
        .cargo()
        .args(["semver-checks", "check-release", "--baseline-rev", baseline]);
    for (library, _) in crate::lint::LIBRARIES {
        cmd = cmd.args(["-p", library]);
    }
    cmd.run()?;
    report.add("semver-checks", format!("passed against {baseline}"));
    Ok(())
}

/// `cargo publish --dry-run` of every crate users get from crates.io, in one run (the
/// path dependencies resolve among themselves, as on crates.io after the real publish).
fn publish_dry_run(s: &Session, opts: &Options, dirty: bool, report: &mut Report) -> Result {
    s.step("cargo publish --dry-run (every library and outbox-ops)");
    let mut cmd = s.cargo().args(["publish", "--dry-run"]);
    if opts.no_verify {
        cmd = cmd.arg("--no-verify");
    }
    if dirty {
        cmd = cmd.arg("--allow-dirty");
    }
    for name in CRATES {
        cmd = cmd.args(["-p", name]);
    }
    cmd.run()?;
    let how = if opts.no_verify {
        "packaged (--no-verify: not compiled)"
    } else {
        "packaged and compiled"
    };
    report.add(
        "cargo publish --dry-run",
        format!("{how}: {}", CRATES.join(", ")),
    );
    Ok(())
}

/// `npm publish --dry-run` of the CDK construct (its `prepack` builds it), after
/// `npm ci` when its dependencies are not installed.
fn npm_dry_run(s: &Session, report: &mut Report) -> Result {
    s.step("npm publish --dry-run (the CDK construct)");
    let dir = s.path(CONSTRUCT);
    if !dir.join("node_modules").is_dir() {
        Cmd::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .dir(&dir)
            .run()?;
    }
    Cmd::new("npm")
        .args(["publish", "--dry-run"])
        .dir(&dir)
        .run()?;
    report.add("npm publish --dry-run", format!("passed ({CONSTRUCT})"));
    Ok(())
}

/// Where a release's artifacts land: `<target>/dist/vX.Y.Z/`.
fn dist_dir(s: &Session, tag: &str) -> PathBuf {
    s.target.join("dist").join(tag)
}

/// The functions, release builds for each architecture (cargo-lambda and zig, as
/// `cargo xtask package` builds them), as `<function>-<arch>.zip` beside a `SHA256SUMS`.
fn build_zips(s: &Session, opts: &Options, tag: &str, report: &mut Report) -> Result {
    let dist = dist_dir(s, tag);
    let _ = std::fs::remove_dir_all(&dist);
    std::fs::create_dir_all(&dist).map_err(|e| format!("cannot create {}: {e}", dist.display()))?;
    let functions = opts.functions();
    let mut zips = Vec::new();
    for arch in opts.architectures() {
        s.step(&format!("build {} for {arch}", functions.join(", ")));
        let out = s.target.join("dist").join(format!("build-{arch}"));
        let build = package::Options {
            debug: false,
            arm64: arch == "arm64",
            x86_64: arch == "x86_64",
            features: None,
            out: Some(out.clone()),
            only: functions.iter().map(|f| (*f).to_owned()).collect(),
            share_with_tests: false,
        };
        package::package(s, &build, &[])?;
        for function in &functions {
            let name = artifact_name(function, arch);
            copy(&out.join(function).join("bootstrap.zip"), &dist.join(&name))?;
            zips.push(name);
        }
    }
    let sums = Cmd::new("sha256sum").args(&zips).dir(&dist).read()?;
    std::fs::write(dist.join("SHA256SUMS"), &sums)
        .map_err(|e| format!("cannot write SHA256SUMS: {e}"))?;
    eprint!("{sums}");
    let left_out = FUNCTIONS.len() * ARCHITECTURES.len() - zips.len();
    let note = if left_out == 0 {
        String::new()
    } else {
        format!(
            " (smoke run: {left_out} of {} left out)",
            FUNCTIONS.len() * ARCHITECTURES.len()
        )
    };
    report.add(
        "function zips",
        format!(
            "{} and SHA256SUMS in {}{note}",
            zips.join(", "),
            dist.display()
        ),
    );
    Ok(())
}

/// A release zip's name: `outbox-publisher-arm64.zip`.
fn artifact_name(function: &str, arch: &str) -> String {
    format!("{function}-{arch}.zip")
}

fn copy(from: &Path, to: &Path) -> Result {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// `git` in the repository; its output.
fn git(s: &Session, args: &[&str]) -> Result<String> {
    s.cmd("git").args(args).read()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGELOG: &str = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n\n- The outbox.\n\n[Unreleased]: https://github.com/dynamodb-outbox/dynamodb-outbox/commits/main\n";

    #[test]
    fn versions_are_three_numbers() {
        assert_eq!(parse_version("0.1.0"), Ok((0, 1, 0)));
        for bad in ["v0.1.0", "0.1", "0.1.0.1", "0.1.x", ""] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_first_release_moves_unreleased_under_the_version_and_links_its_tag() {
        let out = release_changelog(CHANGELOG, "0.1.0", "2026-12-06", None).unwrap();
        assert!(
            out.starts_with("# Changelog\n\nIntro.\n\n## [Unreleased]\n\n## [0.1.0] - 2026-12-06\n\n### Added\n\n- The outbox.\n\n[Unreleased]: "),
            "{out}"
        );
        assert!(out.contains("[Unreleased]: https://github.com/dynamodb-outbox/dynamodb-outbox/compare/v0.1.0...HEAD\n"), "{out}");
        assert!(
            out.ends_with(
                "[0.1.0]: https://github.com/dynamodb-outbox/dynamodb-outbox/releases/tag/v0.1.0\n"
            ),
            "{out}"
        );
        assert_eq!(
            section(&out, "0.1.0"),
            "## [0.1.0] - 2026-12-06\n\n### Added\n\n- The outbox."
        );
    }

    #[test]
    fn a_later_release_compares_with_the_previous_tag_and_keeps_older_sections() {
        let first = release_changelog(CHANGELOG, "0.1.0", "2026-12-06", None).unwrap();
        let next = first.replace(
            "## [Unreleased]\n",
            "## [Unreleased]\n\n### Fixed\n\n- A bug.\n",
        );
        let out = release_changelog(&next, "0.1.1", "2026-12-24", Some("v0.1.0")).unwrap();
        let sections: Vec<&str> = out.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            sections,
            [
                "## [Unreleased]",
                "## [0.1.1] - 2026-12-24",
                "## [0.1.0] - 2026-12-06"
            ]
        );
        assert!(out.contains("[0.1.1]: https://github.com/dynamodb-outbox/dynamodb-outbox/compare/v0.1.0...v0.1.1\n"), "{out}");
        assert!(out.ends_with("releases/tag/v0.1.0\n"), "{out}");
        assert_eq!(
            section(&out, "0.1.1"),
            "## [0.1.1] - 2026-12-24\n\n### Fixed\n\n- A bug."
        );
        assert_eq!(out.matches("[Unreleased]: ").count(), 1, "{out}");
    }

    #[test]
    fn an_empty_unreleased_section_or_a_version_released_before_is_refused() {
        let empty = CHANGELOG.replace("### Added\n\n- The outbox.\n", "");
        assert!(release_changelog(&empty, "0.1.0", "d", None).is_err());
        let first = release_changelog(CHANGELOG, "0.1.0", "d", None).unwrap();
        let again = first.replace("## [Unreleased]\n", "## [Unreleased]\n\n- More.\n");
        assert!(release_changelog(&again, "0.1.0", "d", Some("v0.1.0")).is_err());
    }

    #[test]
    fn a_smoke_run_narrows_functions_and_architectures_in_their_order() {
        let only = vec!["outbox-recovery".to_owned()];
        assert_eq!(chosen(&FUNCTIONS, &only), ["outbox-recovery"]);
        assert_eq!(chosen(&ARCHITECTURES, &[]), ["arm64", "x86_64"]);
        assert_eq!(
            artifact_name("outbox-recovery", "arm64"),
            "outbox-recovery-arm64.zip"
        );
    }
}
