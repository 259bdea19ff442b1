//! The HTTP client wrapper: reads the operation from each request, draws a fault,
//! and either answers for the service, fails the connection, or lets the request
//! through (and maybe dies after it).

use crate::plan::{Fault, FaultPlan};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
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
}

impl FaultyHttpClient {
    /// Wraps `inner`; `seed` makes the sequence of draws repeatable.
    pub fn new(inner: SharedHttpClient, plan: FaultPlan, seed: Option<u64>) -> Self {
        let rng = seed.map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
        FaultyHttpClient {
            inner,
            injector: Arc::new(Injector {
                plan,
                rng: Mutex::new(rng),
            }),
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
    fn pick(&self, operation: &str) -> Option<Fault> {
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.plan.pick(operation, || rng.f64())
    }
}

impl HttpConnector for FaultyConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request_shape = Shape::of(&request);
        let Some(fault) = self.injector.pick(&request_shape.operation) else {
            return self.inner.call(request);
        };
        let operation = request_shape.operation.clone();
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

    /// The fault layer with `plan` around `service`, its draws seeded.
    fn faulty(plan: &str, service: impl HttpConnector + 'static) -> FaultyConnector {
        FaultyConnector {
            inner: SharedHttpConnector::new(service),
            injector: Arc::new(Injector {
                plan: plan.parse().expect("a valid plan"),
                rng: Mutex::new(fastrand::Rng::with_seed(1)),
            }),
        }
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
        let connector = faulty("SendMessageBatch:hang:1", service.clone());
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
        let connector = faulty("PutItem:crash_after:1", Refusing);
        let request = request_to("DynamoDB_20120810.PutItem");
        // Before the fix this aborted the test process.
        let answer = connector.call(request).await.expect("an answer");
        assert_eq!(answer.status().as_u16(), 400);
    }
}
