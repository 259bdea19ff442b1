//! What a function learns from AWS on its first invocation instead of at start (a
//! function's initialisation makes no AWS call: Lambda bills it, and one TLS round trip
//! there was most of a cold start), kept once the lookup has fully succeeded.

use std::future::Future;
use std::ops::Deref;
use tokio::sync::OnceCell;

/// What a lookup gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup<T> {
    /// Everything was read: kept for the life of the process.
    Known(T),
    /// Usable for this invocation (with defaults where a read failed, each failure
    /// logged with what to do), and to be looked up again on the next one.
    ForNow(T),
}

impl<T> Lookup<T> {
    /// The same lookup with its value mapped.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Lookup<U> {
        match self {
            Lookup::Known(t) => Lookup::Known(f(t)),
            Lookup::ForNow(t) => Lookup::ForNow(f(t)),
        }
    }
}

/// A value filled by the first lookup that fully succeeds, and kept; until then each
/// caller looks up again (callers at once wait for one lookup in flight).
#[derive(Debug)]
pub(crate) struct Learned<T>(OnceCell<T>);

impl<T> Default for Learned<T> {
    fn default() -> Self {
        Learned(OnceCell::new())
    }
}

impl<T> Learned<T> {
    /// The value kept, else the value `lookup` gives: kept when it is
    /// [`Lookup::Known`], used only by this caller when it is [`Lookup::ForNow`].
    pub(crate) async fn get<F, Fut>(&self, lookup: F) -> Got<'_, T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Lookup<T>>,
    {
        let kept = self
            .0
            .get_or_try_init(|| async {
                match lookup().await {
                    Lookup::Known(t) => Ok(t),
                    Lookup::ForNow(t) => Err(t),
                }
            })
            .await;
        match kept {
            Ok(t) => Got::Kept(t),
            Err(t) => Got::ForNow(t),
        }
    }
}

impl<T> Learned<T> {
    /// Whether a lookup has been kept.
    #[cfg(test)]
    pub(crate) fn is_kept(&self) -> bool {
        self.0.initialized()
    }
}

/// A value from [`Learned::get`].
#[derive(Debug)]
pub(crate) enum Got<'a, T> {
    /// Kept for the life of the process.
    Kept(&'a T),
    /// For this caller only.
    ForNow(T),
}

impl<T> Deref for Got<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Got::Kept(t) => t,
            Got::ForNow(t) => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A lookup that answers `answers` in turn (the last one again once they run
    /// out), counting its calls.
    struct Lookups {
        answers: Vec<Lookup<u32>>,
        calls: AtomicUsize,
    }

    impl Lookups {
        fn answering(answers: Vec<Lookup<u32>>) -> Self {
            Lookups {
                answers,
                calls: AtomicUsize::new(0),
            }
        }

        async fn next(&self) -> Lookup<u32> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            let last = self.answers.len() - 1;
            self.answers[call.min(last)].clone()
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    #[tokio::test]
    async fn a_lookup_that_failed_is_used_once_and_made_again_on_the_next_call() {
        let lookups = Lookups::answering(vec![Lookup::ForNow(1), Lookup::Known(2)]);
        let learned = Learned::default();
        let first = learned.get(|| lookups.next()).await;
        assert!(matches!(first, Got::ForNow(1)), "{first:?}");
        let second = learned.get(|| lookups.next()).await;
        assert!(matches!(second, Got::Kept(2)), "{second:?}");
        assert_eq!(lookups.calls(), 2);
    }

    #[tokio::test]
    async fn a_lookup_that_succeeded_is_kept_and_not_made_again() {
        let lookups = Lookups::answering(vec![Lookup::Known(7), Lookup::Known(8)]);
        let learned = Learned::default();
        for _ in 0..3 {
            let got = learned.get(|| lookups.next()).await;
            assert_eq!(*got, 7);
        }
        assert_eq!(lookups.calls(), 1);
    }

    #[tokio::test]
    async fn a_lookup_that_keeps_failing_is_made_on_every_call() {
        let lookups = Lookups::answering(vec![Lookup::ForNow(3)]);
        let learned = Learned::default();
        for _ in 0..3 {
            assert_eq!(*learned.get(|| lookups.next()).await, 3);
        }
        assert_eq!(lookups.calls(), 3);
    }
}
