//! How much of the sweeper index one round of a sweep reads: no more than the round
//! can claim. Claims move an item's `SweepDueAt` past the sweep's `now`, out of the
//! range the next round queries, so each round reads from the start of every shard
//! and finds only what is still unclaimed; reading a whole shard's due keys to claim
//! a round's worth of them made a drain read each key many times over (issue 38: 12
//! index items read per item drained).

/// How many due keys to ask each shard that may hold more for next, when the round
/// wants `wanted` keys, has `have`, and `open` shards may hold more: what is missing
/// spread evenly over them (rounded up: a round a few keys over is cheaper than
/// another pass), at least one (each shard's earliest due key tells the oldest
/// message's age) and at most a `page`. 0 when the round has enough or no shard is
/// left to read.
pub fn next_ask(wanted: usize, have: usize, open: usize, page: usize) -> usize {
    let missing = wanted.saturating_sub(have);
    if missing == 0 || open == 0 {
        return 0;
    }
    missing.div_ceil(open).clamp(1, page.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_asks_each_shard_for_its_share_of_what_it_can_claim() {
        // 1,000 a round over 16 shards: 63 each, not a page (or 1,000) each.
        assert_eq!(next_ask(1_000, 0, 16, 100), 63);
        // Twelve shards ran dry: the missing 748 from the four left, a page at most.
        assert_eq!(next_ask(1_000, 252, 4, 100), 100);
        assert_eq!(next_ask(1_000, 990, 4, 100), 3);
    }

    #[test]
    fn a_round_with_enough_or_nothing_left_to_read_asks_for_nothing() {
        assert_eq!(next_ask(1_000, 1_000, 16, 100), 0);
        assert_eq!(next_ask(1_000, 1_008, 16, 100), 0);
        assert_eq!(next_ask(1_000, 10, 0, 100), 0);
    }

    #[test]
    fn every_shard_is_asked_for_at_least_one_key() {
        // A round of 10 over 1,000 shards still reads each shard's earliest key.
        assert_eq!(next_ask(10, 0, 1_000, 100), 1);
        assert_eq!(next_ask(10, 0, 3, 0), 1, "a page of 0 reads one");
    }
}
