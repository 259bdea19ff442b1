//! A Lambda Runtime API on loopback, so that a function's binary — as packaged, debug
//! or release — runs its invocations here as Lambda would run them: the binary asks
//! `GET …/invocation/next`, gets an event with Lambda's headers, and posts its answer
//! to `…/invocation/<id>/response` (or `/error`). [`LocalRuntime::invoke`] hands it
//! one event and returns that answer, as many times as a test or bench needs: what
//! Lambda's event source mappings do when they deliver a batch again.
//!
//! Each connection the binary opens is served by its own thread, which passes every
//! request to the runtime and writes back its reply: the binary may keep one
//! connection alive or open a new one per request, as its HTTP client chooses.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// The longest wait for the binary's next request.
const WAIT: Duration = Duration::from_secs(60);

/// How long an invocation may run, as its `Lambda-Runtime-Deadline-Ms` says.
const DEADLINE: Duration = Duration::from_secs(30);

/// One request of the binary, and where its reply goes.
struct Request {
    line: String,
    body: Vec<u8>,
    reply: Sender<Reply>,
}

/// The extra headers and the body of a reply (always `200 OK`, JSON).
type Reply = (String, Vec<u8>);

/// A binary running under the local Runtime API; ended when dropped.
#[derive(Debug)]
pub struct LocalRuntime {
    child: Child,
    requests: Receiver<Request>,
    invocations: u32,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.line.trim())
    }
}

/// What one invocation got back from the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// A response (`true`) or an error (`false`).
    pub ok: bool,
    /// The body the binary posted: the handler's response, or Lambda's error shape.
    pub body: Vec<u8>,
    /// From the start of the wait to the binary's `/next` (for the first invocation,
    /// from `exec`: the binary's init).
    pub waited: Duration,
    /// From handing out the event to the answer.
    pub took: Duration,
}

impl LocalRuntime {
    /// Starts `binary` with exactly `env` (nothing inherited) and the Runtime API's
    /// address; its output is discarded unless `show_output`.
    pub fn start(
        binary: &Path,
        env: &[(String, String)],
        show_output: bool,
    ) -> Result<Self, String> {
        let at = |e: std::io::Error| format!("{}: {e}", binary.display());
        let listener = TcpListener::bind("127.0.0.1:0").map_err(at)?;
        let api = listener.local_addr().map_err(at)?;
        let output = || {
            if show_output {
                Stdio::inherit()
            } else {
                Stdio::null()
            }
        };
        let child = Command::new(binary)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
            .stdout(output())
            .stderr(output())
            .spawn()
            .map_err(at)?;
        let (sender, requests) = mpsc::channel();
        std::thread::spawn(move || accept_all(&listener, &sender));
        Ok(LocalRuntime {
            child,
            requests,
            invocations: 0,
        })
    }

    /// The binary's process id (for its peak memory: [`peak_rss_kib`]).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Hands `event` to the binary's next invocation and returns its answer.
    pub fn invoke(&mut self, event: &[u8]) -> Result<Answer, String> {
        self.invocations += 1;
        let id = format!("invocation-{}", self.invocations);
        let start = Instant::now();
        let next = self.next_request()?;
        if !next.line.contains("/invocation/next") {
            return Err(format!("expected /next, got {next:?}"));
        }
        let waited = start.elapsed();
        let handed = Instant::now();
        reply(&next, invocation_headers(&id), event.to_vec());
        let answer = self.next_request()?;
        let took = handed.elapsed();
        let ok = answer.line.contains(&format!("/invocation/{id}/response"));
        if !ok && !answer.line.contains(&format!("/invocation/{id}/error")) {
            return Err(format!("expected the answer of {id}, got {answer:?}"));
        }
        let body = answer.body.clone();
        reply(&answer, String::new(), b"{}".to_vec());
        Ok(Answer {
            ok,
            body,
            waited,
            took,
        })
    }

    /// The binary's next request, unless it ends first or [`WAIT`] passes.
    fn next_request(&mut self) -> Result<Request, String> {
        let until = Instant::now() + WAIT;
        loop {
            match self.requests.recv_timeout(Duration::from_millis(20)) {
                Ok(request) => return Ok(request),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the Runtime API stopped listening".into());
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the process ended ({status}) before its next call to the Runtime API"
                ));
            }
            if Instant::now() > until {
                return Err(format!("no call to the Runtime API within {WAIT:?}"));
            }
        }
    }
}

impl Drop for LocalRuntime {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn reply(request: &Request, headers: String, body: Vec<u8>) {
    // The connection's thread is gone only when the binary closed it: nothing to do.
    let _ = request.reply.send((headers, body));
}

/// Serves every connection the binary opens, each on its own thread, until the
/// runtime is dropped.
fn accept_all(listener: &TcpListener, requests: &Sender<Request>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let requests = requests.clone();
        std::thread::spawn(move || serve(stream, &requests));
    }
}

/// Passes each request on `stream` to the runtime and writes its reply, until the
/// binary closes the connection or the runtime is gone.
fn serve(mut stream: TcpStream, requests: &Sender<Request>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    while let Ok(Some((line, body))) = read_request(&mut reader) {
        let (reply, replied) = mpsc::channel();
        if requests.send(Request { line, body, reply }).is_err() {
            return;
        }
        let Ok((headers, body)) = replied.recv() else {
            return;
        };
        if answer(&mut stream, &headers, &body).is_err() {
            return;
        }
    }
}

/// One request line and its body; `None` when the connection closed first.
fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(None),
        Err(e) => return Err(e),
    }
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
    Ok(Some((line, body)))
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

/// The headers Lambda's Runtime API gives an invocation: its request id, a deadline
/// [`DEADLINE`] away, a function ARN and a trace id.
fn invocation_headers(id: &str) -> String {
    let deadline = (std::time::SystemTime::now() + DEADLINE)
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!(
        "Lambda-Runtime-Aws-Request-Id: {id}\r\nLambda-Runtime-Deadline-Ms: {deadline}\r\n\
         Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:000000000000:function:local\r\n\
         Lambda-Runtime-Trace-Id: Root=1-00000000-000000000000000000000000\r\n"
    )
}

/// Peak resident memory of a running process, KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The variables that make a binary trust the local AWS's certificate
/// (`scripts/emulator trust`), taken from this process's environment when set.
pub fn trust_env() -> Vec<(String, String)> {
    ["SSL_CERT_FILE", "AWS_CA_BUNDLE"]
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), std::env::var(name).ok()?)))
        .collect()
}
