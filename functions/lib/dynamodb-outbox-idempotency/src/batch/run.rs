//! Carrying out a batch's [`plan`](super::plan::plan): the lanes one at a time or
//! together, each message's function called with panics caught, each finished message
//! deleted early when the plan says so, and what finished kept when the deadline
//! comes.

use super::{BatchProcessor, BatchReport, MessageFailure, MessageOutcome, group_id, plan};
use crate::delete::MessageDeleter;
use crate::delivery::Delivery;
use crate::payload::resolve;
use aws_lambda_events::event::sqs::SqsMessage;
use futures::FutureExt;
use futures::stream::{self, StreamExt};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tracing::Instrument;

impl BatchProcessor {
    /// Carries out the [`plan`](plan::plan) for `messages`, for at most `left`.
    pub(super) async fn run_within<'a, T, E, F, Fut>(
        &self,
        messages: &'a [SqsMessage],
        left: Option<Duration>,
        f: F,
    ) -> BatchReport<T, E>
    where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let plan = plan::plan(messages, self.deleter.is_some());
        let finished = Mutex::new(Vec::with_capacity(messages.len()));
        // Boxed (not type-erased, so Send is kept): the layout of a boxed future does
        // not add the depth of the per-message futures inside it to the caller's.
        let lane = |lane| Box::pin(self.run_lane(messages, lane, plan.delete_early, &f, &finished));
        let work = Box::pin(async {
            for suspect in &plan.one_at_a_time {
                lane(suspect).await;
            }
            stream::iter(&plan.together)
                .for_each_concurrent(self.concurrency, lane)
                .await;
        });
        match left {
            None => work.await,
            Some(left) => {
                if tokio::time::timeout(left, work).await.is_err() {
                    tracing::warn!(
                        left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
                        "the batch did not finish before the invocation's deadline; its unfinished messages are reported for redelivery"
                    );
                }
            }
        }
        let finished = finished
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        BatchReport {
            outcomes: plan::settle(messages, finished),
        }
    }

    /// Runs one lane's messages in order; a lane stops at its first failure (the rest
    /// is reported skipped). A success is deleted from the queue at once when
    /// `delete_early`. Each outcome lands in `finished` as soon as it is known, so the
    /// deadline keeps what finished.
    async fn run_lane<'a, T, E, F, Fut>(
        &self,
        messages: &'a [SqsMessage],
        lane: &plan::Lane,
        delete_early: bool,
        f: &F,
        finished: &Mutex<Vec<(usize, MessageOutcome<T, E>)>>,
    ) where
        F: Fn(Delivery<'a>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut failed_first: Option<String> = None;
        for &index in lane {
            let Some(msg) = messages.get(index) else {
                continue;
            };
            let delivery = self.open(msg);
            let outbox_message_id = delivery.outbox_message_id().map(str::to_owned);
            let trace_id = delivery.trace().map(|t| t.trace_id().to_owned());
            let span = delivery.span();
            let result = match &failed_first {
                Some(after) => Err(MessageFailure::Skipped {
                    after: after.clone(),
                }),
                None => {
                    let handled = async {
                        match resolve(self.payloads.as_deref(), delivery).await {
                            Ok(delivery) => call(f, delivery).await,
                            Err(e) => Err(MessageFailure::PayloadUnavailable(e)),
                        }
                    };
                    handled.instrument(span.clone()).await
                }
            };
            #[cfg(feature = "opentelemetry")]
            if result.is_err() {
                span.record("otel.status_code", "error");
            }
            match (&result, &self.deleter) {
                (Ok(_), Some(deleter)) if delete_early => delete(deleter.as_ref(), msg).await,
                (Err(_), _) if failed_first.is_none() => {
                    failed_first = Some(msg.message_id.clone().unwrap_or_default());
                }
                _ => {}
            }
            let outcome = MessageOutcome {
                message_id: msg.message_id.clone().unwrap_or_default(),
                outbox_message_id,
                group_id: group_id(msg).map(str::to_owned),
                trace_id,
                result,
            };
            finished
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((index, outcome));
        }
    }
}

/// Deletes a finished message ahead of Lambda; a failure only costs that message
/// its protection (Lambda deletes it when the invocation answers), so it is logged,
/// not reported.
async fn delete(deleter: &dyn MessageDeleter, msg: &SqsMessage) {
    if let Err(e) = deleter.delete(msg).await {
        tracing::warn!(
            message_id = msg.message_id.as_deref().unwrap_or_default(),
            error = %e,
            "a finished message could not be deleted early; Lambda deletes it when the invocation answers"
        );
    }
}

/// Calls `f`, turning a panic (while building or polling its future) into a failure.
async fn call<'a, T, E, F, Fut>(f: &F, msg: Delivery<'a>) -> Result<T, MessageFailure<E>>
where
    F: Fn(Delivery<'a>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| f(msg))) {
        Ok(fut) => fut,
        Err(p) => return Err(MessageFailure::Panicked(panic_text(p.as_ref()))),
    };
    match Box::pin(AssertUnwindSafe(fut).catch_unwind()).await {
        Ok(r) => r.map_err(MessageFailure::Failed),
        Err(p) => Err(MessageFailure::Panicked(panic_text(p.as_ref()))),
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}
