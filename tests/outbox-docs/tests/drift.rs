//! The docs name only what exists: every repository path a Markdown file names (in
//! backticks or as a link target) is there, every link's file and heading anchor is
//! there, every `scripts/…` or `cargo xtask …` command it shows is one the repository
//! has, and every `OUTBOX_*` variable it names is read somewhere in the code or the
//! stacks. Docs drift as files move; this fails the suite instead of leaving a reader
//! at a dead end.

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

/// The targets of the Markdown links of `text` (outside fenced code blocks and inline
/// code spans).
fn links(text: &str) -> Vec<String> {
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
        // Text outside `code spans` only.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let target = &rest[at + 2..];
            let end = target.find(')').unwrap_or(target.len());
            out.push(target[..end].trim().to_owned());
            rest = &target[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_` kept, spaces
/// made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors a Markdown file has: its headings' (a repeated one numbered `-1`, `-2`, …
/// as GitHub does) and every `<a name="…">` or `id="…"`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let base = slug(heading.trim_start_matches('#'));
            let mut anchor = base.clone();
            let mut n = 0;
            while out.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            out.insert(anchor);
        }
        for key in ["name=\"", "id=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(key) {
                let value = &rest[at + key.len()..];
                let end = value.find('"').unwrap_or(value.len());
                out.insert(value[..end].to_owned());
                rest = &value[end..];
            }
        }
    }
    out
}

#[test]
fn every_link_reaches_its_file_and_anchor() {
    let all = files();
    let mut broken = BTreeSet::new();
    for doc in markdown(&all) {
        let text = fs::read_to_string(&doc).unwrap_or_default();
        let dir = doc.parent().unwrap_or(Path::new("."));
        let shown = doc
            .strip_prefix(repo())
            .unwrap_or(&doc)
            .display()
            .to_string();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") || link.is_empty() {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.insert(format!("{shown}: ({link}): no file {file}"));
                continue;
            }
            let is_markdown = target.extension().is_some_and(|e| e == "md");
            if anchor.is_empty() || !is_markdown {
                continue;
            }
            let there = anchors(&fs::read_to_string(&target).unwrap_or_default());
            if !there.contains(anchor) {
                broken.insert(format!("{shown}: ({link}): no heading #{anchor}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} links lead nowhere (fix the link, or the heading it points at):\n{}",
        broken.len(),
        broken.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The task runner's commands and subcommands: the variants of every clap `Subcommand`
/// enum in its sources (`scripts/xtask/src`, or `xtask/src`), in clap's kebab case.
fn xtask_commands() -> BTreeSet<String> {
    let mut all = Vec::new();
    walk(&repo().join("scripts/xtask/src"), &mut all);
    walk(&repo().join("xtask/src"), &mut all);
    let mut out = BTreeSet::new();
    for file in all {
        let text = fs::read_to_string(file).unwrap_or_default();
        let mut inside = false;
        let mut derive = false;
        for line in text.lines() {
            if line.starts_with("#[derive(") {
                derive = line.contains("Subcommand");
            } else if derive && !line.starts_with(' ') && line.contains("enum ") {
                inside = true;
            } else if inside && line.starts_with('}') {
                (inside, derive) = (false, false);
            } else if inside
                && let Some(rest) = line.strip_prefix("    ")
                && rest.starts_with(|c: char| c.is_ascii_uppercase())
            {
                let name: String = rest
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                out.insert(kebab(&name));
            }
        }
    }
    out
}

fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The commands a doc shows: inline code spans and the lines of its `sh`/`bash`/`console`
/// blocks.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut shell = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            shell = match shell {
                Some(_) => None,
                None => Some(["sh", "bash", "console", "shell"].contains(&info.trim())),
            };
            continue;
        }
        match shell {
            Some(true) => out.push(line.split(" #").next().unwrap_or_default().to_owned()),
            Some(false) => {}
            None => out.extend(line.split('`').skip(1).step_by(2).map(str::to_owned)),
        }
    }
    out
}

/// What is wrong with `command`, if it runs a script that is not there or a `cargo
/// xtask` task that does not exist.
fn wrong_command(command: &str, tasks: &BTreeSet<String>) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        let word = word.trim_matches(|c| c == '(' || c == ')' || c == ';' || c == '"');
        if (word.starts_with("scripts/") || word == "tests/run")
            && !word.contains(['<', '*', '{'])
            && !repo().join(word).exists()
        {
            return Some(format!("no script {word}"));
        }
        if word == "xtask"
            && i > 0
            && words[i - 1] == "cargo"
            && let Some(task) = words.get(i + 1)
            && !task.starts_with('-')
            && !task.contains(['<', '['])
            && !tasks.contains(*task)
        {
            return Some(format!("no task `cargo xtask {task}`"));
        }
    }
    None
}

#[test]
fn every_command_the_docs_show_exists() {
    let tasks = xtask_commands();
    assert!(
        tasks.contains("test") && tasks.contains("demo"),
        "the task runner's commands were not found in scripts/xtask/src: {tasks:?}"
    );
    let mut wrong = BTreeSet::new();
    for doc in markdown(&files()) {
        let text = fs::read_to_string(&doc).unwrap_or_default();
        let shown = doc
            .strip_prefix(repo())
            .unwrap_or(&doc)
            .display()
            .to_string();
        for command in commands(&text) {
            if let Some(why) = wrong_command(&command, &tasks) {
                wrong.insert(format!("{shown}: `{}`: {why}", command.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the docs show {} commands that do not exist:\n{}",
        wrong.len(),
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_link_anchor_and_command_readers_find_what_is_wrong() {
    assert_eq!(
        slug(" Requests per message: why the mixed workload's floor is above 0.15"),
        "requests-per-message-why-the-mixed-workloads-floor-is-above-015"
    );
    assert_eq!(slug("AWS's rules — `where`"), "awss-rules--where");
    let doc = "# A\n## A\n```\n# not a heading\n```\n<a name=\"input_x\"></a>";
    assert_eq!(
        anchors(doc),
        BTreeSet::from(["a", "a-1", "input_x"].map(str::to_owned))
    );
    assert_eq!(
        links("[x](a.md#b) `[y](c.md)`\n```\n[z](d.md)\n```"),
        ["a.md#b"]
    );
    let tasks = BTreeSet::from(["test".to_owned(), "demo".to_owned()]);
    assert_eq!(wrong_command("cargo xtask test fast", &tasks), None);
    assert_eq!(
        wrong_command("cargo xtask tset", &tasks),
        Some("no task `cargo xtask tset`".to_owned())
    );
    assert_eq!(
        wrong_command("scripts/not-a-script --x", &tasks),
        Some("no script scripts/not-a-script".to_owned())
    );
    assert_eq!(wrong_command("scripts/demo --help", &tasks), None);
    assert_eq!(kebab("DeployLocal"), "deploy-local");
    assert_eq!(
        commands("`scripts/demo`\n```sh\ncargo xtask x # scripts/y\n```\n```text\nscripts/z\n```"),
        ["scripts/demo", "cargo xtask x"]
    );
}

/// The upper-case identifiers that follow `marker` in `text` (`Metric::count(PUBLISHED`).
fn constants_after(text: &str, marker: &str) -> BTreeSet<String> {
    text.match_indices(marker)
        .map(|(at, _)| {
            text[at + marker.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| name.len() > 1)
        .collect()
}

/// The string value of `const NAME: &str = "…";` in `text`, if it is there.
fn constant_value(text: &str, name: &str) -> Option<String> {
    let head = format!("const {name}: &str = \"");
    let at = text.find(&head)? + head.len();
    let end = text[at..].find('"')?;
    Some(text[at..at + end].to_owned())
}

/// The metric names the functions emit: every constant handed to `Metric::count(…)` or
/// named as a `Metric`'s `name:`, resolved to its string.
fn emitted_metrics() -> BTreeSet<String> {
    let mut all = Vec::new();
    walk(&repo().join("functions"), &mut all);
    let sources: Vec<String> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| fs::read_to_string(p).ok())
        .collect();
    let mut names = BTreeSet::new();
    for text in &sources {
        names.extend(constants_after(text, "Metric::count("));
        if text.contains("Metric {") {
            names.extend(constants_after(text, "name: "));
        }
    }
    // A metric's name is a CamelCase word (`Published`); other constants named
    // `name:` (a variable's, `OUTBOX_DEPLOYMENT`) are not metrics.
    let metric_name = |v: &String| {
        v.starts_with(|c: char| c.is_ascii_uppercase())
            && v.chars().all(|c| c.is_ascii_alphanumeric())
    };
    names
        .iter()
        .filter_map(|name| sources.iter().find_map(|text| constant_value(text, name)))
        .filter(metric_name)
        .collect()
}

/// The names in the first column of the table under `## Metrics` in `text`.
fn documented_metrics(text: &str) -> BTreeSet<String> {
    let text = format!("\n{text}");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Metrics"))
        .unwrap_or_default();
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| {
            let first = line.split('|').nth(1).unwrap_or_default();
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_metrics_reference_lists_every_metric_the_functions_emit() {
    let emitted = emitted_metrics();
    assert!(
        emitted.contains("Published") && emitted.contains("OldestPendingAgeSeconds"),
        "the metrics the functions emit were not found under functions/: {emitted:?}"
    );
    let page = repo().join("docs/operations.md");
    let documented = documented_metrics(&fs::read_to_string(&page).unwrap_or_default());
    let missing: Vec<_> = emitted.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&emitted).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/operations.md's metrics table is not what the functions emit: \
         missing {missing:?}, emitted by nothing {stale:?}"
    );
}

#[test]
fn the_metric_readers_find_names_and_values() {
    let code = "pub const PUBLISHED: &str = \"Published\";\n\
                Metric::count(PUBLISHED, 1); Metric { name: AGE, unit }";
    assert_eq!(
        constants_after(code, "Metric::count("),
        BTreeSet::from(["PUBLISHED".to_owned()])
    );
    assert_eq!(
        constant_value(code, "PUBLISHED"),
        Some("Published".to_owned())
    );
    assert_eq!(constant_value(code, "AGE"), None);
    let page =
        "## Metrics\n| metric | from |\n|---|---|\n| `A`, `B` | x `C` |\n## Next\n| `D` | y |";
    assert_eq!(
        documented_metrics(page),
        BTreeSet::from(["A".to_owned(), "B".to_owned()])
    );
}
