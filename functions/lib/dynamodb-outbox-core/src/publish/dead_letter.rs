//! Copying poison to the dead-letter queue before it is marked `FAILED`. The copy
//! comes first: a crash between the two leaves the item `PENDING` (found again),
//! never `FAILED` without its copy. A copy the queue cannot take as it is goes
//! through the claim-check bucket, else as a record without its payload (the forms
//! of [`crate::policy::copy_forms`]), so that the queue operators watch holds a
//! record of every `FAILED` message. A payload whose only copy is an object the
//! lifecycle rule expires is copied to where it is kept first, and the copy and the
//! mark point there ([`retain_payloads`]).

use super::dispatch::send_resilient;
use super::plan::{ToFail, chunk_by_limits, dead_letter_copy};
use super::{Outcome, Poison};
use crate::config::PublisherConfig;
use crate::message::OutboundMessage;
use crate::large_payload::retained;
use crate::policy::{
    CopyForm, CopyVerdict, RetentionVerdict, copy_forms, judge_copy, judge_retention,
    over_dead_letter_limit, uncopied_reason,
};
use crate::ports::{EntryResult, MarkCondition, MessageSink, OutboxStore};
use crate::route::{Destination, Routes};
use crate::schema::{ItemKey, STATUS, Status, string_attr};
use std::collections::{HashMap, VecDeque};

/// What copying came to.
#[derive(Debug, Default)]
pub(super) struct Copied {
    /// Poison to mark `FAILED` now: copied in some form, or refused in every form.
    pub to_fail: Vec<ToFail>,
    /// Poison settled here: finished by someone else, or not copied (`Retry`).
    pub decided: Vec<(usize, Outcome)>,
    /// Claim-check payloads written to S3 (copies too large for the queue).
    pub offloaded: usize,
}

/// Copies poison to the dead-letter queue, in batches within its limits, each in
/// the first of its forms the queue takes. Poison already finished is not copied
/// again (a stream record delivered again after a checkpoint, a sweep after the
/// publisher), nor a sweep's poison no longer under its claim (`claims`): the item
/// is read first.
pub(super) async fn copy_poison<K: MessageSink, S: OutboxStore>(
    sink: &K,
    store: &S,
    config: &PublisherConfig,
    poison: Vec<(usize, Poison)>,
    claims: &HashMap<ItemKey, MarkCondition>,
) -> Copied {
    if poison.is_empty() {
        return Copied::default();
    }
    let (poison, mut decided) = still_pending(store, poison, claims).await;
    let (poison, retried) = retain_payloads(sink, poison).await;
    decided.extend(retried);
    let mut out = Copied {
        to_fail: Vec::new(),
        decided,
        offloaded: 0,
    };
    let mut copying: Vec<Copying> = poison
        .into_iter()
        .map(|(index, p, note)| Copying::new(index, p, note, &config.routes))
        .collect();
    // Each round moves every copy refused for good on to its next form; there are
    // at most three forms.
    while !copying.is_empty() {
        copying = copy_round(sink, &config.dead_letter, copying, &mut out).await;
    }
    out
}

/// One poison item on its way to the dead-letter queue.
struct Copying {
    index: usize,
    poison: Poison,
    /// The forms left to try, the current one first.
    forms: VecDeque<CopyForm>,
    /// Why the forms tried so far were not taken.
    notes: Vec<String>,
}

impl Copying {
    fn new(index: usize, poison: Poison, note: Option<String>, routes: &Routes) -> Self {
        let bucket = match &poison.topic {
            Some(topic) => routes.offload(topic).bucket,
            None => routes.large_payloads().default_bucket.as_deref(),
        };
        let forms = copy_forms(bucket, poison.message_id.as_deref()).into();
        Copying {
            index,
            poison,
            forms,
            notes: note.into_iter().collect(),
        }
    }

    /// The current form and its message, skipping (with a note) the forms over the
    /// queue's limit: a copy that would only be refused is never sent. `None` when
    /// no form is left.
    fn next_sendable(&mut self, dlq: &Destination) -> Option<(CopyForm, OutboundMessage)> {
        while let Some(form) = self.forms.front() {
            let message = dead_letter_copy(&self.poison, dlq, form);
            match over_dead_letter_limit(form, dlq.message_size(&message), dlq) {
                None => return Some((form.clone(), message)),
                Some(note) => {
                    self.notes.push(note);
                    self.forms.pop_front();
                }
            }
        }
        None
    }
}

/// Tries every item's current form: the claim checks' payloads written first, then
/// the copies sent in batches. Returns the items to try again in their next form.
async fn copy_round<K: MessageSink>(
    sink: &K,
    dlq: &Destination,
    copying: Vec<Copying>,
    out: &mut Copied,
) -> Vec<Copying> {
    let mut next = Vec::new();
    let mut ready = Vec::new();
    for mut c in copying {
        match c.next_sendable(dlq) {
            Some((form, message)) => ready.push((c, form, message)),
            None => {
                let reason = uncopied_reason(&c.poison.reason, &c.notes);
                tracing::error!(message_id = c.poison.message_id(), trace_id = c.poison.trace_id(),
                    reason, "no dead-letter record could be sent; marking FAILED");
                c.poison.reason = reason;
                out.to_fail.push((c.index, c.poison, false));
            }
        }
    }
    let writes = futures::future::join_all(ready.iter().map(|(c, form, _)| async move {
        match form {
            CopyForm::ClaimCheck(pointer) => sink.put_payload(pointer, &c.poison.body).await,
            CopyForm::Whole | CopyForm::Record => Ok(()),
        }
    }))
    .await;
    let mut sendable = Vec::new();
    for ((c, form, message), write) in ready.into_iter().zip(writes) {
        match write {
            Ok(()) => {
                if matches!(form, CopyForm::ClaimCheck(_)) {
                    out.offloaded += 1;
                }
                sendable.push((c, form, message));
            }
            Err(f) => settle(c, &form, Err(f), out, &mut next),
        }
    }
    let mut results: Vec<EntryResult> = Vec::with_capacity(sendable.len());
    // The chunks keep the order of `sendable`, and so do their results.
    for chunk in chunk_by_limits(dlq, &sendable, |(_, _, m)| m.clone()) {
        let messages: Vec<OutboundMessage> = chunk.into_iter().map(|(_, m)| m).collect();
        let refs: Vec<&OutboundMessage> = messages.iter().collect();
        results.extend(send_resilient(sink, dlq, &refs).await);
    }
    for ((c, form, _), result) in sendable.into_iter().zip(results) {
        settle(c, &form, result, out, &mut next);
    }
    next
}

/// Acts on what one form of a copy came to.
fn settle(
    mut c: Copying,
    form: &CopyForm,
    result: EntryResult,
    out: &mut Copied,
    next: &mut Vec<Copying>,
) {
    match judge_copy(form, result, &c.poison.reason, &c.notes) {
        CopyVerdict::Copied {
            reason,
            holds_payload,
        } => {
            c.poison.reason = reason;
            out.to_fail.push((c.index, c.poison, holds_payload));
        }
        CopyVerdict::Next(note) => {
            tracing::warn!(message_id = c.poison.message_id(), trace_id = c.poison.trace_id(),
                %note, "dead-letter copy refused for good; trying its next form");
            c.notes.push(note);
            c.forms.pop_front();
            next.push(c);
        }
        CopyVerdict::Retry(outcome) => {
            tracing::error!(message_id = c.poison.message_id(), trace_id = c.poison.trace_id(),
                ?outcome, "could not dead-letter poison; will retry");
            out.decided.push((c.index, outcome));
        }
    }
}

/// Copies the payload of each poison whose only copy is an object the lifecycle rule
/// expires (a producer's pointer to `outbox/<MessageId>`) to `failed/<MessageId>`
/// ([`retained`]), and points its body there, so that its dead-letter copy and its
/// `FAILED` mark (which sets `Payload` to the body, `policy::retained_payload`) name
/// an object that lasts as long as the item. Before both: a crash after the copy
/// leaves the item `PENDING` with the pointer it had, and the next attempt copies
/// again over the same key. Returns the poison to copy, each with a note when its
/// payload could not be kept (it keeps its pointer), and the poison to retry.
async fn retain_payloads<K: MessageSink>(
    sink: &K,
    poison: Vec<(usize, Poison)>,
) -> (Vec<(usize, Poison, Option<String>)>, Vec<(usize, Outcome)>) {
    let tried = futures::future::join_all(poison.into_iter().map(|(index, p)| async move {
        let verdict = match retained(&p.body, p.message_id.as_deref()) {
            None => None,
            Some(retention) => {
                let copied = sink.copy_payload(&retention.from, &retention.to).await;
                Some(judge_retention(&retention, copied))
            }
        };
        (index, p, verdict)
    }))
    .await;
    let mut kept = Vec::new();
    let mut retried = Vec::new();
    for (index, mut p, verdict) in tried {
        match verdict {
            None => kept.push((index, p, None)),
            Some(RetentionVerdict::Retained(body)) => {
                p.body = body;
                kept.push((index, p, None));
            }
            Some(RetentionVerdict::Kept(note)) => {
                tracing::warn!(message_id = p.message_id(), trace_id = p.trace_id(), %note,
                    "the payload of a FAILED message could not be kept; it keeps its pointer");
                kept.push((index, p, Some(note)));
            }
            Some(RetentionVerdict::Retry(outcome)) => {
                tracing::error!(message_id = p.message_id(), trace_id = p.trace_id(),
                    ?outcome, "could not keep the payload of poison; will retry");
                retried.push((index, outcome));
            }
        }
    }
    (kept, retried)
}

/// Splits poison into what is still `PENDING` under its claim, if it has one (or
/// cannot be read: copied anyway, as a duplicate copy is better than none), and what
/// someone else has finished or holds now.
async fn still_pending<S: OutboxStore>(
    store: &S,
    poison: Vec<(usize, Poison)>,
    claims: &HashMap<ItemKey, MarkCondition>,
) -> (Vec<(usize, Poison)>, Vec<(usize, Outcome)>) {
    let checked = futures::future::join_all(poison.into_iter().map(|(index, p)| async move {
        let decided = match &p.key {
            None => None,
            Some(key) => match store.load(key).await {
                Ok(item) => not_ours(item.as_ref(), claims.get(key)),
                Err(e) => {
                    tracing::warn!(sk = %key.sk, message_id = p.message_id(), trace_id = p.trace_id(),
                        error = %e, "could not read poison before copying it; copying");
                    None
                }
            },
        };
        (index, p, decided)
    }))
    .await;
    let mut pending = Vec::new();
    let mut decided = Vec::new();
    for (index, p, outcome) in checked {
        match outcome {
            Some(outcome) => {
                tracing::info!(
                    message_id = p.message_id.as_deref().unwrap_or("-"),
                    ?outcome,
                    "poison finished or held by someone else: not copied"
                );
                decided.push((index, outcome));
            }
            None => pending.push((index, p)),
        }
    }
    (pending, decided)
}

/// What a stored item (`None`: absent) that is not this caller's to copy comes to:
/// finished when it is no longer `PENDING`, the claim lost when it is pending but no
/// longer under `claim`; `None` when it is ours.
fn not_ours(item: Option<&serde_dynamo::Item>, claim: Option<&MarkCondition>) -> Option<Outcome> {
    let item = item.filter(|i| string_attr(i, STATUS) == Some(Status::Pending.as_str()));
    match (item, claim) {
        (None, _) => Some(Outcome::AlreadyFinished),
        (Some(item), Some(claim)) if !claim.holds(item) => {
            Some(Outcome::ClaimLost { at_mark: false })
        }
        _ => None,
    }
}
