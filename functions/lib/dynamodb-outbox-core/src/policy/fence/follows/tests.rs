use super::*;
use crate::policy::fence::tests::{library, library_key};
use crate::policy::{Fence, fence_reads, fenced};

fn following(mut m: Member, key: &ItemKey) -> Member {
    m.follows = Some(key.clone());
    m
}

fn statuses(of: &[(&ItemKey, &str)]) -> HashMap<ItemKey, Option<String>> {
    of.iter()
        .map(|(k, s)| ((*k).clone(), Some((*s).to_owned())))
        .collect()
}

#[test]
fn a_fifo_member_whose_predecessor_the_index_does_not_list_yet_waits_for_it() {
    // A2 followed A1 in one transaction; its batch runs first and the index does not
    // list A1 yet (a GSI lags writes): the read finds nothing earlier.
    let a1 = library_key("A", 10, 1);
    let batch = [following(library("A", 10, 2, true), &a1)];
    let reads = fence_reads(&batch);
    let mut p = Pending::default();
    p.found(&reads[0], Vec::new(), true);
    assert_eq!(fenced(&batch, &p), vec![None], "before: sent out of order");
    let asked = predecessors(&batch);
    assert_eq!(asked, std::slice::from_ref(&a1));
    assert_eq!(p.add_predecessors(&asked, Some(&statuses(&[(&a1, "PENDING")]))), 1);
    assert_eq!(fenced(&batch, &p), vec![Some(Fence::behind(None))]);
}

#[test]
fn a_finished_predecessor_holds_nothing_and_one_that_cannot_be_read_holds() {
    let a1 = library_key("A", 10, 1);
    let batch = [following(library("A", 10, 2, true), &a1)];
    let reads = fence_reads(&batch);
    for (status, waits) in [("SENT", false), ("FAILED", false), ("PENDING (homed in another region)", true)] {
        let mut p = Pending::default();
        p.found(&reads[0], Vec::new(), true);
        p.add_predecessors(std::slice::from_ref(&a1), Some(&statuses(&[(&a1, status)])));
        assert_eq!(fenced(&batch, &p)[0].is_some(), waits, "{status}");
    }
    // Gone (its TTL after SENT): done.
    let mut gone = Pending::default();
    gone.found(&reads[0], Vec::new(), true);
    gone.add_predecessors(std::slice::from_ref(&a1), Some(&HashMap::new()));
    assert_eq!(fenced(&batch, &gone), vec![None]);
    // The read failed: not known to be done.
    let mut unread = Pending::default();
    unread.found(&reads[0], Vec::new(), true);
    unread.add_predecessors(std::slice::from_ref(&a1), None);
    assert_eq!(fenced(&batch, &unread), vec![Some(Fence::behind(None))]);
}

#[test]
fn only_fifo_members_predecessors_outside_the_batch_are_asked_once() {
    let (a1, a2) = (library_key("A", 10, 1), library_key("A", 10, 2));
    let batch = [
        following(library("A", 10, 2, true), &a1),
        following(library("A", 10, 3, true), &a2), // A2 is in the batch
        following(library("B", 10, 2, false), &library_key("B", 10, 1)), // standard route
        following(library("A", 10, 4, true), &a1), // the same key twice
    ];
    assert_eq!(predecessors(&batch), [a1]);
}
