//! `cargo xtask demo` (`scripts/demo`): the deployed system on a local AWS, end to end.
//!
//! 1. builds the four functions (debug, with fault injection compiled in, so the crash
//!    options work) and the dev kit, in one cargo run — while MiniStack and the CDK's
//!    npm packages install beside it (first run only);
//! 2. starts MiniStack on loopback;
//! 3. deploys our CDK app into it (or the Terraform module: `--stack terraform`);
//! 4. drives orders through it with `outbox-devkit demo` — library and minimal
//!    producers, the real publisher behind the stream's event source mapping, the real
//!    consumer behind the queue's, the sweeper on its schedule — with live counters, and
//!    checks every guarantee. Exits non-zero if a guarantee broke.

use crate::emulator::{Emulator, Kind, StopOnDrop};
use crate::process::Cmd;
use crate::session::{Session, fresh_state_dir};
use crate::{Result, deploy, package};
use std::path::PathBuf;

const USAGE: &str = "\
cargo xtask demo [--stack cdk|terraform] [--regions R1,R2] [OPTIONS OF outbox-devkit demo]
  (scripts/demo calls it)
  --stack terraform        deploy the Terraform module instead of the CDK app
  --regions us-east-1,eu-west-1
                           the outbox on a global table instead: the Terraform root
                           examples/global-table-local deployed into both regions, then
                           `outbox-devkit regions` (2,000 messages across both regions, a
                           failover and a failback; its options after this one)
  e.g. --orders 500 --rate 0, --publisher-crash 0.3 --consumer-crash 0.2
The dev kit's own options follow.
";

/// The demo's own options; the rest go to the dev kit.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    tool: deploy::Tool,
    regions: Option<String>,
    help: bool,
    rest: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Options> {
    let mut opts = Options {
        tool: deploy::Tool::Cdk,
        regions: None,
        help: false,
        rest: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "--stack" => {
                opts.tool = match inline.or_else(|| args.next()).as_deref() {
                    Some("cdk") => deploy::Tool::Cdk,
                    Some("terraform") => deploy::Tool::Terraform,
                    other => {
                        return Err(format!("demo: --stack is cdk or terraform, not {other:?}"));
                    }
                }
            }
            "--regions" => {
                opts.regions = Some(
                    inline
                        .or_else(|| args.next())
                        .ok_or("demo: --regions needs a list, e.g. us-east-1,eu-west-1")?,
                )
            }
            "-h" | "--help" => opts.help = true,
            _ => opts.rest.push(arg),
        }
    }
    // The global table: one Terraform root deploys both regions (there is no CDK app for it here).
    if opts.regions.is_some() {
        opts.tool = deploy::Tool::TerraformGlobal;
    }
    Ok(opts)
}

/// The demo builds in a target directory of its own (`target/demo`, unless
/// `CARGO_TARGET_DIR` is set), with settings for a first build that nobody debugs:
/// no incremental compilation and line tables instead of full debug info (a panic
/// still names its file and line). In its own directory so that neither build's
/// settings invalidate the other's. With `-p` builds (package.rs), a fresh clone's
/// demo build fell from 549 to 477 CPU-s (the whole demo: 4 min 53 s on 2 cores).
fn own_build(s: &mut Session) {
    if std::env::var_os("CARGO_TARGET_DIR").is_some() {
        return;
    }
    let dir = s.target.join("demo");
    s.set_env("CARGO_TARGET_DIR", dir.display().to_string());
    s.set_env("CARGO_INCREMENTAL", "0");
    s.set_env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    s.target = dir;
}

/// Runs the demo.
pub fn run(s: &mut Session, args: Vec<String>) -> Result {
    let opts = parse(args)?;
    let devkit_cmd = if opts.regions.is_some() {
        "regions"
    } else {
        "demo"
    };
    own_build(s);
    let devkit = s.target.join("debug/outbox-devkit");
    if opts.help {
        eprint!("{USAGE}");
        s.cargo()
            .args(["build", "--quiet", "-p", "outbox-devkit"])
            .run()?;
        return Cmd::new(&devkit).args([devkit_cmd, "--help"]).run();
    }

    s.step("build the functions and the dev kit (debug; the first build takes a few minutes)");
    let given_state = std::env::var_os("OUTBOX_EMULATOR_STATE");
    let fresh = given_state.is_none();
    let state = match given_state {
        Some(dir) => PathBuf::from(dir),
        None => fresh_state_dir("demo")?,
    };
    // What does not need the build installs beside it: the emulator's virtual
    // environment and the CDK's npm packages (each one time).
    let installs = std::thread::scope(|scope| {
        let s = &*s;
        let ministack = scope.spawn(|| crate::emulator::install(s, Kind::Ministack));
        let npm = (opts.tool == deploy::Tool::Cdk)
            .then(|| scope.spawn(|| deploy::npm_ci(&s.path("infra/cdk"))));
        let built = package::package(
            s,
            &package::Options::debug_with_faults(s.target.join("lambda-dev")),
            &["outbox-devkit"],
        );
        let joined = |r: std::thread::Result<Result>| {
            r.unwrap_or_else(|_| Err("an install thread panicked".into()))
        };
        built
            .and(joined(ministack.join()))
            .and(npm.map_or(Ok(()), |h| joined(h.join())))
    });
    installs?;

    s.step("start the local AWS (MiniStack)");
    let emulator = Emulator::at(&state)?;
    let endpoint = emulator.start(s, Kind::Ministack)?;
    let stop = StopOnDrop(emulator.clone());
    let iam = if std::env::var("OUTBOX_EMULATOR_IAM").is_ok_and(|v| v == "off") {
        "IAM NOT checked (OUTBOX_EMULATOR_IAM=off)"
    } else {
        "IAM checked on every call"
    };
    eprintln!(
        "local AWS at {endpoint}, {iam} (its log: {})",
        emulator.log().display()
    );
    // It serves TLS only, with a certificate of its own: trust it (Terraform, the CDK, the run).
    for (k, v) in emulator.trust_exports() {
        s.set_env(&k, v);
    }
    s.set_env(
        "OUTBOX_DEPLOY_STATE",
        state.join("deploy").display().to_string(),
    );

    s.step(&format!(
        "deploy the {} stack into it",
        tool_name(opts.tool)
    ));
    let vars = opts.regions.as_ref().map(|r| {
        vec![format!(
            "regions=[\"{}\"]",
            r.split(',').collect::<Vec<_>>().join("\",\"")
        )]
    });
    let deploy_opts = deploy::Options {
        tool: opts.tool,
        prefix: "demo".into(),
        assets: Some(s.target.join("lambda-dev")),
        endpoint: Some(endpoint.clone()),
        vars: vars.unwrap_or_default(),
        destroy: false,
    };
    deploy::deploy(s, &deploy_opts)?;

    s.step("run");
    let mut cmd = s
        .cmd(&devkit)
        .args(["--endpoint", &endpoint, devkit_cmd, "--prefix", "demo"]);
    cmd = match &opts.regions {
        Some(regions) => cmd.args(["--regions", regions]),
        None => cmd.args(["--tool", tool_name(opts.tool)]),
    };
    let ran = cmd.args(&opts.rest).run();
    drop(stop);
    if fresh {
        remove_unpacked_code(&state);
    }
    ran
}

/// Removes the function code the stopped emulator unpacked into its state directory
/// (`ministack-provided-code-*`, most of its size: ~65 MB a run), keeping its log and
/// the stacks' state. Only for a directory the demo made itself.
fn remove_unpacked_code(state: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(state) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("ministack-provided-code-")
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn tool_name(tool: deploy::Tool) -> &'static str {
    match tool {
        deploy::Tool::Cdk => "cdk",
        deploy::Tool::Terraform => "terraform",
        deploy::Tool::TerraformGlobal => "terraform-global",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_demo_keeps_its_options_and_passes_the_rest_to_the_dev_kit() {
        let opts = parse(args("--orders 500 --stack terraform --rate=0")).unwrap();
        assert_eq!(opts.tool, deploy::Tool::Terraform);
        assert_eq!(opts.rest, args("--orders 500 --rate=0"));
        assert_eq!(parse(args("--stack=cdk")).unwrap().tool, deploy::Tool::Cdk);
    }

    #[test]
    fn regions_deploy_the_global_table() {
        let opts = parse(args("--regions us-east-1,eu-west-1 --messages 100")).unwrap();
        assert_eq!(opts.tool, deploy::Tool::TerraformGlobal);
        assert_eq!(opts.regions.as_deref(), Some("us-east-1,eu-west-1"));
    }

    #[test]
    fn after_the_run_the_unpacked_code_goes_and_the_log_stays() {
        let state = fresh_state_dir("demo-test").unwrap();
        std::fs::create_dir_all(state.join("ministack-provided-code-1/abc")).unwrap();
        std::fs::write(state.join("ministack-provided-code-1/abc/bootstrap"), "x").unwrap();
        std::fs::write(state.join("emulator.log"), "started").unwrap();
        std::fs::create_dir(state.join("deploy")).unwrap();
        remove_unpacked_code(&state);
        let mut left: Vec<String> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        std::fs::remove_dir_all(&state).unwrap();
        assert_eq!(left, ["deploy", "emulator.log"]);
    }

    #[test]
    fn an_unknown_stack_is_refused() {
        assert!(parse(args("--stack pulumi")).is_err());
    }
}
