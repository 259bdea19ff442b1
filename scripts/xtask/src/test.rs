//! `cargo xtask test [fast|emulator|deployed|all] [FILTER...]`: the suite in tiers
//! (see [`crate::tiers`]). `all` (the default, and `tests/run`) runs the three as one
//! job graph, overlapping what waits on the emulator with what needs the CPU:
//!
//! 1. builds and packages the functions (debug, fault injection compiled in) and the
//!    shop's consumer; starts packaging the release artifacts in the background at the
//!    lowest CPU priority (its own target directory), unless `OUTBOX_SKIP_RELEASE=1`;
//! 2. starts MiniStack and, in the background, applies both our stacks, the global
//!    table's and the shop's (the deployments wait on the emulator most of the time);
//! 3. meanwhile builds every test binary, runs the fast tier and the doc tests, and the
//!    integration tests on moto (in the background: they sleep on moto's timeouts);
//! 4. once the stacks are applied, runs the infrastructure checks in the background
//!    (`bash infra/check.sh`, nice 10) and the integration and deployed tests on
//!    MiniStack, in one run;
//! 5. waits for the checks and the release packaging, then runs the publisher's binary
//!    test on the release artifacts.
//!
//! Every debug build resolves features for the whole workspace (`--workspace`), so the
//! functions, the shop's consumer and the tests share one build of the AWS SDK.
//! Filters (test names, or nextest options) go to every test run of the tier; with a
//! filter, the doc tests, the infrastructure checks and the release packaging are
//! skipped. `OUTBOX_SKIP_MOTO=1`, `OUTBOX_SKIP_INFRA=1`, `OUTBOX_SKIP_RELEASE=1` skip
//! those steps.

use crate::Result;
use crate::emulator::{Emulator, Kind, StopOnDrop};
use crate::package;
use crate::process::{Cmd, Job};
use crate::session::{Session, fresh_state_dir};
use crate::tiers::{self, Tier};
use std::path::{Path, PathBuf};

/// The libraries whose doc tests run each on its own, with its documented features
/// (as docs.rs shows them and users build them), then the docs' snippets.
pub const DOC_TESTS: [(&str, &str); 4] = [
    ("dynamodb-outbox-core", "opentelemetry"),
    ("dynamodb-outbox", "lambda,opentelemetry"),
    ("dynamodb-outbox-idempotency", "opentelemetry"),
    ("outbox-docs", ""),
];

/// What to run.
#[derive(Debug)]
pub struct Run {
    /// The tier.
    pub tier: Tier,
    /// Test-name filters and test-runner options.
    pub filters: Vec<String>,
}

impl Run {
    /// From the command line: an optional tier name, then filters.
    pub fn parse(args: Vec<String>) -> Self {
        let mut args = args.into_iter().peekable();
        let tier = args.peek().and_then(|a| Tier::parse(a));
        if tier.is_some() {
            args.next();
        }
        Self {
            tier: tier.unwrap_or(Tier::All),
            filters: args.collect(),
        }
    }

    fn full(&self) -> bool {
        self.filters.is_empty()
    }
}

fn skip(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Runs the tier.
pub fn run(s: &mut Session, run: &Run) -> Result {
    let runner = Runner::detect(s);
    let targets = tiers::fast_targets(&tiers::test_targets(
        &s.cargo()
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .read()?,
    )?);
    if run.tier == Tier::Fast {
        return fast(s, &runner, run, &targets);
    }
    // The emulators' virtual environments and the CDK's npm packages (first run only,
    // downloads) install beside the build.
    let deployed = run.tier.covers(Tier::Deployed);
    let installs = std::thread::spawn(move || install_tools(&Session::new(), deployed));
    let lambda_dir = s.target.join("lambda-dev");
    s.set_env("OUTBOX_LAMBDA_DIR", lambda_dir.display().to_string());
    s.step(if deployed {
        "build and package the functions (debug, with fault injection) and the shop's consumer"
    } else {
        "build and package the functions (debug, with fault injection)"
    });
    // The shop's consumer in the same cargo run: it depends on no function crate, so
    // the functions' fault-injection feature leaves it as the test build has it.
    let also: &[&str] = if deployed { &["shop-consumer"] } else { &[] };
    let mut opts = package::Options::debug_with_faults(lambda_dir.clone());
    opts.share_with_tests = true;
    package::package(s, &opts, also)?;
    let release = (deployed && run.full() && !skip("OUTBOX_SKIP_RELEASE"))
        .then(|| start_release(s))
        .transpose()?;

    installs
        .join()
        .map_err(|_| "the install thread panicked".to_owned())??;
    let mut guard = Emulators::default();
    s.step(if deployed {
        "start MiniStack; apply both stacks and the adoption example's (examples/shop) in the background"
    } else {
        "start MiniStack"
    });
    let (ministack, ms_state) = guard.start(s, Kind::Ministack)?;
    let trust = Emulator::at(&ms_state)?.trust_exports();
    // MiniStack serves TLS only (see the emulator module): every client from here on
    // (the Rust SDK, Terraform, the CDK, botocore) trusts its certificate.
    for (k, v) in &trust {
        s.set_env(k, v.clone());
    }
    let deploys = if deployed {
        start_deploys(s, &ministack, &ms_state, &lambda_dir)?
    } else {
        Vec::new()
    };

    if run.tier.covers(Tier::Emulator) {
        s.step("the local AWS's IAM correction (tests/emulator/ministack_iam.py), against the pinned MiniStack");
        let log = ms_state.join("iam-unittest.log");
        let result = s
            .cmd(s.path(".venv/ministack/bin/python"))
            .args([
                "-m",
                "unittest",
                "discover",
                "-s",
                "tests/emulator",
                "-p",
                "test_*.py",
            ])
            .run_logged(&log, 20);
        eprintln!("{}", crate::process::tail_of(&log, 3));
        result?;
    }

    s.step("build the tests");
    let mut build = targets.clone();
    build.extend(tiers::emulator_tests());
    runner.build(s, &build)?;

    let moto = if run.tier.covers(Tier::Emulator) && run.full() && !skip("OUTBOX_SKIP_MOTO") {
        s.step("Rust: integration tests on moto (cross-check), in the background");
        let (moto, moto_state) = guard.start(s, Kind::Moto)?;
        // Four at a time, not one per core: they wait on moto and on their own timeouts
        // and hangs (25 CPU-s of 112 tests); two threads left 423 s of sleeping on the
        // critical path, four 226 s.
        let cmd = runner
            .cmd(
                s,
                &tiers::emulator_targets(),
                Some(&tiers::emulator_filter(Tier::Emulator)),
                Tier::Emulator,
                &run.filters,
            )
            .env("NEXTEST_TEST_THREADS", "4")
            .env("RUST_TEST_THREADS", "4")
            .env("OUTBOX_EMULATOR", "moto")
            .env("OUTBOX_ENDPOINT", &moto);
        Some(cmd.spawn_logged(
            "the integration tests on moto",
            &moto_state.join("tests.log"),
        )?)
    } else {
        None
    };

    if run.tier == Tier::All {
        fast_tests(s, &runner, run, &targets)?;
    }

    let infra = if deployed {
        s.step("wait for the deployments");
        for job in deploys {
            let log = job.log().to_owned();
            job.wait(40)?;
            print_lines(&log, &["deploy-local:", "shop:"], 3);
        }
        (run.full() && !skip("OUTBOX_SKIP_INFRA"))
            .then(|| start_infra_checks(s, &ms_state))
            .transpose()?
    } else {
        None
    };

    s.step(match run.tier {
        Tier::Emulator => "Rust: integration tests on MiniStack",
        Tier::Deployed => {
            "Rust: deployed functions, both stacks, the global table and the shop, on MiniStack"
        }
        _ => "Rust: integration tests, deployed functions, both stacks and the shop, on MiniStack",
    });
    let on_ministack = runner
        .cmd(
            s,
            &tiers::emulator_targets(),
            Some(&tiers::emulator_filter(run.tier)),
            run.tier,
            &run.filters,
        )
        .env("OUTBOX_EMULATOR", "ministack")
        .env("OUTBOX_ENDPOINT", &ministack)
        .env("OUTBOX_STACKS", "terraform:tf,cdk:cdk")
        .env("OUTBOX_GLOBAL_STACK", "gt")
        .env("SHOP_DEPLOYMENTS", "terraform:shop-tf,cdk:shop-cdk");
    let ministack_result = on_ministack.run();

    if let Some(job) = moto {
        s.step("wait for the integration tests on moto");
        let log = job.log().to_owned();
        let waited = job.wait(60);
        print_lines(&log, &["     Summary", "test result"], 3);
        waited?;
    }
    ministack_result?;
    if let Some(job) = infra {
        s.step("wait for the infrastructure checks");
        let log = job.log().to_owned();
        job.wait(60)?;
        print_lines(&log, &["infra:", "infra/check.sh:"], 100);
    }
    if let Some((job, dir)) = release {
        s.step("wait for the release packaging");
        let log = job.log().to_owned();
        job.wait(40)?;
        print_lines(&log, &["package: "], 10);
        s.step("the release publisher, fed one stream batch three times as Lambda redelivers it, on MiniStack");
        // The same test the suite ran with the debug build, now with the artifacts a
        // user deploys: what ships publishes each message once (the binary is built).
        runner
            .cmd(
                s,
                &tiers::emulator_targets(),
                Some("test(/^publisher::binary::/)"),
                Tier::Emulator,
                &[],
            )
            .env("OUTBOX_EMULATOR", "ministack")
            .env("OUTBOX_ENDPOINT", &ministack)
            .env("OUTBOX_LAMBDA_DIR", &dir)
            .run()?;
    }
    drop(guard);
    s.step("all tests passed");
    Ok(())
}

/// Installs what the emulator tiers run (each one time, pinned).
fn install_tools(s: &Session, deployed: bool) -> Result {
    crate::emulator::install(s, Kind::Ministack)?;
    crate::emulator::install(s, Kind::Moto)?;
    if deployed {
        crate::deploy::npm_ci(&s.path("infra/cdk"))
    } else {
        Ok(())
    }
}

/// The fast tier alone: builds only its targets, starts nothing.
fn fast(s: &Session, runner: &Runner, run: &Run, targets: &[String]) -> Result {
    s.step("build the tests (no emulator, nothing deployed)");
    runner.build(s, targets)?;
    fast_tests(s, runner, run, targets)?;
    s.step("all tests passed");
    Ok(())
}

/// The fast tier's tests, then (without a filter) the doc tests.
fn fast_tests(s: &Session, runner: &Runner, run: &Run, targets: &[String]) -> Result {
    s.step("Rust: unit tests, fakes, the model's CI presets (no emulator)");
    runner
        .cmd(s, targets, None, Tier::Fast, &run.filters)
        .run()?;
    if run.full() {
        s.step("doc tests: the libraries' examples and the docs' snippets, compiled and run");
        // Each library on its own, as its users build it (in one workspace-wide run,
        // the tools' and tests' features would be on for all of them).
        for (package, features) in DOC_TESTS {
            let mut cmd = s.cargo().args(["test", "--doc", "--quiet", "-p", package]);
            if !features.is_empty() {
                cmd = cmd.args(["--features", features]);
            }
            cmd.run()?;
        }
    }
    Ok(())
}

/// The release artifacts, built in the background at the lowest CPU priority in their
/// own target directory (a release build shares nothing with the debug one, and two
/// cargo processes on one directory would wait on each other's lock).
fn start_release(s: &Session) -> Result<(Job, PathBuf)> {
    let log = s.target.join("release-package.log");
    let dir = s.target.join("lambda");
    s.step(&format!(
        "package the release artifacts in the background (cargo lambda build --release, x86_64; log: {})",
        log.display()
    ));
    std::fs::create_dir_all(&s.target)
        .map_err(|e| format!("cannot create {}: {e}", s.target.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let job = Cmd::niced(19, exe)
        .dir(&s.root)
        .envs(&s.env)
        .env("CARGO_TARGET_DIR", s.target.join("release-package"))
        .args(["package", "--out"])
        .arg(&dir)
        .spawn_logged("the release packaging", &log)?;
    Ok((job, dir))
}

/// The five deployments, as four background jobs: the Terraform applies beside the
/// two CDK deploys (those one after the other: they share the CDK bootstrap stack).
/// None of them runs cargo (the build lock is the test build's): the shop deploys a
/// copy of the consumer built before (the test build links it again meanwhile).
fn start_deploys(s: &mut Session, endpoint: &str, state: &Path, assets: &Path) -> Result<Vec<Job>> {
    s.set_env(
        "OUTBOX_DEPLOY_STATE",
        state.join("deploy").display().to_string(),
    );
    s.set_env(
        "SHOP_DEPLOY_STATE",
        state.join("shop").display().to_string(),
    );
    let consumer = state.join("shop-consumer");
    std::fs::copy(s.target.join("debug/shop-consumer"), &consumer)
        .map_err(|e| format!("cannot copy the shop's consumer: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let ours = |tool: &str, prefix: &str| {
        let mut c = s.cmd(&exe).args([
            "deploy",
            tool,
            "--prefix",
            prefix,
            "--endpoint",
            endpoint,
            "--assets",
        ]);
        c = c.arg(assets);
        c
    };
    let shop = |tool: &str, name: &str| {
        s.cmd(s.path("examples/shop/deploy-local"))
            .args([
                tool,
                "--name",
                name,
                "--endpoint",
                endpoint,
                "--outbox-assets",
            ])
            .arg(assets)
            .arg("--consumer")
            .arg(&consumer)
    };
    let both_cdk = format!(
        "{} && {}",
        shell_line(&ours("cdk", "cdk")),
        shell_line(&shop("cdk", "shop-cdk"))
    );
    Ok(vec![
        ours("terraform", "tf")
            .spawn_logged("the Terraform deployment", &state.join("deploy-tf.log"))?,
        // The global table (the module in us-east-1 and eu-west-1) for
        // it/stacks/global_table.rs: about two minutes of the emulator's time.
        ours("terraform-global", "gt").spawn_logged(
            "the global table's deployment",
            &state.join("deploy-global.log"),
        )?,
        shop("terraform", "shop-tf").spawn_logged(
            "the shop's Terraform deployment",
            &state.join("deploy-shop-tf.log"),
        )?,
        s.cmd("bash")
            .args(["-c", &both_cdk])
            .spawn_logged("the CDK deployments", &state.join("deploy-cdk.log"))?,
    ])
}

/// A command as one line of shell (each word quoted).
fn shell_line(cmd: &Cmd) -> String {
    cmd.words()
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The offline infrastructure checks, in the background at a lower CPU priority: not
/// before the deployments are done (they build and read infra/cdk too).
fn start_infra_checks(s: &Session, state: &Path) -> Result<Job> {
    let log = state.join("infra-check.log");
    s.step(&format!(
        "infrastructure checks, in the background at a lower CPU priority (log: {})",
        log.display()
    ));
    Cmd::niced(10, "bash")
        .dir(&s.root)
        .envs(&s.env)
        .arg("infra/check.sh")
        .spawn_logged("the infrastructure checks", &log)
}

/// Prints the lines of `log` that start with one of `prefixes` (the last `max`).
fn print_lines(log: &Path, prefixes: &[&str], max: usize) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .collect();
    for line in &lines[lines.len().saturating_sub(max)..] {
        eprintln!("{line}");
    }
}

/// The emulators this run started, stopped when it ends (or fails).
#[derive(Debug, Default)]
struct Emulators(Vec<StopOnDrop>);

impl Emulators {
    fn start(&mut self, s: &Session, kind: Kind) -> Result<(String, PathBuf)> {
        let state = fresh_state_dir(kind.name())?;
        let emulator = Emulator::at(&state)?;
        self.0.push(StopOnDrop(emulator.clone()));
        let endpoint = emulator.start(s, kind)?;
        eprintln!(
            "tests: {} at {endpoint} (log: {})",
            kind.name(),
            emulator.log().display()
        );
        Ok((endpoint, state))
    }
}

/// cargo-nextest when installed, else cargo test.
#[derive(Debug)]
struct Runner {
    nextest: bool,
}

impl Runner {
    fn detect(s: &Session) -> Self {
        let nextest = s.cargo().args(["nextest", "--version"]).succeeds();
        if !nextest {
            eprintln!(
                "tests: cargo-nextest is not installed (cargo install cargo-nextest --locked); running cargo test"
            );
        }
        Self { nextest }
    }

    /// Builds the test binaries of `targets` without running them.
    fn build(&self, s: &Session, targets: &[String]) -> Result {
        let verb: &[&str] = if self.nextest {
            &["nextest", "run", "--no-run"]
        } else {
            &["test", "--no-run"]
        };
        s.cargo().args(verb).args(targets).run()
    }

    /// A run of `targets`, narrowed by a nextest `expr` (for cargo test, the skips of
    /// `tier`) and by the user's `filters`.
    fn cmd(
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
            let mut cmd = s
                .cargo()
                .args(["nextest", "run", "--no-fail-fast"])
                // A filter may leave a tier with nothing to run: not an error.
                .args(if names.is_empty() {
                    &[][..]
                } else {
                    &["--no-tests=warn"][..]
                })
                .args(targets)
                .args(options);
            let by_name = (!names.is_empty()).then(|| {
                names
                    .iter()
                    .map(|n| format!("test({n})"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            });
            let expr = match (expr, by_name) {
                (Some(e), Some(n)) => Some(format!("({e}) & ({n})")),
                (e, n) => e.map(str::to_owned).or(n),
            };
            if let Some(expr) = expr {
                cmd = cmd.args(["-E", &expr]);
            }
            cmd
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_argument_that_names_a_tier_picks_it_and_the_rest_are_filters() {
        let run = Run::parse(vec!["fast".into(), "publisher".into()]);
        assert_eq!(
            (run.tier, run.filters),
            (Tier::Fast, vec!["publisher".to_owned()])
        );
        let run = Run::parse(vec!["publisher".into()]);
        assert_eq!(
            (run.tier, run.filters),
            (Tier::All, vec!["publisher".to_owned()])
        );
        assert_eq!(Run::parse(Vec::new()).tier, Tier::All);
    }
}
