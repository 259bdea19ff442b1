//! Builds the four Lambda functions and lays them out the way both stacks read them:
//!
//! ```text
//! <out>/<bin>/bootstrap        (the CDK app; an ELF for provided.al2023)
//! <out>/<bin>/bootstrap.zip    (the Terraform module; the CDK app takes it too)
//! ```
//!
//! for `<bin>` in outbox-publisher, outbox-sweeper, outbox-recovery, orders-consumer;
//! `<out>` is `OUTBOX_LAMBDA_DIR`, else `target/lambda`.
//! Other binaries (the shop's, `cargo xtask shop`) are laid out the same way by
//! [`lay_out_built`].
//!
//! Release builds use cargo-lambda (PyPI `cargo-lambda`, with `ziglang` to link
//! against Amazon Linux's glibc), pinned in `scripts/package.txt` and installed into
//! `.venv/tools` on first use (or `pip install cargo-lambda ziglang` yourself).

use crate::process::Cmd;
use crate::{Result, session::Session};
use std::path::{Path, PathBuf};

/// The functions, as both stacks name their directories.
pub const FUNCTIONS: [&str; 4] = [
    "outbox-publisher",
    "outbox-sweeper",
    "outbox-recovery",
    "orders-consumer",
];

/// An example of the workspace (dynamodb-outbox-idempotency's), built beside debug
/// packages that the test build will share (see [`debug_build_args`]).
const SHARED_EXAMPLE: &str = "counter_with_a_marker";

/// What to build.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// A debug build for this machine (x86_64), for the local AWS: fast to build;
    /// MiniStack runs it as it is.
    #[arg(long)]
    pub debug: bool,
    /// A release build for Graviton (needs the Rust target aarch64-unknown-linux-gnu).
    #[arg(long, conflicts_with = "debug")]
    pub arm64: bool,
    /// x86_64 (the default).
    #[arg(long = "x86-64", alias = "x86_64", conflicts_with = "arm64")]
    pub x86_64: bool,
    /// Features of the function crates, e.g. `fault-injection` (debug builds only:
    /// tests, the demo and the chaos bench; never deploy such a build).
    #[arg(long)]
    pub features: Option<String>,
    /// Where to lay them out (default: OUTBOX_LAMBDA_DIR, else target/lambda).
    #[arg(long, env = "OUTBOX_LAMBDA_DIR")]
    pub out: Option<PathBuf>,
    /// Only these functions (repeatable; default all four): a release build of one
    /// function compiles only what it links.
    #[arg(long = "only", value_name = "FUNCTION", value_parser = clap::builder::PossibleValuesParser::new(FUNCTIONS))]
    pub only: Vec<String>,
    /// Resolve features as the test build does, so that it reuses this build.
    #[arg(skip)]
    pub share_with_tests: bool,
}

impl Options {
    /// A debug build with fault injection into `out`: what the tests and the demo deploy.
    pub fn debug_with_faults(out: PathBuf) -> Self {
        Self {
            debug: true,
            arm64: false,
            x86_64: true,
            features: Some("fault-injection".into()),
            out: Some(out),
            only: Vec::new(),
            share_with_tests: false,
        }
    }

    /// The release x86_64 build into `out`: what a user deploys.
    pub fn release(out: PathBuf) -> Self {
        Self {
            debug: false,
            arm64: false,
            x86_64: true,
            features: None,
            out: Some(out),
            only: Vec::new(),
            share_with_tests: false,
        }
    }

    /// The functions to build: `only`, else all four.
    fn functions(&self) -> Vec<&str> {
        if self.only.is_empty() {
            FUNCTIONS.to_vec()
        } else {
            FUNCTIONS
                .into_iter()
                .filter(|f| self.only.iter().any(|o| o == f))
                .collect()
        }
    }

    /// Absolute: the builds run in the repository, the caller maybe elsewhere.
    fn out(&self, s: &Session) -> PathBuf {
        let out = self.out.clone().unwrap_or_else(|| s.target.join("lambda"));
        std::path::absolute(&out).unwrap_or(out)
    }
}

/// Builds and lays out the functions; `also` names more binaries of the workspace
/// to build in the same cargo run (debug only: the demo's dev kit), so that they
/// share one resolution of features and one build of every dependency.
pub fn package(s: &Session, opts: &Options, also: &[&str]) -> Result {
    let out = opts.out(s);
    let features = opts.features.as_deref().unwrap_or("");
    if features.contains("fault-injection") && !opts.debug {
        return Err(
            "fault injection is for tests only; it is refused in a release build (add --debug)"
                .into(),
        );
    }
    let arch = if opts.arm64 { "arm64" } else { "x86_64" };
    if opts.debug {
        eprintln!(
            "package: cargo build (debug) {}{}",
            opts.functions().join(" "),
            with(features)
        );
        s.cargo()
            .args(debug_build_args(
                &opts.functions(),
                features,
                also,
                opts.share_with_tests,
            ))
            .run()?;
        let src = s.target.join("debug");
        for bin in opts.functions() {
            let dir = out.join(bin);
            mkdir(&dir)?;
            strip_into(&src.join(bin), &dir)?;
        }
    } else {
        release(s, opts, features, &out)?;
    }
    for bin in opts.functions() {
        let size = std::fs::metadata(out.join(bin).join("bootstrap")).map_or(0, |m| m.len());
        let zip = out.join(bin).join("bootstrap.zip");
        let profile = if opts.debug { "debug" } else { "release" };
        eprintln!(
            "package: {:<60} {:.1} MB ({arch}, {profile})",
            zip.display(),
            size as f64 / 1e6
        );
    }
    Ok(())
}

fn with(features: &str) -> String {
    if features.is_empty() {
        String::new()
    } else {
        format!(" with {features}")
    }
}

/// `cargo build` of the functions (and `also`), features qualified by package.
/// Shared with the tests (`share`): `--workspace` (building only these binaries), so
/// features resolve as for the workspace's test build, which then reuses this build of
/// every dependency instead of compiling the AWS SDK again with another feature set.
/// Alone (the demo, `cargo xtask package --debug`): `-p` for each package, so only
/// what these packages use is built (no OpenTelemetry, no test-only features).
fn debug_build_args(functions: &[&str], features: &str, also: &[&str], share: bool) -> Vec<String> {
    let mut args = vec!["build".to_owned()];
    if share {
        args.push("--workspace".to_owned());
        // One example, which the test build builds too: with a target that uses
        // dev-dependencies in the run, cargo resolves features as for the tests (the
        // dev-dependencies turn on more of opentelemetry), so the test build reuses
        // this one's libraries instead of compiling them again.
        args.extend(["--example".to_owned(), SHARED_EXAMPLE.to_owned()]);
    }
    let select = if share { "--bin" } else { "-p" };
    for bin in functions.iter().chain(also) {
        args.extend([select.to_owned(), (*bin).to_owned()]);
    }
    let qualified: Vec<String> = functions
        .iter()
        .flat_map(|bin| {
            features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(move |f| format!("{bin}/{f}"))
        })
        .collect();
    if !qualified.is_empty() {
        args.extend(["--features".to_owned(), qualified.join(",")]);
    }
    args
}

fn release(s: &Session, opts: &Options, features: &str, out: &Path) -> Result {
    if opts.arm64
        && !Cmd::new("rustup")
            .args(["target", "list", "--installed"])
            .read()
            .is_ok_and(|t| t.lines().any(|l| l == "aarch64-unknown-linux-gnu"))
    {
        return Err(
            "arm64 needs the Rust target aarch64-unknown-linux-gnu, which is not installed.\n  \
             Install it with `rustup target add aarch64-unknown-linux-gnu` (this needs the Rust\n  \
             distribution server; machines without it cannot build arm64), or deploy x86_64:\n  \
             `cargo xtask package` and set the stack's architecture to x86_64."
                .into(),
        );
    }
    let tools = s.path(".venv/tools");
    crate::venv::ensure(
        s,
        &tools,
        &s.path("scripts/package.txt"),
        "cargo-lambda and ziglang",
    )?;
    let flag = if opts.arm64 { "--arm64" } else { "--x86-64" };
    let functions = opts.functions();
    eprintln!(
        "package: cargo lambda build --release {flag} {}",
        functions.join(" ")
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let mut cmd = s
        .cargo()
        .env("PATH", format!("{}:{path}", tools.join("bin").display()))
        .args(["lambda", "build", "--release", flag]);
    for bin in &functions {
        cmd = cmd.args(["-p", bin]);
    }
    if !features.is_empty() {
        cmd = cmd.args(["--features", features]);
    }
    cmd.arg("--lambda-dir").arg(out).run()?;
    functions
        .iter()
        .try_for_each(|bin| zip_bootstrap(&out.join(bin)))
}

/// A debug build of the workspace's binaries `bins`, features resolved for the whole
/// workspace, as `cargo xtask package` and the tests build: one build of the AWS SDK
/// for all of them. Returns the directory they are in.
pub fn build_workspace_binaries(s: &Session, bins: &[&str]) -> Result<PathBuf> {
    bins.iter()
        .fold(
            s.cargo().args(["build", "--quiet", "--workspace"]),
            |cargo, bin| cargo.args(["--bin", bin]),
        )
        .run()?;
    Ok(s.target.join("debug"))
}

/// Lays out `bins`, each an executable in `built`, as cargo lambda does:
/// `<out>/<bin>/bootstrap` and `<out>/<bin>/bootstrap.zip`. Returns `out` absolute
/// (Terraform and the CDK read it from their own folders).
pub fn lay_out_built(bins: &[&str], built: &Path, out: &Path) -> Result<PathBuf> {
    for bin in bins {
        let exe = built.join(bin);
        if !exe.is_file() {
            return Err(format!(
                "--built must name a directory holding the built {} (no {})",
                bins.join(", "),
                exe.display()
            ));
        }
        let dir = out.join(bin);
        mkdir(&dir)?;
        strip_into(&exe, &dir)?;
    }
    out.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", out.display()))
}

/// Lays `built` out as `dir/bootstrap` and `dir/bootstrap.zip`, without symbols: half
/// the size, so deploys upload less (panic messages keep their locations).
fn strip_into(built: &Path, dir: &Path) -> Result {
    let tmp = dir.join("bootstrap.tmp");
    if !Cmd::new("objcopy")
        .arg("--strip-all")
        .arg(built)
        .arg(&tmp)
        .succeeds()
    {
        std::fs::copy(built, &tmp).map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
    }
    std::fs::rename(&tmp, dir.join("bootstrap"))
        .map_err(|e| format!("cannot move {}: {e}", tmp.display()))?;
    zip_bootstrap(dir)
}

/// Writes `dir/bootstrap.zip` holding `dir/bootstrap`, executable, with a fixed date
/// (the same binary gives the same archive).
fn zip_bootstrap(dir: &Path) -> Result {
    const ZIP: &str = r#"
import sys, zipfile, os
d = sys.argv[1]
info = zipfile.ZipInfo("bootstrap", date_time=(1980, 1, 1, 0, 0, 0))
info.external_attr = 0o755 << 16
info.compress_type = zipfile.ZIP_DEFLATED
with open(os.path.join(d, "bootstrap"), "rb") as f, zipfile.ZipFile(os.path.join(d, "bootstrap.zip.tmp"), "w") as z:
    z.writestr(info, f.read(), compresslevel=1)
os.replace(os.path.join(d, "bootstrap.zip.tmp"), os.path.join(d, "bootstrap.zip"))
"#;
    Cmd::new("python3").args(["-c", ZIP]).arg(dir).run()
}

fn mkdir(dir: &Path) -> Result {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_binaries_are_laid_out_zipped_and_a_missing_one_is_named() {
        let base = std::env::temp_dir().join(format!("xtask-lay-out-{}", std::process::id()));
        let (built, out) = (base.join("built"), base.join("out"));
        std::fs::create_dir_all(&built).unwrap();
        std::fs::write(built.join("a"), "not an ELF: copied as it is").unwrap();
        let laid = lay_out_built(&["a"], &built, &out);
        let files = ["bootstrap", "bootstrap.zip"].map(|f| out.join("a").join(f).is_file());
        let missing = lay_out_built(&["a", "b"], &built, &out);
        std::fs::remove_dir_all(&base).unwrap();
        assert!(laid.unwrap().is_absolute());
        assert_eq!(files, [true, true]);
        let said = missing.unwrap_err();
        assert!(
            said.starts_with("--built must name a directory holding the built a, b (no "),
            "{said}"
        );
    }

    #[test]
    fn debug_builds_alone_name_their_packages_and_qualify_the_features() {
        let args =
            debug_build_args(&FUNCTIONS, "fault-injection", &["outbox-devkit"], false).join(" ");
        assert_eq!(
            args,
            "build -p outbox-publisher -p outbox-sweeper -p outbox-recovery -p orders-consumer \
             -p outbox-devkit --features outbox-publisher/fault-injection,outbox-sweeper/fault-injection,\
             outbox-recovery/fault-injection,orders-consumer/fault-injection"
        );
    }

    #[test]
    fn debug_builds_shared_with_the_tests_resolve_features_for_the_workspace() {
        let args = debug_build_args(&FUNCTIONS[..1], "", &["shop-consumer"], true).join(" ");
        assert_eq!(
            args,
            "build --workspace --example counter_with_a_marker --bin outbox-publisher --bin shop-consumer"
        );
    }

    #[test]
    fn only_narrows_the_functions_built_and_keeps_their_order() {
        let mut opts = Options::release(PathBuf::from("out"));
        assert_eq!(opts.functions(), FUNCTIONS.to_vec());
        opts.only = vec!["orders-consumer".into(), "outbox-publisher".into()];
        assert_eq!(
            opts.functions(),
            vec!["outbox-publisher", "orders-consumer"]
        );
        let args = debug_build_args(&opts.functions(), "", &[], false).join(" ");
        assert_eq!(args, "build -p outbox-publisher -p orders-consumer");
    }

    #[test]
    fn debug_builds_without_features_name_none() {
        assert!(
            !debug_build_args(&FUNCTIONS, "", &[], false)
                .iter()
                .any(|a| a == "--features")
        );
        let shared = debug_build_args(&FUNCTIONS, "", &[], true).join(" ");
        assert!(
            shared.contains("--example counter_with_a_marker"),
            "{shared}"
        );
    }
}
