//! Python tools in virtual environments under `.venv/`, each from a pinned, complete
//! requirements file (the emulators, cargo-lambda and zig, cargo-shear), reinstalled
//! only when the file changes.
//!
//! They are made with uv (pinned in `scripts/uv.txt`, itself installed once with pip
//! into `.venv/uv`): pip's installs of the emulators, cargo-lambda and the
//! infrastructure checks' tools took about 100 CPU-s of each CI run on a fresh clone
//! (moto's 32, checkov's and cfn-lint's 48), uv's about 10.

use crate::Result;
use crate::process::Cmd;
use crate::session::Session;
use std::path::{Path, PathBuf};

/// Installs `req` into the virtual environment `venv` unless the installed set is that
/// file's (a stamp holds the file's SHA-256).
pub fn ensure(s: &Session, venv: &Path, req: &Path, what: &str) -> Result {
    // Installs run from more than one process at once (the suite's, the lint's, the
    // release packaging's): one at a time, so none sees another's half-made uv.
    let _lock = InstallLock::take(&s.path(".venv"))?;
    let sum = sha256(req)?;
    if stamped(venv, &sum) {
        return Ok(());
    }
    let uv = bootstrap_uv(s)?;
    eprintln!(
        "installing {what} into {} (pinned in {}, one time)",
        venv.display(),
        req.display()
    );
    let _ = std::fs::remove_dir_all(venv);
    Cmd::new(&uv)
        .args(["venv", "--quiet", "--python", "python3"])
        .arg(venv)
        .run()?;
    // --no-deps: the file is a complete freeze; nothing unpinned is pulled in.
    Cmd::new(&uv)
        .args(["pip", "install", "--quiet", "--no-deps", "--python"])
        .arg(venv.join("bin/python"))
        .arg("-r")
        .arg(req)
        .run()?;
    stamp(venv, &sum)
}

/// The path of uv, installed with pip into `.venv/uv` the first time (the one install
/// pip still does: a single prebuilt wheel, about 2 CPU-s).
pub fn uv(s: &Session) -> Result<PathBuf> {
    let _lock = InstallLock::take(&s.path(".venv"))?;
    bootstrap_uv(s)
}

fn bootstrap_uv(s: &Session) -> Result<PathBuf> {
    let venv = s.path(".venv/uv");
    let req = s.path("scripts/uv.txt");
    let uv = venv.join("bin/uv");
    let sum = sha256(&req)?;
    if stamped(&venv, &sum) {
        return Ok(uv);
    }
    eprintln!(
        "installing uv into {} (pinned in {}, one time)",
        venv.display(),
        req.display()
    );
    let _ = std::fs::remove_dir_all(&venv);
    Cmd::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .run()
        .map_err(|e| format!("{e} (python3 with venv is needed: apt-get install python3-venv)"))?;
    Cmd::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-r",
        ])
        .arg(&req)
        .run()?;
    stamp(&venv, &sum)?;
    Ok(uv)
}

fn sha256(req: &Path) -> Result<String> {
    let sum = Cmd::new("sha256sum").arg(req).read()?;
    Ok(sum.split_whitespace().next().unwrap_or_default().to_owned())
}

/// Whether `venv` was installed from the requirements whose SHA-256 is `sum`. The sum
/// is taken once, before the install, and written by [`stamp`] after it: a file changed
/// during the install is then installed again on the next run.
fn stamped(venv: &Path, sum: &str) -> bool {
    std::fs::read_to_string(venv.join(STAMP)).is_ok_and(|have| have.trim() == sum)
}

fn stamp(venv: &Path, sum: &str) -> Result {
    let path = venv.join(STAMP);
    std::fs::write(&path, format!("{sum}\n"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The file in a virtual environment holding its requirements' SHA-256.
const STAMP: &str = ".requirements.sha";

/// An exclusive lock on `.venv/.install.lock`, released when dropped.
struct InstallLock {
    _held: std::fs::File,
}

impl InstallLock {
    fn take(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(".install.lock");
        let file = std::fs::File::create(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        file.lock()
            .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
        Ok(Self { _held: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_matches_the_sum_it_was_written_with_and_no_other() {
        let venv = std::env::temp_dir().join(format!("xtask-venv-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&venv).unwrap();
        let before = stamped(&venv, "abc");
        stamp(&venv, "abc").unwrap();
        let (same, other) = (stamped(&venv, "abc"), stamped(&venv, "abd"));
        let req = venv.join("req.txt");
        std::fs::write(&req, "uv==1\n").unwrap();
        let sum = sha256(&req);
        std::fs::remove_dir_all(&venv).unwrap();
        assert!(!before, "no stamp yet");
        assert!(same && !other);
        assert!(stamp(&venv, "abc").is_err(), "no directory to write it in");
        // sha256sum's sum of the file, not its name or the whole output line
        assert_eq!(
            sum.unwrap(),
            "49347b4cbeed95595021da09abf2a59ecf0295a0ff550cfc9ef4101c4b0afb5a"
        );
    }
}
