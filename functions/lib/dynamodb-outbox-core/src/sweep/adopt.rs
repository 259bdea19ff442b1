//! Scan mode: adopting pending items a sweep would not find — written without the
//! index attributes, or with values no sweep claims — into the index. A bounded
//! parallel scan per sweep; each segment continues where the last sweep stopped, and
//! the cursors are saved in the table so that a cold start continues too.

use super::{SweepSummary, Sweeper, Window};
use crate::policy::adopted_due;
use crate::ports::{MarkOutcome, MessageSink, OutboxStore, PageToken, SweepStore};

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
            for item in page.items {
                let due = adopted_due(item.created_at_ms, window.budget.now_ms, self.config.grace);
                let shard = self.config.publisher.key_names.sweep_shards.shard_of(&item.key.pk);
                match self
                    .store()
                    .adopt(&item.key, &shard, due, &item.index)
                    .await
                {
                    Ok(MarkOutcome::Marked) => run.adopted += 1,
                    Ok(MarkOutcome::AlreadyFinished) => {}
                    Err(e) => {
                        tracing::warn!(aggregate = %item.key.pk, sk = %item.key.sk, error = %e, "could not adopt; the scan finds it again");
                    }
                }
            }
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
