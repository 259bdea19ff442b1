//! Local development runner: what Lambda's event source mappings and EventBridge
//! schedules do, on the emulator (or a real account). A development tool;
//! production uses Lambda.
#![warn(missing_docs)]

pub mod aws;
pub mod counter;
pub mod demo;
pub mod filter;
pub mod provision;
pub mod run;
pub mod runner;
pub mod sqs_runner;
pub mod stream;
