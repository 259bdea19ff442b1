//! DynamoDB faults injected into one client's requests, as DynamoDB itself fails:
//! refused before they are sent, or done with the answer lost.

use std::sync::atomic::{AtomicU32, Ordering};

/// Fails the first `times` DynamoDB requests whose body contains `containing`, as
/// DynamoDB does: `refusing` them before they are sent (throttled, unreachable:
/// nothing happened), or `losing_the_answer` (the write happened; the caller sees a
/// 500 and the SDK retries).
#[derive(Debug, Clone)]
pub(super) struct FailWrites(std::sync::Arc<FailInner>);

#[derive(Debug)]
struct FailInner {
    containing: &'static str,
    lose_answer: bool,
    /// Set when the request in flight is one whose answer is to be lost.
    losing: std::sync::atomic::AtomicBool,
    left: AtomicU32,
    failed: AtomicU32,
}

impl FailWrites {
    pub(super) fn refusing(containing: &'static str, times: u32) -> Self {
        Self::new(containing, times, false)
    }

    pub(super) fn losing_the_answer(containing: &'static str, times: u32) -> Self {
        Self::new(containing, times, true)
    }

    fn new(containing: &'static str, times: u32, lose_answer: bool) -> Self {
        FailWrites(std::sync::Arc::new(FailInner {
            containing,
            lose_answer,
            losing: std::sync::atomic::AtomicBool::new(false),
            left: AtomicU32::new(times),
            failed: AtomicU32::new(0),
        }))
    }

    pub(super) fn failed(&self) -> u32 {
        self.0.failed.load(Ordering::SeqCst)
    }

    /// `client`'s configuration with this interceptor.
    pub(super) fn client(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(self.clone())
                .build(),
        )
    }

    /// Whether this request is one to fail (counting it).
    fn take(&self, body: &[u8]) -> bool {
        let matches = std::str::from_utf8(body).is_ok_and(|b| b.contains(self.0.containing));
        let take = matches
            && self
                .0
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if take {
            self.0.failed.fetch_add(1, Ordering::SeqCst);
        }
        take
    }
}

impl aws_sdk_dynamodb::config::Intercept for FailWrites {
    fn name(&self) -> &'static str {
        "FailWrites"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let body = context.request().body().bytes().unwrap_or_default();
        if self.take(body) {
            if self.0.lose_answer {
                self.0.losing.store(true, Ordering::SeqCst);
            } else {
                return Err("injected: DynamoDB unreachable for this write".into());
            }
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        if self.0.losing.swap(false, Ordering::SeqCst) {
            let response = context.response_mut();
            *response.status_mut() = 500u16.try_into()?;
            *response.body_mut() = aws_smithy_types::body::SdkBody::from(
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the answer was lost"}"#,
            );
        }
        Ok(())
    }
}
