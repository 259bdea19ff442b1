//! Counts the AWS requests a client sends (every attempt, retries included), and the
//! attempts that got no answer, by operation, through SDK interceptors. Used by the
//! demo and the benchmarks to report requests per message.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Counts by `service:operation`, shared by every clone.
#[derive(Debug, Clone, Default)]
struct Tally(Arc<Mutex<BTreeMap<String, u64>>>);

impl Tally {
    /// One more for the operation `cfg` names.
    fn count(&self, cfg: &ConfigBag) {
        let name = cfg
            .load::<Metadata>()
            .map(|m| format!("{}:{}", m.service(), m.name()))
            .unwrap_or_else(|| "unknown:unknown".to_owned());
        if let Ok(mut c) = self.0.lock() {
            *c.entry(name).or_default() += 1;
        }
    }

    fn by_operation(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn total(&self) -> u64 {
        self.by_operation().values().sum()
    }
}

/// Shared request counts; clone it into every client's configuration.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Tally,
}

impl RequestCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests so far, by `service:operation`.
    pub fn by_operation(&self) -> BTreeMap<String, u64> {
        self.counts.by_operation()
    }

    /// All requests so far.
    pub fn total(&self) -> u64 {
        self.counts.total()
    }

    /// Requests whose operation name matches one of `operations`.
    pub fn of(&self, operations: &[&str]) -> u64 {
        self.by_operation()
            .iter()
            .filter(|(k, _)| operations.iter().any(|o| k.ends_with(&format!(":{o}"))))
            .map(|(_, v)| v)
            .sum()
    }

    /// Back to zero.
    pub fn reset(&self) {
        if let Ok(mut c) = self.counts.0.lock() {
            c.clear();
        }
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.counts.count(cfg);
        Ok(())
    }
}

/// Attempts that got no answer (a transport error or a timeout, no response), by
/// `service:operation`: the SDK sends such a request again, though the first may have
/// taken effect. Clone it into a client's configuration beside a [`RequestCounter`].
#[derive(Debug, Clone, Default)]
pub struct LostAnswers {
    counts: Tally,
}

impl LostAnswers {
    /// Attempts without an answer so far, by `service:operation`.
    pub fn by_operation(&self) -> BTreeMap<String, u64> {
        self.counts.by_operation()
    }

    /// All attempts without an answer so far.
    pub fn total(&self) -> u64 {
        self.counts.total()
    }
}

impl Intercept for LostAnswers {
    fn name(&self) -> &'static str {
        "LostAnswers"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let no_answer = context.response().is_none()
            && matches!(context.output_or_error(), Some(Err(e)) if e.is_connector_error() || e.is_timeout_error());
        if no_answer {
            self.counts.count(cfg);
        }
        Ok(())
    }
}
