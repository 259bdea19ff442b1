//! Which tests belong to which tier: pure decisions, from the workspace's test
//! targets (`cargo metadata`) to the arguments of the test runs.
//!
//! - **fast**: every test target but the two that need an emulator — the unit tests,
//!   the fakes, the model checker's CI presets, the publisher's log tests, the docs'
//!   excerpts — plus the doc tests. No emulator, nothing deployed.
//! - **emulator**: the integration tests (`outbox-tests`' binary `it`) on MiniStack and
//!   on moto, but for the modules that need Lambda functions behind a stack.
//! - **deployed**: `it`'s modules `deployed` and `stacks` (the functions MiniStack
//!   runs, the applied stacks, chaos) and the shop's (`examples/shop/tests/deployed.rs`).

use serde_json::Value;

/// The test binary of the integration tests, in package `outbox-tests`.
pub const IT: (&str, &str) = ("outbox-tests", "it");
/// The adoption example's test of its own deployments, in package `shop`.
pub const SHOP: (&str, &str) = ("shop", "deployed");
/// `it`'s modules that need Lambda functions behind a stack: MiniStack only.
pub const DEPLOYED_MODULES: [&str; 2] = ["deployed", "stacks"];

/// A tier of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tier {
    /// Unit tests, fakes, the model's CI presets, doc tests: no emulator.
    Fast,
    /// Integration tests on MiniStack and the moto cross-check.
    Emulator,
    /// The functions behind the applied stacks, chaos, the shop, infra checks, the
    /// release artifacts.
    Deployed,
    /// All three.
    All,
}

impl Tier {
    /// Whether this tier includes `other`'s tests.
    pub fn covers(self, other: Tier) -> bool {
        self == other || self == Tier::All
    }

    /// A tier's name as given on the command line.
    pub fn parse(name: &str) -> Option<Tier> {
        <Tier as clap::ValueEnum>::from_str(name, false).ok()
    }
}

/// A test target of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its package.
    pub package: String,
    /// Its name.
    pub name: String,
    /// lib, bin, test.
    pub kind: String,
}

/// The targets `cargo test` runs by default (`test = true`): libs, bins and tests,
/// from `cargo metadata --no-deps --format-version 1`'s output.
pub fn test_targets(metadata: &str) -> Result<Vec<Target>, String> {
    let doc: Value = serde_json::from_str(metadata)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let packages = doc["packages"]
        .as_array()
        .ok_or("cargo metadata lists no packages")?;
    let mut found = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let kind = target["kind"][0].as_str().unwrap_or_default();
            let tested = target["test"].as_bool().unwrap_or(true);
            if tested && matches!(kind, "lib" | "bin" | "test" | "proc-macro") {
                let kind = if kind == "proc-macro" { "lib" } else { kind };
                let target_name = target["name"].as_str().unwrap_or_default();
                found.push(Target {
                    package: name.to_owned(),
                    name: target_name.to_owned(),
                    kind: kind.to_owned(),
                });
            }
        }
    }
    Ok(found)
}

fn is(t: &Target, (package, name): (&str, &str)) -> bool {
    t.package == package && t.name == name && t.kind == "test"
}

/// Cargo's target selection for the fast tier: the libs' unit tests, the bins that
/// have tests and every integration test target but `it` and the shop's (which need
/// an emulator), and the examples (built, as `cargo test` builds them). With
/// `--workspace`: features resolved as in every other debug build, so the emulator
/// tiers reuse this build.
pub fn fast_targets(targets: &[Target]) -> Vec<String> {
    let mut args = vec![
        "--workspace".to_owned(),
        "--lib".to_owned(),
        "--examples".to_owned(),
    ];
    let mut names: Vec<(String, String)> = targets
        .iter()
        .filter(|t| !is(t, IT) && !is(t, SHOP) && t.kind != "lib")
        .map(|t| (format!("--{}", t.kind), t.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    for (flag, name) in names {
        args.extend([flag, name]);
    }
    args
}

/// Cargo's target selection for the emulator tiers: `it` and the shop's test.
pub fn emulator_targets() -> Vec<String> {
    let mut args = vec!["--workspace".to_owned()];
    args.extend(emulator_tests());
    args
}

/// The emulator tiers' test targets, to add to a `--workspace` selection.
pub fn emulator_tests() -> Vec<String> {
    ["--test", IT.1, "--test", SHOP.1]
        .map(str::to_owned)
        .to_vec()
}

/// A nextest filter expression for `it` on `emulator` tests (`deployed` and `stacks`
/// left out, or only those with the shop's test, or all of it).
pub fn emulator_filter(tier: Tier) -> String {
    let it = format!("(package({}) & binary({}))", IT.0, IT.1);
    let shop = format!("(package({}) & binary({}))", SHOP.0, SHOP.1);
    let modules = DEPLOYED_MODULES
        .map(|m| format!("test(/^{m}::/)"))
        .join(" | ");
    match tier {
        Tier::Emulator => format!("{it} & not ({modules})"),
        Tier::Deployed => format!("({it} & ({modules})) | {shop}"),
        Tier::All | Tier::Fast => format!("{it} | {shop}"),
    }
}

/// `cargo test`'s arguments after `--` for the same selection, where nextest is not
/// installed: skips by module path (the shop's test is its own target).
pub fn cargo_test_skips(tier: Tier) -> Vec<String> {
    match tier {
        Tier::Emulator => DEPLOYED_MODULES
            .iter()
            .flat_map(|m| ["--skip".to_owned(), format!("{m}::")])
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata() -> String {
        serde_json::json!({ "packages": [
            { "name": "outbox-tests", "targets": [
                { "kind": ["lib"], "name": "outbox_tests", "test": true },
                { "kind": ["test"], "name": "it", "test": true },
                { "kind": ["bench"], "name": "cost", "test": false } ] },
            { "name": "shop", "targets": [
                { "kind": ["bin"], "name": "shop-consumer", "test": false },
                { "kind": ["test"], "name": "deployed", "test": true } ] },
            { "name": "outbox-model", "targets": [
                { "kind": ["lib"], "name": "outbox_model", "test": true },
                { "kind": ["bin"], "name": "outbox-model", "test": true },
                { "kind": ["test"], "name": "check", "test": true } ] }
        ]})
        .to_string()
    }

    #[test]
    fn the_fast_tier_builds_every_test_target_but_the_two_that_need_an_emulator() {
        let targets = test_targets(&metadata()).unwrap();
        assert_eq!(
            fast_targets(&targets).join(" "),
            "--workspace --lib --examples --bin outbox-model --test check"
        );
    }

    #[test]
    fn one_build_of_every_tier_names_the_workspace_once() {
        let targets = test_targets(&metadata()).unwrap();
        let mut all = fast_targets(&targets);
        all.extend(emulator_tests());
        assert_eq!(all.iter().filter(|a| *a == "--workspace").count(), 1);
        assert_eq!(
            emulator_targets()
                .iter()
                .filter(|a| *a == "--workspace")
                .count(),
            1
        );
    }

    #[test]
    fn targets_without_tests_are_not_test_targets() {
        let targets = test_targets(&metadata()).unwrap();
        assert!(
            !targets
                .iter()
                .any(|t| t.name == "shop-consumer" || t.name == "cost")
        );
    }

    #[test]
    fn the_emulator_tier_leaves_the_deployed_modules_to_the_deployed_tier() {
        assert_eq!(
            emulator_filter(Tier::Emulator),
            "(package(outbox-tests) & binary(it)) & not (test(/^deployed::/) | test(/^stacks::/))"
        );
        assert_eq!(
            emulator_filter(Tier::Deployed),
            "((package(outbox-tests) & binary(it)) & (test(/^deployed::/) | test(/^stacks::/))) | (package(shop) & binary(deployed))"
        );
    }

    #[test]
    fn tier_names_parse_and_filters_do_not() {
        assert_eq!(Tier::parse("fast"), Some(Tier::Fast));
        assert_eq!(Tier::parse("all"), Some(Tier::All));
        assert_eq!(Tier::parse("publisher"), None);
        assert!(Tier::All.covers(Tier::Deployed) && !Tier::Fast.covers(Tier::Emulator));
    }
}
