//! The Rust snippets of the README and of the docs, compiled and run as doc tests
//! (`cargo test --doc -p outbox-docs`, which `tests/run` runs on its own), so that what
//! a newcomer copies compiles against the published crates' public API as it is.
#![warn(missing_docs)]

/// `README.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct Readme;

/// `docs/producing.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/producing.md")]
pub struct Producing;

/// `docs/adopting.md`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/adopting.md")]
pub struct Adopting;
