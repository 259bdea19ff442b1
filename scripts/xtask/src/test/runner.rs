//! The test runner: cargo-nextest when installed, else `cargo test`.

use crate::Result;
use crate::process::Cmd;
use crate::session::Session;
use crate::tiers::{self, Tier};

/// cargo-nextest when installed, else cargo test.
#[derive(Debug)]
pub struct Runner {
    nextest: bool,
}

impl Runner {
    /// Finds out which runner this machine has.
    pub fn detect(s: &Session) -> Self {
        let nextest = s.cargo().args(["nextest", "--version"]).succeeds();
        if !nextest {
            eprintln!(
                "tests: cargo-nextest is not installed (cargo install cargo-nextest --locked); running cargo test"
            );
        }
        Self { nextest }
    }

    /// Builds the test binaries of `targets` without running them.
    pub fn build(&self, s: &Session, targets: &[String]) -> Result {
        let verb: &[&str] = if self.nextest {
            &["nextest", "run", "--no-run"]
        } else {
            &["test", "--no-run"]
        };
        s.cargo().args(verb).args(targets).run()
    }

    /// How many tests of `targets` the tier's `expr` and the `filters`' names select
    /// (building them first); `None` without nextest, which cannot list them.
    pub fn count(
        &self,
        s: &Session,
        targets: &[String],
        expr: Option<&str>,
        filters: &[String],
    ) -> Result<Option<usize>> {
        if !self.nextest {
            return Ok(None);
        }
        let names: Vec<&String> = filters.iter().filter(|f| !f.starts_with('-')).collect();
        let mut cmd = s
            .cargo()
            .args(["nextest", "list", "--message-format", "oneline"])
            .args(targets);
        if let Some(expr) = filter_expr(expr, &names) {
            cmd = cmd.args(["-E", &expr]);
        }
        let listed = cmd.read()?;
        Ok(Some(
            listed.lines().filter(|l| !l.trim().is_empty()).count(),
        ))
    }

    /// A run of `targets`, narrowed by a nextest `expr` (for cargo test, the skips of
    /// `tier`) and by the user's `filters`.
    pub fn cmd(
        &self,
        s: &Session,
        targets: &[String],
        expr: Option<&str>,
        tier: Tier,
        filters: &[String],
    ) -> Cmd {
        let (options, names): (Vec<&String>, Vec<&String>) =
            filters.iter().partition(|f| f.starts_with('-'));
        if self.nextest {
            nextest(s, targets, expr, &options, &names)
        } else {
            let mut cmd = s
                .cargo()
                .args(["test", "--no-fail-fast"])
                .args(targets)
                .arg("--")
                .args(tiers::cargo_test_skips(tier));
            if tier == Tier::Deployed {
                cmd = cmd.args(tiers::DEPLOYED_MODULES.map(|m| format!("{m}::")));
            }
            cmd.args(options).args(names)
        }
    }
}

/// `cargo nextest run` of `targets`, narrowed by `expr` and by test `names`.
fn nextest(
    s: &Session,
    targets: &[String],
    expr: Option<&str>,
    options: &[&String],
    names: &[&String],
) -> Cmd {
    let mut cmd = s
        .cargo()
        // A run that selects no test fails (nextest's default): a filtered run starts
        // only the runs where its filter names tests (`tiers::Parts::narrowed`).
        .args(["nextest", "run", "--no-fail-fast"])
        .args(targets)
        .args(options);
    if let Some(expr) = filter_expr(expr, names) {
        cmd = cmd.args(["-E", &expr]);
    }
    cmd
}

/// The tier's nextest expression and the names (any of them), both when both are given.
fn filter_expr(expr: Option<&str>, names: &[&String]) -> Option<String> {
    let by_name = (!names.is_empty()).then(|| {
        names
            .iter()
            .map(|n| format!("test({n})"))
            .collect::<Vec<_>>()
            .join(" | ")
    });
    match (expr, by_name) {
        (Some(e), Some(n)) => Some(format!("({e}) & ({n})")),
        (e, n) => e.map(str::to_owned).or(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_narrow_the_tiers_expression_and_stand_alone_without_one() {
        let (a, b) = ("publisher".to_owned(), "sweeper".to_owned());
        assert_eq!(
            filter_expr(Some("binary(it)"), &[&a, &b]).as_deref(),
            Some("(binary(it)) & (test(publisher) | test(sweeper))")
        );
        assert_eq!(filter_expr(None, &[&a]).as_deref(), Some("test(publisher)"));
        assert_eq!(filter_expr(None, &[]), None);
    }
}
