//! The binary logs the way Lambda's advanced logging controls say: the level from
//! `AWS_LAMBDA_LOG_LEVEL` (or `RUST_LOG` outside Lambda), JSON when
//! `AWS_LAMBDA_LOG_FORMAT` is `JSON`, text otherwise. Started without its configuration, it logs one error and
//! exits, which is all these tests need (no emulator, no runtime API).
#![allow(clippy::expect_used, missing_docs)]

use std::process::Command;

/// What the binary prints on stdout when started without configuration under `env`.
fn logs(env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_outbox-publisher"))
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        // Lambda always sets the region; without it the SDK's configuration, loaded
        // before the function's own, would ask the instance metadata service and log
        // a warning first.
        .env("AWS_REGION", "us-east-1")
        .envs(env.iter().copied())
        .output()
        .expect("runs");
    assert!(!out.status.success(), "no configuration: it must stop");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn logs_are_json_when_lambda_says_json_and_text_otherwise() {
    let json = logs(&[("AWS_LAMBDA_LOG_FORMAT", "JSON")]);
    let line = json.lines().next().expect("a log line");
    let parsed: serde_json::Value = serde_json::from_str(line).expect("JSON");
    assert_eq!(parsed["level"], "ERROR", "{line}");
    assert!(line.contains("OUTBOX_TABLE_NAME"), "{line}");

    let text = logs(&[]);
    assert!(text.starts_with("ERROR"), "{text}");
    assert!(serde_json::from_str::<serde_json::Value>(text.trim()).is_err());
}

#[test]
fn lambdas_log_level_is_honoured_and_rust_log_without_it() {
    let silenced = logs(&[("AWS_LAMBDA_LOG_LEVEL", "off")]);
    assert!(silenced.is_empty(), "{silenced}");
    let silenced = logs(&[("RUST_LOG", "off")]);
    assert!(silenced.is_empty(), "{silenced}");
    let errors = logs(&[("AWS_LAMBDA_LOG_LEVEL", "error")]);
    assert!(errors.contains("bad configuration"), "{errors}");
}
