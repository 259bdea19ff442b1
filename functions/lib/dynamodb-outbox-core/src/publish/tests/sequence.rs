//! The fence of sequenced aggregates on the publish path (issue 36, findings 1, 2 and
//! 4): each FIFO message waits while the outbox item just before it in its
//! aggregate's key range is pending, read consistently — whatever the index lists,
//! whatever batch the records are in.

use super::fence::{bodies, publisher, stored};
use crate::fakes::{MemoryStore, RecordingSink, library_item};
use crate::publish::*;
use crate::schema::{ItemKey, OutboxItem, Status, sequenced_sort_key};

type P = Publisher<RecordingSink, MemoryStore>;

/// The key of message `n` of `pk`, committed with sequence `seq` at `position`; its
/// id is time-ordered against the sequence when `n` says so (a clock that disagrees).
fn key(pk: &str, seq: u64, position: u8, n: u8) -> ItemKey {
    let id = uuid::Builder::from_unix_timestamp_millis(1_000, &[n; 10]).into_uuid();
    ItemKey {
        pk: pk.to_owned(),
        sk: sequenced_sort_key(seq, position, "EVENT", &id.to_string()),
    }
}

/// A pending sequenced message on the FIFO route, as the library writes it.
fn item(key: &ItemKey) -> OutboxItem {
    library_item(key, "ledger", 61_000, 1_000)
}

/// Stored without the index attributes: the index does not list it yet (a GSI lags
/// the writes).
fn unlisted(p: &P, key: &ItemKey) {
    let mut i = item(key);
    (i.sweep_shard, i.sweep_due_at) = (None, None);
    p.store.put(key.clone(), i);
}

fn finish(p: &P, key: &ItemKey, status: Status) {
    let mut done = item(key);
    done.status = Some(status.as_str().to_owned());
    (done.sweep_shard, done.sweep_due_at) = (None, None);
    p.store.put(key.clone(), done);
}

#[tokio::test]
async fn a_message_alone_in_its_batch_waits_for_the_previous_commit_the_index_does_not_list() {
    // Finding 2: two commits of one aggregate, their records in concurrent batches of
    // one shard (parallelization factor > 1), A2's first; the index has not taken
    // A1's write. The index fence saw nothing earlier and sent A2 first; the read of
    // the key just before A2 is consistent.
    let p = publisher();
    let (k1, k2) = (key("A", 1, 0, 9), key("A", 2, 0, 1));
    unlisted(&p, &k1);
    let w2 = stored(&p, &k2, item(&k2));
    let outcomes = p.process(std::slice::from_ref(&w2)).await;
    assert_eq!(outcomes, vec![Outcome::Deferred { not_before: None }]);
    assert!(bodies(&p, "ledger").is_empty());
    finish(&p, &k1, Status::Sent);
    assert_eq!(p.process(&[w2]).await, vec![Outcome::Sent { marked: true }]);
}

#[tokio::test]
async fn a_batch_missing_a_middle_message_sends_the_first_and_holds_the_rest() {
    // A1 and A3 in one batch, A2 in another not yet run.
    let p = publisher();
    let keys: Vec<ItemKey> = (1..=3).map(|s| key("A", s, 0, 0)).collect();
    let w1 = stored(&p, &keys[0], item(&keys[0]));
    unlisted(&p, &keys[1]);
    let w3 = stored(&p, &keys[2], item(&keys[2]));
    let outcomes = p.process(&[w3, w1]).await;
    assert_eq!(
        outcomes,
        vec![
            Outcome::Deferred { not_before: None },
            Outcome::Sent { marked: true }
        ]
    );
    assert_eq!(bodies(&p, "ledger").len(), 1);
}

#[tokio::test]
async fn a_deferred_message_never_reported_again_still_holds_the_next_one() {
    // Finding 2's narrow variant at factor 1: A2 waited behind A1 (deferred, left for
    // the sweeper, not in the index yet); A1 was then marked SENT; the next batch
    // holds only A3. The index fence could not see A2 and sent A3 before it.
    let p = publisher();
    let (k1, k2, k3) = (key("A", 1, 0, 0), key("A", 2, 0, 0), key("A", 3, 0, 0));
    unlisted(&p, &k1);
    let w2 = stored(&p, &k2, item(&k2));
    unlisted(&p, &k2);
    assert_eq!(
        p.process(&[w2]).await,
        vec![Outcome::Deferred { not_before: None }]
    );
    finish(&p, &k1, Status::Sent);
    let w3 = stored(&p, &k3, item(&k3));
    assert_eq!(
        p.process(&[w3]).await,
        vec![Outcome::Deferred { not_before: None }]
    );
    assert!(bodies(&p, "ledger").is_empty());
}

#[tokio::test]
async fn a_finished_previous_message_lets_the_next_go_failed_as_well_as_sent() {
    for done in [Status::Sent, Status::Failed] {
        let p = publisher();
        let (k1, k2) = (key("A", 1, 0, 0), key("A", 2, 0, 0));
        finish(&p, &k1, done);
        let w2 = stored(&p, &k2, item(&k2));
        assert_eq!(
            p.process(&[w2]).await,
            vec![Outcome::Sent { marked: true }],
            "{done:?}"
        );
    }
}

#[tokio::test]
async fn one_transactions_messages_go_in_their_positions_order_whatever_their_ids_say() {
    // Two messages of one commit share its sequence; their ids are time-ordered the
    // other way (position 1 has the earlier id), and their records arrive reversed.
    let p = publisher();
    let (first, second) = (key("A", 7, 0, 9), key("A", 7, 1, 1));
    let mut a = item(&first);
    a.payload = Some("first".into());
    let mut b = item(&second);
    b.payload = Some("second".into());
    let (wa, wb) = (stored(&p, &first, a), stored(&p, &second, b));
    let outcomes = p.process(&[wb, wa]).await;
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Sent { .. })), "{outcomes:?}");
    assert_eq!(bodies(&p, "ledger"), ["first", "second"]);
}

#[tokio::test]
async fn a_sequenced_message_on_a_standard_route_is_held_too_so_the_next_may_trust_it() {
    // A1 (FIFO) pending; A2 of the same aggregate goes to a standard queue. Were A2
    // sent, A3's read would stop at it (SENT) and send A3 before A1.
    let p = publisher();
    let (k1, k2) = (key("A", 1, 0, 0), key("A", 2, 0, 0));
    unlisted(&p, &k1);
    let mut standard = item(&k2);
    standard.topic = Some("orders".into());
    let w2 = stored(&p, &k2, standard);
    assert_eq!(
        p.process(&[w2]).await,
        vec![Outcome::Deferred { not_before: None }]
    );
    assert!(bodies(&p, "orders").is_empty());
}

#[tokio::test]
async fn a_message_without_a_sequence_in_the_batch_does_not_cost_the_sequenced_their_read() {
    // A batch with an unsequenced FIFO message of A and the second message of a
    // sequenced commit whose first the index does not list yet.
    let p = publisher();
    let (first, second) = (key("A", 5, 0, 0), key("A", 5, 1, 0));
    unlisted(&p, &first);
    let w2 = stored(&p, &second, item(&second));
    let plain = crate::fakes::library_key("A", 9_000, 0);
    let wu = stored(&p, &plain, library_item(&plain, "ledger", 61_000, 9_000));
    let outcomes = p.process(&[wu, w2]).await;
    assert_eq!(outcomes[1], Outcome::Deferred { not_before: None }, "{outcomes:?}");
}

#[tokio::test]
async fn an_item_of_a_status_nobody_sends_holds_nothing_back() {
    // Marks require PENDING: an item whose Status does not read is never sent, so the
    // messages after it would wait forever behind it.
    let p = publisher();
    let (k1, k2) = (key("A", 1, 0, 0), key("A", 2, 0, 0));
    let mut odd = item(&k1);
    odd.status = Some(" PENDING".into());
    p.store.put(k1, odd);
    let w2 = stored(&p, &k2, item(&k2));
    assert_eq!(p.process(&[w2]).await, vec![Outcome::Sent { marked: true }]);
}

#[tokio::test]
async fn a_first_sequenced_message_waits_for_a_pending_one_without_a_sequence() {
    // The producer began to give sequences while A0, written without one, was still
    // pending (listed by the index). A1 is the aggregate's first sequenced message:
    // its range read finds nothing below it, since A0's key sorts apart — it must
    // read the aggregate's other pending messages too, or A1 overtakes A0.
    let p = publisher();
    let id = uuid::Builder::from_unix_timestamp_millis(500, &[0; 10]).into_uuid();
    let k0 = ItemKey {
        pk: "A".into(),
        sk: format!("MESSAGE#EVENT#{id}"),
    };
    p.store.put(k0.clone(), item(&k0));
    let k1 = key("A", 1, 0, 1);
    let w1 = stored(&p, &k1, item(&k1));
    assert_eq!(
        p.process(std::slice::from_ref(&w1)).await,
        vec![Outcome::Deferred {
            not_before: Some(61_000)
        }]
    );
    assert!(bodies(&p, "ledger").is_empty());
    finish(&p, &k0, Status::Sent);
    assert_eq!(p.process(&[w1]).await, vec![Outcome::Sent { marked: true }]);
}

#[tokio::test]
async fn only_an_aggregates_first_sequenced_message_pays_for_reading_the_rest() {
    // A1 finished: A2's range read stops at it (one request); A1's own read found
    // nothing below it and also read the index (two).
    let p = publisher();
    let (k1, k2) = (key("A", 1, 0, 0), key("A", 2, 0, 0));
    let w1 = stored(&p, &k1, item(&k1));
    let (_, first) = p.process_delivery(&[w1]).await;
    assert_eq!(first.fence_reads, 2, "{first:?}");
    let w2 = stored(&p, &k2, item(&k2));
    let (_, next) = p.process_delivery(&[w2]).await;
    assert_eq!(next.fence_reads, 1, "{next:?}");
}
