//! Sequenced sort keys: `MESSAGE#SEQ#<sequence>#<position>#<EVENT>#<id>`, the key of a
//! message whose producer gave it the aggregate's sequence number (its version,
//! committed in the same transaction under a condition).
//!
//! The sequence is zero-padded to 20 digits (every `u64`) and the position (the
//! message's place among its aggregate's messages in one transaction) to 2 (a
//! transaction holds at most 100 actions), so the keys of one aggregate sort in
//! commit order. That is what the order fence reads: the outbox item just before a
//! message in its partition's key range, strongly consistently — a read AWS makes
//! reliable whatever the stream's record order, the parallelization factor or the
//! index's lag, and whose cost does not grow with the partition or the backlog
//! (`policy::fence_reads`).

use super::ItemKey;

/// What every sequenced sort key begins with: the lower bound of the fence's read.
pub const SEQUENCED_PREFIX: &str = "MESSAGE#SEQ#";

/// The event name a message without a sequence may not take: its sort key would
/// begin like a sequenced one.
pub const RESERVED_EVENT: &str = "SEQ";

/// Where a sequenced message stands among its aggregate's: its sequence, then its
/// position in its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SequencePlace {
    /// The aggregate's sequence number the producer committed it with.
    pub sequence: u64,
    /// Its place among the aggregate's messages of the same transaction.
    pub position: u8,
}

/// The sort key of a message with a sequence; `position` is below 100 (a transaction
/// holds at most 100 actions), a larger one counts as 99.
/// (`MESSAGE#SEQ#00000000000000000042#01#OrderShipped#<id>` for 42 at place 1.)
pub fn sequenced_sort_key(sequence: u64, position: u8, event: &str, id: &str) -> String {
    let position = position.min(99);
    format!("{SEQUENCED_PREFIX}{sequence:020}#{position:02}#{event}#{id}")
}

/// The place a sequenced sort key gives, or `None` for any other key.
pub fn sequence_place(sk: &str) -> Option<SequencePlace> {
    let rest = sk.strip_prefix(SEQUENCED_PREFIX)?;
    let (sequence, rest) = fixed_digits(rest, 20)?;
    let (position, _) = fixed_digits(rest, 2)?;
    Some(SequencePlace {
        sequence,
        position: u8::try_from(position).ok()?,
    })
}

/// Whether `key` is a sequenced message's.
pub fn is_sequenced(key: &ItemKey) -> bool {
    sequence_place(&key.sk).is_some()
}

/// `width` ASCII digits then `#`: their value and what follows.
fn fixed_digits(s: &str, width: usize) -> Option<(u64, &str)> {
    let digits = s.get(..width)?;
    let rest = s.get(width..)?.strip_prefix('#')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequenced_keys_sort_as_their_places_do() {
        let keys = [
            sequenced_sort_key(9, 0, "B", "z"),
            sequenced_sort_key(10, 0, "A", "a"),
            sequenced_sort_key(10, 1, "A", "0"),
            sequenced_sort_key(u64::MAX, 99, "A", "0"),
        ];
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, keys);
        let places: Vec<_> = keys.iter().map(|k| sequence_place(k)).collect();
        assert!(places.windows(2).all(|w| w[0] < w[1]), "{places:?}");
    }

    #[test]
    fn a_sequenced_key_reads_back_its_place() {
        let sk = sequenced_sort_key(42, 1, "OrderShipped", "0190f-id");
        assert_eq!(sk, "MESSAGE#SEQ#00000000000000000042#01#OrderShipped#0190f-id");
        let place = SequencePlace {
            sequence: 42,
            position: 1,
        };
        assert_eq!(sequence_place(&sk), Some(place));
    }

    #[test]
    fn other_keys_have_no_place() {
        for sk in [
            "MESSAGE#SEQ#0190f2c4-0000-7000-8000-000000000000",
            "MESSAGE#SEQ#42#00#A#id",
            "MESSAGE#SEQ#0000000000000000004x#00#A#id",
            "MESSAGE#SEQ#00000000000000000042#0#A#id",
            "MESSAGE#SEQ#00000000000000000042",
            "MESSAGE#ORDER#0190f2c4",
            "ORDER#42",
        ] {
            assert_eq!(sequence_place(sk), None, "{sk}");
        }
    }
}
