//! Copies sent after their message was marked `SENT`: the redelivered-stream-batch
//! defect (a delivery that publishes again what an earlier one already published and
//! marked). A copy's send time is SQS's `SentTimestamp` (the consumer's `RESULT` line
//! carries it as `sent_at_ms`; the FIFO destination's copies are read off the queue);
//! the mark's is the item's `SentAt`. Both clocks are the local AWS's machine's.

use super::report::ChaosReport;
use super::{FifoDelivery, problem};
use dynamodb_outbox_core::schema::OutboxItem;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Counts every distinct copy (by SQS message id, so a copy received twice counts
/// once) whose send came after its message's `SENT` mark.
pub fn check_resent(
    results: &[Value],
    fifo: &[FifoDelivery],
    items: &[OutboxItem],
    r: &mut ChaosReport,
) {
    let sent_at: BTreeMap<&str, i64> = items
        .iter()
        .filter_map(|i| Some((i.message_id.as_deref()?, i.sent_at?)))
        .collect();
    let mut seen = BTreeSet::new();
    let copies = results.iter().filter_map(|rec| {
        let sqs_id = rec.get("message_id")?.as_str()?;
        let outbox_id = rec.get("outbox_message_id")?.as_str()?;
        let at = rec.get("sent_at_ms")?.as_i64()?;
        Some((sqs_id.to_owned(), outbox_id.to_owned(), at))
    });
    let fifo_copies = fifo
        .iter()
        .filter_map(|d| Some((d.sqs_id.clone(), d.message_id.clone(), d.sent_at_ms?)));
    for (sqs_id, outbox_id, at) in copies.chain(fifo_copies) {
        if !seen.insert(sqs_id) {
            continue;
        }
        if let Some(&marked) = sent_at.get(outbox_id.as_str())
            && at > marked
        {
            r.sent_after_sent += 1;
            problem(
                r,
                format!("sent again after SENT: {outbox_id} sent at {at}, marked at {marked}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(id: &str, sent_at: i64) -> OutboxItem {
        OutboxItem {
            message_id: Some(id.to_owned()),
            sent_at: Some(sent_at),
            ..OutboxItem::default()
        }
    }

    #[test]
    fn a_copy_sent_after_the_mark_counts_once_however_often_it_was_received() {
        let results = vec![
            json!({"message_id": "q1", "outbox_message_id": "m1", "sent_at_ms": 100}),
            json!({"message_id": "q2", "outbox_message_id": "m1", "sent_at_ms": 250}),
            json!({"message_id": "q2", "outbox_message_id": "m1", "sent_at_ms": 250}),
            json!({"message_id": "q3", "outbox_message_id": "m2", "sent_at_ms": 90}),
        ];
        let fifo = vec![FifoDelivery {
            group: "g".into(),
            sequence: 1,
            message_id: "m3".into(),
            sqs_id: "f1".into(),
            sent_at_ms: Some(400),
            traceparent: None,
        }];
        let items = vec![item("m1", 200), item("m2", 100), item("m3", 300)];
        let mut r = ChaosReport::default();
        check_resent(&results, &fifo, &items, &mut r);
        assert_eq!(r.sent_after_sent, 2, "{:?}", r.problems);
    }

    #[test]
    fn copies_sent_before_the_mark_or_of_unmarked_messages_do_not_count() {
        let results = vec![
            json!({"message_id": "q1", "outbox_message_id": "m1", "sent_at_ms": 150}),
            json!({"message_id": "q2", "outbox_message_id": "m1", "sent_at_ms": 199}),
            json!({"message_id": "q3", "outbox_message_id": "pending", "sent_at_ms": 999}),
        ];
        let mut r = ChaosReport::default();
        check_resent(&results, &[], &[item("m1", 200)], &mut r);
        assert_eq!(r.sent_after_sent, 0);
    }
}
