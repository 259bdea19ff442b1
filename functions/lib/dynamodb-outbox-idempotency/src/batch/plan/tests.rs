use super::*;
use std::collections::BTreeMap;

fn msg(id: &str, receives: Option<&str>, group: Option<&str>) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    if let Some(n) = receives {
        m.attributes.insert(RECEIVE_COUNT.into(), n.into());
    }
    if let Some(g) = group {
        m.attributes.insert("MessageGroupId".into(), g.into());
    }
    m
}

fn received(id: &str, n: u32) -> SqsMessage {
    msg(id, Some(&n.to_string()), None)
}

/// The plan's lanes as message ids.
fn ids(messages: &[SqsMessage], lanes: &[Lane]) -> Vec<Vec<String>> {
    lanes
        .iter()
        .map(|lane| {
            lane.iter()
                .map(|&i| messages[i].message_id.clone().unwrap_or_default())
                .collect()
        })
        .collect()
}

#[test]
fn the_receive_count_is_read_from_the_attribute_and_is_1_when_it_says_nothing() {
    assert_eq!(receive_count(&msg("a", Some("3"), None)), 3);
    for unreadable in [None, Some(""), Some("many"), Some("-2"), Some("0")] {
        assert_eq!(
            receive_count(&msg("a", unreadable, None)),
            1,
            "{unreadable:?}"
        );
    }
}

#[test]
fn a_batch_received_for_the_first_time_runs_together_in_batch_order() {
    let batch = vec![received("c", 1), msg("a", None, None), received("b", 1)];
    let plan = plan(&batch, true);
    assert!(plan.one_at_a_time.is_empty());
    assert_eq!(ids(&batch, &plan.together), [["c"], ["a"], ["b"]]);
}

#[test]
fn messages_received_before_run_first_one_at_a_time_nearest_to_their_limit_first() {
    let batch = vec![
        received("fresh-1", 1),
        received("twice", 2),
        received("four-times", 4),
        received("fresh-2", 1),
        received("three-times", 3),
    ];
    let plan = plan(&batch, true);
    assert_eq!(
        ids(&batch, &plan.one_at_a_time),
        [["four-times"], ["three-times"], ["twice"]]
    );
    assert_eq!(ids(&batch, &plan.together), [["fresh-1"], ["fresh-2"]]);
}

#[test]
fn equal_counts_go_by_message_id_reversed_from_one_count_to_the_next() {
    let at = |n| vec![received("m2", n), received("m1", n), received("m3", n)];
    let batch = at(2);
    assert_eq!(
        ids(&batch, &plan(&batch, false).one_at_a_time),
        [["m1"], ["m2"], ["m3"]]
    );
    let batch = at(3);
    assert_eq!(
        ids(&batch, &plan(&batch, false).one_at_a_time),
        [["m3"], ["m2"], ["m1"]]
    );
}

#[test]
fn a_fifo_group_holding_a_redelivered_message_is_a_suspect_as_a_whole_and_keeps_its_order() {
    let batch = vec![
        msg("a1", Some("2"), Some("A")),
        msg("b1", Some("1"), Some("B")),
        msg("a2", Some("1"), Some("A")),
        msg("b2", Some("1"), Some("B")),
    ];
    let plan = plan(&batch, true);
    assert_eq!(ids(&batch, &plan.one_at_a_time), [["a1", "a2"]]);
    assert_eq!(ids(&batch, &plan.together), [["b1", "b2"]]);
}

#[test]
fn finished_messages_are_deleted_early_only_with_a_deleter_and_a_neighbour_that_could_crash() {
    let two = vec![received("a", 1), received("b", 1)];
    assert!(plan(&two, true).delete_early);
    assert!(!plan(&two, false).delete_early);
    assert!(!plan(&two[..1], true).delete_early, "nothing runs after it");
}

#[test]
fn the_time_left_keeps_the_margin_but_at_most_half_of_it() {
    let margin = Duration::from_secs(1);
    assert_eq!(
        time_left(0, 30_000, margin),
        Some(Duration::from_millis(29_000))
    );
    assert_eq!(
        time_left(0, 1_000, margin),
        Some(Duration::from_millis(500))
    );
}

#[test]
fn a_deadline_that_cannot_be_real_is_no_deadline() {
    let margin = Duration::from_secs(1);
    let now = 1_700_000_000_000;
    assert_eq!(time_left(now, now - 4_000, margin), None, "past it");
    assert_eq!(time_left(now, 0, margin), None, "none sent");
    assert_eq!(time_left(now, now / 1_000 + 30, margin), None, "seconds");
    assert_eq!(
        time_left(now, now + 16 * 60 * 1_000, margin),
        None,
        "past Lambda's longest timeout"
    );
    assert_eq!(
        time_left(now, now + 15 * 60 * 1_000, margin),
        Some(Duration::from_millis(15 * 60 * 1_000 - 1_000))
    );
}

#[test]
fn what_did_not_finish_is_reported_unfinished_in_batch_order() {
    let batch = vec![received("a", 1), received("b", 1), received("c", 1)];
    let done = |id: &str| MessageOutcome::<(), ()> {
        message_id: id.to_owned(),
        outbox_message_id: None,
        group_id: None,
        trace_id: None,
        result: Ok(()),
    };
    let outcomes = settle(&batch, vec![(2, done("c")), (0, done("a"))]);
    let ids: Vec<&str> = outcomes.iter().map(|o| o.message_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(outcomes[0].result.is_ok() && outcomes[2].result.is_ok());
    assert!(matches!(
        outcomes[1].result,
        Err(MessageFailure::Unfinished)
    ));
}

/// Redeliveries of one batch holding a message that kills the process whenever it
/// runs, with the worst timing: a crash while the never-received messages run
/// together takes all of them down unfinished. What ran before the crash was
/// deleted; the rest is charged a receive, and a message received `max_receives`
/// times without being deleted goes to the dead-letter queue. Returns what did.
fn dead_letters(size: usize, poison: usize, max_receives: u32) -> Vec<String> {
    let mut queue: BTreeMap<String, u32> = (0..size).map(|i| (format!("m{i}"), 0)).collect();
    let poison = format!("m{poison}");
    let mut dead = Vec::new();
    while !queue.is_empty() {
        let batch: Vec<SqsMessage> = queue.iter().map(|(id, n)| received(id, n + 1)).collect();
        queue.values_mut().for_each(|n| *n += 1);
        let plan = plan(&batch, true);
        let order = ids(&batch, &plan.one_at_a_time).into_iter().flatten();
        let mut crashed = false;
        for id in order {
            if id == poison {
                crashed = true;
                break;
            }
            queue.remove(&id);
        }
        let fresh: Vec<String> = ids(&batch, &plan.together).into_iter().flatten().collect();
        if !crashed && !fresh.contains(&poison) {
            for id in &fresh {
                queue.remove(id);
            }
        }
        let spent: Vec<String> = queue
            .iter()
            .filter(|&(_, &n)| n >= max_receives)
            .map(|(id, _)| id.clone())
            .collect();
        for id in spent {
            queue.remove(&id);
            dead.push(id);
        }
    }
    dead
}

#[test]
fn with_three_receives_or_more_only_the_message_that_kills_the_process_is_dead_lettered() {
    for max_receives in 3..=6 {
        for poison in 0..10 {
            assert_eq!(
                dead_letters(10, poison, max_receives),
                [format!("m{poison}")],
                "maxReceiveCount {max_receives}, poison m{poison}"
            );
        }
    }
}

/// A small deterministic generator (splitmix64): the simulation below draws from it.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = usize::try_from(self.next() % (i as u64 + 1)).unwrap_or(0);
            items.swap(i, j);
        }
    }
}

/// `count` messages through a consumer whose process dies after `crash` of its fresh
/// stores (the store took effect; a redelivered message's store is refused and
/// cannot crash: the demo's `--consumer-crash`), batches of ten drawn from what is
/// visible, each run as the plan says and deleted when done. A crash charges every
/// message of its batch that was not deleted; one received `max_receives` times goes
/// to the dead-letter queue. Returns how many did.
fn dead_lettered_by_random_crashes(
    count: usize,
    crash: f64,
    max_receives: u32,
    seed: u64,
) -> usize {
    let mut draws = Draws(seed);
    // (id, receives so far, stored)
    let mut visible: Vec<(String, u32, bool)> =
        (0..count).map(|i| (format!("m{i:04}"), 0, false)).collect();
    let mut dead = 0;
    while !visible.is_empty() {
        draws.shuffle(&mut visible);
        let take = visible.len().min(10);
        let mut batch: Vec<(String, u32, bool)> = visible.drain(..take).collect();
        let spent = batch.iter().filter(|m| m.1 >= max_receives).count();
        dead += spent;
        batch.retain(|m| m.1 < max_receives);
        batch.iter_mut().for_each(|m| m.1 += 1);
        let messages: Vec<SqsMessage> = batch.iter().map(|m| received(&m.0, m.1)).collect();
        let plan = plan(&messages, true);
        let order = plan.one_at_a_time.iter().chain(&plan.together).flatten();
        let mut done = vec![false; batch.len()];
        for &i in order {
            if !batch[i].2 {
                batch[i].2 = true;
                if draws.chance(crash) {
                    break;
                }
            }
            done[i] = true;
        }
        visible.extend(
            batch
                .into_iter()
                .zip(done)
                .filter(|(_, d)| !d)
                .map(|(m, _)| m),
        );
    }
    dead
}

/// What the isolation of suspects cannot do: when crashes are frequent and random (no
/// one poison message), each crash charges the neighbours behind it, and a batch with
/// several messages at their last receive loses those behind the crash. A larger
/// receive budget absorbs it, which is why the orders example's queue allows 10
/// receives. Batches here are drawn afresh from the visible messages on every receive,
/// which mixes the charged ones more than a queue does (the demo, with 5 receives,
/// lost 5 of 900 where this loses about 45).
#[test]
fn frequent_random_crashes_dead_letter_innocent_messages_with_five_receives_far_fewer_with_ten() {
    let lost = |max_receives| {
        (0..20)
            .map(|seed| dead_lettered_by_random_crashes(900, 0.3, max_receives, seed))
            .collect::<Vec<_>>()
    };
    let (five, ten) = (lost(5), lost(10));
    eprintln!(
        "dead-lettered of 900 per run, 30% of stores crashing: 5 receives {five:?}, 10 receives {ten:?}"
    );
    assert!(five.iter().all(|&n| n > 0), "{five:?}");
    // At most one message in a thousand, over the 20 runs.
    assert!(ten.iter().sum::<usize>() * 1000 <= 20 * 900, "{ten:?}");
}
