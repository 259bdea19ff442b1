//! Python tools in virtual environments under `.venv/`, each from a pinned, complete
//! requirements file (the emulators, cargo-lambda and zig), reinstalled only when the
//! file changes.

use crate::Result;
use crate::process::Cmd;
use std::path::Path;

/// Installs `req` into the virtual environment `venv` unless the installed set is that
/// file's (a stamp holds the file's SHA-256).
pub fn ensure(venv: &Path, req: &Path, what: &str) -> Result {
    let stamp = venv.join(".requirements.sha");
    let want = Cmd::new("sha256sum").arg(req).read()?;
    let want = want
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have.trim() == want) {
        return Ok(());
    }
    eprintln!(
        "installing {what} into {} (pinned in {}, one time)",
        venv.display(),
        req.display()
    );
    let _ = std::fs::remove_dir_all(venv);
    Cmd::new("python3")
        .args(["-m", "venv"])
        .arg(venv)
        .run()
        .map_err(|e| format!("{e} (python3 with venv is needed: apt-get install python3-venv)"))?;
    // --no-deps: the file is a complete freeze; nothing unpinned is pulled in.
    Cmd::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-r",
        ])
        .arg(req)
        .run()?;
    std::fs::write(&stamp, format!("{want}\n"))
        .map_err(|e| format!("cannot write {}: {e}", stamp.display()))
}
