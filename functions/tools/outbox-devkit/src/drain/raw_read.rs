//! The local AWS's own read rates in the same run, the yardstick of the drain rate:
//! consistent `GetItem`s of the backlog's items, and pages of the sweeper index read
//! by `Query` as a sweep reads them. Measured on the deployed table once the backlog
//! is written, before the drain, so the reads find what the sweeper will find.

use super::backlog::key_of;
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::schema::{PK, SK};
use std::time::{Duration, Instant};

/// What the readers did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RawReads {
    /// Readers at once.
    pub readers: usize,
    /// Items read (a `GetItem` reads one; a `Query` page up to its limit).
    pub items: usize,
    /// Requests answered with success.
    pub requests: usize,
    /// Requests that failed (the rates count successes only).
    pub errors: usize,
    /// Wall time, seconds.
    pub seconds: f64,
    /// The slowest request, milliseconds: a stall of the local AWS shows here.
    pub slowest_ms: u128,
}

impl RawReads {
    /// Items read per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.items as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn add(&mut self, other: RawReads) {
        self.items += other.items;
        self.requests += other.requests;
        self.errors += other.errors;
        self.slowest_ms = self.slowest_ms.max(other.slowest_ms);
    }
}

/// What reads the readers send.
#[derive(Debug, Clone)]
pub(super) enum ReadKind {
    /// Consistent `GetItem`s of the backlog items of `run` (`items` of them), in turn.
    GetItem { run: String, items: usize },
    /// `Query` pages of `page` items of the index, due up to now, over `shards` in turn.
    IndexQuery { shards: Vec<String>, page: i32 },
}

/// `readers` readers reading `kind` from `table` for `length`.
pub(super) async fn read_for(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    kind: &ReadKind,
    readers: usize,
    length: Duration,
) -> Result<RawReads, String> {
    let began = Instant::now();
    let deadline = began + length;
    let mut tasks = tokio::task::JoinSet::new();
    for r in 0..readers.max(1) {
        let (db, table, kind) = (db.clone(), table.to_owned(), kind.clone());
        tasks.spawn(async move { reader(&db, &table, &kind, r, readers, deadline).await });
    }
    let mut total = RawReads {
        readers: readers.max(1),
        ..RawReads::default()
    };
    while let Some(joined) = tasks.join_next().await {
        total.add(joined.map_err(|e| format!("a reader stopped: {e}"))?);
    }
    total.seconds = began.elapsed().as_secs_f64();
    Ok(total)
}

/// One reader, starting at its own offset so readers do not read the same keys.
async fn reader(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    kind: &ReadKind,
    r: usize,
    readers: usize,
    deadline: Instant,
) -> RawReads {
    let mut done = RawReads::default();
    let mut i = r;
    while Instant::now() < deadline {
        let sent = Instant::now();
        let read = read_one(db, table, kind, i).await;
        done.slowest_ms = done.slowest_ms.max(sent.elapsed().as_millis());
        match read {
            Ok(items) => {
                done.items += items;
                done.requests += 1;
            }
            Err(()) => done.errors += 1,
        }
        i += readers.max(1);
    }
    done
}

/// The `i`-th read of `kind`: the items it read.
async fn read_one(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    kind: &ReadKind,
    i: usize,
) -> Result<usize, ()> {
    match kind {
        ReadKind::GetItem { run, items } => {
            let (pk, sk) = key_of(run, i % (*items).max(1));
            let out = db
                .get_item()
                .table_name(table)
                .key(PK, AttributeValue::S(pk))
                .key(SK, AttributeValue::S(sk))
                .consistent_read(true)
                .send()
                .await
                .map_err(|_| ())?;
            Ok(usize::from(out.item.is_some()))
        }
        ReadKind::IndexQuery { shards, page } => {
            let Some(shard) = shards.get(i % shards.len().max(1)) else {
                return Err(());
            };
            let out =
                super::sweep::due_in_shard(db, table, shard, dynamodb_outbox_core::clock::now_ms())
                    .limit(*page)
                    .send()
                    .await
                    .map_err(|_| ())?;
            Ok(out.items().len())
        }
    }
}

/// Waits until the local AWS answers reads promptly again after the backlog's burst
/// of writes (seen on MiniStack: for about a minute after it, a read may wait over
/// 70 s, which would time the emulator's catching up instead of its reads): 10
/// consistent `GetItem`s in a row, each answered within 250 ms. Returns the seconds
/// it took; an error after `limit`.
pub(super) async fn settle(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    run: &str,
    limit: Duration,
) -> Result<f64, String> {
    let began = Instant::now();
    let kind = ReadKind::GetItem {
        run: run.to_owned(),
        items: 1,
    };
    let mut prompt = 0;
    while prompt < 10 {
        if began.elapsed() > limit {
            return Err(format!(
                "the local AWS did not answer 10 reads in a row within 250 ms each in {} s",
                limit.as_secs()
            ));
        }
        let sent = Instant::now();
        let answered = read_one(db, table, &kind, 0).await.is_ok();
        prompt = if answered && sent.elapsed() < Duration::from_millis(250) {
            prompt + 1
        } else {
            0
        };
    }
    Ok(began.elapsed().as_secs_f64())
}
