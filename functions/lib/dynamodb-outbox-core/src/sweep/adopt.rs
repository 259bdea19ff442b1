//! Scan mode: adopting pending items a sweep would not find — written without the
//! index attributes, or with values no sweep claims — into the index. A bounded
//! parallel scan per sweep; each segment continues where the last sweep stopped, and
//! the cursors are saved in the table so that a cold start continues too.
//!
//! [`adopt_pass`] is the same adoption as one whole pass from the table's start, without
//! the cursors: `outbox-ops reconcile`, for a deployment whose sweeper does not scan
//! (`OUTBOX_SWEEP_SCAN_MODE=off`, the stacks' default).

use super::{SweepSummary, Sweeper, Window};
use crate::policy::adopted_due;
use crate::ports::{MarkOutcome, MessageSink, OutboxStore, PageToken, SweepStore, UnindexedItem};
use crate::schema::SweepShards;
use std::time::Duration;

/// What one segment's share of a sweep did.
#[derive(Debug, Default)]
struct SegmentRun {
    scanned: u64,
    adopted: usize,
    errors: usize,
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// Adopts what the scan finds, every segment concurrently.
    pub(super) async fn adopt_unindexed(
        &self,
        (segments, page_size, pages): (u32, i32, u32),
        window: &Window,
        summary: &mut SweepSummary,
    ) {
        let runs = (0..segments)
            .map(|segment| self.adopt_segment(segment, segments, (page_size, pages), window));
        for run in futures::future::join_all(runs).await {
            summary.scan_items_read += run.scanned;
            summary.adopted += run.adopted;
            summary.errors += run.errors;
        }
    }

    /// Reads a bounded number of pages of one segment from its saved cursor, adopting
    /// what it finds, and saves where it stopped. A page that cannot be read leaves
    /// the cursor where it was.
    async fn adopt_segment(
        &self,
        segment: u32,
        segments: u32,
        (page_size, pages): (i32, u32),
        window: &Window,
    ) -> SegmentRun {
        let mut run = SegmentRun::default();
        let mut start: Option<PageToken> = match self.store().scan_cursor(segment, segments).await {
            Ok(cursor) => cursor,
            Err(e) => {
                tracing::warn!(segment, error = %e, "could not read the scan cursor; scanning from the start");
                run.errors += 1;
                None
            }
        };
        for _ in 0..pages {
            let page = match self
                .store()
                .unindexed_page(segment, segments, page_size, start.clone())
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(segment, error = %e, "adoption scan failed; the next sweep retries");
                    run.errors += 1;
                    return run;
                }
            };
            run.scanned += page.scanned;
            start = page.next;
            let adoption = Adoption {
                shards: &self.config.publisher.key_names.sweep_shards,
                grace: self.config.grace,
                now_ms: window.budget.now_ms,
            };
            run.adopted += adoption.adopt_all(self.store(), page.items).await;
            if start.is_none() || self.expired(window) {
                break;
            }
        }
        if let Err(e) = self
            .store()
            .save_scan_cursor(segment, segments, start.as_ref())
            .await
        {
            tracing::warn!(segment, error = %e, "could not save the scan cursor; the next sweep repeats these pages");
            run.errors += 1;
        }
        run
    }
}

/// How an item found outside the index goes into it: its shard, and due `grace` after
/// its write (so the stream path has its chance first).
struct Adoption<'a> {
    shards: &'a SweepShards,
    grace: Duration,
    now_ms: i64,
}

impl Adoption<'_> {
    /// Puts `items` into the index, each conditional on it being unchanged since the
    /// scan read it; returns how many went in. One that cannot is left for the next
    /// scan to find again.
    async fn adopt_all<S: SweepStore>(&self, store: &S, items: Vec<UnindexedItem>) -> usize {
        let mut adopted = 0;
        for item in items {
            let due = adopted_due(item.created_at_ms, self.now_ms, self.grace);
            let shard = self.shards.shard_of(&item.key.pk);
            match store.adopt(&item.key, &shard, due, &item.index).await {
                Ok(MarkOutcome::Marked) => adopted += 1,
                Ok(MarkOutcome::AlreadyFinished) => {}
                Err(e) => {
                    tracing::warn!(aggregate = %item.key.pk, sk = %item.key.sk, error = %e, "could not adopt; the scan finds it again");
                }
            }
        }
        adopted
    }
}

/// What one whole adoption pass did ([`adopt_pass`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassSummary {
    /// Table items the pass read (the scans' `ScannedCount`), business items included.
    pub scanned: u64,
    /// Pending items put into the index: the sweeper publishes them once due.
    pub adopted: usize,
    /// Segments that stopped at a page they could not read: the pass is incomplete.
    pub failed_segments: u32,
    /// Why the first of them stopped.
    pub error: Option<String>,
}

/// One whole pass of the adoption scan over the table, `segments` segments at once,
/// from the start and without the sweeper's cursors (which it neither reads nor moves):
/// every `PENDING` outbox item a sweep would not find goes into the sweeper index, due
/// `grace` after its write. What a sweeper in scan mode `off` never does by itself;
/// `outbox-ops reconcile` runs it after a stream range was lost.
pub async fn adopt_pass<S: SweepStore>(
    store: &S,
    shards: &SweepShards,
    grace: Duration,
    now_ms: i64,
    (segments, page_size): (u32, i32),
) -> PassSummary {
    let adoption = Adoption {
        shards,
        grace,
        now_ms,
    };
    let segments = segments.max(1);
    let runs = (0..segments).map(|segment| pass_segment(store, &adoption, segment, segments, page_size));
    let mut summary = PassSummary::default();
    for run in futures::future::join_all(runs).await {
        summary.scanned += run.scanned;
        summary.adopted += run.adopted;
        summary.failed_segments += u32::from(run.failure.is_some());
        summary.error = summary.error.or(run.failure);
    }
    summary
}

/// What one segment of a pass did.
#[derive(Debug, Default)]
struct PassRun {
    scanned: u64,
    adopted: usize,
    /// Why it stopped before its end.
    failure: Option<String>,
}

/// Every page of one segment; the first page that cannot be read ends it.
async fn pass_segment<S: SweepStore>(
    store: &S,
    adoption: &Adoption<'_>,
    segment: u32,
    segments: u32,
    page_size: i32,
) -> PassRun {
    let mut run = PassRun::default();
    let mut start = None;
    loop {
        let page = match store.unindexed_page(segment, segments, page_size, start).await {
            Ok(page) => page,
            Err(e) => {
                run.failure = Some(e.to_string());
                return run;
            }
        };
        run.scanned += page.scanned;
        run.adopted += adoption.adopt_all(store, page.items).await;
        match page.next {
            Some(next) => start = Some(next),
            None => return run,
        }
    }
}
