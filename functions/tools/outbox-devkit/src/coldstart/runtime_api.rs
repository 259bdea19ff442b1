//! One measured start of a binary under the local Lambda Runtime API
//! ([`crate::runtime_api`]).

use super::{ColdStart, ColdStartError};
use crate::runtime_api::{LocalRuntime, peak_rss_kib};
use std::path::Path;
use std::time::Duration;

/// The event the binary gets: an empty batch of its trigger's shape.
pub fn empty_event() -> &'static [u8] {
    br#"{"Records":[]}"#
}

/// Starts `binary` under the local Runtime API with `env`, hands it `event` once and
/// measures it.
pub fn measure(
    binary: &Path,
    env: &[(String, String)],
    event: &[u8],
) -> Result<ColdStart, ColdStartError> {
    let fail = |what: String| ColdStartError::Io {
        binary: binary.display().to_string(),
        what,
    };
    let binary_bytes = std::fs::metadata(binary)
        .map_err(|e| fail(e.to_string()))?
        .len();
    let mut runtime = LocalRuntime::start(binary, env, false).map_err(fail)?;
    let answer = runtime.invoke(event).map_err(fail)?;
    // Let it come back for the next event, then read its peak memory.
    std::thread::sleep(Duration::from_millis(200));
    let peak_rss_kib = peak_rss_kib(runtime.pid()).unwrap_or(0);
    Ok(ColdStart {
        init: answer.waited,
        first_invocation: answer.took,
        first_invocation_ok: answer.ok,
        peak_rss_kib,
        binary_bytes,
    })
}
