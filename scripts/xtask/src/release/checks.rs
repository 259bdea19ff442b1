//! The release's checks: the version everywhere, what changed in the API, and that
//! every crate and the construct would publish.

use super::{CONSTRUCT, CRATES, Options, Report};
use crate::process::Cmd;
use crate::{Result, session::Session};

/// `X.Y.Z`, each a number.
pub(super) fn parse_version(version: &str) -> Result<(u64, u64, u64)> {
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
pub(super) fn check_versions(s: &Session, version: &str) -> Result {
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

/// `cargo semver-checks` of the libraries against the last tag; says plainly when
/// there is none (a first release has no baseline) or the tool is missing.
pub(super) fn semver_checks(
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
pub(super) fn publish_dry_run(
    s: &Session,
    opts: &Options,
    dirty: bool,
    report: &mut Report,
) -> Result {
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
pub(super) fn npm_dry_run(s: &Session, report: &mut Report) -> Result {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_three_numbers() {
        assert_eq!(parse_version("0.1.0"), Ok((0, 1, 0)));
        for bad in ["v0.1.0", "0.1", "0.1.0.1", "0.1.x", ""] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
    }
}
