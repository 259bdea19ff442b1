//! FIFO order: each group's first deliveries in commit order, repeats past the
//! queue's deduplication counted apart.

use super::{ChaosReport, Observed, failed, pending, problem};
use crate::chaos::workload::Planned;
use dynamodb_outbox_core::schema::OutboxItem;
use std::collections::BTreeMap;

pub(super) fn check_fifo(
    committed: &[&Planned],
    items: &BTreeMap<String, &OutboxItem>,
    seen: &Observed,
    r: &mut ChaosReport,
) {
    let mut want: BTreeMap<&str, Vec<&Planned>> = BTreeMap::new();
    for p in committed.iter().filter(|p| p.sequence.is_some()) {
        want.entry(p.aggregate.as_str()).or_default().push(p);
    }
    let mut got: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for d in &seen.fifo {
        let seqs = got.entry(d.group.as_str()).or_default();
        if seqs.contains(&d.sequence) {
            r.fifo_repeats += 1;
        } else {
            seqs.push(d.sequence);
        }
    }
    for (group, seqs) in &got {
        if !want.contains_key(group) {
            r.phantom += seqs.len();
            problem(
                r,
                format!("phantom: FIFO group {group} was never committed"),
            );
        }
    }
    for (group, want) in &want {
        let got = got.get(group).cloned().unwrap_or_default();
        // What must have arrived, in commit order: every message that did not end
        // FAILED (poison leaves a gap). Still-pending ones may only be missing at the
        // end: a later message delivered before a pending earlier one is out of order.
        let expected: Vec<(u64, bool)> = want
            .iter()
            .filter(|p| !failed(items, p))
            .filter_map(|p| Some((p.sequence?, pending(items, p))))
            .collect();
        if !delivered_in_order(&got, &expected) {
            r.fifo_violations += 1;
            let committed: Vec<u64> = expected.iter().map(|(s, _)| *s).collect();
            problem(
                r,
                format!("FIFO {group}: delivered {got:?}, committed {committed:?}"),
            );
        }
        for p in want {
            let delivered = p.sequence.is_some_and(|s| got.contains(&s));
            if !delivered && !failed(items, p) && !pending(items, p) {
                r.lost += 1;
                problem(r, format!("lost: FIFO {} never delivered", p.id));
            }
        }
    }
}

/// Whether `got` is `expected` (sequence, still pending) in order, each once, cut
/// short only where every message left is still pending.
fn delivered_in_order(got: &[u64], expected: &[(u64, bool)]) -> bool {
    got.len() <= expected.len()
        && got.iter().zip(expected).all(|(g, (e, _))| g == e)
        && expected[got.len()..].iter().all(|(_, pending)| *pending)
}

#[cfg(test)]
mod tests {
    use super::delivered_in_order;

    #[test]
    fn deliveries_in_commit_order_cut_short_by_pending_messages_are_no_violation() {
        let all_sent = [(0, false), (1, false), (2, false)];
        assert!(delivered_in_order(&[0, 1, 2], &all_sent));
        let tail_pending = [(0, false), (1, false), (2, true), (3, true)];
        assert!(delivered_in_order(&[0, 1], &tail_pending));
        assert!(delivered_in_order(&[], &[(0, true), (1, true)]));
    }

    #[test]
    fn a_gap_a_reordering_or_a_repeat_is_a_violation() {
        // 2 delivered while 1 is still pending: 1 will arrive after it.
        assert!(!delivered_in_order(
            &[0, 2],
            &[(0, false), (1, true), (2, false)]
        ));
        assert!(!delivered_in_order(&[1, 0], &[(0, false), (1, false)]));
        assert!(!delivered_in_order(&[0, 1, 1], &[(0, false), (1, false)]));
        // A SENT message that never arrived.
        assert!(!delivered_in_order(&[0], &[(0, false), (1, false)]));
    }
}
