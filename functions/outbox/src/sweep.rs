//! The sweeper: recovers `PENDING` messages the stream path did not finish — a crash
//! between publish and mark, a destination that was down, a record that aged out of
//! the stream.
//!
//! It costs almost nothing when nothing is stuck: pending items carry `SweepShard`
//! and `SweepDueAt`, which put them in the sparse index `OutboxSweepIndex`; `SENT` and
//! `FAILED` items do not. A sweep queries each of the 16 shards for items due by now
//! (`KEYS_ONLY`), so with nothing stuck it reads 16 empty index partitions and no
//! table item, whatever the size of the table.
//!
//! For each due key the sweeper *claims* the item with one conditional update (still
//! `PENDING`, `SweepDueAt` unchanged since the query) that increments `RetryCount`,
//! moves `SweepDueAt` past the end of this invocation (a lease: a concurrent sweeper
//! will not take it) and returns the whole item. It then publishes through the same
//! [`Publisher::process`] as the stream publisher, which marks it `SENT`. A failed
//! attempt records `LastError` and the next due time, exponential backoff with jitter;
//! past the attempt limit the item is dead-lettered and marked `FAILED`.
//!
//! Minimal producers write no index attributes; [`ScanMode::On`] adopts their items
//! into the index with a bounded, resumable parallel scan.

use crate::config::{ConfigError, PublisherConfig, parse_or};
use crate::ports::{
    Claim, DueKey, MarkOutcome, MessageSink, OutboxStore, PageToken, StoreError, SweepStore,
};
use crate::publish::{Outcome, Poison, Publisher, Work, WorkItem, now_ms, poison_of};
use crate::schema::{self, ItemKey, LAST_ERROR, stable_hash, sweep_shard};
use futures::StreamExt;
use serde::Serialize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Names of the sweeper's variables (the publisher's are read too).
pub mod vars {
    /// Sweeper attempts before a message is given up on.
    pub const MAX_ATTEMPTS: &str = "OUTBOX_MAX_ATTEMPTS";
    /// Seconds after its write before an adopted item is due (scan mode).
    pub const GRACE_SECONDS: &str = "OUTBOX_SWEEP_GRACE_SECONDS";
    /// `on` to adopt items written without index attributes.
    pub const SCAN_MODE: &str = "OUTBOX_SWEEP_SCAN_MODE";
    /// First retry delay, seconds.
    pub const BASE_BACKOFF_SECONDS: &str = "OUTBOX_SWEEP_BASE_BACKOFF_SECONDS";
    /// Longest retry delay, seconds.
    pub const MAX_BACKOFF_SECONDS: &str = "OUTBOX_SWEEP_MAX_BACKOFF_SECONDS";
}

/// Whether the sweeper also scans for items without index attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanMode {
    /// Only the index (every producer using this library's API).
    #[default]
    Off,
    /// Also adopt items from minimal producers, with a bounded scan per run.
    On,
}

/// Bounds on one sweep, so that one invocation's work stays predictable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepLimits {
    /// Most due items taken in one sweep; the rest wait for the next.
    pub max_items: usize,
    /// Items claimed and published together (one `Publisher::process` call).
    pub chunk: usize,
    /// Index query page size.
    pub page_size: i32,
    /// Claims in flight at once.
    pub concurrency: usize,
    /// Parallel scan segments (scan mode).
    pub scan_segments: u32,
    /// Items each segment reads per page (scan mode).
    pub scan_page_size: i32,
    /// Pages each segment reads per sweep (scan mode); the next sweep continues.
    pub scan_pages_per_segment: u32,
}

impl Default for SweepLimits {
    fn default() -> Self {
        SweepLimits {
            max_items: 1000,
            chunk: 100,
            page_size: 100,
            concurrency: 16,
            scan_segments: 4,
            scan_page_size: 1000,
            scan_pages_per_segment: 2,
        }
    }
}

/// The sweeper's configuration: the publisher's, plus retry policy and scan mode.
#[derive(Debug, Clone)]
pub struct SweeperConfig {
    /// Routing, dead-letter queue, TTL: shared with the stream publisher.
    pub publisher: PublisherConfig,
    /// Attempts before giving up (`OUTBOX_MAX_ATTEMPTS`, default 8).
    pub max_attempts: u32,
    /// Grace before an adopted item is due (`OUTBOX_SWEEP_GRACE_SECONDS`, default 60).
    pub grace: Duration,
    /// Scan for unindexed items (`OUTBOX_SWEEP_SCAN_MODE`, default off).
    pub scan_mode: ScanMode,
    /// First retry delay (default 30 s).
    pub base_backoff: Duration,
    /// Longest retry delay (default 15 min).
    pub max_backoff: Duration,
    /// Bounds per sweep.
    pub limits: SweepLimits,
}

impl SweeperConfig {
    /// Defaults around a publisher configuration.
    pub fn new(publisher: PublisherConfig) -> Self {
        SweeperConfig {
            publisher,
            max_attempts: 8,
            grace: Duration::from_secs(60),
            scan_mode: ScanMode::Off,
            base_backoff: Duration::from_secs(30),
            max_backoff: Duration::from_secs(900),
            limits: SweepLimits::default(),
        }
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let publisher = PublisherConfig::from_lookup(&lookup)?;
        let max_attempts = parse_or(&lookup, vars::MAX_ATTEMPTS, 8u32, |n| {
            (1..=100)
                .contains(n)
                .then_some(())
                .ok_or("must be between 1 and 100 attempts")
        })?;
        let grace = parse_or(&lookup, vars::GRACE_SECONDS, 60u64, |s| {
            (*s <= 86_400)
                .then_some(())
                .ok_or("must be at most 86400 seconds (stream records live 24 hours)")
        })?;
        let base = parse_or(&lookup, vars::BASE_BACKOFF_SECONDS, 30u64, |s| {
            (1..=86_400)
                .contains(s)
                .then_some(())
                .ok_or("must be between 1 and 86400 seconds")
        })?;
        let max = parse_or(&lookup, vars::MAX_BACKOFF_SECONDS, 900u64, |s| {
            (1..=86_400)
                .contains(s)
                .then_some(())
                .ok_or("must be between 1 and 86400 seconds")
        })?;
        if max < base {
            return Err(ConfigError::Invalid {
                name: vars::MAX_BACKOFF_SECONDS,
                reason: format!(
                    "`{max}` is below {} (`{base}`): the longest delay cannot be shorter than the first",
                    vars::BASE_BACKOFF_SECONDS
                ),
            });
        }
        let scan_mode = match lookup(vars::SCAN_MODE)
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("" | "off") => ScanMode::Off,
            Some("on") => ScanMode::On,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: vars::SCAN_MODE,
                    reason: format!("`{other}` is neither `on` nor `off`"),
                });
            }
        };
        Ok(SweeperConfig {
            publisher,
            max_attempts,
            grace: Duration::from_secs(grace),
            scan_mode,
            base_backoff: Duration::from_secs(base),
            max_backoff: Duration::from_secs(max),
            limits: SweepLimits::default(),
        })
    }
}

/// What one sweep did, for logs, metrics and the Lambda response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepSummary {
    /// Due keys read from the index.
    pub found: usize,
    /// Items claimed for an attempt.
    pub claimed: usize,
    /// Published by this sweep (metric `RecoveredBySweeper`).
    pub published: usize,
    /// Of those, marked `SENT` by this sweep (the others were finished concurrently
    /// by the publisher, or the mark failed and the lease will bring them back).
    pub marked: usize,
    /// Dead-lettered and marked `FAILED`.
    pub failed: usize,
    /// Attempts that failed and were rescheduled with backoff (metric `SweepRetries`).
    pub retried: usize,
    /// Not attempted: finished or claimed by someone else since the query, left for
    /// the next sweep by the time budget or the per-run bound, or a store error.
    pub skipped: usize,
    /// Unindexed items adopted into the index (scan mode).
    pub adopted: usize,
    /// Index items read by the queries (their `ScannedCount`).
    pub index_items_read: u64,
    /// Table items read by the adoption scan (its `ScannedCount`; 0 with scan mode off).
    pub scan_items_read: u64,
    /// Index queries made.
    pub index_queries: usize,
    /// Age of the oldest message found due: from its `CreatedAt` when claimed, else
    /// how long it has been due (a lower bound). Messages waiting out a backoff are
    /// counted when they come due again.
    pub oldest_pending_age_ms: Option<i64>,
}

/// Exponential backoff with "equal jitter": the delay before attempt `attempt + 1`
/// is between half and all of `base * 2^(attempt - 1)`, capped at `max`. Half fixed
/// keeps delays growing from one attempt to the next; half random spreads retries of
/// messages that failed together. Once capped, delays vary between half and all of
/// `max`. `jitter` is in `[0, 1)`.
pub fn backoff(attempt: u32, base: Duration, max: Duration, jitter: f64) -> Duration {
    let exp = attempt.saturating_sub(1).min(31);
    let full = base.saturating_mul(1u32 << exp).min(max);
    let half = full / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

/// A jitter fraction in `[0, 1)` from the item and the attempt: deterministic, so
/// the logic stays pure, yet different between items that failed together.
pub fn jitter_of(key: &ItemKey, attempt: u32) -> f64 {
    let mut bytes = Vec::with_capacity(key.pk.len() + key.sk.len() + 5);
    bytes.extend_from_slice(key.pk.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(key.sk.as_bytes());
    bytes.extend_from_slice(&attempt.to_be_bytes());
    (stable_hash(&bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether an item claimed with `retry_count` attempts (this one included) has used
/// up its budget of `max_attempts`: then it is dead-lettered instead of sent.
pub fn exhausted(retry_count: u32, max_attempts: u32) -> bool {
    retry_count > max_attempts
}

/// The `LastError` of an item given up on.
pub fn give_up_reason(max_attempts: u32, last_error: Option<&str>) -> String {
    format!(
        "gave up after {max_attempts} attempts: {}",
        last_error.unwrap_or("no error was recorded (the attempts were interrupted)")
    )
}

/// How much of an invocation's remaining time the sweep may spend starting work,
/// keeping a reserve to finish what it started (publish, mark, reschedule) and to
/// report: a fifth of the time, at least 1 s and at most 30 s.
pub fn work_window(remaining: Duration) -> Duration {
    let reserve = (remaining / 5).clamp(Duration::from_secs(1), Duration::from_secs(30));
    remaining.saturating_sub(reserve)
}

/// When an adopted item becomes due: its write time plus the grace (so the stream
/// path has its chance), or now plus the grace when the producer wrote no time.
pub fn adopted_due(created_at_ms: Option<i64>, now_ms: i64, grace: Duration) -> i64 {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    created_at_ms
        .filter(|c| *c > 0)
        .unwrap_or(now_ms)
        .saturating_add(grace_ms)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The time a sweep may use.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The sweep's notion of now, epoch milliseconds (due times are compared to it).
    pub now_ms: i64,
    /// No new page, claim or chunk starts after this instant.
    pub stop_at: Instant,
    /// How long a claim holds an item: past the end of the invocation, so that a
    /// concurrent sweeper never takes an item this one may still publish.
    pub lease: Duration,
}

impl Budget {
    /// The budget of a Lambda invocation ending at `deadline_ms` (epoch ms).
    pub fn until_deadline(deadline_ms: u64, now_ms: i64) -> Self {
        let remaining_ms = i64::try_from(deadline_ms)
            .unwrap_or(i64::MAX)
            .saturating_sub(now_ms)
            .max(0);
        let remaining = Duration::from_millis(u64::try_from(remaining_ms).unwrap_or(0));
        Budget {
            now_ms,
            stop_at: Instant::now() + work_window(remaining),
            lease: remaining + Duration::from_secs(60),
        }
    }

    /// A budget of `window` from now (tests, the local runner).
    pub fn for_window(now_ms: i64, window: Duration) -> Self {
        Budget {
            now_ms,
            stop_at: Instant::now() + window,
            lease: window + Duration::from_secs(60),
        }
    }

    fn expired(&self) -> bool {
        Instant::now() >= self.stop_at
    }
}

/// The sweeper with its dependencies.
#[derive(Debug)]
pub struct Sweeper<K, S> {
    /// The publish path (and the store, which also serves the sweep).
    pub publisher: Publisher<K, S>,
    /// Retry policy, scan mode, bounds.
    pub config: SweeperConfig,
    /// Where each scan segment stopped: a warm Lambda continues there next run, so a
    /// bounded scan still covers a large table over several runs.
    scan_cursors: Mutex<Vec<Option<PageToken>>>,
}

/// The sweeper as the Lambda binary builds it.
pub type AwsSweeper = Sweeper<crate::sink::AwsSink, crate::dynamo::DynamoStore>;

impl AwsSweeper {
    /// Builds the sweeper from configuration and clients created once at start-up.
    pub fn from_clients(
        config: SweeperConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sqs_client: aws_sdk_sqs::Client,
    ) -> Self {
        Self::with_sink(config, dynamodb, crate::sink::AwsSink::new(sqs_client))
    }

    /// Builds the sweeper with a sink that may also reach SNS and EventBridge.
    pub fn with_sink(
        config: SweeperConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        sink: crate::sink::AwsSink,
    ) -> Self {
        let publisher = crate::AwsPublisher::with_sink(config.publisher.clone(), dynamodb, sink);
        Sweeper::new(publisher, config)
    }
}

/// One claimed item, ready for the publish path.
#[derive(Debug)]
struct Claimed {
    key: ItemKey,
    retry_count: u32,
    created_at: i64,
    work: Work,
}

impl<K: MessageSink, S: OutboxStore + SweepStore> Sweeper<K, S> {
    /// A sweeper around a publish path.
    pub fn new(publisher: Publisher<K, S>, config: SweeperConfig) -> Self {
        Sweeper {
            publisher,
            config,
            scan_cursors: Mutex::new(Vec::new()),
        }
    }

    fn store(&self) -> &S {
        &self.publisher.store
    }

    /// One sweep: adopt unindexed items (scan mode), find due keys in every shard,
    /// then claim and publish them chunk by chunk while the budget lasts.
    pub async fn sweep(&self, budget: Budget) -> SweepSummary {
        let mut summary = SweepSummary::default();
        if self.config.scan_mode == ScanMode::On {
            Box::pin(self.adopt_unindexed(&budget, &mut summary)).await;
        }
        let mut due = Box::pin(self.find_due(&budget, &mut summary)).await;
        summary.found = due.len();
        due.sort_by_key(|d| d.due_at_ms);
        if due.len() > self.config.limits.max_items {
            summary.skipped += due.len() - self.config.limits.max_items;
            due.truncate(self.config.limits.max_items);
        }
        for d in &due {
            let overdue = budget.now_ms.saturating_sub(d.due_at_ms);
            summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(overdue));
        }
        let chunk = self.config.limits.chunk.max(1);
        for (i, keys) in due.chunks(chunk).enumerate() {
            if budget.expired() {
                summary.skipped += due.len() - i * chunk;
                tracing::info!(
                    left = due.len() - i * chunk,
                    "time budget used up; the next sweep continues"
                );
                break;
            }
            // Boxed: the publish path's future is deep, and callers' futures nest it.
            Box::pin(self.attempt(keys, &budget, &mut summary)).await;
        }
        tracing::info!(
            found = summary.found,
            claimed = summary.claimed,
            published = summary.published,
            marked = summary.marked,
            failed = summary.failed,
            retried = summary.retried,
            skipped = summary.skipped,
            adopted = summary.adopted,
            index_items_read = summary.index_items_read,
            scan_items_read = summary.scan_items_read,
            oldest_pending_age_ms = summary.oldest_pending_age_ms.unwrap_or(0),
            "sweep done"
        );
        summary
    }

    /// Due keys of every shard, each shard paged until it is exhausted, the per-run
    /// bound is reached or the budget is used up. Shards are queried concurrently.
    async fn find_due(&self, budget: &Budget, summary: &mut SweepSummary) -> Vec<DueKey> {
        let limits = self.config.limits;
        let shards = schema::all_sweep_shards().map(|shard| async move {
            let mut keys = Vec::new();
            let mut scanned = 0u64;
            let mut queries = 0usize;
            let mut start = None;
            loop {
                queries += 1;
                match self
                    .store()
                    .due_page(&shard, budget.now_ms, limits.page_size, start)
                    .await
                {
                    Ok(page) => {
                        scanned += page.scanned;
                        keys.extend(page.keys);
                        start = page.next;
                    }
                    Err(e) => {
                        tracing::error!(%shard, error = %e, "index query failed; the next sweep retries this shard");
                        break;
                    }
                }
                if start.is_none() || keys.len() >= limits.max_items || budget.expired() {
                    break;
                }
            }
            (keys, scanned, queries)
        });
        let mut all = Vec::new();
        for (keys, scanned, queries) in futures::future::join_all(shards).await {
            all.extend(keys);
            summary.index_items_read += scanned;
            summary.index_queries += queries;
        }
        all
    }

    /// Claims a chunk of due keys, publishes what was claimed, and settles each item.
    async fn attempt(&self, keys: &[DueKey], budget: &Budget, summary: &mut SweepSummary) {
        let now = budget.now_ms;
        let lease_until = now.saturating_add(millis(budget.lease));
        let max_attempts = self.config.max_attempts;
        let results: Vec<(ItemKey, Result<Claim, StoreError>)> =
            futures::stream::iter(keys.iter().map(|d| async move {
                let r = self.store().claim(&d.key, d.due_at_ms, lease_until).await;
                (d.key.clone(), r)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        let mut claimed: Vec<Claimed> = Vec::with_capacity(results.len());
        for (key, result) in results {
            match result {
                Ok(Claim::Claimed(item)) => claimed.push(to_work(key, item, max_attempts)),
                Ok(Claim::Lost) => summary.skipped += 1,
                Err(e) => {
                    tracing::warn!(aggregate = %key.pk, sk = %key.sk, error = %e, "claim failed; the next sweep retries");
                    summary.skipped += 1;
                }
            }
        }
        summary.claimed += claimed.len();
        for c in &claimed {
            if c.created_at > 0 {
                let age = now.saturating_sub(c.created_at);
                summary.oldest_pending_age_ms = summary.oldest_pending_age_ms.max(Some(age));
            }
        }
        // Per-aggregate order: earlier messages of an aggregate first.
        // Within one write time, library ids (UUIDv7) are in creation order; sort keys
        // of other producers may lead with an event name, so they come last.
        let tie = |c: &Claimed| match &c.work {
            Work::Publish(m) if c.created_at > 0 => m.message_id.clone(),
            _ => c.key.sk.clone(),
        };
        claimed.sort_by(|a, b| {
            (&a.key.pk, a.created_at, tie(a)).cmp(&(&b.key.pk, b.created_at, tie(b)))
        });
        let work: Vec<WorkItem> = claimed
            .iter()
            .enumerate()
            .map(|(i, c)| WorkItem {
                id: i.to_string(),
                work: c.work.clone(),
            })
            .collect();
        let outcomes = Box::pin(self.publisher.process(&work)).await;
        let reschedules = claimed.iter().zip(&outcomes).filter_map(|(c, outcome)| {
            match outcome {
                Outcome::Sent { marked } => {
                    summary.published += 1;
                    if *marked {
                        summary.marked += 1;
                    }
                    tracing::info!(aggregate = %c.key.pk, sk = %c.key.sk, attempt = c.retry_count, marked, "recovered by the sweeper");
                    None
                }
                Outcome::DeadLettered { reason } => {
                    summary.failed += 1;
                    tracing::warn!(aggregate = %c.key.pk, sk = %c.key.sk, attempt = c.retry_count, %reason, "dead-lettered");
                    None
                }
                Outcome::Retry { reason } => Some((c, reason.clone())),
                Outcome::Blocked => Some((
                    c,
                    "not attempted: an earlier message of the same aggregate failed in the same sweep"
                        .to_owned(),
                )),
            }
        });
        let reschedules: Vec<(&Claimed, String)> = reschedules.collect();
        // A later message of an aggregate never comes due before an earlier one that
        // is also being retried: each gets at least its predecessor's due time + 1 ms.
        let mut last_due: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
        let dues: Vec<i64> = reschedules
            .iter()
            .map(|(c, _)| {
                let delay = backoff(
                    c.retry_count,
                    self.config.base_backoff,
                    self.config.max_backoff,
                    jitter_of(&c.key, c.retry_count),
                );
                let own = now.saturating_add(millis(delay));
                let next = last_due
                    .get(c.key.pk.as_str())
                    .map_or(own, |prev| own.max(prev + 1));
                last_due.insert(c.key.pk.as_str(), next);
                next
            })
            .collect();
        let settled: Vec<Result<MarkOutcome, StoreError>> =
            futures::stream::iter(reschedules.iter().zip(dues).map(|((c, reason), next)| {
                tracing::warn!(aggregate = %c.key.pk, sk = %c.key.sk, attempt = c.retry_count,
                    next_due_ms = next, %reason, "attempt failed; retrying later");
                self.store().reschedule(&c.key, lease_until, next, reason)
            }))
            .buffer_unordered(self.config.limits.concurrency.max(1))
            .collect()
            .await;
        summary.retried += reschedules.len();
        for r in settled {
            if let Err(e) = r {
                // The lease runs out instead; the item is retried then.
                tracing::warn!(error = %e, "could not record the failed attempt; the claim's lease brings the item back");
            }
        }
    }

    /// Scan mode: adopts pending items without index attributes into the index,
    /// reading a bounded number of pages per segment and remembering where each
    /// segment stopped.
    async fn adopt_unindexed(&self, budget: &Budget, summary: &mut SweepSummary) {
        let limits = self.config.limits;
        let segments = limits.scan_segments.max(1);
        let starts: Vec<Option<PageToken>> = {
            let cursors = self
                .scan_cursors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (0..segments as usize)
                .map(|s| cursors.get(s).cloned().flatten())
                .collect()
        };
        let runs = starts.into_iter().enumerate().map(|(segment, start)| async move {
            let segment = u32::try_from(segment).unwrap_or(0);
            let mut start = start;
            let mut scanned = 0u64;
            let mut adopted = 0usize;
            for _ in 0..limits.scan_pages_per_segment.max(1) {
                let page = match self
                    .store()
                    .unindexed_page(segment, segments, limits.scan_page_size, start.clone())
                    .await
                {
                    Ok(page) => page,
                    Err(e) => {
                        tracing::error!(segment, error = %e, "adoption scan failed; the next sweep retries");
                        break;
                    }
                };
                scanned += page.scanned;
                start = page.next;
                for item in page.items {
                    let due = adopted_due(item.created_at_ms, budget.now_ms, self.config.grace);
                    match self
                        .store()
                        .adopt(&item.key, &sweep_shard(&item.key.pk), due)
                        .await
                    {
                        Ok(MarkOutcome::Marked) => adopted += 1,
                        Ok(MarkOutcome::AlreadyFinished) => {}
                        Err(e) => {
                            tracing::warn!(aggregate = %item.key.pk, sk = %item.key.sk, error = %e, "could not adopt; the scan finds it again");
                        }
                    }
                }
                if start.is_none() || budget.expired() {
                    break;
                }
            }
            (start, scanned, adopted)
        });
        let results = futures::future::join_all(runs).await;
        let mut next = Vec::with_capacity(results.len());
        for (start, scanned, adopted) in results {
            next.push(start);
            summary.scan_items_read += scanned;
            summary.adopted += adopted;
        }
        *self
            .scan_cursors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = next;
    }
}

/// Decodes a claimed item into work: a message to publish, or poison when it cannot
/// be decoded or has used up its attempts.
fn to_work(key: ItemKey, item: serde_dynamo::Item, max_attempts: u32) -> Claimed {
    let last_error = schema::string_attr(&item, LAST_ERROR).map(str::to_owned);
    let body_of = |item: &serde_dynamo::Item| {
        serde_json::to_string(item).unwrap_or_else(|_| "(unserialisable item)".to_owned())
    };
    match schema::decode_message(item.clone(), Some(&key)) {
        Ok(msg) => {
            let retry_count = msg.retry_count;
            let created_at = msg.created_at;
            let work = if exhausted(retry_count, max_attempts) {
                Work::Poison(poison_of(
                    &msg,
                    give_up_reason(max_attempts, last_error.as_deref()),
                ))
            } else {
                Work::Publish(msg)
            };
            Claimed {
                key,
                retry_count,
                created_at,
                work,
            }
        }
        Err(e) => Claimed {
            retry_count: 0,
            created_at: 0,
            work: Work::Poison(Poison {
                key: Some(key.clone()),
                message_id: Some(schema::derive_message_id(&key)),
                topic: schema::string_attr(&item, schema::TOPIC).map(str::to_owned),
                body: body_of(&item),
                reason: e.to_string(),
            }),
            key,
        },
    }
}

/// The sweeper Lambda's handler: one sweep within the invocation's remaining time.
pub async fn handle_scheduled_event<K: MessageSink, S: OutboxStore + SweepStore>(
    sweeper: &Sweeper<K, S>,
    deadline_ms: u64,
) -> SweepSummary {
    let now = now_ms();
    let remaining_ms = i64::try_from(deadline_ms)
        .unwrap_or(i64::MAX)
        .saturating_sub(now);
    // Lambda's longest timeout is 15 minutes, and a deadline a day in the past is no
    // deadline at all: some local runtimes send seconds, or nothing. Then sweep for
    // a fixed window rather than not at all.
    let budget = if !(-86_400_000..=900_000).contains(&remaining_ms) {
        tracing::warn!(
            remaining_ms,
            "the runtime's deadline is implausible; sweeping for 30 s"
        );
        Budget::for_window(now, Duration::from_secs(30))
    } else {
        Budget::until_deadline(deadline_ms, now)
    };
    sweeper.sweep(budget).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(pk: &str) -> ItemKey {
        ItemKey {
            pk: pk.into(),
            sk: "MESSAGE#X#1".into(),
        }
    }

    #[test]
    fn backoff_doubles_from_the_base_and_stops_at_the_cap() {
        let base = Duration::from_secs(30);
        let max = Duration::from_secs(900);
        // Jitter 0 gives the lower half, jitter ~1 the full delay.
        assert_eq!(backoff(1, base, max, 0.0), Duration::from_secs(15));
        assert_eq!(backoff(1, base, max, 1.0), Duration::from_secs(30));
        assert_eq!(backoff(2, base, max, 1.0), Duration::from_secs(60));
        assert_eq!(backoff(3, base, max, 1.0), Duration::from_secs(120));
        assert_eq!(backoff(10, base, max, 1.0), max);
        assert_eq!(backoff(u32::MAX, base, max, 0.0), max / 2);
        // Attempt 0 (never happens after a claim) is treated as the first.
        assert_eq!(backoff(0, base, max, 1.0), base);
    }

    #[test]
    fn delays_never_shrink_from_one_attempt_to_the_next_below_the_cap() {
        let base = Duration::from_secs(1);
        let max = Duration::from_secs(3600);
        for pk in ["A", "B", "USER#123", "ORDER#9"] {
            let k = key(pk);
            // 1 s .. 2048 s: below the cap, whatever the jitter (at the cap, delays
            // vary between half and all of it).
            let delays: Vec<Duration> = (1..=12)
                .map(|n| backoff(n, base, max, jitter_of(&k, n)))
                .collect();
            assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
            assert!(delays[0] < delays[8], "{delays:?}");
        }
    }

    #[test]
    fn jitter_is_deterministic_in_range_and_differs_between_items() {
        let a = jitter_of(&key("A"), 1);
        assert_eq!(a, jitter_of(&key("A"), 1));
        assert_ne!(a, jitter_of(&key("B"), 1));
        assert_ne!(a, jitter_of(&key("A"), 2));
        for n in 0..1000 {
            let j = jitter_of(&key(&format!("K{n}")), 3);
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }

    #[test]
    fn an_item_is_given_up_on_only_after_its_last_allowed_attempt() {
        assert!(!exhausted(1, 8));
        assert!(!exhausted(8, 8), "the eighth attempt is still made");
        assert!(exhausted(9, 8));
        assert_eq!(
            give_up_reason(8, Some("sending to sqs:x failed: QueueDoesNotExist")),
            "gave up after 8 attempts: sending to sqs:x failed: QueueDoesNotExist"
        );
        assert!(give_up_reason(3, None).starts_with("gave up after 3 attempts: no error"));
    }

    #[test]
    fn the_work_window_keeps_a_reserve_to_finish_started_work() {
        assert_eq!(
            work_window(Duration::from_secs(60)),
            Duration::from_secs(48)
        );
        assert_eq!(
            work_window(Duration::from_secs(900)),
            Duration::from_secs(870),
            "reserve capped at 30 s"
        );
        assert_eq!(
            work_window(Duration::from_secs(3)),
            Duration::from_secs(2),
            "at least 1 s"
        );
        assert_eq!(work_window(Duration::from_millis(500)), Duration::ZERO);
    }

    #[test]
    fn a_budget_from_a_lambda_deadline_leases_past_the_invocation() {
        let b = Budget::until_deadline(1_000_060_000, 1_000_000_000);
        assert!(b.stop_at > Instant::now() + Duration::from_secs(40));
        assert!(b.stop_at <= Instant::now() + Duration::from_secs(48));
        assert_eq!(b.lease, Duration::from_secs(120));
        // A deadline already passed: no work, no panic.
        let late = Budget::until_deadline(5, 1_000);
        assert!(late.expired());
    }

    #[test]
    fn adopted_items_are_due_after_the_grace_from_their_write_or_from_now() {
        let g = Duration::from_secs(60);
        assert_eq!(adopted_due(Some(1_000), 50_000, g), 61_000);
        assert_eq!(adopted_due(None, 50_000, g), 110_000);
        assert_eq!(adopted_due(Some(0), 50_000, g), 110_000);
    }

    use crate::config::test_env::{GOOD, lookup};

    #[test]
    fn configuration_defaults_follow_the_contract() {
        let cfg = SweeperConfig::from_lookup(lookup(GOOD)).expect("valid");
        assert_eq!(cfg.max_attempts, 8);
        assert_eq!(cfg.grace, Duration::from_secs(60));
        assert_eq!(cfg.scan_mode, ScanMode::Off);
        assert_eq!(cfg.publisher.table_name, "outbox");
    }

    #[test]
    fn configuration_reads_and_checks_every_sweeper_variable() {
        let mut vars = GOOD.to_vec();
        vars.extend([
            ("OUTBOX_MAX_ATTEMPTS", "3"),
            ("OUTBOX_SWEEP_GRACE_SECONDS", "0"),
            ("OUTBOX_SWEEP_SCAN_MODE", "ON"),
            ("OUTBOX_SWEEP_BASE_BACKOFF_SECONDS", "2"),
            ("OUTBOX_SWEEP_MAX_BACKOFF_SECONDS", "20"),
        ]);
        let cfg = SweeperConfig::from_lookup(lookup(&vars)).expect("valid");
        assert_eq!(cfg.max_attempts, 3);
        assert_eq!(cfg.grace, Duration::ZERO);
        assert_eq!(cfg.scan_mode, ScanMode::On);
        assert_eq!(cfg.base_backoff, Duration::from_secs(2));
        assert_eq!(cfg.max_backoff, Duration::from_secs(20));

        for (name, bad) in [
            ("OUTBOX_MAX_ATTEMPTS", "0"),
            ("OUTBOX_MAX_ATTEMPTS", "many"),
            ("OUTBOX_SWEEP_SCAN_MODE", "sometimes"),
            ("OUTBOX_SWEEP_MAX_BACKOFF_SECONDS", "1"),
        ] {
            let mut vars = GOOD.to_vec();
            vars.push(("OUTBOX_SWEEP_BASE_BACKOFF_SECONDS", "5"));
            vars.push((name, bad));
            let err = SweeperConfig::from_lookup(lookup(&vars)).expect_err(bad);
            assert!(err.to_string().contains(name), "{err}");
        }
        // The publisher's own checks still apply.
        let err = SweeperConfig::from_lookup(lookup(&GOOD[1..])).expect_err("no table");
        assert!(err.to_string().contains("OUTBOX_TABLE_NAME"), "{err}");
    }

    /// The publish path and the sweep against in-memory fakes: the logic only (the
    /// conditional writes themselves are tested against the emulator).
    mod logic {
        use super::*;
        use crate::message::{ATTR_ERROR, OutboundMessage};
        use crate::ports::{DuePage, EntryResult, ScanPage, SendError};
        use crate::route::{Destination, Routes};
        use serde_dynamo::AttributeValue as Av;
        use std::collections::BTreeMap;

        #[derive(Debug, Clone)]
        struct Stored {
            status: &'static str,
            retry: u32,
            due: Option<i64>,
            last_error: Option<String>,
            topic: Option<String>,
            payload: String,
            created: i64,
        }

        #[derive(Default)]
        struct Store {
            items: Mutex<BTreeMap<ItemKey, Stored>>,
        }

        impl Store {
            fn put(&self, pk: &str, sk: &str, stored: Stored) {
                self.items.lock().expect("lock").insert(
                    ItemKey {
                        pk: pk.into(),
                        sk: sk.into(),
                    },
                    stored,
                );
            }
            fn get(&self, pk: &str, sk: &str) -> Stored {
                self.items.lock().expect("lock")[&ItemKey {
                    pk: pk.into(),
                    sk: sk.into(),
                }]
                    .clone()
            }
            fn set(&self, key: &ItemKey, f: impl FnOnce(&mut Stored) -> bool) -> MarkOutcome {
                let mut items = self.items.lock().expect("lock");
                match items.get_mut(key) {
                    Some(item) if item.status == "PENDING" => {
                        if f(item) {
                            MarkOutcome::Marked
                        } else {
                            MarkOutcome::AlreadyFinished
                        }
                    }
                    _ => MarkOutcome::AlreadyFinished,
                }
            }
        }

        impl OutboxStore for Store {
            async fn mark_sent(
                &self,
                key: &ItemKey,
                _: i64,
                _: i64,
            ) -> Result<MarkOutcome, StoreError> {
                Ok(self.set(key, |i| {
                    i.status = "SENT";
                    i.due = None;
                    true
                }))
            }
            async fn mark_failed(
                &self,
                key: &ItemKey,
                reason: &str,
                _: i64,
            ) -> Result<MarkOutcome, StoreError> {
                Ok(self.set(key, |i| {
                    i.status = "FAILED";
                    i.due = None;
                    i.last_error = Some(reason.to_owned());
                    true
                }))
            }
        }

        impl SweepStore for Store {
            async fn due_page(
                &self,
                shard: &str,
                due_by_ms: i64,
                _: i32,
                _: Option<PageToken>,
            ) -> Result<DuePage, StoreError> {
                let items = self.items.lock().expect("lock");
                let keys: Vec<DueKey> = items
                    .iter()
                    .filter(|(k, _)| sweep_shard(&k.pk) == shard)
                    .filter_map(|(k, i)| {
                        i.due.filter(|d| *d <= due_by_ms).map(|d| DueKey {
                            key: k.clone(),
                            due_at_ms: d,
                        })
                    })
                    .collect();
                Ok(DuePage {
                    scanned: keys.len() as u64,
                    keys,
                    next: None,
                })
            }
            async fn claim(
                &self,
                key: &ItemKey,
                seen: i64,
                lease: i64,
            ) -> Result<Claim, StoreError> {
                let mut items = self.items.lock().expect("lock");
                let Some(i) = items.get_mut(key) else {
                    return Ok(Claim::Lost);
                };
                if i.status != "PENDING" || i.due != Some(seen) {
                    return Ok(Claim::Lost);
                }
                i.retry += 1;
                i.due = Some(lease);
                let mut map = HashMap::from([
                    ("PK".to_owned(), Av::S(key.pk.clone())),
                    ("SK".to_owned(), Av::S(key.sk.clone())),
                    ("Payload".to_owned(), Av::S(i.payload.clone())),
                    ("RetryCount".to_owned(), Av::N(i.retry.to_string())),
                    ("CreatedAt".to_owned(), Av::N(i.created.to_string())),
                ]);
                if let Some(t) = &i.topic {
                    map.insert("Topic".to_owned(), Av::S(t.clone()));
                }
                if let Some(e) = &i.last_error {
                    map.insert("LastError".to_owned(), Av::S(e.clone()));
                }
                Ok(Claim::Claimed(map.into()))
            }
            async fn reschedule(
                &self,
                key: &ItemKey,
                claimed: i64,
                next: i64,
                reason: &str,
            ) -> Result<MarkOutcome, StoreError> {
                Ok(self.set(key, |i| {
                    if i.due != Some(claimed) {
                        return false;
                    }
                    i.due = Some(next);
                    i.last_error = Some(reason.to_owned());
                    true
                }))
            }
            async fn unindexed_page(
                &self,
                _: u32,
                _: u32,
                _: i32,
                _: Option<PageToken>,
            ) -> Result<ScanPage, StoreError> {
                Ok(ScanPage {
                    items: Vec::new(),
                    next: None,
                    scanned: 0,
                })
            }
            async fn adopt(&self, _: &ItemKey, _: &str, _: i64) -> Result<MarkOutcome, StoreError> {
                Ok(MarkOutcome::AlreadyFinished)
            }
        }

        /// Records what is sent; every entry to `https://q/down` fails transiently.
        #[derive(Default)]
        struct Sink {
            sent: Mutex<Vec<(String, OutboundMessage)>>,
        }

        impl MessageSink for Sink {
            async fn send_batch(
                &self,
                destination: &Destination,
                messages: &[&OutboundMessage],
            ) -> Result<Vec<EntryResult>, SendError> {
                let dest = destination.to_string();
                if dest.contains("down") {
                    return Err(SendError::transient("Throttled"));
                }
                let mut sent = self.sent.lock().expect("lock");
                sent.extend(messages.iter().map(|m| (dest.clone(), (*m).clone())));
                Ok(vec![EntryResult::Sent; messages.len()])
            }
        }

        fn sweeper() -> Sweeper<Sink, Store> {
            let publisher_config = PublisherConfig {
                table_name: "t".into(),
                routes: Routes::new(
                    [
                        ("up".to_owned(), Destination::sqs("https://q/up")),
                        ("down".to_owned(), Destination::sqs("https://q/down")),
                    ],
                    None,
                ),
                dead_letter: Destination::sqs("https://q/dlq"),
                ttl_days: 7,
            };
            let mut config = SweeperConfig::new(publisher_config.clone());
            config.max_attempts = 3;
            Sweeper::new(
                Publisher {
                    sink: Sink::default(),
                    store: Store::default(),
                    config: publisher_config,
                },
                config,
            )
        }

        fn pending(topic: &str, retry: u32, due: i64, created: i64) -> Stored {
            Stored {
                status: "PENDING",
                retry,
                due: Some(due),
                last_error: None,
                topic: Some(topic.to_owned()),
                payload: format!("payload-{created}"),
                created,
            }
        }

        const NOW: i64 = 1_000_000;

        async fn run(sw: &Sweeper<Sink, Store>, window: Duration) -> SweepSummary {
            sw.sweep(Budget::for_window(NOW, window)).await
        }

        fn sent_to(sw: &Sweeper<Sink, Store>, dest: &str) -> Vec<OutboundMessage> {
            sw.publisher
                .sink
                .sent
                .lock()
                .expect("lock")
                .iter()
                .filter(|(d, _)| d.contains(dest))
                .map(|(_, m)| m.clone())
                .collect()
        }

        #[tokio::test]
        async fn only_due_items_are_taken_and_a_sent_one_is_marked() {
            let sw = sweeper();
            sw.publisher
                .store
                .put("A", "1", pending("up", 0, NOW - 1, 1));
            sw.publisher
                .store
                .put("B", "1", pending("up", 0, NOW + 1, 2));
            let summary = run(&sw, Duration::from_secs(5)).await;
            assert_eq!(
                (summary.found, summary.published, summary.marked),
                (1, 1, 1)
            );
            assert_eq!(sw.publisher.store.get("A", "1").status, "SENT");
            assert_eq!(sw.publisher.store.get("A", "1").retry, 1);
            assert_eq!(sw.publisher.store.get("B", "1").retry, 0);
            assert_eq!(summary.oldest_pending_age_ms, Some(NOW - 1));
        }

        #[tokio::test]
        async fn a_transient_failure_records_the_reason_and_backs_off() {
            let sw = sweeper();
            sw.publisher.store.put("A", "1", pending("down", 1, NOW, 1));
            let summary = run(&sw, Duration::from_secs(5)).await;
            assert_eq!((summary.claimed, summary.retried), (1, 1), "{summary:?}");
            let item = sw.publisher.store.get("A", "1");
            assert_eq!((item.status, item.retry), ("PENDING", 2));
            assert!(
                item.last_error
                    .as_deref()
                    .is_some_and(|e| e.contains("Throttled"))
            );
            let key = ItemKey {
                pk: "A".into(),
                sk: "1".into(),
            };
            let expected = backoff(
                2,
                sw.config.base_backoff,
                sw.config.max_backoff,
                jitter_of(&key, 2),
            );
            assert_eq!(item.due, Some(NOW + millis(expected)));
        }

        #[tokio::test]
        async fn past_the_limit_the_item_is_dead_lettered_with_its_last_error_not_sent() {
            let sw = sweeper();
            let mut item = pending("up", 3, NOW, 1);
            item.last_error = Some("sending to sqs:x failed: Throttled".into());
            sw.publisher.store.put("A", "1", item);
            let summary = run(&sw, Duration::from_secs(5)).await;
            assert_eq!((summary.failed, summary.published), (1, 0), "{summary:?}");
            assert!(sent_to(&sw, "up").is_empty());
            let dead = sent_to(&sw, "dlq");
            assert_eq!(dead.len(), 1);
            assert_eq!(dead[0].body, "payload-1");
            let reason = "gave up after 3 attempts: sending to sqs:x failed: Throttled";
            assert!(
                dead[0]
                    .attributes
                    .iter()
                    .any(|(n, v)| *n == ATTR_ERROR && v.text() == reason)
            );
            let stored = sw.publisher.store.get("A", "1");
            assert_eq!(stored.status, "FAILED");
            assert_eq!(stored.last_error.as_deref(), Some(reason));
            assert_eq!(stored.due, None);
        }

        #[tokio::test]
        async fn an_item_that_does_not_decode_is_dead_lettered_with_its_content() {
            let sw = sweeper();
            let mut item = pending("up", 0, NOW, 1);
            item.topic = None;
            sw.publisher.store.put("A", "1", item);
            let summary = run(&sw, Duration::from_secs(5)).await;
            assert_eq!(summary.failed, 1, "{summary:?}");
            let dead = sent_to(&sw, "dlq");
            assert!(dead[0].body.contains("payload-1"), "{:?}", dead[0].body);
            let stored = sw.publisher.store.get("A", "1");
            assert!(stored.last_error.is_some_and(|e| e.contains("Topic")));
        }

        #[tokio::test]
        async fn a_later_message_waits_behind_a_failed_earlier_one_of_its_aggregate() {
            let sw = sweeper();
            sw.publisher
                .store
                .put("A", "1", pending("down", 0, NOW - 5, 1));
            sw.publisher
                .store
                .put("A", "2", pending("up", 0, NOW - 9, 2));
            let summary = run(&sw, Duration::from_secs(5)).await;
            assert_eq!((summary.retried, summary.published), (2, 0), "{summary:?}");
            assert!(
                sent_to(&sw, "up").is_empty(),
                "order kept: A/2 not sent before A/1"
            );
            let later = sw.publisher.store.get("A", "2");
            assert!(
                later
                    .last_error
                    .is_some_and(|e| e.contains("earlier message"))
            );
        }

        #[tokio::test]
        async fn an_item_changed_since_the_query_is_skipped() {
            // A claim with a stale due time is refused, as the conditional update would.
            let sw = sweeper();
            sw.publisher.store.put("A", "1", pending("up", 0, NOW, 1));
            let stale = DueKey {
                key: ItemKey {
                    pk: "A".into(),
                    sk: "1".into(),
                },
                due_at_ms: NOW - 1,
            };
            let mut summary = SweepSummary::default();
            let budget = Budget::for_window(NOW, Duration::from_secs(5));
            sw.attempt(&[stale], &budget, &mut summary).await;
            assert_eq!((summary.claimed, summary.skipped), (0, 1));
            assert_eq!(sw.publisher.store.get("A", "1").retry, 0);
        }

        #[tokio::test]
        async fn an_exhausted_budget_leaves_due_items_for_the_next_sweep() {
            let sw = sweeper();
            sw.publisher.store.put("A", "1", pending("up", 0, NOW, 1));
            let summary = run(&sw, Duration::ZERO).await;
            assert_eq!((summary.found, summary.claimed, summary.skipped), (1, 0, 1));
            assert_eq!(sw.publisher.store.get("A", "1").status, "PENDING");
        }
    }
}
