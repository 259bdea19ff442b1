//! Counts the AWS requests a client sends (every attempt, retries included), by
//! operation, through an SDK interceptor. Used by the demo and the benchmarks to
//! report requests per message.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Shared request counts; clone it into every client's configuration.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl RequestCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests so far, by `service:operation`.
    pub fn by_operation(&self) -> BTreeMap<String, u64> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// All requests so far.
    pub fn total(&self) -> u64 {
        self.by_operation().values().sum()
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
        if let Ok(mut c) = self.counts.lock() {
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
        let name = cfg
            .load::<Metadata>()
            .map(|m| format!("{}:{}", m.service(), m.name()))
            .unwrap_or_else(|| "unknown:unknown".to_owned());
        if let Ok(mut c) = self.counts.lock() {
            *c.entry(name).or_default() += 1;
        }
        Ok(())
    }
}
