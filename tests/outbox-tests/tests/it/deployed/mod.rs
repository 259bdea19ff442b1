//! The compiled functions behind MiniStack's real event source mappings, on a private
//! pipeline per test (see `outbox_tests::pipeline`), with crashes injected into the
//! processes themselves.

mod guarantees;
mod logs;
mod show;
mod wiring;
