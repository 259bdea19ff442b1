//! Where the index-lag fault keeps what the index listed lately: one file per local
//! AWS (by endpoint) and shape of read, in a directory every process on the machine shares
//! (`OUTBOX_FAULTS_LAG_DIR`, by default `outbox-faults-index-lag` in the temporary
//! directory).
//!
//! Not in memory: the local AWS starts a new process for every invocation of a
//! `provided` function, so a process never sees a second read of its own. Shared
//! between the functions, as the index is: a lagging index shows every reader the same
//! earlier view. Best effort: two processes writing at once may lose one's items (the
//! index then lags a little less).

use crate::lag::{IndexRead, Listed};
use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the directory of the remembered listings.
pub const LAG_DIR_VAR: &str = "OUTBOX_FAULTS_LAG_DIR";

/// The directory of the remembered listings.
#[derive(Debug, Clone)]
pub struct ListingStore {
    dir: PathBuf,
}

/// Names each temporary file apart within a process.
static WRITES: AtomicU64 = AtomicU64::new(0);

impl ListingStore {
    /// In `OUTBOX_FAULTS_LAG_DIR`, or the default.
    pub fn from_env() -> Self {
        let dir = std::env::var_os(LAG_DIR_VAR)
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("outbox-faults-index-lag"));
        ListingStore { dir }
    }

    /// In `dir`.
    pub fn in_dir(dir: PathBuf) -> Self {
        ListingStore { dir }
    }

    /// Records the `fresh` items `read` got from the index at `endpoint`, and returns
    /// what a lagging index would list besides ([`Listed::read`]). A store that cannot
    /// be read or written keeps nothing: the read is then answered fresh.
    pub fn read(
        &self,
        endpoint: &str,
        read: &IndexRead,
        fresh: &[Value],
        now_ms: i64,
        max_age_ms: i64,
    ) -> Vec<Value> {
        let path = self
            .dir
            .join(file_name(&format!("{endpoint} {}", read.index)));
        let mut listed = std::fs::read_to_string(&path)
            .map(|t| Listed::decode(&t))
            .unwrap_or_default();
        let stale = listed.read(read, fresh, now_ms, max_age_ms);
        if let Err(e) = self.write(&path, &listed.encode()) {
            tracing::debug!(error = %e, dir = %self.dir.display(), "index lag: the listing was not kept");
        }
        stale
    }

    /// Writes whole or not at all (another process may be reading it).
    fn write(&self, path: &std::path::Path, text: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let partial = path.with_extension(format!("{}-{n}.tmp", std::process::id()));
        std::fs::write(&partial, text)?;
        std::fs::rename(&partial, path)
    }
}

/// The file of an endpoint's index reads of one shape. `DefaultHasher::new` has
/// fixed keys: every process names it alike.
fn file_name(key: &str) -> String {
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    format!("{:016x}.json", h.finish())
}

/// A directory for one test's listings, removed when the test ends, passed or failed.
#[cfg(test)]
pub(crate) struct ScratchDir(pub(crate) PathBuf);

#[cfg(test)]
impl ScratchDir {
    /// A directory no other test of any process uses, named for `what`.
    pub(crate) fn new(what: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        ScratchDir(
            std::env::temp_dir().join(format!("outbox-faults-{what}-{}-{n}", std::process::id())),
        )
    }

    /// A listing store in it.
    pub(crate) fn store(&self) -> ListingStore {
        ListingStore::in_dir(self.0.clone())
    }
}

#[cfg(test)]
impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A read of index `i` for shard `01`.
    fn index_read() -> IndexRead {
        IndexRead {
            index: "i".into(),
            scope: ["01".to_owned()].into(),
        }
    }

    #[test]
    fn another_process_sees_what_one_listed_and_another_endpoint_does_not() {
        let dir = ScratchDir::new("remembered-test");
        let read = index_read();
        let item = json!({"PK": {"S": "A"}});
        let one = dir.store();
        assert!(
            one.read("https://a:1", &read, std::slice::from_ref(&item), 0, 2_000)
                .is_empty()
        );
        let other = dir.store();
        assert!(other.read("https://b:2", &read, &[], 10, 2_000).is_empty());
        assert_eq!(other.read("https://a:1", &read, &[], 10, 2_000), [item]);
    }

    #[test]
    fn a_scratch_directory_is_gone_once_its_test_ends() {
        let dir = ScratchDir::new("scratch-test");
        dir.store().read(
            "https://a:1",
            &index_read(),
            &[json!({"PK": {"S": "A"}})],
            0,
            2_000,
        );
        let path = dir.0.clone();
        assert!(path.is_dir(), "the store wrote its listing there");
        drop(dir);
        assert!(!path.exists());
    }
}
