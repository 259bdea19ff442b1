//! A sink that records every call and fails what it is told to.

use super::lock;
use crate::failure::Failure;
use crate::large_payload::PayloadPointer;
use crate::message::OutboundMessage;
use crate::ports::{EntryResult, MessageSink};
use crate::route::Destination;
use std::collections::HashMap;
use std::sync::Mutex;

/// What a [`RecordingSink`] refuses. By default nothing.
#[derive(Debug, Clone, Default)]
pub struct Refusals {
    /// Destinations (by a part of their name) whose every call fails transiently
    /// (`Throttled`), like a queue that is down.
    pub down: Vec<String>,
    /// Bodies whose entry fails transiently (`Throttled`) outside the dead-letter queue.
    pub transient: Vec<String>,
    /// Bodies the destinations refuse for good (`InvalidMessageContents`); the
    /// dead-letter queue accepts them.
    pub refused: Vec<String>,
    /// Bodies every destination refuses for good, the dead-letter queue included.
    pub refused_everywhere: Vec<String>,
    /// Bodies for which the service refuses the whole call for its content
    /// (`BatchRequestTooLong`).
    pub refuse_call: Vec<String>,
    /// Buckets whose payload writes (the large-payload offload) fail transiently, like a
    /// bucket the function may not write to yet.
    pub buckets_down: Vec<String>,
    /// Buckets whose payload writes are refused for good.
    pub buckets_refused: Vec<String>,
    /// The process dies after this many calls: later calls never answer, as for a
    /// function that crashed or timed out.
    pub dies_after_calls: Option<usize>,
}

/// One recorded call: destination, messages, and which of them were accepted.
type Recorded = (String, Vec<OutboundMessage>, Vec<bool>);

/// A sink that records every call. A destination whose name contains `dlq` is the
/// dead-letter queue.
#[derive(Debug, Default)]
pub struct RecordingSink {
    refusals: Refusals,
    calls: Mutex<Vec<Recorded>>,
    objects: Mutex<HashMap<PayloadPointer, String>>,
    writes: Mutex<usize>,
}

impl RecordingSink {
    /// A sink that refuses what `refusals` says.
    pub fn new(refusals: Refusals) -> Self {
        RecordingSink {
            refusals,
            ..RecordingSink::default()
        }
    }

    /// The payload written where `pointer` says (the large-payload offload), if any.
    pub fn object(&self, pointer: &PayloadPointer) -> Option<String> {
        lock(&self.objects).get(pointer).cloned()
    }

    /// How many objects are stored, and how many writes made them.
    pub fn object_counts(&self) -> (usize, usize) {
        (lock(&self.objects).len(), *lock(&self.writes))
    }

    /// Every call: the destination and its messages' bodies, in order.
    pub fn calls(&self) -> Vec<(String, Vec<String>)> {
        lock(&self.calls)
            .iter()
            .map(|(d, m, _)| (d.clone(), m.iter().map(|m| m.body.clone()).collect()))
            .collect()
    }

    /// The messages accepted by destinations whose name contains `dest`.
    pub fn delivered(&self, dest: &str) -> Vec<OutboundMessage> {
        lock(&self.calls)
            .iter()
            .filter(|(d, _, _)| d.contains(dest))
            .flat_map(|(_, m, ok)| {
                m.iter()
                    .zip(ok)
                    .filter(|(_, ok)| **ok)
                    .map(|(m, _)| m.clone())
            })
            .collect()
    }

    fn entry(&self, dlq: bool, body: &str) -> EntryResult {
        let has = |list: &[String]| list.iter().any(|b| b == body);
        let r = &self.refusals;
        if !dlq && has(&r.transient) {
            Err(Failure::transient("Throttled"))
        } else if has(&r.refused_everywhere) || (!dlq && has(&r.refused)) {
            Err(Failure::permanent("InvalidMessageContents"))
        } else {
            Ok(())
        }
    }
}

impl MessageSink for RecordingSink {
    async fn send_batch(
        &self,
        destination: &Destination,
        messages: &[&OutboundMessage],
    ) -> Result<Vec<EntryResult>, Failure> {
        if self
            .refusals
            .dies_after_calls
            .is_some_and(|n| lock(&self.calls).len() >= n)
        {
            return std::future::pending().await;
        }
        let dest = destination.to_string();
        let owned: Vec<OutboundMessage> = messages.iter().map(|m| (*m).clone()).collect();
        let r = &self.refusals;
        let answer = if r.down.iter().any(|d| dest.contains(d.as_str())) {
            Err(Failure::transient("Throttled"))
        } else if messages.iter().any(|m| r.refuse_call.contains(&m.body)) {
            Err(Failure::content_refused("BatchRequestTooLong"))
        } else {
            let dlq = dest.contains("dlq");
            Ok(messages
                .iter()
                .map(|m| self.entry(dlq, &m.body))
                .collect::<Vec<_>>())
        };
        let accepted = match &answer {
            Ok(results) => results.iter().map(Result::is_ok).collect(),
            Err(_) => vec![false; owned.len()],
        };
        lock(&self.calls).push((dest, owned, accepted));
        answer
    }

    async fn put_payload(&self, pointer: &PayloadPointer, payload: &str) -> Result<(), Failure> {
        let r = &self.refusals;
        if r.buckets_down.contains(&pointer.bucket) {
            return Err(Failure::transient("SlowDown"));
        }
        if r.buckets_refused.contains(&pointer.bucket) {
            return Err(Failure::permanent("InvalidBucketState"));
        }
        *lock(&self.writes) += 1;
        lock(&self.objects).insert(pointer.clone(), payload.to_owned());
        Ok(())
    }

    /// Copies within the recorded objects; a missing source is refused for good, as
    /// S3's `NoSuchKey` (an object the lifecycle rule expired).
    async fn copy_payload(
        &self,
        from: &PayloadPointer,
        to: &PayloadPointer,
    ) -> Result<(), Failure> {
        let r = &self.refusals;
        if r.buckets_down.contains(&to.bucket) {
            return Err(Failure::transient("SlowDown"));
        }
        if r.buckets_refused.contains(&to.bucket) {
            return Err(Failure::permanent("InvalidBucketState"));
        }
        let Some(body) = self.object(from) else {
            return Err(Failure::permanent(format!("NoSuchKey: {from}")));
        };
        *lock(&self.writes) += 1;
        lock(&self.objects).insert(to.clone(), body);
        Ok(())
    }
}
