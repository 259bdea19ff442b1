//! A stream batch delivered again. Lambda delivers a batch again from its lowest
//! reported record after a partial batch response, and whole (or bisected) after an
//! error or a timeout; a record's image says only that its item was inserted
//! `PENDING`. So the stream path reads the current status of the batch's items first
//! (strongly consistent, [`OutboxStore::statuses`]) and publishes only those still
//! `PENDING` ([`judge_delivery`]): what an earlier delivery, the sweeper or an
//! operator finished is skipped. A read that fails reports the items for retry: none
//! is published unread, none is dropped.

use super::{Outcome, Publisher, Summary, WorkItem};
use crate::failure::Failure;
use crate::ports::{MessageSink, OutboxStore};
use crate::schema::{ItemKey, PENDING_ELSEWHERE, Status};
use std::collections::{HashMap, HashSet};

/// The current `Status` of items by key, as [`OutboxStore::statuses`] read it: a key
/// that is missing is an item no longer in the table.
pub type CurrentStatuses = HashMap<ItemKey, Option<String>>;

/// Why a record whose item is [`PENDING_ELSEWHERE`] is reported for retry.
const ELSEWHERE_REASON: &str = "the message is pending but homed in another region since its insert (a failover): reported until its owner finishes it or a failback returns it";

/// What the stream path does with one record's work, from its item's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Still `PENDING` (or poison without a key to read): on to the publish path.
    Publish,
    /// No longer `PENDING` — `SENT` or `FAILED`, or a status this library does not
    /// write (`status`, `None` when the item has none): finished by someone else.
    /// Skipped.
    Settled {
        /// What the item holds now.
        status: Option<String>,
    },
    /// No longer in the table (its TTL expired after it was `SENT`, or someone deleted
    /// it). Skipped.
    Gone,
    /// Its status could not be read: reported for retry, not published.
    Unread,
}

impl Delivery {
    /// Whether the item is finished, so that the record is skipped.
    pub fn is_settled(&self) -> bool {
        matches!(self, Delivery::Settled { .. } | Delivery::Gone)
    }
}

/// The distinct keys to read for `items`, in batch order. (A batch may hold one item
/// twice — deleted and put again —, and a `BatchGetItem` refuses a key asked twice.)
pub fn status_keys(items: &[WorkItem]) -> Vec<ItemKey> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter_map(|item| item.work.key())
        .filter(|key| seen.insert(*key))
        .cloned()
        .collect()
}

/// Judges every work item from its item's current state; `current` is what the status
/// read found, `None` when it failed (then every item with a key is
/// [`Delivery::Unread`]).
pub fn judge_delivery(items: &[WorkItem], current: Option<&CurrentStatuses>) -> Vec<Delivery> {
    items
        .iter()
        .map(|item| {
            let Some(key) = item.work.key() else {
                return Delivery::Publish;
            };
            let Some(current) = current else {
                return Delivery::Unread;
            };
            match current.get(key) {
                None => Delivery::Gone,
                Some(Some(status)) if status == Status::Pending.as_str() => Delivery::Publish,
                Some(Some(status)) if status == PENDING_ELSEWHERE => Delivery::Unread,
                Some(status) => Delivery::Settled {
                    status: status.clone(),
                },
            }
        })
        .collect()
}

impl<K: MessageSink, S: OutboxStore> Publisher<K, S> {
    /// Publishes a batch Lambda delivered — perhaps not for the first time: only the
    /// messages whose items are still `PENDING` now. One outcome per item, in order,
    /// and their counts.
    ///
    /// A finished item is [`Outcome::AlreadyFinished`] and does not fence the rest: it
    /// is handed to the order fence as finished, which a lagging sweeper index may
    /// still list, so its aggregate's later messages are decided as if it had been
    /// published in this batch. An item whose status could not be read is
    /// [`Outcome::Retry`].
    pub async fn process_delivery(&self, items: &[WorkItem]) -> (Vec<Outcome>, Summary) {
        let read = self.read_statuses(&status_keys(items)).await;
        let verdicts = judge_delivery(items, read.as_ref().ok());
        let finished: HashSet<ItemKey> = items
            .iter()
            .zip(&verdicts)
            .filter(|(_, verdict)| verdict.is_settled())
            .filter_map(|(item, _)| item.work.key().cloned())
            .collect();
        let claims = HashMap::new();
        let (published, effort) = if verdicts.iter().all(|v| *v == Delivery::Publish) {
            self.process_counted(items, &finished, &claims).await
        } else {
            let to_publish: Vec<WorkItem> = items
                .iter()
                .zip(&verdicts)
                .filter(|(_, verdict)| **verdict == Delivery::Publish)
                .map(|(item, _)| item.clone())
                .collect();
            self.process_counted(&to_publish, &finished, &claims).await
        };
        let read_failed = read.is_err();
        let unread = Some(match read {
            Err(e) => format!("could not read the message's current status: {e}"),
            Ok(_) => ELSEWHERE_REASON.to_owned(),
        });
        let mut published = published.into_iter();
        let outcomes: Vec<Outcome> = verdicts
            .iter()
            .map(|verdict| match verdict {
                Delivery::Publish => published.next(),
                Delivery::Settled { .. } | Delivery::Gone => Some(Outcome::AlreadyFinished),
                Delivery::Unread => unread.clone().map(|reason| Outcome::Retry { reason }),
            })
            .map(|o| {
                o.unwrap_or(Outcome::Retry {
                    reason: "internal: item was not decided".to_owned(),
                })
            })
            .collect();
        let mut summary = Summary::of(&outcomes).with_effort(effort);
        summary.already_settled = verdicts.iter().filter(|v| v.is_settled()).count();
        // Homed elsewhere is a retry, not a failed read (`StatusReadFailed`).
        summary.status_unread = if read_failed {
            verdicts.iter().filter(|v| **v == Delivery::Unread).count()
        } else {
            0
        };
        log_skipped(items, &verdicts);
        (outcomes, summary)
    }

    /// The current status of `keys`; the failure logged with what it leads to.
    async fn read_statuses(&self, keys: &[ItemKey]) -> Result<CurrentStatuses, Failure> {
        if keys.is_empty() {
            return Ok(CurrentStatuses::new());
        }
        match self.store.statuses(keys).await {
            Ok(read) => Ok(read.statuses),
            Err(e) => {
                tracing::error!(error = %e, items = keys.len(),
                    "could not read the current status of the batch's messages: reporting them all for retry, so that Lambda delivers them again (none is published without it)");
                Err(e)
            }
        }
    }
}

/// One line per skipped record, and their count.
fn log_skipped(items: &[WorkItem], verdicts: &[Delivery]) {
    let mut skipped = 0usize;
    for (item, verdict) in items.iter().zip(verdicts) {
        let status = match verdict {
            Delivery::Settled { status } => status.as_deref().unwrap_or("(none)"),
            Delivery::Gone => "(no longer in the table)",
            Delivery::Publish | Delivery::Unread => continue,
        };
        skipped += 1;
        if let Some(key) = item.work.key() {
            tracing::debug!(sequence_number = %item.id, aggregate = %key.pk, sk = %key.sk, status,
                "record delivered again: its message is finished, not published again");
        }
    }
    if skipped > 0 {
        tracing::info!(
            skipped,
            "records delivered again whose messages are already finished: not published again"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::{Poison, Work};
    use crate::schema::OutboxMessage;

    fn key(pk: &str, sk: &str) -> ItemKey {
        ItemKey {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    fn message(pk: &str, sk: &str) -> WorkItem {
        WorkItem {
            id: sk.into(),
            work: Work::Publish(OutboxMessage {
                key: key(pk, sk),
                message_id: sk.into(),
                topic: "orders".into(),
                payload: "{}".into(),
                created_at: 1,
                retry_count: 0,
                sequence: None,
                payload_size: None,
                index: crate::schema::SeenIndex::default(),
                trace: None,
                home_region: None,
                follows: None,
            }),
        }
    }

    fn keyless_poison() -> WorkItem {
        WorkItem {
            id: "p".into(),
            work: Work::Poison(Poison {
                key: None,
                message_id: None,
                topic: None,
                body: "{}".into(),
                reason: "no key".into(),
                trace: None,
            }),
        }
    }

    fn current(entries: &[(&str, Option<&str>)]) -> CurrentStatuses {
        entries
            .iter()
            .map(|(sk, status)| (key("A", sk), status.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn only_the_messages_still_pending_are_published() {
        // Given a batch delivered again: one still pending, one SENT and one FAILED by
        // the earlier delivery, one gone (TTL), one with a status this library never
        // writes, one with none
        let items: Vec<WorkItem> = ["p", "s", "f", "gone", "odd", "none"]
            .iter()
            .map(|sk| message("A", sk))
            .collect();
        let now = current(&[
            ("p", Some("PENDING")),
            ("s", Some("SENT")),
            ("f", Some("FAILED")),
            ("odd", Some("ARCHIVED")),
            ("none", None),
        ]);
        // When judged against their current status
        let verdicts = judge_delivery(&items, Some(&now));
        // Then only the pending one is published
        let settled = |s: &str| Delivery::Settled {
            status: Some(s.into()),
        };
        assert_eq!(
            verdicts,
            vec![
                Delivery::Publish,
                settled("SENT"),
                settled("FAILED"),
                Delivery::Gone,
                settled("ARCHIVED"),
                Delivery::Settled { status: None },
            ]
        );
    }

    #[test]
    fn a_message_re_homed_since_its_insert_is_reported_for_retry_neither_published_nor_skipped() {
        // A failover moved "moved" to another region after its insert; the record's
        // image still names this one. It waits (a retry keeps the later records of
        // its shard behind it) until its owner finishes it or a failback returns it.
        let items = vec![message("A", "moved"), message("A", "later")];
        let now = current(&[("moved", Some(PENDING_ELSEWHERE)), ("later", Some("PENDING"))]);
        let verdicts = judge_delivery(&items, Some(&now));
        assert_eq!(verdicts, vec![Delivery::Unread, Delivery::Publish]);
        assert!(!verdicts[0].is_settled());
    }

    #[test]
    fn a_failed_status_read_publishes_nothing_it_could_not_read() {
        let items = vec![message("A", "1"), keyless_poison(), message("B", "1")];
        let verdicts = judge_delivery(&items, None);
        // The keyless poison has nothing to read: it goes on to the dead-letter queue
        assert_eq!(
            verdicts,
            vec![Delivery::Unread, Delivery::Publish, Delivery::Unread]
        );
        assert!(verdicts.iter().all(|v| !v.is_settled()));
    }

    #[test]
    fn each_item_is_read_once_in_batch_order_and_keyless_poison_not_at_all() {
        let items = vec![
            message("B", "1"),
            keyless_poison(),
            message("A", "1"),
            message("B", "1"),
        ];
        assert_eq!(status_keys(&items), vec![key("B", "1"), key("A", "1")]);
    }
}
