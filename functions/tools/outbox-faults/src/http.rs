//! The HTTP client wrapper: reads the operation from each request, draws a fault,
//! and either answers for the service, fails the connection, lets the request
//! through (and maybe dies after it), or answers an index read as a lagging index would.

use crate::lag::{IndexRead, index_read, items_of, with_items};
use crate::plan::{Fault, FaultPlan, INDEX_LAG_MAX_MS};
use crate::remembered::ListingStore;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use std::sync::{Arc, Mutex};

/// An HTTP client that injects the faults of a [`FaultPlan`] around another client.
#[derive(Debug, Clone)]
pub struct FaultyHttpClient {
    inner: SharedHttpClient,
    injector: Arc<Injector>,
}

#[derive(Debug)]
struct Injector {
    plan: FaultPlan,
    rng: Mutex<fastrand::Rng>,
    /// What the index listed lately, when the plan lags it.
    listings: ListingStore,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl FaultyHttpClient {
    /// Wraps `inner`; `seed` makes the sequence of draws repeatable.
    pub fn new(inner: SharedHttpClient, plan: FaultPlan, seed: Option<u64>) -> Self {
        let rng = seed.map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
        FaultyHttpClient {
            inner,
            injector: Arc::new(Injector::new(plan, rng)),
        }
    }
}

impl HttpClient for FaultyHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(FaultyConnector {
            inner: self.inner.http_connector(settings, components),
            injector: self.injector.clone(),
        })
    }
}

#[derive(Debug)]
struct FaultyConnector {
    inner: SharedHttpConnector,
    injector: Arc<Injector>,
}

impl Injector {
    fn new(plan: FaultPlan, rng: fastrand::Rng) -> Self {
        Injector {
            plan,
            rng: Mutex::new(rng),
            listings: ListingStore::from_env(),
        }
    }

    fn pick(&self, operation: &str, index_read: bool) -> Option<Fault> {
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.plan.pick_for(operation, index_read, || rng.f64())
    }

    /// The index read `request` is, if the plan may lag it.
    fn lags(&self, shape: &Shape, request: &HttpRequest) -> Option<IndexRead> {
        if !self.plan.injects(Fault::IndexLag) || !shape.service.starts_with("DynamoDB") {
            return None;
        }
        index_read(&shape.operation, request.body().bytes()?)
    }
}

impl FaultyConnector {
    /// Sends an index read, remembers what it listed, and when `lag` drew it adds
    /// what the index listed lately and no longer does (if anything).
    fn remembering(
        &self,
        operation: String,
        read: IndexRead,
        request: HttpRequest,
        lag: bool,
    ) -> HttpConnectorFuture {
        let endpoint = request.uri().to_owned();
        let sent = self.inner.call(request);
        let injector = self.injector.clone();
        HttpConnectorFuture::new(async move {
            let mut response = sent.await?;
            if !response.status().is_success() {
                return Ok(response);
            }
            let body = std::mem::replace(response.body_mut(), SdkBody::taken());
            let body = ByteStream::new(body)
                .collect()
                .await
                .map_err(|e| ConnectorError::io(e.into()))?
                .to_vec();
            let Some(fresh) = items_of(&body) else {
                *response.body_mut() = SdkBody::from(body);
                return Ok(response);
            };
            let max_age = i64::try_from(INDEX_LAG_MAX_MS).unwrap_or(i64::MAX);
            let stale = injector
                .listings
                .read(&endpoint, &read, &fresh, now_ms(), max_age);
            let lagged = (lag && !stale.is_empty())
                .then(|| with_items(&body, stale))
                .flatten();
            let Some(lagged) = lagged else {
                *response.body_mut() = SdkBody::from(body);
                return Ok(response);
            };
            tracing::warn!(%operation, fault = %Fault::IndexLag, "injected fault");
            // The answer changed: its checksum and length no longer hold.
            response.headers_mut().remove("x-amz-crc32");
            response
                .headers_mut()
                .insert("content-length", lagged.len().to_string());
            *response.body_mut() = SdkBody::from(lagged);
            Ok(response)
        })
    }
}

impl HttpConnector for FaultyConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request_shape = Shape::of(&request);
        let read = self.injector.lags(&request_shape, &request);
        let operation = request_shape.operation.clone();
        let fault = self.injector.pick(&operation, read.is_some());
        let fault = match (fault, read) {
            (None, Some(read)) => return self.remembering(operation, read, request, false),
            (None, None) => return self.inner.call(request),
            (Some(Fault::IndexLag), Some(read)) => {
                return self.remembering(operation, read, request, true);
            }
            (Some(fault), _) => fault,
        };
        tracing::warn!(%operation, %fault, "injected fault");
        match fault {
            Fault::Throttle | Fault::ServerError => {
                let (status, code) = match fault {
                    Fault::Throttle => (400, request_shape.throttle_code()),
                    _ => (500, "InternalFailure"),
                };
                match StatusCode::try_from(status) {
                    Ok(status) => {
                        HttpConnectorFuture::ready(Ok(request_shape.error_response(status, code)))
                    }
                    Err(e) => {
                        HttpConnectorFuture::ready(Err(ConnectorError::other(e.into(), None)))
                    }
                }
            }
            Fault::Timeout => HttpConnectorFuture::ready(Err(ConnectorError::timeout(
                format!("injected: {operation} timed out before it was sent").into(),
            ))),
            Fault::Reset => HttpConnectorFuture::ready(Err(ConnectorError::io(
                std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    format!("injected: connection reset before {operation} was sent"),
                )
                .into(),
            ))),
            Fault::CrashBefore => crash(&operation, "before sending"),
            // Served above: it answers, it does not fail.
            Fault::IndexLag => self.inner.call(request),
            Fault::Hang => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let _took_effect = sent.await;
                    // Never ready: the SDK's attempt or operation timeout ends it.
                    std::future::pending().await
                })
            }
            Fault::LostResponse => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let _took_effect = sent.await;
                    Err(ConnectorError::timeout(
                        format!("injected: {operation} took effect but its answer was lost").into(),
                    ))
                })
            }
            Fault::CrashAfter => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let answer = sent.await;
                    // Only a call that took effect: a refused one (a failed condition,
                    // a throttle) changed nothing, so dying after it is no different
                    // from dying before it, and a redelivered duplicate must not die
                    // again at every receive.
                    if answer.as_ref().is_ok_and(|r| r.status().is_success()) {
                        crash(&operation, "after the service answered");
                    }
                    answer
                })
            }
        }
    }
}

/// Dies as a Lambda does when it crashes: no unwinding, nothing after this runs.
fn crash(operation: &str, when: &str) -> ! {
    // Straight to stderr (unbuffered), so the line is there after the abort.
    eprintln!("injected crash: the process aborts {when} {operation}");
    std::process::abort()
}

/// What the wrapper needs to know of a request: the operation, and how the service
/// writes its errors.
struct Shape {
    operation: String,
    protocol: Protocol,
    service: String,
}

enum Protocol {
    /// `x-amz-target: <Service>.<Operation>`, JSON errors (DynamoDB, SQS, EventBridge).
    Json,
    /// `Action=<Operation>` in a form body, XML errors (SNS).
    Query,
}

impl Shape {
    fn of(request: &HttpRequest) -> Shape {
        if let Some(target) = request.headers().get("x-amz-target") {
            let (service, operation) = target.split_once('.').unwrap_or(("", target));
            return Shape {
                operation: operation.to_owned(),
                protocol: Protocol::Json,
                service: service.to_owned(),
            };
        }
        let body = request.body().bytes().unwrap_or_default();
        let operation = std::str::from_utf8(body)
            .ok()
            .and_then(|b| b.split('&').find_map(|kv| kv.strip_prefix("Action=")))
            .unwrap_or("Unknown")
            .to_owned();
        Shape {
            operation,
            protocol: Protocol::Query,
            service: String::new(),
        }
    }

    fn throttle_code(&self) -> &'static str {
        if self.service.starts_with("DynamoDB") {
            "ProvisionedThroughputExceededException"
        } else {
            "ThrottlingException"
        }
    }

    fn error_response(&self, status: StatusCode, code: &str) -> HttpResponse {
        let message = format!("injected {code} for {}", self.operation);
        let (content_type, body) = match self.protocol {
            Protocol::Json => (
                "application/x-amz-json-1.0",
                format!(r#"{{"__type":"{code}","message":"{message}"}}"#),
            ),
            Protocol::Query => (
                "text/xml",
                format!(
                    "<ErrorResponse><Error><Type>{}</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>injected</RequestId></ErrorResponse>",
                    if status.is_server_error() {
                        "Receiver"
                    } else {
                        "Sender"
                    }
                ),
            ),
        };
        let mut response = HttpResponse::new(status, SdkBody::from(body));
        response
            .headers_mut()
            .insert("content-type", content_type.to_owned());
        // SQS's JSON protocol names the error code here too.
        response
            .headers_mut()
            .insert("x-amzn-query-error", format!("{code};Sender"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A service that refuses every call, as DynamoDB refuses a failed condition.
    #[derive(Debug)]
    struct Refusing;

    impl HttpConnector for Refusing {
        fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
            let status = StatusCode::try_from(400).expect("a valid status");
            let body = r#"{"__type":"ConditionalCheckFailedException"}"#;
            HttpConnectorFuture::ready(Ok(HttpResponse::new(status, SdkBody::from(body))))
        }
    }

    /// The fault layer with `plan` around `service`, its draws seeded, and the
    /// directory of its listings (removed when the test drops it).
    fn faulty(
        plan: &str,
        service: impl HttpConnector + 'static,
    ) -> (FaultyConnector, crate::remembered::ScratchDir) {
        let dir = crate::remembered::ScratchDir::new("http-test");
        let connector = FaultyConnector {
            inner: SharedHttpConnector::new(service),
            injector: Arc::new(Injector {
                plan: plan.parse().expect("a valid plan"),
                rng: Mutex::new(fastrand::Rng::with_seed(1)),
                listings: dir.store(),
            }),
        };
        (connector, dir)
    }

    /// An empty request to a JSON-protocol operation (`x-amz-target`).
    fn request_to(target: &'static str) -> HttpRequest {
        let mut request = HttpRequest::new(SdkBody::empty());
        request.headers_mut().insert("x-amz-target", target);
        request
    }

    /// A service that counts the calls it answers.
    #[derive(Debug, Default, Clone)]
    struct Counting(Arc<std::sync::atomic::AtomicUsize>);

    impl HttpConnector for Counting {
        fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let status = StatusCode::try_from(200).expect("a valid status");
            HttpConnectorFuture::ready(Ok(HttpResponse::new(status, SdkBody::from("{}"))))
        }
    }

    #[tokio::test]
    async fn a_hung_call_reaches_the_service_but_its_answer_never_comes() {
        let service = Counting::default();
        let (connector, _listings) = faulty("SendMessageBatch:hang:1", service.clone());
        let request = request_to("AmazonSQS.SendMessageBatch");
        let answer =
            tokio::time::timeout(Duration::from_millis(200), connector.call(request)).await;
        assert!(answer.is_err(), "no answer, not even the service's");
        assert_eq!(
            service.0.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the request went out"
        );
    }

    #[tokio::test]
    async fn a_crash_after_a_refused_call_does_not_happen_the_answer_comes_back() {
        let (connector, _listings) = faulty("PutItem:crash_after:1", Refusing);
        let request = request_to("DynamoDB_20120810.PutItem");
        // Before the fix this aborted the test process.
        let answer = connector.call(request).await.expect("an answer");
        assert_eq!(answer.status().as_u16(), 400);
    }

    /// A service whose index lists, at the n-th call, the items after the n-th: one
    /// more leaves it at every call (marked `SENT`).
    #[derive(Debug, Default, Clone)]
    struct Draining(Arc<std::sync::atomic::AtomicUsize>);

    impl HttpConnector for Draining {
        fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let items: Vec<String> = (n..3)
                .map(|i| format!(r#"{{"SK":{{"S":"m{i}"}}}}"#))
                .collect();
            let body = format!(
                r#"{{"Count":{},"Items":[{}]}}"#,
                items.len(),
                items.join(",")
            );
            let status = StatusCode::try_from(200).expect("a valid status");
            let mut response = HttpResponse::new(status, SdkBody::from(body));
            response.headers_mut().insert("x-amz-crc32", "1");
            HttpConnectorFuture::ready(Ok(response))
        }
    }

    fn query(body: &'static str) -> HttpRequest {
        let mut request = HttpRequest::new(SdkBody::from(body));
        request
            .headers_mut()
            .insert("x-amz-target", "DynamoDB_20120810.Query");
        request
    }

    /// The sort keys an answer lists, and whether it kept its checksum.
    async fn listed(connector: &FaultyConnector, request: HttpRequest) -> (Vec<String>, bool) {
        let mut answer = connector.call(request).await.expect("an answer");
        let body = answer.take_body();
        let items = crate::lag::items_of(body.bytes().unwrap_or_default()).unwrap_or_default();
        let keys = items
            .iter()
            .filter_map(|i| i["SK"]["S"].as_str().map(str::to_owned))
            .collect();
        (keys, answer.headers().get("x-amz-crc32").is_some())
    }

    #[tokio::test]
    async fn a_lagging_index_read_still_lists_what_left_the_index_and_a_table_read_never_does() {
        let (connector, _listings) = faulty("Query:index_lag:1", Draining::default());
        let index =
            r#"{"TableName":"t","IndexName":"i","ExpressionAttributeValues":{":s":{"S":"03"}}}"#;
        assert_eq!(
            listed(&connector, query(index)).await,
            (vec!["m0".into(), "m1".into(), "m2".into()], true)
        );
        let (keys, checksum) = listed(&connector, query(index)).await;
        assert_eq!(
            keys,
            ["m1", "m2", "m0"],
            "m0 left the index and is still listed"
        );
        assert!(
            !checksum,
            "a changed answer carries no checksum of the old one"
        );
        let (connector, _listings) = faulty("Query:index_lag:1", Draining::default());
        let table = r#"{"TableName":"t","ExpressionAttributeValues":{":pk":{"S":"A"}}}"#;
        listed(&connector, query(table)).await;
        assert_eq!(listed(&connector, query(table)).await.0, ["m1", "m2"]);
        let (connector, _listings) = faulty("Query:index_lag:1", Draining::default());
        let consistent = r#"{"TableName":"t","IndexName":"i","ConsistentRead":true,"ExpressionAttributeValues":{":s":{"S":"03"}}}"#;
        listed(&connector, query(consistent)).await;
        assert_eq!(listed(&connector, query(consistent)).await.0, ["m1", "m2"]);
    }
}
