//! Cold start and memory of a Lambda binary, without Lambda: a minimal Lambda Runtime
//! API on loopback that answers `GET …/invocation/next` once, with an event that
//! needs no AWS call (an empty batch), then holds the next `/next`. Measured: the time
//! from `exec` to the first `/next` (the binary's init: configuration, clients,
//! runtime), the time to the first answer, the peak resident memory (`VmHWM` of
//! `/proc/<pid>/status`, read before the process is ended) and the binary's size.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one cold start measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdStart {
    /// From spawning the process to its first `/next`.
    pub init: Duration,
    /// From answering that `/next` to the function's answer (response or error).
    pub first_invocation: Duration,
    /// Peak resident set size, KiB (`VmHWM`).
    pub peak_rss_kib: u64,
    /// The binary's size, bytes.
    pub binary_bytes: u64,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum ColdStartError {
    /// Setting up the runtime API or the process.
    #[error("cold start of {binary}: {what}")]
    Io {
        /// The binary.
        binary: String,
        /// What went wrong.
        what: String,
    },
}

/// One request line and its body.
fn read_request(stream: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((line, body))
}

fn answer(stream: &mut TcpStream, headers: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

/// The event the binary gets: an empty batch of its trigger's shape.
pub fn empty_event() -> &'static [u8] {
    br#"{"Records":[]}"#
}

/// Peak resident memory of a running process, KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `binary` under a one-shot Runtime API with `env` and measures it.
pub fn measure(
    binary: &Path,
    env: &[(String, String)],
    event: &[u8],
) -> Result<ColdStart, ColdStartError> {
    let fail = |what: String| ColdStartError::Io {
        binary: binary.display().to_string(),
        what,
    };
    let io = |e: std::io::Error| fail(e.to_string());
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io)?;
    let api = listener.local_addr().map_err(io)?;
    let binary_bytes = std::fs::metadata(binary).map_err(io)?.len();
    let start = Instant::now();
    let child = Command::new(binary)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io)?;
    let guard = Guard(child);
    let (mut stream, _) = listener.accept().map_err(io)?;
    let (line, _) = read_request(&mut stream).map_err(io)?;
    let init = start.elapsed();
    if !line.contains("/invocation/next") {
        return Err(fail(format!("expected /next first, got {}", line.trim())));
    }
    let deadline = (std::time::SystemTime::now() + Duration::from_secs(30))
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let headers = format!(
        "Lambda-Runtime-Aws-Request-Id: cold-1\r\nLambda-Runtime-Deadline-Ms: {deadline}\r\n\
         Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:000000000000:function:bench\r\n\
         Lambda-Runtime-Trace-Id: Root=1-00000000-000000000000000000000000\r\n"
    );
    answer(&mut stream, &headers, event).map_err(io)?;
    let answered = Instant::now();
    // The answer may come on this connection or on a new one.
    let (line, _) = match read_request(&mut stream) {
        Ok(request) if !request.0.is_empty() => request,
        _ => {
            let (mut next, _) = listener.accept().map_err(io)?;
            let request = read_request(&mut next).map_err(io)?;
            stream = next;
            request
        }
    };
    let first_invocation = answered.elapsed();
    if !line.contains("/invocation/cold-1/") {
        return Err(fail(format!(
            "expected the invocation's answer, got {}",
            line.trim()
        )));
    }
    answer(&mut stream, "", b"{}").map_err(io)?;
    // Let it come back for the next event, then read its peak memory.
    std::thread::sleep(Duration::from_millis(200));
    let peak_rss_kib = peak_rss_kib(guard.0.id()).unwrap_or(0);
    drop(guard);
    Ok(ColdStart {
        init,
        first_invocation,
        peak_rss_kib,
        binary_bytes,
    })
}

/// The functions a deployment runs, as `scripts/package` lays them out.
pub const FUNCTIONS: [&str; 4] = [
    "outbox-publisher",
    "outbox-sweeper",
    "outbox-recovery",
    "orders-consumer",
];

/// The configuration every function reads at start (nothing it calls answers: the
/// endpoint is a closed loopback port), as a deployment sets it.
pub fn function_env(name: &str) -> Vec<(String, String)> {
    let queue = "https://sqs.us-east-1.amazonaws.com/000000000000";
    [
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "bench".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "bench".to_owned()),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9".to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", name.to_owned()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256".to_owned()),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON".to_owned()),
        ("OUTBOX_TABLE_NAME", "outbox".to_owned()),
        ("OUTBOX_ROUTES", format!(r#"{{"orders":"{queue}/orders"}}"#)),
        ("OUTBOX_DLQ_URL", format!("{queue}/outbox-dlq")),
        ("ORDERS_TABLE_NAME", "orders".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Measures every function under `dir` (`<dir>/<name>/bootstrap`), `runs` times each,
/// and prints a table: the medians of init and first invocation, the highest peak
/// memory, the size.
pub fn report(dir: &Path, runs: usize) -> Result<String, ColdStartError> {
    let mut out = format!(
        "cold start per function ({runs} runs each; medians; Runtime API on loopback, event: an empty batch)\n{:<18} {:>12} {:>18} {:>14} {:>12}\n",
        "function", "init ms", "first invoke ms", "peak RSS MiB", "size MiB"
    );
    for name in FUNCTIONS {
        let binary = dir.join(name).join("bootstrap");
        if !binary.exists() {
            out.push_str(&format!("{name:<18} (no {})\n", binary.display()));
            continue;
        }
        let mut all = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            all.push(measure(&binary, &function_env(name), empty_event())?);
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        out.push_str(&format!(
            "{name:<18} {:>12.1} {:>18.1} {:>14.1} {:>12.1}\n",
            median(all.iter().map(|c| ms(c.init)).collect()),
            median(all.iter().map(|c| ms(c.first_invocation)).collect()),
            all.iter().map(|c| c.peak_rss_kib).max().unwrap_or(0) as f64 / 1024.0,
            all[0].binary_bytes as f64 / 1_048_576.0,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_memory_of_this_process_is_read_from_proc() {
        let kib = peak_rss_kib(std::process::id()).expect("VmHWM");
        assert!(kib > 0);
    }
}
