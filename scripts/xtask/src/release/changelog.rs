//! CHANGELOG.md's Unreleased section moved under the version, then the release commit
//! and its tag; and the last tag, the changelog's and semver-checks' baseline.

use super::git;
use crate::{Result, session::Session};
use std::path::Path;

/// The newest release tag (`vX.Y.Z`, by version) reachable from HEAD, if any.
pub(super) fn last_tag(s: &Session) -> Option<String> {
    let tags = git(
        s,
        &[
            "tag",
            "--list",
            "v[0-9]*.[0-9]*.[0-9]*",
            "--merged",
            "HEAD",
            "--sort=-v:refname",
        ],
    )
    .ok()?;
    tags.lines().next().map(str::to_owned)
}

/// CHANGELOG.md with its Unreleased section's entries moved under
/// `## [version] - date`, an empty Unreleased above it, and the links at the bottom
/// (Keep a Changelog's layout). Refused when Unreleased has nothing.
pub(super) fn release_changelog(
    text: &str,
    version: &str,
    date: &str,
    previous: Option<&str>,
) -> Result<String> {
    const UNRELEASED: &str = "## [Unreleased]";
    let start = text
        .find(UNRELEASED)
        .ok_or_else(|| format!("CHANGELOG.md has no `{UNRELEASED}` heading"))?;
    let body_start = start + UNRELEASED.len();
    let rest = &text[body_start..];
    // The section ends at the next release heading, else at the link definitions.
    let end = rest
        .find("\n## [")
        .or_else(|| rest.find("\n[Unreleased]:"))
        .unwrap_or(rest.len());
    let entries = rest[..end].trim();
    if entries.is_empty() {
        return Err("CHANGELOG.md's Unreleased section is empty: say what changed first".into());
    }
    if text.contains(&format!("## [{version}]")) {
        return Err(format!("CHANGELOG.md has a section for {version} already"));
    }
    let repo = "https://github.com/dynamodb-outbox/dynamodb-outbox";
    let mut out = format!(
        "{}{UNRELEASED}\n\n## [{version}] - {date}\n\n{entries}\n{}",
        &text[..start],
        &rest[end..]
    );
    // The links: Unreleased compares from this tag; this version from the previous.
    let links_at = out.find("\n[Unreleased]:").unwrap_or(out.len());
    out.truncate(links_at);
    let this = match previous {
        Some(p) => format!("[{version}]: {repo}/compare/{p}...v{version}"),
        None => format!("[{version}]: {repo}/releases/tag/v{version}"),
    };
    let older: String = text
        .find("\n[Unreleased]:")
        .map(|i| &text[i + 1..])
        .unwrap_or("")
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    Ok(format!(
        "{}\n\n[Unreleased]: {repo}/compare/v{version}...HEAD\n{this}\n{older}",
        out.trim_end()
    ))
}

/// The section of `version` in a released changelog, shown by the run.
pub(super) fn section<'a>(changelog: &'a str, version: &str) -> &'a str {
    let heading = format!("## [{version}]");
    let Some(start) = changelog.find(&heading) else {
        return "";
    };
    let rest = &changelog[start..];
    let body = &rest[heading.len()..];
    let end = body
        .find("\n## [")
        .or_else(|| body.find("\n[Unreleased]:"))
        .map_or(rest.len(), |i| heading.len() + i);
    rest[..end].trim_end()
}

/// Writes the released changelog, commits it as `Release vX.Y.Z` and creates the
/// annotated tag: the last step, after every check passed.
pub(super) fn commit_and_tag(
    s: &Session,
    changelog_path: &Path,
    released: &str,
    tag: &str,
    version: &str,
) -> Result {
    s.step(&format!("commit CHANGELOG.md and tag {tag}"));
    std::fs::write(changelog_path, released)
        .map_err(|e| format!("cannot write {}: {e}", changelog_path.display()))?;
    git(
        s,
        &[
            "commit",
            "--quiet",
            "-m",
            &format!("Release {tag}"),
            "--",
            "CHANGELOG.md",
        ],
    )?;
    git(
        s,
        &[
            "tag",
            "-a",
            tag,
            "-m",
            &format!("dynamodb-outbox {version}"),
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGELOG: &str = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n\n- The outbox.\n\n[Unreleased]: https://github.com/dynamodb-outbox/dynamodb-outbox/commits/main\n";

    #[test]
    fn a_first_release_moves_unreleased_under_the_version_and_links_its_tag() {
        let out = release_changelog(CHANGELOG, "0.1.0", "2026-12-06", None).unwrap();
        assert!(
            out.starts_with("# Changelog\n\nIntro.\n\n## [Unreleased]\n\n## [0.1.0] - 2026-12-06\n\n### Added\n\n- The outbox.\n\n[Unreleased]: "),
            "{out}"
        );
        assert!(out.contains("[Unreleased]: https://github.com/dynamodb-outbox/dynamodb-outbox/compare/v0.1.0...HEAD\n"), "{out}");
        assert!(
            out.ends_with(
                "[0.1.0]: https://github.com/dynamodb-outbox/dynamodb-outbox/releases/tag/v0.1.0\n"
            ),
            "{out}"
        );
        assert_eq!(
            section(&out, "0.1.0"),
            "## [0.1.0] - 2026-12-06\n\n### Added\n\n- The outbox."
        );
    }

    #[test]
    fn a_later_release_compares_with_the_previous_tag_and_keeps_older_sections() {
        let first = release_changelog(CHANGELOG, "0.1.0", "2026-12-06", None).unwrap();
        let next = first.replace(
            "## [Unreleased]\n",
            "## [Unreleased]\n\n### Fixed\n\n- A bug.\n",
        );
        let out = release_changelog(&next, "0.1.1", "2026-12-24", Some("v0.1.0")).unwrap();
        let sections: Vec<&str> = out.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            sections,
            [
                "## [Unreleased]",
                "## [0.1.1] - 2026-12-24",
                "## [0.1.0] - 2026-12-06"
            ]
        );
        assert!(out.contains("[0.1.1]: https://github.com/dynamodb-outbox/dynamodb-outbox/compare/v0.1.0...v0.1.1\n"), "{out}");
        assert!(out.ends_with("releases/tag/v0.1.0\n"), "{out}");
        assert_eq!(
            section(&out, "0.1.1"),
            "## [0.1.1] - 2026-12-24\n\n### Fixed\n\n- A bug."
        );
        assert_eq!(out.matches("[Unreleased]: ").count(), 1, "{out}");
    }

    #[test]
    fn an_empty_unreleased_section_or_a_version_released_before_is_refused() {
        let empty = CHANGELOG.replace("### Added\n\n- The outbox.\n", "");
        assert!(release_changelog(&empty, "0.1.0", "d", None).is_err());
        let first = release_changelog(CHANGELOG, "0.1.0", "d", None).unwrap();
        let again = first.replace("## [Unreleased]\n", "## [Unreleased]\n\n- More.\n");
        assert!(release_changelog(&again, "0.1.0", "d", Some("v0.1.0")).is_err());
    }
}
