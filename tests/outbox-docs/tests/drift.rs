//! The docs name only what exists: every repository path a Markdown file names (in
//! backticks or as a link target) is there, and every `OUTBOX_*` variable it names is
//! read somewhere in the code or the stacks. Docs drift as files move; this fails the
//! suite instead of leaving a reader at a dead end.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The folders a path in the docs starts from (the repository's top level).
const ROOTS: [&str; 8] = [
    "functions/",
    "infra/",
    "tests/",
    "scripts/",
    "docs/",
    "examples/",
    ".ci/",
    ".cargo/",
];

/// Folders never walked: builds, installs, emulator state.
const SKIP: [&str; 7] = [
    "target",
    "node_modules",
    ".venv",
    ".git",
    "cdk.out",
    ".terraform",
    "lambda-dev",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIP.contains(&name.as_str()) {
                walk(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

fn files() -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(&repo(), &mut all);
    all
}

fn markdown(all: &[PathBuf]) -> Vec<PathBuf> {
    all.iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .cloned()
        .collect()
}

/// The spans between backticks and the targets of Markdown links, outside fenced
/// code blocks (examples of output may name anything).
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        out.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let target = &rest[at + 2..];
            let end = target.find(')').unwrap_or(target.len());
            out.push(target[..end].to_owned());
            rest = &target[end..];
        }
    }
    out
}

/// A reference that names a file or folder of the repository, as a path from the
/// repository's root or from the doc's folder (links), without any anchor.
fn as_path(reference: &str, doc_dir: &Path) -> Option<PathBuf> {
    let r = reference.split('#').next()?.trim();
    let placeholder = |s: &str| {
        s.contains('<') || s.contains('*') || s.contains('{') || s.contains(' ') || s.contains("::")
    };
    if r.is_empty() || placeholder(r) || r.contains("://") || r.starts_with("mailto:") {
        return None;
    }
    // What a build or an install makes (`target/`, `.venv/`): not in a clean clone.
    if r.split('/').any(|part| SKIP.contains(&part)) {
        return None;
    }
    if ROOTS.iter().any(|root| r.starts_with(root)) {
        return Some(repo().join(r));
    }
    let linked = r.ends_with(".md") || r.starts_with("../") || r.starts_with("./");
    linked.then(|| doc_dir.join(r))
}

#[test]
fn every_path_the_docs_name_exists() {
    let all = files();
    let mut missing = BTreeSet::new();
    for doc in markdown(&all) {
        let text = fs::read_to_string(&doc).unwrap_or_default();
        let dir = doc.parent().unwrap_or(Path::new("."));
        for reference in references(&text) {
            // A path from the repository's root, or from the doc's own folder (a
            // crate's README naming its `examples/`).
            let beside = dir.join(reference.split('#').next().unwrap_or_default());
            if let Some(path) = as_path(&reference, dir)
                && !path.exists()
                && !beside.exists()
            {
                let shown = doc.strip_prefix(repo()).unwrap_or(&doc).display();
                missing.insert(format!("{shown}: `{reference}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name {} paths that do not exist (move the reference with the file, or remove it):\n{}",
        missing.len(),
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// `OUTBOX_*` names in `text`: upper-case letters, digits and `_`.
fn variables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("OUTBOX_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = tail[..end].trim_end_matches('_');
        if name.len() > "OUTBOX_".len() {
            out.insert(name.to_owned());
        }
        rest = &tail[end.max(1)..];
    }
    out
}

#[test]
fn every_variable_the_docs_name_is_read_somewhere() {
    let all = files();
    let code: String = all
        .iter()
        .filter(|p| {
            p.extension().is_some_and(|e| {
                ["rs", "tf", "ts", "json", "py", "sh", "hcl"].contains(&&*e.to_string_lossy())
            }) || p.parent().is_some_and(|d| d.ends_with("scripts"))
                || p.ends_with("tests/run")
                || p.ends_with(".ci/run")
        })
        .filter_map(|p| fs::read_to_string(p).ok())
        .collect();
    let known = variables(&code);
    let mut unknown = BTreeSet::new();
    for doc in markdown(&all) {
        let text = fs::read_to_string(&doc).unwrap_or_default();
        for name in variables(&text).difference(&known) {
            let shown = doc.strip_prefix(repo()).unwrap_or(&doc).display();
            unknown.insert(format!("{shown}: {name}"));
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs name {} variables no code reads:\n{}",
        unknown.len(),
        unknown.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_reference_reader_finds_paths_links_and_variables() {
    let text = "see `functions/lib/x.rs` and [guarantees](guarantees.md#order)\n```\n`docs/not-here.md`\n```\nset `OUTBOX_SWEEP_SHARDS=16`";
    let refs = references(text);
    assert_eq!(
        refs,
        [
            "functions/lib/x.rs",
            "guarantees.md#order",
            "OUTBOX_SWEEP_SHARDS=16"
        ]
    );
    let dir = Path::new("/repo/docs");
    assert_eq!(
        as_path("guarantees.md#order", dir),
        Some(dir.join("guarantees.md"))
    );
    assert_eq!(as_path("outbox-ops show <key>", dir), None);
    assert_eq!(as_path("https://docs.aws.amazon.com/x.md", dir), None);
    assert_eq!(
        variables(text),
        BTreeSet::from(["OUTBOX_SWEEP_SHARDS".to_owned()])
    );
}
