//! `cargo xtask bench` (`scripts/bench`): the benchmarks of docs/benchmarks.md, each
//! printing its figures with their units:
//!
//! 1. per-record CPU of the publisher's handler, from the event's JSON bytes to the
//!    built SQS entries, beside a plain-Python peer on the same records; with
//!    `OUTBOX_BENCH_CALLGRIND=1`, instructions per record counted by callgrind;
//! 2. AWS requests per published message and the items one sweep reads, on MiniStack;
//! 3. on a CDK stack deployed into MiniStack (release build): commit→publish latency,
//!    the highest rate held with p99 < 1 s after a warm-up, the raw TransactWriteItems
//!    rate on the deployed table beside it,
//!    the sweeper's recovery of a stuck item, billed durations; then the sweeper's
//!    drain of 20,000 due items beside the local AWS's raw read rates;
//! 4. the cost of a million published messages beside a scan-based polling worker;
//! 5. cold start, peak RSS and size of each release binary.
//!
//! `OUTBOX_BENCH_SKIP_DEPLOYED=1` skips part 3, `OUTBOX_BENCH_SKIP_RELEASE=1` parts 3
//! and 5 (they need the release build); `OUTBOX_BENCH_RATE` sets the cost model's
//! sustained rate (default 50 messages/s). `OUTBOX_ENDPOINT` names a running local AWS
//! to use instead of starting one.

use crate::emulator::{Emulator, Kind, StopOnDrop};
use crate::process::Cmd;
use crate::session::{Session, fresh_state_dir};
use crate::{Result, deploy, package};

fn set(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Runs the benchmarks.
pub fn run(s: &mut Session) -> Result {
    let out = s.target.join("bench");
    std::fs::create_dir_all(out.join("events"))
        .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    s.step("bench 1. handler CPU per record, from JSON bytes (Rust), and the Python peer on the same records");
    s.cargo()
        .env("HANDLER_BENCH_EVENTS", out.join("events"))
        .args(["bench", "-p", "outbox-tests", "--bench", "handler"])
        .run()?;
    if set("OUTBOX_BENCH_CALLGRIND") && Cmd::new("valgrind").arg("--version").succeeds() {
        callgrind(s, &out)?;
    }

    let mut started = None;
    let endpoint = match std::env::var("OUTBOX_ENDPOINT") {
        Ok(url) => url,
        Err(_) => {
            let emulator = Emulator::at(fresh_state_dir("bench")?)?;
            let url = emulator.start(s, Kind::Ministack)?;
            // MiniStack serves TLS only, with a certificate of its own: every client
            // from here on (the Rust SDK, the CDK) trusts it.
            for (k, v) in emulator.trust_exports() {
                s.set_env(&k, v);
            }
            s.set_env(
                "OUTBOX_DEPLOY_STATE",
                emulator.state().join("deploy").display().to_string(),
            );
            started = Some(StopOnDrop(emulator));
            url
        }
    };
    s.set_env("OUTBOX_ENDPOINT", endpoint.clone());

    s.step("bench 2. AWS requests per published message; items a sweep reads");
    for bench in ["requests_per_message", "sweep_reads"] {
        s.cargo()
            .args(["bench", "-p", "outbox-tests", "--bench", bench])
            .run()?;
    }
    let release = !set("OUTBOX_BENCH_SKIP_RELEASE");
    let deployed = release && !set("OUTBOX_BENCH_SKIP_DEPLOYED");
    let lambda = s.target.join("lambda");
    let devkit = s.target.join("release/outbox-devkit");
    if release {
        s.step("release build of the functions (cargo xtask package)");
        package::package(s, &package::Options::release(lambda.clone()), &[])?;
        s.cargo()
            .args([
                "build",
                "--release",
                "-p",
                "outbox-devkit",
                "--bin",
                "outbox-devkit",
            ])
            .run()?;
        if deployed {
            s.step(
                "bench 3. latency and throughput on the deployed local stack (CDK, release build)",
            );
            let opts = deploy::Options {
                tool: deploy::Tool::Cdk,
                prefix: "bench".into(),
                assets: Some(lambda.clone()),
                endpoint: Some(endpoint.clone()),
                vars: Vec::new(),
                destroy: false,
            };
            deploy::deploy(s, &opts)?;
            let json = out.join("lambda.json");
            s.cmd(&devkit)
                .args([
                    "--endpoint",
                    &endpoint,
                    "bench",
                    "latency",
                    "--prefix",
                    "bench",
                    "--json",
                ])
                .arg(&json)
                .run()?;
            s.set_env("OUTBOX_BENCH_LAMBDA", json.display().to_string());
            // After the latency bench: its billed durations are read from logs since
            // its start, and the drain's 20,000 sweeps are not latency's.
            s.cmd(&devkit)
                .args([
                    "--endpoint",
                    &endpoint,
                    "bench",
                    "drain",
                    "--prefix",
                    "bench",
                ])
                .run()?;
        }
    }

    s.step("bench 4. cost per million published messages, beside a polling worker");
    s.cargo()
        .args(["bench", "-p", "outbox-tests", "--bench", "cost"])
        .run()?;

    if release {
        s.step("bench 5. cold start, peak memory and size of each release binary (AWS calls to the local AWS)");
        let mut cmd = s
            .cmd(&devkit)
            .args(["bench", "coldstart", "--dir"])
            .arg(&lambda)
            .args(["--runs", "5", "--endpoint", &endpoint]);
        if deployed {
            cmd = cmd.args(["--prefix", "bench"]);
        }
        cmd.run()?;
    }
    drop(started);
    Ok(())
}

/// Instructions per record of the handler bench's last build, counted by callgrind.
fn callgrind(s: &Session, out: &std::path::Path) -> Result {
    let deps = s.target.join("release/deps");
    let newest = std::fs::read_dir(&deps)
        .map_err(|e| format!("{}: {e}", deps.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().starts_with("handler-")
                && e.path().extension().is_none()
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .ok_or("callgrind: no handler bench binary in target/release/deps")?;
    let log = out.join("callgrind.log");
    Cmd::new("sh")
        .arg("-c")
        .arg(format!(
            "HANDLER_BENCH_ITERATIONS=20 valgrind --tool=callgrind --callgrind-out-file='{}' '{}' 2>'{}' >/dev/null",
            out.join("callgrind.out").display(),
            newest.path().display(),
            log.display()
        ))
        .run()?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let total: u64 = text
        .lines()
        .find_map(|l| l.split("Collected : ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("callgrind: no instruction count in {}", log.display()))?;
    println!(
        "callgrind: {total} instructions for 20 events of 100 records = {} instructions per record (parse included; {})",
        total / 2000,
        out.join("callgrind.out").display()
    );
    Ok(())
}
