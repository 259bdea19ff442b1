//! Lambda's stream redelivery rule, applied on our side of a mapping that ignores it.
//!
//! After a partial batch response, a stream event source mapping delivers again every
//! record from the *lowest* one reported (a missing, empty or unknown identifier
//! counts as the whole batch), until the batch succeeds or its retries are used up.
//! The local AWS ignores partial batch responses and moves on, so a publisher built
//! with the `fault-injection` feature and `OUTBOX_FAULTS_REDELIVER` set hands its
//! handler those records again itself, as a new invocation would receive them, and
//! returns the last answer to the local AWS. It may also deliver again a suffix of a
//! batch that succeeded, as Lambda does after a timeout the function never saw (its
//! answer lost). Each redelivery is logged with counts only ([`REPLAY_LOG`]).

use std::fmt;
use std::future::Future;
use std::str::FromStr;

/// The variable that switches redelivery on: `<retries>` or
/// `<retries>:<share of successful batches delivered again>`, e.g. `5:0.05`.
pub const REDELIVER_VAR: &str = "OUTBOX_FAULTS_REDELIVER";
/// The message of the log line of each redelivery (fields: `records`, `from`,
/// `retry`, `after`).
pub const REPLAY_LOG: &str = "replayed stream batch";

/// How a batch is delivered again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Redelivery {
    /// Deliveries after the first, at most (the mapping's `MaximumRetryAttempts`).
    pub retries: u32,
    /// The share of successful answers after which a suffix of the batch is delivered
    /// again anyway (an answer the mapping never got), from 0 to 1.
    pub after_success: f64,
}

/// `OUTBOX_FAULTS_REDELIVER` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "OUTBOX_FAULTS_REDELIVER: `{0}` is not `<retries>` or `<retries>:<share>` (a whole number of retries, then optionally the share of successful batches delivered again, from 0 to 1), e.g. `5` or `5:0.05`"
)]
pub struct RedeliveryError(String);

impl FromStr for Redelivery {
    type Err = RedeliveryError;

    fn from_str(text: &str) -> Result<Self, RedeliveryError> {
        let bad = || RedeliveryError(text.to_owned());
        let (retries, share) = match text.trim().split_once(':') {
            Some((r, s)) => (r, Some(s)),
            None => (text.trim(), None),
        };
        let retries = retries.trim().parse().map_err(|_| bad())?;
        let after_success = match share {
            Some(s) => s.trim().parse().map_err(|_| bad())?,
            None => 0.0,
        };
        if !(0.0..=1.0).contains(&after_success) {
            return Err(bad());
        }
        Ok(Redelivery {
            retries,
            after_success,
        })
    }
}

impl Redelivery {
    /// The redelivery `OUTBOX_FAULTS_REDELIVER` asks for, or `None` when it is unset.
    pub fn from_env() -> Result<Option<Self>, RedeliveryError> {
        match std::env::var(REDELIVER_VAR) {
            Ok(text) if !text.trim().is_empty() => text.parse().map(Some),
            _ => Ok(None),
        }
    }
}

/// Why a batch is delivered again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The answer reported records to retry.
    PartialFailure,
    /// The answer was a success the mapping is taken not to have received.
    LostAnswer,
}

impl fmt::Display for After {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            After::PartialFailure => "partial_batch_response",
            After::LostAnswer => "lost_answer",
        })
    }
}

/// Where the next delivery starts, by Lambda's rule: `None` when nothing is reported;
/// otherwise the position of the lowest reported record in `batch` (the records'
/// identifiers in batch order, which is sequence order), or 0 — the whole batch — if
/// any reported identifier is missing, empty or not in the batch.
pub fn resume_at(batch: &[Option<&str>], reported: &[Option<&str>]) -> Option<usize> {
    reported
        .iter()
        .map(|id| {
            id.filter(|id| !id.is_empty())
                .and_then(|id| batch.iter().position(|b| *b == Some(id)))
                .unwrap_or(0)
        })
        .min()
}

/// Where a successful batch of `len` records is delivered again, given two uniform
/// draws in `[0, 1)`: `None` most of the time; with probability `share`, from a
/// position chosen uniformly (0 is the whole batch).
pub fn resume_after_success(
    len: usize,
    share: f64,
    mut draw: impl FnMut() -> f64,
) -> Option<usize> {
    if len == 0 || draw() >= share {
        return None;
    }
    let at = (draw() * len as f64) as usize;
    Some(at.min(len - 1))
}

/// Delivers `records` to `handler` and again as Lambda would, at most
/// `redelivery.retries` more times, and returns the last answer. `id_of` gives a
/// record's identifier (a stream record's sequence number); `reported` the
/// identifiers an answer reports for retry; `draw` uniform numbers in `[0, 1)`. A
/// handler error ends it: that is the mapping's to handle (the whole batch again).
pub async fn deliver<T, R, E, Fut>(
    records: Vec<T>,
    redelivery: Redelivery,
    id_of: impl Fn(&T) -> Option<&str>,
    reported: impl Fn(&R) -> Vec<Option<String>>,
    mut draw: impl FnMut() -> f64,
    mut handler: impl FnMut(Vec<T>) -> Fut,
) -> Result<R, E>
where
    T: Clone,
    Fut: Future<Output = Result<R, E>>,
{
    let mut batch = records;
    let mut retry = 0;
    loop {
        let answer = handler(batch.clone()).await?;
        if retry >= redelivery.retries {
            return Ok(answer);
        }
        let failed = reported(&answer);
        let ids: Vec<Option<&str>> = batch.iter().map(&id_of).collect();
        let failed: Vec<Option<&str>> = failed.iter().map(Option::as_deref).collect();
        let next = match resume_at(&ids, &failed) {
            Some(at) => (at, After::PartialFailure),
            None => match resume_after_success(batch.len(), redelivery.after_success, &mut draw) {
                Some(at) => (at, After::LostAnswer),
                None => return Ok(answer),
            },
        };
        let (from, after) = next;
        retry += 1;
        batch = batch.split_off(from);
        tracing::warn!(records = batch.len(), from, retry, %after, "{}", REPLAY_LOG);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn the_next_delivery_starts_at_the_lowest_reported_record() {
        let batch = [Some("10"), Some("11"), Some("12"), Some("13")];
        assert_eq!(resume_at(&batch, &[]), None, "a success");
        assert_eq!(resume_at(&batch, &[Some("13"), Some("11")]), Some(1));
        assert_eq!(resume_at(&batch, &[Some("12")]), Some(2));
        for whole in [vec![None], vec![Some("")], vec![Some("12"), Some("99")]] {
            assert_eq!(
                resume_at(&batch, &whole),
                Some(0),
                "{whole:?}: the whole batch"
            );
        }
    }

    #[test]
    fn a_successful_batch_is_delivered_again_only_as_often_as_asked() {
        assert_eq!(resume_after_success(4, 0.1, || 0.5), None);
        let mut draws = [0.05, 0.6].into_iter();
        assert_eq!(
            resume_after_success(4, 0.1, || draws.next().unwrap_or(0.0)),
            Some(2)
        );
        assert_eq!(resume_after_success(4, 1.0, || 0.999), Some(3));
        assert_eq!(
            resume_after_success(0, 1.0, || 0.0),
            None,
            "nothing to deliver"
        );
    }

    #[test]
    fn the_setting_reads_retries_and_an_optional_share() {
        let r = |t: &str| t.parse::<Redelivery>();
        assert_eq!(
            r("5"),
            Ok(Redelivery {
                retries: 5,
                after_success: 0.0
            })
        );
        assert_eq!(
            r(" 3:0.05 "),
            Ok(Redelivery {
                retries: 3,
                after_success: 0.05
            })
        );
        for bad in ["", "many", "-1", "3:2", "3:often"] {
            let err = r(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                err.contains(REDELIVER_VAR) && err.contains("5:0.05"),
                "{bad}: {err}"
            );
        }
    }

    /// A handler that reports, for each delivery, the records the script names.
    async fn run(
        script: Vec<Vec<&'static str>>,
        redelivery: Redelivery,
    ) -> (Vec<Vec<&'static str>>, Vec<&'static str>) {
        let seen = RefCell::new(Vec::new());
        let script = RefCell::new(script.into_iter());
        let answer = deliver(
            vec!["1", "2", "3", "4", "5"],
            redelivery,
            |r: &&str| Some(*r),
            |a: &Vec<&str>| a.iter().map(|s| Some((*s).to_owned())).collect(),
            || 0.0,
            |batch: Vec<&'static str>| {
                seen.borrow_mut().push(batch);
                let answer = script.borrow_mut().next().unwrap_or_default();
                async move { Ok::<_, ()>(answer) }
            },
        )
        .await;
        (seen.into_inner(), answer.unwrap_or_default())
    }

    #[tokio::test]
    async fn a_partial_answer_is_delivered_again_from_its_lowest_record_until_the_retries_are_used()
    {
        let budget = Redelivery {
            retries: 2,
            after_success: 0.0,
        };
        let (deliveries, last) = run(vec![vec!["4", "2"], vec!["5"], vec!["5"]], budget).await;
        assert_eq!(
            deliveries,
            [
                vec!["1", "2", "3", "4", "5"],
                vec!["2", "3", "4", "5"],
                vec!["5"]
            ]
        );
        assert_eq!(last, ["5"], "the last answer goes to the mapping");
        let (deliveries, last) = run(vec![vec!["3"], vec![]], budget).await;
        assert_eq!(deliveries.len(), 2, "the retry succeeded: {deliveries:?}");
        assert!(last.is_empty());
    }

    #[tokio::test]
    async fn a_successful_answer_may_be_delivered_again_from_a_drawn_record() {
        let (deliveries, _) = run(
            vec![vec![], vec![]],
            Redelivery {
                retries: 1,
                after_success: 1.0,
            },
        )
        .await;
        // The second draw is 0: the whole batch again, once (the budget).
        assert_eq!(deliveries.len(), 2);
        assert_eq!(deliveries[1], ["1", "2", "3", "4", "5"]);
    }
}
