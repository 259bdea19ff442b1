//! Retrying a record write within the invocation's deadline.

use super::{Deadline, IdempotentEffects};
use crate::IdempotencyError;
use aws_sdk_dynamodb::config::AsyncSleep;
use std::future::Future;
use std::time::Duration;

/// Time kept before the invocation's deadline when retrying a record write: for the
/// last write itself and for answering Lambda.
pub(super) const DEADLINE_RESERVE: Duration = Duration::from_millis(500);
/// First wait before retrying a record write; it doubles up to [`RETRY_MAX_DELAY`].
const RETRY_BASE_DELAY: Duration = Duration::from_millis(50);
/// Longest wait between two tries of a record write.
const RETRY_MAX_DELAY: Duration = Duration::from_secs(1);
/// Most retries of one record write, whatever the time left.
pub(super) const MAX_RETRIES: u32 = 12;

impl IdempotentEffects {
    /// Calls `op` until it succeeds, fails for good, or the next wait would pass the
    /// deadline (less [`DEADLINE_RESERVE`]).
    pub(super) async fn retrying<T, Op, Fut>(
        &self,
        deadline: Deadline,
        mut op: Op,
    ) -> Result<T, IdempotencyError>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, IdempotencyError>>,
    {
        let start = self.table.now_ms();
        let mut waited: i64 = 0;
        let mut retry = 0u32;
        loop {
            let err = match op().await {
                Ok(v) => return Ok(v),
                Err(e) if !e.is_retryable() => return Err(e),
                Err(e) => e,
            };
            retry += 1;
            // The clock may stand still (a test's); time spent waiting still counts.
            let now = self.table.now_ms().max(start.saturating_add(waited));
            let Some(delay) = retry_delay(retry, now, deadline.epoch_millis()) else {
                return Err(err);
            };
            tracing::warn!(retry, delay_ms = delay.as_millis() as u64, error = %err, "idempotency record write failed; retrying");
            if let Some(sleep) = self.table.client().config().sleep_impl() {
                sleep.sleep(delay).await;
            }
            waited = waited.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
        }
    }
}

/// The wait before retry number `retry` (1 for the first) of a record write, at
/// `now_ms`, for an invocation ending at `deadline_ms`: [`RETRY_BASE_DELAY`] doubling
/// up to [`RETRY_MAX_DELAY`]; `None` once [`MAX_RETRIES`] were made or the wait plus
/// [`DEADLINE_RESERVE`] would pass the deadline.
pub(super) fn retry_delay(retry: u32, now_ms: i64, deadline_ms: i64) -> Option<Duration> {
    if retry == 0 || retry > MAX_RETRIES {
        return None;
    }
    let delay = RETRY_BASE_DELAY
        .saturating_mul(1u32.checked_shl(retry - 1).unwrap_or(u32::MAX))
        .min(RETRY_MAX_DELAY);
    let ends = now_ms
        .saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
        .saturating_add(i64::try_from(DEADLINE_RESERVE.as_millis()).unwrap_or(i64::MAX));
    (ends <= deadline_ms).then_some(delay)
}
