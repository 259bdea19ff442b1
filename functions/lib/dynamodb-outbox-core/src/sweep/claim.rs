//! Claiming a wave's due keys (a lease until the sweep is done with them): what was
//! claimed becomes an attempt; what someone else holds, or what could not be
//! claimed, becomes a gate the later messages of its aggregate wait behind.

use super::{SweepSummary, Sweeper};
use crate::failure::{Failure, FailureKind};
use crate::policy::{Attempt, Gate, attempt_of, order_key, unclaimable};
use crate::ports::{Claim, DueKey, MarkCondition, MessageSink, OutboxStore, SweepStore};
use crate::schema::{ItemKey, STATUS, SeenIndex, Status, string_attr};
use futures::StreamExt;
use std::collections::HashMap;

/// What the claims of one chunk gave: attempts to make, the condition of each
/// attempt's `FAILED` mark (its claim), and the earlier messages the later ones of
/// their aggregate must wait behind.
#[derive(Debug, Default)]
pub(super) struct Claims {
    pub(super) attempts: Vec<Attempt>,
    pub(super) conditions: HashMap<ItemKey, MarkCondition>,
    pub(super) gates: Vec<Gate>,
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Claims each key, concurrently. What someone else finished is skipped; what
    /// someone else holds, or what could not be claimed, is skipped and holds back
    /// the later messages of its aggregate; what refuses every claim is poison.
    pub(super) async fn claim_all(
        &self,
        keys: &[DueKey],
        lease_until: i64,
        summary: &mut SweepSummary,
    ) -> Claims {
        let max_attempts = self.config.max_attempts;
        let layout = &self.config.publisher.key_names.sweep_shards;
        let results: Vec<(&DueKey, Result<Claim, Failure>)> =
            futures::stream::iter(keys.iter().map(|d| async move {
                let shard = layout.shard_of(&d.key.pk);
                let claim = self.store().claim(&d.key, &d.seen_due, lease_until, &shard);
                (d, claim.await)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        let mut claims = Claims::default();
        for (d, result) in results {
            let (pk, sk) = (&d.key.pk, &d.key.sk);
            match result {
                Ok(Claim::Claimed(item)) => {
                    summary.claimed += 1;
                    let condition = MarkCondition::claim(lease_until);
                    claims.conditions.insert(d.key.clone(), condition);
                    claims.attempts.push(attempt_of(*item, max_attempts));
                }
                Ok(Claim::Finished) => summary.skipped += 1,
                Ok(Claim::Held(held)) => {
                    summary.skipped += 1;
                    claims.gates.push(Gate {
                        aggregate: pk.clone(),
                        position: Some(order_key(&d.key, held.created_at_ms, &held.message_id)),
                        key: d.key.clone(),
                        due_floor: held.due_at_ms.unwrap_or(lease_until),
                    });
                }
                Err(f) if f.kind == FailureKind::ContentRefused => {
                    tracing::error!(aggregate = %pk, %sk, error = %f, "the item refuses every claim: it is poison");
                    match self.unclaimable(d, &f, lease_until, summary).await {
                        Ok(Some((attempt, condition))) => {
                            claims.conditions.insert(d.key.clone(), condition);
                            claims.attempts.push(attempt);
                        }
                        Ok(None) => summary.skipped += 1,
                        Err(gate) => claims.gates.push(gate),
                    }
                }
                Err(e) => {
                    tracing::warn!(aggregate = %pk, %sk, error = %e, "claim failed; the later messages of its aggregate wait, the next sweep retries");
                    summary.skipped += 1;
                    summary.errors += 1;
                    claims.gates.push(unknown_gate(d, lease_until));
                }
            }
        }
        claims
    }

    /// The poison attempt of an item that refused its claim for good, read as it is
    /// now, with the condition of its `FAILED` mark: its due time as read, as a
    /// claim's would be. `None` when it is no longer pending, a gate when it cannot
    /// be read.
    async fn unclaimable(
        &self,
        d: &DueKey,
        refusal: &Failure,
        lease_until: i64,
        summary: &mut SweepSummary,
    ) -> Result<Option<(Attempt, MarkCondition)>, Gate> {
        match self.store().load(&d.key).await {
            Ok(Some(item)) if string_attr(&item, STATUS) == Some(Status::Pending.as_str()) => {
                let condition = MarkCondition::as_read(&SeenIndex::of(&item));
                Ok(Some((unclaimable(d.key.clone(), &item, refusal), condition)))
            }
            Ok(_) => Ok(None),
            Err(e) => {
                tracing::warn!(aggregate = %d.key.pk, sk = %d.key.sk, error = %e, "could not read an unclaimable item; the next sweep retries");
                summary.skipped += 1;
                summary.errors += 1;
                Err(unknown_gate(d, lease_until))
            }
        }
    }
}

/// The gate of a key whose claim failed: its place is unknown but for what its key
/// tells (a library key's UUIDv7), and the claim may have taken effect (a lost
/// answer), so it may be due again only after our lease.
fn unknown_gate(d: &DueKey, lease_until: i64) -> Gate {
    Gate {
        aggregate: d.key.pk.clone(),
        position: None,
        key: d.key.clone(),
        due_floor: d.due_at_ms.max(lease_until),
    }
}
