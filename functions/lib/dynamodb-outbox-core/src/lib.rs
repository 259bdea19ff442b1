//! # dynamodb-outbox-core
//!
//! The transactional outbox without AWS SDKs: what an outbox item is ([`schema`]),
//! what a destination receives ([`message`]) and where ([`route`]), the one failure
//! vocabulary ([`failure`]), every decision as a plain function ([`policy`]), the
//! narrow capabilities the logic needs ([`ports`]), time as an input ([`clock`]), and
//! the publish and sweep paths written against those ports ([`publish`], [`sweep`]).
//!
//! The AWS adapters live in `dynamodb-outbox` (lib `outbox`), which re-exports this
//! crate's API; depend on that one to use the outbox. Depend on this one to reason
//! about the outbox without I/O: a consumer that needs the message attribute names,
//! a test, a model checker.
#![warn(missing_docs)]

pub mod clock;
pub mod config;
pub mod failure;
#[cfg(any(test, feature = "test-fakes"))]
pub mod fakes;
pub mod large_payload;
pub mod message;
pub mod metrics;
pub mod policy;
pub mod ports;
pub mod producer;
pub mod publish;
pub mod route;
pub mod schema;
pub mod sweep;

pub use clock::{Clock, SharedClock, SystemClock};
pub use config::{ConfigError, PublisherConfig};
pub use failure::{Failure, FailureKind};
pub use producer::NewMessage;
pub use publish::Publisher;
pub use route::{Destination, Routes};
pub use sweep::Sweeper;
