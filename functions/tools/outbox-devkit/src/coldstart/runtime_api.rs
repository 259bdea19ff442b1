//! A one-shot Lambda Runtime API on loopback, and one measured start of a binary
//! under it.

use super::{ColdStart, ColdStartError};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// The longest wait for the function's next call to the Runtime API.
const WAIT: Duration = Duration::from_secs(60);

/// The next connection to the Runtime API, unless the process ends first or `limit`
/// passes (a blocking `accept` would wait forever for a process that died).
fn accept_within(
    listener: &TcpListener,
    child: &mut Child,
    limit: Duration,
) -> Result<TcpStream, String> {
    let until = Instant::now() + limit;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| e.to_string())?;
                stream
                    .set_read_timeout(Some(limit))
                    .map_err(|e| e.to_string())?;
                return Ok(stream);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "the process ended ({status}) before its next call to the Runtime API"
                    ));
                }
                if Instant::now() > until {
                    return Err(format!("no call to the Runtime API within {limit:?}"));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The headers Lambda's Runtime API gives an invocation, for the one handed out:
/// request id `cold-1`, a deadline 30 s away, a function ARN and a trace id.
fn invocation_headers() -> String {
    let deadline = (std::time::SystemTime::now() + Duration::from_secs(30))
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!(
        "Lambda-Runtime-Aws-Request-Id: cold-1\r\nLambda-Runtime-Deadline-Ms: {deadline}\r\n\
         Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:000000000000:function:bench\r\n\
         Lambda-Runtime-Trace-Id: Root=1-00000000-000000000000000000000000\r\n"
    )
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
    let mut guard = Guard(child);
    let mut stream = accept_within(&listener, &mut guard.0, WAIT).map_err(fail)?;
    let (line, _) = read_request(&mut stream).map_err(io)?;
    let init = start.elapsed();
    if !line.contains("/invocation/next") {
        return Err(fail(format!("expected /next first, got {}", line.trim())));
    }
    answer(&mut stream, &invocation_headers(), event).map_err(io)?;
    let answered = Instant::now();
    // The answer may come on this connection or on a new one.
    let (line, _) = match read_request(&mut stream) {
        Ok(request) if !request.0.is_empty() => request,
        _ => {
            let mut next = accept_within(&listener, &mut guard.0, WAIT).map_err(fail)?;
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
    let first_invocation_ok = line.contains("/invocation/cold-1/response");
    answer(&mut stream, "", b"{}").map_err(io)?;
    // Let it come back for the next event, then read its peak memory.
    std::thread::sleep(Duration::from_millis(200));
    let peak_rss_kib = peak_rss_kib(guard.0.id()).unwrap_or(0);
    drop(guard);
    Ok(ColdStart {
        init,
        first_invocation,
        first_invocation_ok,
        peak_rss_kib,
        binary_bytes,
    })
}
