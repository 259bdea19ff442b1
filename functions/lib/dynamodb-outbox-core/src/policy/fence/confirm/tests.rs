use super::super::tests::{library, library_key};
use super::*;
use crate::policy::{Fence, FenceRead, Scope, Sibling, fence_reads, fenced};

fn statuses(of: &[(&ItemKey, &str)]) -> HashMap<ItemKey, Option<String>> {
    of.iter()
        .map(|(k, s)| ((*k).clone(), Some((*s).to_owned())))
        .collect()
}

fn from_index(reads: &[FenceRead], siblings: Vec<Sibling>) -> Pending {
    let mut p = Pending::default();
    p.found(&reads[0], siblings, true);
    p
}

#[test]
fn a_sibling_the_index_still_lists_but_the_table_has_sent_does_not_fence() {
    // Before, A2 was fenced behind A1, which the previous batch had just marked SENT
    // (the index lagged): deferred to the sweeper, and the burst behind it.
    let batch = [library("A", 20, 0, true)];
    let reads = fence_reads(&batch);
    let a1 = library_key("A", 10, 0);
    let mut p = from_index(&reads, vec![Sibling::indexed(a1.clone(), 500)]);
    let asked = to_confirm(&batch, &p, CONFIRM_LIMIT);
    assert_eq!(asked, std::slice::from_ref(&a1));
    assert_eq!(p.confirm(&asked, &statuses(&[(&a1, "SENT")])), 1);
    assert_eq!(fenced(&batch, &p), vec![None]);
    // Gone from the table (TTL) is finished too.
    let mut gone = from_index(&reads, vec![Sibling::indexed(a1.clone(), 500)]);
    gone.confirm(&asked, &HashMap::new());
    assert_eq!(fenced(&batch, &gone), vec![None]);
}

#[test]
fn a_sibling_the_table_confirms_pending_still_fences() {
    let batch = [library("A", 20, 0, true)];
    let reads = fence_reads(&batch);
    let a1 = library_key("A", 10, 0);
    let mut p = from_index(&reads, vec![Sibling::indexed(a1.clone(), 500)]);
    let asked = to_confirm(&batch, &p, CONFIRM_LIMIT);
    assert_eq!(p.confirm(&asked, &statuses(&[(&a1, "PENDING")])), 0);
    assert_eq!(fenced(&batch, &p), vec![Some(Fence::behind(Some(500)))]);
}

#[test]
fn only_index_siblings_that_would_fence_are_asked_nearest_first_aggregates_in_turn() {
    let batch = [
        library("A", 20, 0, true),
        library("B", 20, 0, true),
        library("C", 20, 0, false),
    ];
    let reads = fence_reads(&batch);
    let (a1, a2, a3) = (
        library_key("A", 1, 0),
        library_key("A", 2, 0),
        library_key("A", 3, 0),
    );
    let (b1, b2) = (library_key("B", 1, 0), library_key("B", 2, 0));
    let later = library_key("A", 30, 0);
    let listed = [&a1, &a2, &a3, &b1, &b2, &later]
        .into_iter()
        .map(|k| Sibling::indexed(k.clone(), 1))
        .chain([Sibling::indexed(batch[0].key.clone(), 1)])
        .collect();
    let p = from_index(&reads, listed);
    // Not the later one, not the batch's own; the latest of each first.
    assert_eq!(to_confirm(&batch, &p, 3), [a3.clone(), b2, a2]);
    assert_eq!(to_confirm(&batch, &p, CONFIRM_LIMIT).len(), 5);
    // A partition read is consistent already: nothing to ask.
    let minimal = [Member {
        fifo: true,
        library: false,
        ..library("M", 20, 0, true)
    }];
    let partition = fence_reads(&minimal);
    assert!(matches!(partition[0].scope, Scope::Partition(_)));
    let mut q = Pending::default();
    q.found(
        &partition[0],
        vec![Sibling::read(library_key("M", 1, 0), None, Some(1), None)],
        true,
    );
    assert!(to_confirm(&minimal, &q, CONFIRM_LIMIT).is_empty());
    // And a standard-routed batch asks nothing.
    let standard = [library("A", 20, 0, false)];
    assert!(to_confirm(&standard, &p, CONFIRM_LIMIT).is_empty());
}

#[test]
fn a_sibling_pending_in_another_region_still_fences() {
    // Finding 3 of issue 36: A1 failed over to the surviving region reads here as
    // `PENDING (homed in another region)`; the confirmation took any status but exactly
    // `PENDING` as finished, so A2 went out on this region's FIFO queue before A1.
    let batch = [library("A", 20, 0, true)];
    let reads = fence_reads(&batch);
    let a1 = library_key("A", 10, 0);
    for still_pending in [crate::schema::PENDING_ELSEWHERE, "PENDING", "SENDING?"] {
        let mut p = from_index(&reads, vec![Sibling::indexed(a1.clone(), 500)]);
        let asked = to_confirm(&batch, &p, CONFIRM_LIMIT);
        assert_eq!(p.confirm(&asked, &statuses(&[(&a1, still_pending)])), 0);
        assert_eq!(
            fenced(&batch, &p),
            vec![Some(Fence::behind(Some(500)))],
            "{still_pending}"
        );
    }
    // Only the terminal states finish it.
    for finished in ["SENT", "FAILED"] {
        let mut p = from_index(&reads, vec![Sibling::indexed(a1.clone(), 500)]);
        let asked = to_confirm(&batch, &p, CONFIRM_LIMIT);
        assert_eq!(p.confirm(&asked, &statuses(&[(&a1, finished)])), 1);
    }
}
