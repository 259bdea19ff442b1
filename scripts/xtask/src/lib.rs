//! The project's task runner, `cargo xtask` (an alias in `.cargo/config.toml`): the test
//! tiers, the local AWS's lifecycle, packaging, releases, deploys, the demo and the benchmarks,
//! as typed code instead of shell. `scripts/demo` and `tests/run` call it.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod deploy;
pub mod emulator;
pub mod lint;
pub mod package;
pub mod process;
pub mod progress;
pub mod release;
pub mod session;
pub mod shop;
pub mod test;
pub mod tiers;
pub mod venv;

/// What every task returns: its error says what went wrong and what to do.
pub type Result<T = ()> = std::result::Result<T, String>;
