//! The release's artifacts: the functions built for each architecture as
//! `<function>-<arch>.zip`, with their `SHA256SUMS`.

use super::{ARCHITECTURES, FUNCTIONS, Options, Report};
use crate::process::Cmd;
use crate::{Result, package, session::Session};
use std::path::{Path, PathBuf};

/// Where a release's artifacts land: `<target>/dist/vX.Y.Z/`.
pub(super) fn dist_dir(s: &Session, tag: &str) -> PathBuf {
    s.target.join("dist").join(tag)
}

/// The functions, release builds for each architecture (cargo-lambda and zig, as
/// `cargo xtask package` builds them), as `<function>-<arch>.zip` beside a `SHA256SUMS`.
pub(super) fn build_zips(s: &Session, opts: &Options, tag: &str, report: &mut Report) -> Result {
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
pub(super) fn artifact_name(function: &str, arch: &str) -> String {
    format!("{function}-{arch}.zip")
}

fn copy(from: &Path, to: &Path) -> Result {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}
