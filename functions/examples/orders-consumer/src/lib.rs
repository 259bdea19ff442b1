//! The reference consumer: the idempotent order worker.
//!
//! Each SQS message carries one order job, `{"id": string, "quantity": 1..10}` — as its
//! body, or inside an SNS notification or an EventBridge event (the outbox's routes to
//! an SNS topic or an event bus), which the batch processor opens. The worker stores
//! `{id, quantity, total_cents = quantity × 250 + 100}` in the orders table with the
//! business-key guard: a copy of an order already stored is a duplicate
//! (acknowledged), an order id stored with other details is a conflict (not
//! acknowledged: it ends on the dead-letter queue), a malformed job fails without
//! reaching DynamoDB. One structured `RESULT` line is logged per message; bodies never
//! are.
#![warn(missing_docs)]

pub mod config;
pub mod handler;
pub mod order;

pub use config::Config;
pub use handler::{Deps, OrderResult, handle, handle_until, process_message};
pub use order::{Order, OrderJob};
