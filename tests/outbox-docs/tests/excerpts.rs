//! The README's Terraform and CDK snippets are excerpts of the adoption example
//! (examples/shop), which `tests/run` validates, synthesizes and deploys: a snippet
//! that drifts from the example — a renamed input, a prop the construct no longer
//! has — fails here instead of misleading the reader.
// A test's own files: a missing one is the failure to report.
#![allow(clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fenced blocks of `markdown` whose info string is `lang`.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}");
    let mut found = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == fence {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            found.push(body.join("\n"));
        }
    }
    found
}

/// Whether the lines of `snippet` appear, in order and together, in `source`.
fn is_excerpt(snippet: &str, source: &str) -> bool {
    let want: Vec<&str> = snippet.lines().map(str::trim_end).collect();
    let have: Vec<&str> = source.lines().map(str::trim_end).collect();
    !want.is_empty() && have.windows(want.len()).any(|w| w == want.as_slice())
}

/// The files of `dir` ending in `.extension`, with their text.
fn sources(dir: &str, extension: &str) -> Vec<(PathBuf, String)> {
    let dir = repo().join(dir);
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|x| x == extension))
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap_or_default();
            (path, text)
        })
        .collect();
    files.sort();
    files
}

/// Checks every `lang` snippet of the README against `dir`; returns how many.
fn check(lang: &str, dir: &str, extension: &str) -> usize {
    let readme = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let files = sources(dir, extension);
    let snippets = blocks(&readme, lang);
    for snippet in &snippets {
        assert!(
            files.iter().any(|(_, text)| is_excerpt(snippet, text)),
            "this ```{lang} snippet of README.md is not an excerpt of {dir}/*.{extension}: \
             copy it from the example (which the tests deploy), or change the example first\n{snippet}"
        );
    }
    snippets.len()
}

#[test]
fn the_readmes_terraform_snippets_are_excerpts_of_the_shops_terraform_root() {
    let shown = check("hcl", "examples/shop/terraform", "tf");
    assert!(shown >= 1, "the README shows the module block");
}

#[test]
fn the_readmes_cdk_snippets_are_excerpts_of_the_shops_cdk_app() {
    let shown = check("ts", "examples/shop/cdk", "ts");
    assert!(
        shown >= 2,
        "the README shows the construct and grantProduce"
    );
}

#[test]
fn a_snippet_that_is_not_in_the_source_is_told_apart() {
    let source = "a\n  b\nc\n";
    assert!(is_excerpt("  b\nc", source));
    assert!(!is_excerpt("a\nc", source), "lines must be together");
    assert!(!is_excerpt("b", source), "indentation counts");
    let markdown = "x\n```ts\none\ntwo\n```\n```hcl\nthree\n```\n";
    assert_eq!(blocks(markdown, "ts"), ["one\ntwo"]);
}
