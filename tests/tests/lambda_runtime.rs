//! The compiled `outbox-publisher` and `outbox-sweeper` binaries behind a local Lambda Runtime API
//! (`cargo lambda watch`), invoked with a real stream event: proves the `main`
//! wiring — configuration from the environment, clients, response shape.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use harness::{Outbox, drain, s};
use outbox::NewMessage;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo_lambda() -> PathBuf {
    let path = root().join(".venv/bin/cargo-lambda");
    assert!(
        path.exists(),
        "{} is missing: run the suite with `tests/run`, which installs cargo-lambda from PyPI",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `cargo lambda watch` in its own process group, killed with everything it started.
struct Watch {
    child: Child,
    port: u16,
    bin: &'static str,
}

impl Watch {
    fn start(env: &[(&str, String)]) -> Self {
        Self::start_bin("outbox-publisher", env)
    }

    fn start_bin(bin: &'static str, env: &[(&str, String)]) -> Self {
        let port = free_port();
        let mut cmd = Command::new(cargo_lambda());
        cmd.current_dir(root())
            .args(["lambda", "watch", "--ignore-changes", "--bin", bin])
            .args([
                "--invoke-address",
                "127.0.0.1",
                "--invoke-port",
                &port.to_string(),
            ])
            .env_remove("OUTBOX_TABLE_NAME")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        for (k, v) in env {
            cmd.args(["--env-var", &format!("{k}={v}")]);
        }
        let child = cmd.spawn().expect("start cargo lambda watch");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "cargo lambda watch did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Watch { child, port, bin }
    }

    /// Invokes the function; `Ok(response JSON)` or `Err(what cargo lambda said)`.
    fn invoke(&self, event: &str) -> Result<serde_json::Value, String> {
        let file = std::env::temp_dir().join(format!("outbox-event-{}.json", uuid::Uuid::now_v7()));
        std::fs::write(&file, event).unwrap();
        let out = Command::new(cargo_lambda())
            .current_dir(root())
            .args(["lambda", "invoke", self.bin])
            .args([
                "--invoke-address",
                "127.0.0.1",
                "--invoke-port",
                &self.port.to_string(),
            ])
            .arg("--data-file")
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run cargo lambda invoke");
        // The first invoke compiles the function; never wait forever.
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut child = out;
        while child
            .try_wait()
            .expect("wait for cargo lambda invoke")
            .is_none()
        {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = std::fs::remove_file(&file);
                return Err(format!("cargo lambda invoke {} timed out", self.bin));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = child
            .wait_with_output()
            .expect("collect cargo lambda invoke output");
        let _ = std::fs::remove_file(&file);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        if out.status.success() {
            serde_json::from_str(stdout.trim()).map_err(|e| format!("not JSON ({e}): {stdout}"))
        } else {
            Err(format!("{stdout}\n{stderr}"))
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

fn env_for(ob: &Outbox) -> Vec<(&'static str, String)> {
    vec![
        ("OUTBOX_TABLE_NAME", ob.table.clone()),
        (
            "OUTBOX_ROUTES",
            format!(r#"{{"orders":"{}"}}"#, ob.queue.url),
        ),
        ("OUTBOX_DLQ_URL", ob.dlq_url.clone()),
        ("AWS_ENDPOINT_URL", harness::endpoint()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("RUST_LOG", "warn".into()),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_publisher_binary_publishes_a_stream_event_behind_the_lambda_runtime_api() {
    // Given a committed message and its stream event as Lambda would deliver it
    let mut ob = Outbox::new().await;
    let committed = ob
        .writer()
        .commit(vec![], &[NewMessage::new("USER#1", "orders", r#"{"x":1}"#)])
        .await
        .expect("commit");
    let event = serde_json::to_string(&ob.filtered_event().await).unwrap();
    // When the compiled binary is invoked through the Runtime API
    let watch = Watch::start(&env_for(&ob));
    let response = tokio::task::spawn_blocking(move || {
        let r = watch.invoke(&event);
        drop(watch);
        r
    })
    .await
    .unwrap()
    .expect("invocation succeeds");
    // Then it answers Lambda's partial batch response shape, with no failures
    assert_eq!(response, serde_json::json!({"batchItemFailures": []}));
    // And it really published and marked the message
    let msgs = drain(&ob.clients.sqs, &ob.queue.url).await;
    assert_eq!(msgs.len(), 1);
    let item = ob
        .item("USER#1", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}

#[test]
fn a_publisher_started_without_its_table_variable_exits_at_once_naming_it() {
    // The binary reads its configuration before it contacts the Runtime API: run it
    // as Lambda would start it, minus the table variable.
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            "-p",
            "outbox-publisher",
            "--bin",
            "outbox-publisher",
        ])
        .env_remove("OUTBOX_TABLE_NAME")
        .env(
            "OUTBOX_ROUTES",
            r#"{"orders":"https://sqs.eu-west-1.amazonaws.com/1/orders"}"#,
        )
        .env(
            "OUTBOX_DLQ_URL",
            "https://sqs.eu-west-1.amazonaws.com/1/dlq",
        )
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .output()
        .expect("run the publisher binary");
    assert!(!out.status.success(), "it must not start");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stderr.contains("OUTBOX_TABLE_NAME") || stdout.contains("OUTBOX_TABLE_NAME"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweeper_binary_recovers_a_due_message_from_a_scheduled_event() {
    // Given a pending message already due (its producer wrote a zero grace) that the
    // stream path never published
    let ob = Outbox::new().await;
    let event = serde_json::json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event", "source": "aws.events", "account": "123456789012",
        "time": "2026-11-29T10:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/outbox-sweep"], "detail": {}
    })
    .to_string();
    // When the compiled sweeper is invoked with EventBridge's scheduled event
    let watch = Watch::start_bin("outbox-sweeper", &env_for(&ob));
    // A first invocation compiles the binary (time that counts against the
    // invocation's deadline in `cargo lambda watch`); nothing is due yet.
    let (watch, event, warm) = tokio::task::spawn_blocking(move || {
        let r = watch.invoke(&event);
        (watch, event, r)
    })
    .await
    .unwrap();
    assert_eq!(warm.expect("first invocation succeeds")["found"], 0);
    let writer = ob.writer().sweep_grace(std::time::Duration::ZERO);
    let committed = writer
        .commit(vec![], &[NewMessage::new("USER#2", "orders", r#"{"y":2}"#)])
        .await
        .expect("commit");
    let summary = tokio::task::spawn_blocking(move || {
        let r = watch.invoke(&event);
        drop(watch);
        r
    })
    .await
    .unwrap()
    .expect("invocation succeeds");
    // Then its summary says it published one, and the message is out and SENT
    assert_eq!(summary["published"], 1, "{summary}");
    assert_eq!(drain(&ob.clients.sqs, &ob.queue.url).await.len(), 1);
    let item = ob
        .item("USER#2", &committed.sort_keys[0])
        .await
        .expect("item");
    assert_eq!(s(&item, "Status").as_deref(), Some("SENT"));
}
