//! The Terraform and CDK snippets of the README and of docs/adopting.md are excerpts
//! of the adoption example (examples/shop), which `tests/run` validates, synthesizes
//! and deploys, and the adoption page's dependency lines are the shop's: a snippet that
//! drifts from the example — a renamed input, a prop the construct no longer has, a
//! feature dropped — fails here instead of misleading the reader.
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

/// The pages whose snippets are checked.
const PAGES: [&str; 2] = ["README.md", "docs/adopting.md"];

fn read(page: &str) -> String {
    fs::read_to_string(repo().join(page)).expect(page)
}

/// Checks every `lang` snippet of `page` against `dir`; returns how many.
fn check(page: &str, lang: &str, dir: &str, extension: &str) -> usize {
    let files = sources(dir, extension);
    let snippets = blocks(&read(page), lang);
    for snippet in &snippets {
        assert!(
            files.iter().any(|(_, text)| is_excerpt(snippet, text)),
            "this ```{lang} snippet of {page} is not an excerpt of {dir}/*.{extension}: \
             copy it from the example (which the tests deploy), or change the example first\n{snippet}"
        );
    }
    snippets.len()
}

#[test]
fn the_terraform_snippets_are_excerpts_of_the_shops_terraform_root() {
    for page in PAGES {
        check(page, "hcl", "examples/shop/terraform", "tf");
    }
    let shown = check("docs/adopting.md", "hcl", "examples/shop/terraform", "tf");
    assert!(shown >= 1, "docs/adopting.md shows the module block");
}

#[test]
fn the_cdk_snippets_are_excerpts_of_the_shops_cdk_app() {
    for page in PAGES {
        check(page, "ts", "examples/shop/cdk", "ts");
    }
    let shown = check("docs/adopting.md", "ts", "examples/shop/cdk", "ts");
    assert!(
        shown >= 2,
        "docs/adopting.md shows the construct and grantProduce"
    );
}

/// The dependency lines of `toml` blocks, without their comments, leaving out the
/// outbox's own crates (the shop takes them by path).
fn dependency_lines(markdown: &str) -> Vec<String> {
    blocks(markdown, "toml")
        .iter()
        .flat_map(|block| block.lines().map(str::to_owned).collect::<Vec<_>>())
        .map(|line| {
            line.split(" #")
                .next()
                .unwrap_or_default()
                .trim_end()
                .to_owned()
        })
        .filter(|line| line.contains(" = ") && !line.starts_with("dynamodb-outbox"))
        .collect()
}

#[test]
fn the_adoption_pages_dependency_lines_are_the_shops() {
    let shop = read("examples/shop/Cargo.toml");
    let lines = dependency_lines(&read("docs/adopting.md"));
    assert!(
        lines.iter().any(|l| l.starts_with("aws-config")),
        "docs/adopting.md shows its dependency lines"
    );
    for line in &lines {
        assert!(
            shop.lines().any(|l| l.trim_end() == line),
            "docs/adopting.md's dependency line is not examples/shop/Cargo.toml's \
             (the shop is built as a user's crate): change both\n{line}"
        );
    }
}

#[test]
fn a_snippet_that_is_not_in_the_source_is_told_apart() {
    let source = "a\n  b\nc\n";
    assert!(is_excerpt("  b\nc", source));
    assert!(!is_excerpt("a\nc", source), "lines must be together");
    assert!(!is_excerpt("b", source), "indentation counts");
    let markdown = "x\n```ts\none\ntwo\n```\n```hcl\nthree\n```\n";
    assert_eq!(blocks(markdown, "ts"), ["one\ntwo"]);
    let toml =
        "```toml\n[dependencies]\ndynamodb-outbox = \"0.1\"  # x\ntokio = \"1\"  # runtime\n```\n";
    assert_eq!(dependency_lines(toml), ["tokio = \"1\""]);
}
