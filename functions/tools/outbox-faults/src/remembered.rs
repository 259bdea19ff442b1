//! Where the index-lag fault keeps the answers it may serve again: one file per
//! request, in a directory every process on the machine shares (`OUTBOX_FAULTS_LAG_DIR`,
//! by default `outbox-faults-index-lag` in the temporary directory).
//!
//! Not in memory: the local AWS starts a new process for every invocation of a
//! `provided` function, so a process never sees a second read of its own. Shared
//! between the functions, as the index is: a lagging index shows every reader the same
//! earlier view. Keyed by the endpoint too, so two local AWSs on one machine never
//! see each other's answers.

use crate::lag::Remembered;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the directory of the remembered answers.
pub const LAG_DIR_VAR: &str = "OUTBOX_FAULTS_LAG_DIR";

/// The directory of the remembered answers.
#[derive(Debug, Clone)]
pub struct AnswerStore {
    dir: PathBuf,
}

/// Names each temporary file apart within a process.
static WRITES: AtomicU64 = AtomicU64::new(0);

impl AnswerStore {
    /// In `OUTBOX_FAULTS_LAG_DIR`, or the default.
    pub fn from_env() -> Self {
        let dir = std::env::var_os(LAG_DIR_VAR)
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("outbox-faults-index-lag"));
        AnswerStore { dir }
    }

    /// In `dir`.
    pub fn in_dir(dir: PathBuf) -> Self {
        AnswerStore { dir }
    }

    /// Keeps `fresh` as the last answer to its request and returns the one kept
    /// before it, if any. A store that cannot be read or written keeps nothing: the
    /// fault then never fires, and the read is answered fresh.
    pub fn swap(&self, fresh: &Remembered) -> Option<Remembered> {
        let path = self.dir.join(file_name(&fresh.request));
        let previous = std::fs::read(&path)
            .ok()
            .and_then(|bytes| Remembered::decode(&bytes))
            .filter(|p| p.request == fresh.request);
        if let Err(e) = self.write(&path, fresh) {
            tracing::debug!(error = %e, dir = %self.dir.display(), "index lag: the answer was not kept");
        }
        previous
    }

    /// Writes whole or not at all (another process may be reading it).
    fn write(&self, path: &std::path::Path, answer: &Remembered) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let partial = path.with_extension(format!("{}-{n}.tmp", std::process::id()));
        std::fs::write(&partial, answer.encode())?;
        std::fs::rename(&partial, path)
    }
}

/// A request's file: a hash of its key (the key itself is kept inside, to tell a
/// collision). `DefaultHasher::new` has fixed keys: every process names it alike.
fn file_name(request: &[u8]) -> String {
    let mut h = std::hash::DefaultHasher::new();
    request.hash(&mut h);
    format!("{:016x}.answer", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(request: &str, body: &str) -> Remembered {
        Remembered {
            request: request.as_bytes().to_vec(),
            at_ms: 1,
            status: 200,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn each_request_gets_back_the_answer_kept_before_it() {
        let dir = std::env::temp_dir().join(format!("outbox-faults-test-{}", std::process::id()));
        let store = AnswerStore::in_dir(dir.clone());
        assert_eq!(store.swap(&answer("q1", "a")), None);
        assert_eq!(store.swap(&answer("q2", "x")), None, "another request");
        assert_eq!(
            store.swap(&answer("q1", "b")).map(|a| a.body),
            Some(b"a".to_vec())
        );
        assert_eq!(
            AnswerStore::in_dir(dir.clone())
                .swap(&answer("q1", "c"))
                .map(|a| a.body),
            Some(b"b".to_vec()),
            "another process's store reads the same"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
