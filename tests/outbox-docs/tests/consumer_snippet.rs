//! The idempotency crate's README shows its consumer in full; the same program is its
//! example `orders_in_a_dozen_lines`, which the workspace builds and lints. The two
//! must be one program: a fix made to one (such as logging each failure) and not the
//! other fails here.
// A test's own files: a missing one is the failure to report.
#![allow(clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions/lib/dynamodb-outbox-idempotency")
}

/// The first ```rust,no_run block of `markdown`.
fn first_rust_block(markdown: &str) -> Option<String> {
    let mut lines = markdown.lines();
    lines.by_ref().find(|l| l.trim_end() == "```rust,no_run")?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("```")).collect();
    Some(body.join("\n"))
}

/// The example's program: its text without the `//!` lines that introduce it.
fn program(example: &str) -> String {
    let lines: Vec<&str> = example.lines().filter(|l| !l.starts_with("//!")).collect();
    lines.join("\n").trim_end().to_owned()
}

#[test]
fn the_readmes_consumer_is_the_example_program_line_for_line() {
    let dir = crate_dir();
    let readme = fs::read_to_string(dir.join("README.md")).expect("README.md");
    let example = fs::read_to_string(dir.join("examples/orders_in_a_dozen_lines.rs"))
        .expect("examples/orders_in_a_dozen_lines.rs");
    let shown = first_rust_block(&readme).expect("the README shows its consumer");
    assert_eq!(
        shown.trim_end(),
        program(&example),
        "the README's consumer and examples/orders_in_a_dozen_lines.rs differ: change both"
    );
    // And it logs each failure by its ids, never the payload.
    assert!(shown.contains("tracing::error!") && shown.contains("message_id = %o.message_id"));
}

#[test]
fn a_program_differing_by_one_line_is_told_apart() {
    let readme = "text\n```rust,no_run\nfn main() {}\n```\n";
    let example = "//! about it\nfn main() {}\n";
    let other = "//! about it\nfn main() { println!(); }\n";
    let shown = first_rust_block(readme).expect("block");
    assert_eq!(shown, program(example));
    assert_ne!(shown, program(other));
}
