//! Whether to read one more page of a discarded range: a pure decision over what the
//! pages so far showed, so the stopping rule is tested without a stream.
//!
//! `GetRecords` may answer an empty page while the shard iterator is still open and
//! records follow (the Streams API documents it: a page covers a slice of the shard,
//! and a slice can be empty). So an empty page says nothing about the range; only
//! reaching its end sequence number, or a closed shard (no next iterator), does. An
//! open shard whose end never shows (the stream's newest records are being written
//! now) must not keep the function reading until its timeout: a bound on pages and on
//! time stops it, and the range is reported for a retry rather than called done.

use super::range::compare_sequence;
use std::cmp::Ordering;

/// Pages read for one range at most. A discarded batch holds at most 10,000 records
/// and `GetRecords` returns up to 1,000 a page, so a range needs ten full pages; the
/// rest of the bound is for empty pages. At the five calls a second a shard allows,
/// 100 pages take about 20 s, inside the function's 60 s.
pub(crate) const MAX_PAGES_PER_RANGE: u32 = 100;

/// What one page showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page<'a> {
    /// The sequence number of the page's last record; `None` for an empty page.
    pub(crate) last_sequence: Option<&'a str>,
    /// Whether the page came with a next iterator (the shard is still open, or has
    /// records left).
    pub(crate) has_next: bool,
}

/// What to do after a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Read the next page.
    Continue,
    /// The whole range has been read.
    Done,
    /// A bound stopped the reading before the range's end: report it for a retry.
    Stopped(Bound),
}

/// The bound that stopped a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// [`MAX_PAGES_PER_RANGE`] pages read.
    Pages,
    /// The invocation's time for reading is used up.
    Time,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Pages => write!(f, "{MAX_PAGES_PER_RANGE} pages read"),
            Bound::Time => f.write_str("the invocation's time for reading is used up"),
        }
    }
}

/// Reading one range: its end, the pages read so far, and when to stop starting
/// new pages (epoch ms).
#[derive(Debug, Clone)]
pub(crate) struct Progress<'a> {
    end_sequence: &'a str,
    pages: u32,
    stop_at_ms: i64,
}

impl<'a> Progress<'a> {
    /// Reading a range that ends at `end_sequence`, starting nothing at or after
    /// `stop_at_ms`.
    pub(crate) fn new(end_sequence: &'a str, stop_at_ms: i64) -> Self {
        Progress {
            end_sequence,
            pages: 0,
            stop_at_ms,
        }
    }

    /// Whether a record of the page belongs to the range (at or before its end).
    pub(crate) fn within(&self, sequence: &str) -> bool {
        compare_sequence(sequence, self.end_sequence) != Ordering::Greater
    }

    /// After `page`, read at `now_ms`: go on, done, or stopped by a bound. Reaching
    /// the end (a record at or past it) or a closed shard is done; an empty page is
    /// neither, whatever came before it.
    pub(crate) fn after(&mut self, page: Page<'_>, now_ms: i64) -> Next {
        self.pages = self.pages.saturating_add(1);
        let reached_end = page
            .last_sequence
            .is_some_and(|seq| compare_sequence(seq, self.end_sequence) != Ordering::Less);
        if reached_end || !page.has_next {
            Next::Done
        } else if self.pages >= MAX_PAGES_PER_RANGE {
            Next::Stopped(Bound::Pages)
        } else if now_ms >= self.stop_at_ms {
            Next::Stopped(Bound::Time)
        } else {
            Next::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: &str = "800000000000000000105";

    fn page(last: Option<&str>) -> Page<'_> {
        Page {
            last_sequence: last,
            has_next: true,
        }
    }

    /// Feeds `pages` in order, at time 0, and returns each decision until the first
    /// that is not `Continue`.
    fn read(pages: &[Page<'_>], stop_at_ms: i64) -> Vec<Next> {
        let mut progress = Progress::new(END, stop_at_ms);
        let mut seen = Vec::new();
        for p in pages {
            let next = progress.after(*p, 0);
            seen.push(next);
            if next != Next::Continue {
                break;
            }
        }
        seen
    }

    #[test]
    fn empty_pages_before_the_records_are_read_past_until_the_range_ends() {
        // Before, the first empty page ended the range: the records after it were
        // never adopted.
        let pages = [
            page(None),
            page(None),
            page(Some("800000000000000000100")),
            page(None),
            page(Some("800000000000000000105")),
        ];
        assert_eq!(
            read(&pages, i64::MAX),
            [
                Next::Continue,
                Next::Continue,
                Next::Continue,
                Next::Continue,
                Next::Done
            ]
        );
    }

    #[test]
    fn a_record_past_the_end_or_a_closed_shard_ends_the_range() {
        assert_eq!(
            read(&[page(Some("800000000000000000999"))], i64::MAX),
            [Next::Done]
        );
        let closed = Page {
            last_sequence: None,
            has_next: false,
        };
        assert_eq!(
            read(&[page(None), closed], i64::MAX),
            [Next::Continue, Next::Done]
        );
    }

    #[test]
    fn an_open_shard_that_never_reaches_the_end_stops_at_the_page_bound() {
        let empties = vec![page(None); 500];
        let seen = read(&empties, i64::MAX);
        assert_eq!(seen.len(), MAX_PAGES_PER_RANGE as usize);
        assert_eq!(seen.last(), Some(&Next::Stopped(Bound::Pages)));
    }

    #[test]
    fn reading_stops_when_the_invocation_has_no_time_left() {
        assert_eq!(read(&[page(None)], 0), [Next::Stopped(Bound::Time)]);
        // The end reached at the last moment is still done, not stopped.
        assert_eq!(read(&[page(Some(END))], 0), [Next::Done]);
    }

    #[test]
    fn records_at_or_before_the_end_belong_to_the_range() {
        let progress = Progress::new(END, 0);
        assert!(progress.within("800000000000000000100"));
        assert!(progress.within(END));
        assert!(!progress.within("800000000000000000106"));
    }
}
