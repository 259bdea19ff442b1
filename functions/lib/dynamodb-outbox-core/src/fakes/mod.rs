//! In-memory fakes of the ports, for unit tests of the logic (here and in the crates
//! built on this one, through the `test-fakes` feature). Behaviour against AWS is
//! tested against the emulator, not here.
//!
//! [`MemoryStore`] keeps [`OutboxItem`]s — the schema's own type — and answers claims
//! through the same decoding as the DynamoDB adapter; it can be told to fail what a
//! test needs ([`StoreFaults`]). [`RecordingSink`] records every call and fails what
//! it is told to.

mod sink;
mod store;

pub use sink::{RecordingSink, Refusals};
pub use store::{MemoryStore, StoreFaults};

use crate::schema::{ItemKey, OutboxItem, PENDING_MESSAGE, Status, SweepShards};
use std::sync::{Mutex, MutexGuard, PoisonError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A pending item as the library's producer writes it indexed at commit (or as an
/// adoption leaves an unindexed one), due for the sweeper at `due_ms`, with payload
/// `payload-<created_ms>`.
pub fn pending_item(
    key: &ItemKey,
    topic: &str,
    retry: u32,
    due_ms: i64,
    created_ms: i64,
) -> OutboxItem {
    OutboxItem {
        pk: Some(key.pk.clone()),
        sk: Some(key.sk.clone()),
        item_type: Some(PENDING_MESSAGE.to_owned()),
        topic: Some(topic.to_owned()),
        payload: Some(format!("payload-{created_ms}")),
        status: Some(Status::Pending.as_str().to_owned()),
        retry_count: Some(retry),
        created_at: Some(created_ms),
        sweep_shard: Some(SweepShards::default().shard_of(&key.pk)),
        sweep_due_at: Some(due_ms),
        ..OutboxItem::default()
    }
}

/// The key `pk` / `sk`.
pub fn key(pk: &str, sk: &str) -> ItemKey {
    ItemKey {
        pk: pk.to_owned(),
        sk: sk.to_owned(),
    }
}

/// A key as the library's producer writes it: the sort key ends with a UUIDv7 made
/// at `ms` (`n` tells apart two of one millisecond), which orders it for the fence.
pub fn library_key(pk: &str, ms: u64, n: u8) -> ItemKey {
    let id = uuid::Builder::from_unix_timestamp_millis(ms, &[n; 10]).into_uuid();
    ItemKey {
        pk: pk.to_owned(),
        sk: format!("MESSAGE#EVENT#{id}"),
    }
}

/// A pending item of the library under `key` (made by [`library_key`] at
/// `created_ms`): its `MessageId` is the sort key's UUIDv7.
pub fn library_item(key: &ItemKey, topic: &str, due_ms: i64, created_ms: i64) -> OutboxItem {
    OutboxItem {
        message_id: key.sk.rsplit('#').next().map(str::to_owned),
        ..pending_item(key, topic, 0, due_ms, created_ms)
    }
}
