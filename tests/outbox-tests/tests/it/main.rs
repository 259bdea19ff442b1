//! The integration tests, one binary (one link of the big test binary instead of one
//! per file), a module per component and a file per behaviour.
//!
//! Against the emulator `tests/run` starts (`OUTBOX_ENDPOINT`): `consumer`,
//! `destinations`, `faults`, `fence_reads`, `large_payloads`, `marks`, `ops_keys`, `ops_reads`,
//! `publisher`, `sweeper`, `timeouts`, `trace` run on both MiniStack and moto; `deployed` and `stacks` need Lambda
//! functions to run, so MiniStack only (tests/run selects them by module path);
//! `global` needs MiniStack's global tables and returns on moto.
//! `fixtures` needs no emulator.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod consumer;
mod deployed;
mod destinations;
mod faults;
mod fence_reads;
mod fixtures;
mod global;
mod large_payloads;
mod marks;
mod ops_keys;
mod ops_reads;
mod publisher;
mod stacks;
mod sweeper;
mod timeouts;
mod trace;
