//! The invocation's body handed to the handler as the bytes Lambda sent.
//!
//! Why: the runtime parses every body into the handler's payload type before calling
//! it. Even `Box<RawValue>`, the cheapest payload it offers, validates the whole event
//! and copies it into a new string — a third of the publisher's handler work per
//! record (docs/benchmarks.md) for a text the lean parse reads again anyway.
//! [`KeepBodies`] is a runtime layer that takes the body out of the invocation before
//! that parse, keeps it under the invocation's request id, and leaves `null` for the
//! runtime to parse; the handler takes its body back by the request id in its context.
//! Keyed by request id, not held in one slot: `PublisherFunction::run` runs one
//! invocation at a time, but a runtime running several at once would still hand each
//! handler its own body.

use lambda_runtime::tower::{Layer, Service};
use lambda_runtime::{Error, LambdaInvocation};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// The bodies of the invocations under way, by request id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bodies(Arc<Mutex<HashMap<String, bytes::Bytes>>>);

impl Bodies {
    fn keep(&self, request_id: &str, body: bytes::Bytes) {
        self.map().insert(request_id.to_owned(), body);
    }

    /// The body of invocation `request_id`, handed out once.
    pub(crate) fn take(&self, request_id: &str) -> Result<bytes::Bytes, Error> {
        self.map().remove(request_id).ok_or_else(|| {
            format!("the body of invocation {request_id} was not kept: run the function with PublisherFunction::run").into()
        })
    }

    /// Nothing kept here is left half-written by a panic: a poisoned lock is still sound.
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, bytes::Bytes>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The runtime layer that keeps each invocation's body in [`Bodies`] (see the module).
#[derive(Debug, Clone)]
pub(crate) struct KeepBodies(pub(crate) Bodies);

impl<S> Layer<S> for KeepBodies {
    type Service = KeepBody<S>;

    fn layer(&self, inner: S) -> KeepBody<S> {
        KeepBody {
            inner,
            bodies: self.0.clone(),
        }
    }
}

/// [`KeepBodies`] around the runtime's own services.
#[derive(Debug, Clone)]
pub(crate) struct KeepBody<S> {
    inner: S,
    bodies: Bodies,
}

/// The body a kept invocation carries on: the cheapest JSON there is to parse.
const LEFT_FOR_THE_RUNTIME: &[u8] = b"null";

impl<S> Service<LambdaInvocation> for KeepBody<S>
where
    S: Service<LambdaInvocation, Response = (), Error = Error>,
{
    type Response = ();
    type Error = Error;
    type Future = Handled<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut invocation: LambdaInvocation) -> Self::Future {
        let request_id = invocation.context.request_id.clone();
        let body = std::mem::replace(
            &mut invocation.body,
            bytes::Bytes::from_static(LEFT_FOR_THE_RUNTIME),
        );
        self.bodies.keep(&request_id, body);
        Handled {
            handled: Box::pin(self.inner.call(invocation)),
            _left: Forget {
                bodies: self.bodies.clone(),
                request_id,
            },
        }
    }
}

/// The runtime's handling of a kept invocation.
#[derive(Debug)]
pub(crate) struct Handled<F> {
    handled: Pin<Box<F>>,
    _left: Forget,
}

impl<F: Future> Future for Handled<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.handled.as_mut().poll(cx)
    }
}

/// Drops the body of an invocation whose handler never took it (one that never ran,
/// or was cancelled), when its handling ends.
#[derive(Debug)]
struct Forget {
    bodies: Bodies,
    request_id: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.bodies.map().remove(&self.request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_runtime::tower::service_fn;

    fn invocation(request_id: &str, body: &'static [u8]) -> LambdaInvocation {
        let mut context = lambda_runtime::Context::default();
        context.request_id = request_id.to_owned();
        LambdaInvocation {
            parts: http::Response::new(()).into_parts().0,
            body: bytes::Bytes::from_static(body),
            context,
        }
    }

    #[tokio::test]
    async fn the_handler_takes_the_body_lambda_sent_and_the_runtime_parses_null() {
        // Given the layer around a runtime that records what it was left to parse
        let bodies = Bodies::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (taken, left) = (bodies.clone(), seen.clone());
        let runtime = service_fn(move |invocation: LambdaInvocation| {
            let (taken, left) = (taken.clone(), left.clone());
            async move {
                let body = taken.take(&invocation.context.request_id)?;
                left.lock().unwrap().push((invocation.body, body));
                Ok::<(), Error>(())
            }
        });
        let mut service = KeepBodies(bodies.clone()).layer(runtime);
        // When two invocations pass through it
        service
            .call(invocation("a", b"{\"Records\":[1]}"))
            .await
            .unwrap();
        service
            .call(invocation("b", b"{\"Records\":[2]}"))
            .await
            .unwrap();
        // Then each handler took its own body, the runtime parsed null, nothing is left
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            [
                (
                    LEFT_FOR_THE_RUNTIME.into(),
                    b"{\"Records\":[1]}".as_slice().into()
                ),
                (
                    LEFT_FOR_THE_RUNTIME.into(),
                    b"{\"Records\":[2]}".as_slice().into()
                ),
            ]
        );
        assert!(bodies.map().is_empty());
    }

    #[tokio::test]
    async fn a_body_the_handler_did_not_take_is_dropped_with_its_invocation() {
        let bodies = Bodies::default();
        let runtime =
            service_fn(|_: LambdaInvocation| async { Err::<(), Error>("refused".into()) });
        let mut service = KeepBodies(bodies.clone()).layer(runtime);
        assert!(service.call(invocation("a", b"{}")).await.is_err());
        assert!(bodies.map().is_empty());
        let missing = bodies.take("a").unwrap_err().to_string();
        assert!(missing.contains("PublisherFunction::run"), "{missing}");
    }
}
