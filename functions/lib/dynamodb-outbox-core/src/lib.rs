//! # dynamodb-outbox-core
//!
//! The transactional outbox for Amazon DynamoDB without AWS SDKs. Most applications
//! depend on [`dynamodb-outbox`](https://docs.rs/dynamodb-outbox) (the producer, the
//! Lambda functions and the AWS adapters), which builds on this crate; depend on this
//! one alone to name the outbox's pieces without I/O:
//!
//! - [`NewMessage`]: a message an application hands to the producer;
//! - [`Routes`] and [`Destination`]: which topic goes where (SQS, SNS, EventBridge);
//! - [`PublisherConfig`] and [`ConfigError`]: configuration read once, with errors
//!   that name the variable and what to set;
//! - [`Failure`] and [`FailureKind`]: the one failure vocabulary — what a retry may
//!   fix and what it cannot ([`failure::retryable`]);
//! - [`KeyNames`]: the table's partition key, sort key and TTL attribute names;
//! - [`home`]: which region publishes a message on a global table ([`HomeRegions`]);
//! - [`Clock`]: time as an input ([`clock::now_ms`] is the one system-time reading);
//! - [`message`]: the message attributes a consumer reads (`outbox-message-id`, …);
//! - [`large_payload`]: the pointer a payload stored in S3 travels as;
//! - [`trace`]: the trace context a message carries from its commit to its consumer.
//!
//! ```
//! use dynamodb_outbox_core::{Destination, NewMessage, Routes};
//!
//! let message = NewMessage::new("ORDER#42", "orders", r#"{"id":42}"#).event_type("OrderPlaced");
//! assert!(message.invalid().is_none());
//!
//! let routes = Routes::parse(
//!     r#"{"orders":"https://sqs.eu-west-1.amazonaws.com/123456789012/orders"}"#,
//!     None,
//! )?;
//! assert!(matches!(routes.resolve("orders"), Some(Destination::Sqs { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The engine — the item schema, every decision as a plain function, the narrow ports
//! the logic needs, and the publish and sweep paths written against them — is not
//! public API: `dynamodb-outbox` reaches it through a hidden module and pins this
//! crate's exact version; this project's tools and tests see it documented with the
//! `unstable-internals` feature. Neither is covered by semver.
#![warn(missing_docs)]

// The stable surface: what producers, consumers and Lambda authors name.
pub mod clock;
pub mod config;
pub mod failure;
pub mod home;
// Private: its one public item, `KeyNames`, is at the root.
mod keys;
pub mod large_payload;
pub mod message;
pub mod producer;
pub mod route;
pub mod trace;

// The engine: decisions, ports, the publish and sweep paths over them. Public at these
// paths only with the `unstable-internals` feature, for the model checker and the tests;
// `dynamodb-outbox` (whose adapters implement the ports) reaches them through
// `__private` instead, so that its users' builds never turn the feature on. Not
// covered by semver either way.
#[cfg(any(test, feature = "test-fakes"))]
pub mod fakes;
macro_rules! internal {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[cfg(feature = "unstable-internals")]
        pub mod $name;
        #[cfg(not(feature = "unstable-internals"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}
// Value types at the bottom, public only through `ports` and `publish` (so, as those,
// partly unused without `unstable-internals`).
#[allow(dead_code, unused_imports)]
mod answers;
#[allow(dead_code, unused_imports)]
mod outcome;
#[allow(dead_code, unused_imports)]
mod work;
internal! {
    metrics;
    policy;
    ports;
    publish;
    schema;
    sweep;
}

pub use clock::{Clock, ManualClock, SharedClock, SystemClock};
pub use config::{ConfigError, PublisherConfig};
pub use failure::{Failure, FailureKind};
pub use home::HomeRegions;
pub use keys::KeyNames;
pub use producer::NewMessage;
#[cfg(feature = "unstable-internals")]
pub use publish::Publisher;
pub use route::{Destination, Routes};

/// Not public API: the engine for `dynamodb-outbox`, which implements its ports with
/// the AWS SDKs and depends on this crate's exact version (`=x.y.z`), so that the two
/// are always released and resolved together. Hidden from the documentation and from
/// `cargo semver-checks`; nothing here is covered by semver. Depend on
/// `dynamodb-outbox` to run the outbox.
///
/// Why a hidden module and not a feature: a feature that `dynamodb-outbox` turned on
/// would be on in every user's build (features unify), making the engine public API in
/// all but name; a path that says `__private` is the usual Rust spelling of "for a
/// sibling crate only" (serde's `__private`, for its derive macros).
#[doc(hidden)]
pub mod __private {
    /// The engine's modules, each re-exported whole.
    macro_rules! reexport {
        ($($name:ident),*) => {$(
            #[allow(missing_docs)]
            pub mod $name {
                pub use crate::$name::*;
            }
        )*};
    }
    reexport!(metrics, policy, ports, publish, schema, sweep);
    pub use crate::publish::Publisher;
    pub use crate::sweep::Sweeper;
}
pub use schema::{DEFAULT_SWEEP_SHARDS, MAX_SWEEP_SHARDS, SweepShards};
#[cfg(feature = "unstable-internals")]
pub use sweep::Sweeper;
