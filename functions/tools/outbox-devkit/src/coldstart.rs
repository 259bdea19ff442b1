//! Cold start and memory of a Lambda binary, without Lambda: a minimal Lambda Runtime
//! API on loopback that answers `GET …/invocation/next` once, with an empty batch of
//! the trigger's shape, then holds the next `/next`. Measured: the time from `exec` to
//! the first `/next` (the binary's init: configuration, clients, the publisher's and
//! the sweeper's reads of their SQS queues' attributes, runtime), the time to the first
//! answer (the sweeper's first sweep queries its index), the peak resident memory
//! (`VmHWM` of `/proc/<pid>/status`, read before the process is ended) and the binary's
//! size.
//!
//! The functions' AWS calls go to a local AWS (MiniStack), at resources that exist
//! there — a deployed stack's table and queues ([`deployed`]) or a table and queues
//! made for the bench ([`provisioned`]) — so that init and the first invocation make
//! real calls that are answered. Without a local AWS nothing would answer them and the
//! figures would time the SDK's retries against an unreachable endpoint: the report
//! then says so and prints the sizes only.

use crate::aws::Clients;
use crate::{deployment, provision};
use aws_smithy_types::error::display::DisplayErrorContext;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
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
    /// Whether that answer was a response (not an error).
    pub first_invocation_ok: bool,
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

/// The functions a deployment runs, as `scripts/package` lays them out.
pub const FUNCTIONS: [&str; 4] = [
    "outbox-publisher",
    "outbox-sweeper",
    "outbox-recovery",
    "orders-consumer",
];

/// The local AWS the functions call, and each function's own configuration there.
#[derive(Debug, Clone, Default)]
pub struct LocalAws {
    /// Its endpoint (`AWS_ENDPOINT_URL`).
    pub endpoint: String,
    /// Whose resources the functions use, in words, for the report.
    pub resources: String,
    /// Function (as [`FUNCTIONS`] names it) → its variables: table, routes, queues.
    pub variables: BTreeMap<String, BTreeMap<String, String>>,
    /// Tables made for the bench, removed by [`LocalAws::remove_made`].
    pub made_tables: Vec<String>,
    /// Queues made for the bench (URLs), removed likewise.
    pub made_queues: Vec<String>,
}

/// The deployed name of a function of [`FUNCTIONS`] (`outbox-publisher` →
/// `<prefix>-publisher`, `orders-consumer` → `<prefix>-orders-consumer`).
pub fn deployed_name(prefix: &str, function: &str) -> String {
    format!(
        "{prefix}-{}",
        function.strip_prefix("outbox-").unwrap_or(function)
    )
}

/// The configuration of every function of the stack deployed with `prefix` on the local
/// AWS at `endpoint`, as deployed: its table, routes and queues.
pub async fn deployed(clients: &Clients, endpoint: &str, prefix: &str) -> Result<LocalAws, String> {
    let mut variables = BTreeMap::new();
    for function in FUNCTIONS {
        let mut env = deployment::environment(clients, &deployed_name(prefix, function))
            .await
            .map_err(|e| format!("reading deployment `{prefix}` on {endpoint}: {e}"))?;
        // Only a debug build reads it; a release build has no fault injection.
        env.remove("OUTBOX_FAULTS");
        variables.insert(function.to_owned(), env);
    }
    Ok(LocalAws {
        endpoint: endpoint.to_owned(),
        resources: format!("the table and queues of deployment `{prefix}`"),
        variables,
        ..LocalAws::default()
    })
}

/// A table, an orders table and two queues made on the local AWS at `endpoint` for the
/// bench (when no stack is deployed there), and every function's configuration at them.
pub async fn provisioned(clients: &Clients, endpoint: &str) -> Result<LocalAws, String> {
    let id = format!("coldstart-{:08x}", fastrand::u32(..));
    let (table, orders) = (format!("{id}-table"), format!("{id}-orders"));
    let mut aws = LocalAws {
        endpoint: endpoint.to_owned(),
        resources: format!("table {table}, its queues and {orders}, made for the bench"),
        ..LocalAws::default()
    };
    let made = async {
        provision::create_outbox_table(&clients.dynamodb, &table).await?;
        aws.made_tables.push(table.clone());
        provision::create_keyed_table(&clients.dynamodb, &orders, "id").await?;
        aws.made_tables.push(orders.clone());
        let queue =
            provision::create_queue(&clients.sqs, &format!("{id}-orders-queue"), 30).await?;
        aws.made_queues.push(queue.clone());
        let dlq = provision::create_queue(&clients.sqs, &format!("{id}-dlq"), 30).await?;
        aws.made_queues.push(dlq.clone());
        Ok::<_, provision::ProvisionError>((queue, dlq))
    }
    .await;
    let (queue, dlq) = match made {
        Ok(urls) => urls,
        Err(e) => {
            aws.remove_made(clients).await;
            return Err(format!("making a table and queues on {endpoint}: {e}"));
        }
    };
    let vars = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>()
    };
    let routes = serde_json::json!({ "orders": queue }).to_string();
    let outbox = vars(&[
        ("OUTBOX_TABLE_NAME", &table),
        ("OUTBOX_ROUTES", &routes),
        ("OUTBOX_DLQ_URL", &dlq),
        ("OUTBOX_DEPLOYMENT", &id),
    ]);
    aws.variables = BTreeMap::from([
        ("outbox-publisher".to_owned(), outbox.clone()),
        ("outbox-sweeper".to_owned(), outbox),
        (
            "outbox-recovery".to_owned(),
            vars(&[("OUTBOX_TABLE_NAME", &table), ("OUTBOX_DEPLOYMENT", &id)]),
        ),
        (
            "orders-consumer".to_owned(),
            vars(&[("ORDERS_TABLE_NAME", &orders), ("OUTBOX_DEPLOYMENT", &id)]),
        ),
    ]);
    Ok(aws)
}

impl LocalAws {
    /// Removes what [`provisioned`] made (best effort: a failure is printed).
    pub async fn remove_made(&self, clients: &Clients) {
        for table in &self.made_tables {
            if let Err(e) = clients
                .dynamodb
                .delete_table()
                .table_name(table)
                .send()
                .await
            {
                eprintln!(
                    "bench coldstart: removing table {table}: {}",
                    DisplayErrorContext(&e)
                );
            }
        }
        for url in &self.made_queues {
            if let Err(e) = clients.sqs.delete_queue().queue_url(url).send().await {
                eprintln!(
                    "bench coldstart: removing queue {url}: {}",
                    DisplayErrorContext(&e)
                );
            }
        }
    }
}

/// The environment `name` starts with: what Lambda sets, the function's own variables
/// at the local AWS (its table, routes, queues), and that local AWS — its endpoint,
/// test credentials, region us-east-1 — over anything else.
pub fn function_env(name: &str, aws: &LocalAws) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = [
        ("AWS_LAMBDA_FUNCTION_NAME", name),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    if let Some(own) = aws.variables.get(name) {
        env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    env.extend(
        [
            ("AWS_ENDPOINT_URL", aws.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    env.remove("AWS_SESSION_TOKEN");
    env.remove("AWS_PROFILE");
    env.into_iter().collect()
}

fn header() -> String {
    format!(
        "{:<18} {:>12} {:>18} {:>14} {:>12}\n",
        "function", "init ms", "first invoke ms", "peak RSS MiB", "size MiB"
    )
}

/// Measures every function under `dir` (`<dir>/<name>/bootstrap`), `runs` times each,
/// its AWS calls going to `aws`, and prints a table: the medians of init and first
/// invocation, the highest peak memory, the size. Without a local AWS, only the sizes:
/// the other figures would time calls nothing answers.
pub fn report(dir: &Path, runs: usize, aws: Option<&LocalAws>) -> Result<String, ColdStartError> {
    let mib = |bytes: u64| bytes as f64 / 1_048_576.0;
    let Some(aws) = aws else {
        let mut out = String::from(
            "cold start per function: NOT MEASURED — no local AWS (pass --endpoint or set OUTBOX_ENDPOINT):\n\
             the functions call AWS at init (the publisher and the sweeper read their queues' attributes)\n\
             and in the first invocation (the sweeper queries its index); with nothing to answer, the\n\
             times would be the SDK's retries against an unreachable endpoint. Sizes only:\n",
        );
        out.push_str(&header());
        for name in FUNCTIONS {
            let binary = dir.join(name).join("bootstrap");
            match std::fs::metadata(&binary) {
                Ok(m) => out.push_str(&format!(
                    "{name:<18} {:>12} {:>18} {:>14} {:>12.1}\n",
                    "-",
                    "-",
                    "-",
                    mib(m.len())
                )),
                Err(_) => out.push_str(&format!("{name:<18} (no {})\n", binary.display())),
            }
        }
        return Ok(out);
    };
    let runs = runs.max(1);
    let mut out = format!(
        "cold start per function ({runs} runs each; medians; Runtime API on loopback, event: an empty batch;\n\
         AWS calls to the local AWS at {}, {})\n{}",
        aws.endpoint,
        aws.resources,
        header()
    );
    for name in FUNCTIONS {
        let binary = dir.join(name).join("bootstrap");
        if !binary.exists() {
            out.push_str(&format!("{name:<18} (no {})\n", binary.display()));
            continue;
        }
        let mut all = Vec::with_capacity(runs);
        for _ in 0..runs {
            all.push(measure(&binary, &function_env(name, aws), empty_event())?);
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        out.push_str(&format!(
            "{name:<18} {:>12.1} {:>18.1} {:>14.1} {:>12.1}",
            median(all.iter().map(|c| ms(c.init)).collect()),
            median(all.iter().map(|c| ms(c.first_invocation)).collect()),
            mib(all.iter().map(|c| c.peak_rss_kib).max().unwrap_or(0) * 1024),
            mib(all[0].binary_bytes),
        ));
        let errors = all.iter().filter(|c| !c.first_invocation_ok).count();
        if errors > 0 {
            out.push_str(&format!(
                "  (the first invocation answered an error in {errors} of {runs} runs)"
            ));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_call_the_local_aws_at_their_own_resources() {
        let aws = LocalAws {
            endpoint: "http://127.0.0.1:4566".to_owned(),
            variables: BTreeMap::from([(
                "outbox-publisher".to_owned(),
                BTreeMap::from([
                    ("OUTBOX_TABLE_NAME".to_owned(), "bench-table".to_owned()),
                    ("AWS_ENDPOINT_URL".to_owned(), "http://elsewhere".to_owned()),
                    ("AWS_ACCESS_KEY_ID".to_owned(), "AKIAREAL".to_owned()),
                ]),
            )]),
            ..LocalAws::default()
        };
        let env: BTreeMap<String, String> =
            function_env("outbox-publisher", &aws).into_iter().collect();
        let var = |name: &str| env.get(name).map(String::as_str);
        assert_eq!(var("AWS_ENDPOINT_URL"), Some("http://127.0.0.1:4566"));
        assert_eq!(var("AWS_ACCESS_KEY_ID"), Some("test"));
        assert_eq!(var("AWS_SECRET_ACCESS_KEY"), Some("test"));
        assert_eq!(var("AWS_REGION"), Some("us-east-1"));
        assert_eq!(var("OUTBOX_TABLE_NAME"), Some("bench-table"));
        assert_eq!(var("AWS_LAMBDA_FUNCTION_NAME"), Some("outbox-publisher"));
        assert_eq!(
            deployed_name("bench", "outbox-publisher"),
            "bench-publisher"
        );
        assert_eq!(
            deployed_name("bench", "orders-consumer"),
            "bench-orders-consumer"
        );
    }

    #[test]
    fn without_a_local_aws_no_time_is_printed() {
        let dir = std::env::temp_dir().join(format!("coldstart-{}", std::process::id()));
        let binary = dir.join("outbox-publisher").join("bootstrap");
        std::fs::create_dir_all(binary.parent().expect("parent")).expect("dir");
        std::fs::write(&binary, vec![0u8; 2 * 1_048_576]).expect("binary");
        let out = report(&dir, 5, None).expect("report");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(out.contains("NOT MEASURED"), "{out}");
        let row = out
            .lines()
            .find(|l| l.starts_with("outbox-publisher"))
            .expect("row");
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["outbox-publisher", "-", "-", "-", "2.0"]
        );
    }

    #[test]
    fn the_peak_memory_of_this_process_is_read_from_proc() {
        let kib = peak_rss_kib(std::process::id()).expect("VmHWM");
        assert!(kib > 0);
    }
}
