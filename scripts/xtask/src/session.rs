//! Where a run works: the repository, the cargo target directory, and the environment
//! every command it starts gets (the emulator's endpoint, the CA bundle to trust).

use crate::process::Cmd;
use crate::progress::Clock;
use std::path::{Path, PathBuf};

/// The repository and what every command of this run shares.
#[derive(Debug)]
pub struct Session {
    /// The repository's root.
    pub root: PathBuf,
    /// Cargo's target directory (`CARGO_TARGET_DIR`, else `target/`).
    pub target: PathBuf,
    /// Variables set for every command started through [`Session::cmd`].
    pub env: Vec<(String, String)>,
    /// The start of the run, for the `==>` lines.
    pub clock: Clock,
}

impl Session {
    /// The session of the repository this binary was built from.
    pub fn new() -> Self {
        let root = repository_root();
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        Self {
            root,
            target,
            env: Vec::new(),
            clock: Clock::start(),
        }
    }

    /// `program`, run in the repository with this session's environment.
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Cmd {
        Cmd::new(program).dir(&self.root).envs(&self.env)
    }

    /// `cargo` (the one that runs us, when cargo runs us).
    pub fn cargo(&self) -> Cmd {
        self.cmd(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
    }

    /// Sets (or replaces) a variable for every command started from now on.
    pub fn set_env(&mut self, key: &str, value: impl Into<String>) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.into()));
    }

    /// Prints a `==>` step line.
    pub fn step(&self, what: &str) {
        self.clock.step(what);
    }

    /// A path under the repository.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

/// The repository around the current directory (`cargo xtask` runs anywhere in it),
/// else the one this binary was built from.
fn repository_root() -> PathBuf {
    let here = std::env::current_dir().ok();
    let found = here.as_deref().and_then(|dir| {
        dir.ancestors()
            .find(|d| d.join("scripts/xtask/Cargo.toml").is_file())
    });
    let root = found.map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        Path::to_path_buf,
    );
    root.canonicalize().unwrap_or(root)
}

/// A fresh temporary directory `<TMPDIR>/outbox-<what>.<unique>`: each run's emulator
/// state, so that concurrent runs never stop each other's emulator.
pub fn fresh_state_dir(what: &str) -> crate::Result<PathBuf> {
    let base = std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..1000 {
        let dir = base.join(format!("outbox-{what}.{}{nanos:x}{n}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    Err(format!(
        "cannot create a state directory under {}",
        base.display()
    ))
}
