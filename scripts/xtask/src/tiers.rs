//! Which tests belong to which tier: pure decisions, the arguments of the test runs.
//!
//! - **fast**: every test target but the two that need an emulator — the unit tests,
//!   the fakes, the model checker's CI presets, the publisher's log tests, the docs'
//!   excerpts — plus the doc tests. No emulator, nothing deployed.
//! - **emulator**: the integration tests (`outbox-tests`' binary `it`) on MiniStack and
//!   on moto, but for the modules that need Lambda functions behind a stack.
//! - **deployed**: `it`'s modules `deployed` and `stacks` (the functions MiniStack
//!   runs, the applied stacks, chaos) and the shop's (`examples/shop/tests/deployed.rs`).

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

/// The parts of the suite a run starts: each tier's tests and what they need (the
/// emulators for `emulator`; the deployments, the infrastructure checks and the
/// release artifacts for `deployed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The fast tier's tests.
    pub fast: bool,
    /// The integration tests on the emulators.
    pub emulator: bool,
    /// The functions behind the applied stacks, the shop.
    pub deployed: bool,
}

/// How many tests of each tier a filter names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Matched {
    /// In the fast tier.
    pub fast: usize,
    /// In the emulator tier.
    pub emulator: usize,
    /// In the deployed tier.
    pub deployed: usize,
}

impl Parts {
    /// Everything `tier` covers.
    pub fn of(tier: Tier) -> Self {
        Self {
            fast: tier.covers(Tier::Fast),
            emulator: tier.covers(Tier::Emulator),
            deployed: tier.covers(Tier::Deployed),
        }
    }

    /// Only the parts where a filter named tests (`matched`): a run for one test
    /// starts no emulator and deploys nothing that test does not need. An error when
    /// it names none, since a filter that runs nothing passes whatever it meant to check.
    pub fn narrowed(self, matched: Matched, filters: &[String]) -> Result<Self, String> {
        let parts = Self {
            fast: self.fast && matched.fast > 0,
            emulator: self.emulator && matched.emulator > 0,
            deployed: self.deployed && matched.deployed > 0,
        };
        if parts.fast || parts.emulator || parts.deployed {
            Ok(parts)
        } else {
            Err(format!(
                "no test of this tier matches {}: a test matches when its name (module path included) contains one of them; `cargo nextest list` shows the names",
                filters.join(" ")
            ))
        }
    }

    /// The tier whose selection the MiniStack run makes, if it runs.
    pub fn ministack_tier(self) -> Option<Tier> {
        match (self.emulator, self.deployed) {
            (true, true) => Some(Tier::All),
            (true, false) => Some(Tier::Emulator),
            (false, true) => Some(Tier::Deployed),
            (false, false) => None,
        }
    }
}

/// Cargo's target selection for the fast tier: every target with tests (`--tests`:
/// the libraries' and binaries' unit tests and the integration tests, but the two
/// that need an emulator, `it` and the shop's, which say `test = false` in their
/// manifests) and the examples (built, as `cargo test` builds them). Targets without
/// tests say `test = false` too, so that no empty test harness is built. With
/// `--workspace`: features resolved as in every other debug build, so the emulator
/// tiers reuse this build.
pub fn fast_targets() -> Vec<String> {
    ["--workspace", "--tests", "--examples"]
        .map(str::to_owned)
        .to_vec()
}

/// Cargo's target selection for the emulator tiers: `it` and the shop's test, named
/// (their manifests leave them out of `--tests`), features resolved for the workspace.
pub fn emulator_targets() -> Vec<String> {
    ["--workspace", "--test", IT.1, "--test", SHOP.1]
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

    /// The `[[test]]` section of `manifest` (a path from the repository) naming `name`.
    fn test_section(manifest: &str, name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(manifest);
        let text = std::fs::read_to_string(&path).unwrap();
        text.split("[[test]]")
            .skip(1)
            .map(|s| s.split("\n[").next().unwrap_or_default().to_owned())
            .find(|s| s.contains(&format!("name = \"{name}\"")))
            .unwrap_or_default()
    }

    #[test]
    fn the_fast_tier_selects_the_targets_with_tests_and_those_needing_an_emulator_say_they_have_none()
     {
        assert_eq!(fast_targets().join(" "), "--workspace --tests --examples");
        // `--tests` leaves out what says `test = false`: the emulator tiers' two.
        for (manifest, (_, name)) in [
            ("tests/outbox-tests/Cargo.toml", IT),
            ("examples/shop/Cargo.toml", SHOP),
        ] {
            let section = test_section(manifest, name);
            assert!(
                section.lines().any(|l| l.trim() == "test = false"),
                "{manifest}: [[test]] {name} must say `test = false`: {section:?}"
            );
        }
        assert_eq!(
            emulator_targets().join(" "),
            "--workspace --test it --test deployed"
        );
    }

    /// Every `.rs` file under `dir` (a path from the repository).
    fn sources(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(sources(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
        found
    }

    #[test]
    fn the_libraries_whose_unit_tests_are_not_built_have_none() {
        // `[lib] test = false` keeps their empty harnesses out of `--tests`; a unit test
        // added to one of them would never run.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for krate in ["tests/outbox-tests", "examples/shop", "tests/outbox-docs"] {
            let manifest = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
            let lib = manifest.split("[lib]").nth(1).unwrap_or_default();
            let lib = lib.split("\n[").next().unwrap_or_default();
            assert!(
                lib.lines().any(|l| l.trim() == "test = false"),
                "{krate}: [lib] says test = false"
            );
            for file in sources(&root.join(krate).join("src")) {
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(
                    !text.contains("#[test]") && !text.contains("#[tokio::test"),
                    "{} has unit tests: remove `test = false` from {krate}'s [lib]",
                    file.display()
                );
            }
        }
    }

    #[test]
    fn every_selection_resolves_features_for_the_whole_workspace_so_the_builds_share_units() {
        for selection in [fast_targets(), emulator_targets()] {
            assert_eq!(
                selection.iter().filter(|a| *a == "--workspace").count(),
                1,
                "{selection:?}"
            );
        }
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
    fn a_filter_starts_only_the_tiers_it_names_tests_in_and_naming_none_is_an_error() {
        let filters = ["publisher".to_owned()];
        let matched = |fast, emulator, deployed| Matched {
            fast,
            emulator,
            deployed,
        };
        let all = Parts::of(Tier::All);
        let only_fast = all.narrowed(matched(3, 0, 0), &filters).unwrap();
        assert_eq!(only_fast, Parts::of(Tier::Fast));
        assert_eq!(only_fast.ministack_tier(), None);
        let emulator = all.narrowed(matched(0, 2, 0), &filters).unwrap();
        assert_eq!(emulator.ministack_tier(), Some(Tier::Emulator));
        assert!(!emulator.deployed && !emulator.fast);
        let deployed = all.narrowed(matched(0, 0, 1), &filters).unwrap();
        assert_eq!(deployed.ministack_tier(), Some(Tier::Deployed));
        assert_eq!(
            all.narrowed(matched(1, 1, 1), &filters).unwrap(),
            all,
            "each tier named"
        );
        // A tier the run does not cover stays off, whatever the filter names there.
        let fast = Parts::of(Tier::Fast);
        assert_eq!(fast.narrowed(matched(1, 5, 5), &filters).unwrap(), fast);
        let none = fast.narrowed(matched(0, 5, 5), &filters).unwrap_err();
        assert!(
            none.contains("no test of this tier matches publisher"),
            "{none}"
        );
        assert!(all.narrowed(Matched::default(), &filters).is_err());
    }

    #[test]
    fn tier_names_parse_and_filters_do_not() {
        assert_eq!(Tier::parse("fast"), Some(Tier::Fast));
        assert_eq!(Tier::parse("all"), Some(Tier::All));
        assert_eq!(Tier::parse("publisher"), None);
        assert!(Tier::All.covers(Tier::Deployed) && !Tier::Fast.covers(Tier::Emulator));
    }
}
