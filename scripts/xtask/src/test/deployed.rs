//! The deployed tier's background work: the five deployments on MiniStack, the
//! offline infrastructure checks, the release artifacts and the release publisher's
//! test. Its Rust tests run with the emulator tier's, on MiniStack
//! ([`super::emulator::on_ministack`]).

use super::SUMMARY;
use super::runner::Runner;
use crate::Result;
use crate::process::{Cmd, Job};
use crate::session::Session;
use crate::tiers::{self, Tier};
use std::path::{Path, PathBuf};

/// The release artifacts, built in the background at a lower CPU priority (nice 10,
/// as CI's static checks: the background work shares what the suite leaves idle) in
/// their own target directory (a release build shares
/// nothing with the debug one, and two cargo processes on one directory would wait on
/// each other's lock).
pub fn start_release(s: &Session) -> Result<(Job, PathBuf)> {
    let log = s.target.join("release-package.log");
    let dir = s.target.join("lambda");
    // CI overrides the profile's optimisation (`.ci/run`): said on the step line, since
    // then they are not byte for byte what ships.
    let overrides = release_profile_overrides(std::env::vars());
    s.step(&format!(
        "package the release publisher in the background (cargo lambda build --release, x86_64{overrides}; log: {})",
        log.display()
    ));
    std::fs::create_dir_all(&s.target)
        .map_err(|e| format!("cannot create {}: {e}", s.target.display()))?;
    let job = Cmd::niced(10, this_program()?)
        .dir(&s.root)
        .envs(&s.env)
        .env("CARGO_TARGET_DIR", s.target.join("release-package"))
        // CI's clippy wrapper (`.ci/run`) is for the test builds: they lint these crates,
        // the functions without fault injection among them (their unit tests), already.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        // Only the function the release test runs: the others' release builds would
        // add their own crates and links, and nothing in the suite runs them.
        .args(["package", "--only", "outbox-publisher", "--out"])
        .arg(&dir)
        .spawn_logged("the release packaging", &log)?;
    Ok((job, dir))
}

/// The release profile's settings overridden in `vars` (cargo's
/// `CARGO_PROFILE_RELEASE_*`), as `, lto false, opt-level 0 instead of the profile's`.
fn release_profile_overrides(vars: impl Iterator<Item = (String, String)>) -> String {
    let mut set: Vec<String> = vars
        .filter_map(|(k, v)| {
            let setting = k.strip_prefix("CARGO_PROFILE_RELEASE_")?;
            Some(format!("{} {v}", setting.to_lowercase().replace('_', "-")))
        })
        .collect();
    if set.is_empty() {
        return String::new();
    }
    set.sort();
    format!(", {} instead of the profile's", set.join(", "))
}

/// Waits for the release packaging, then runs the publisher's binary test on what it
/// built: the same test the suite ran with the debug build, now with the artifacts a
/// user deploys (what ships publishes each message once). Runs beside the MiniStack
/// run, so its output goes to a log, of which the summary is printed.
pub fn release_test(
    s: &Session,
    runner: &Runner,
    (job, dir): (Job, PathBuf),
    ministack: &str,
) -> Result {
    job.wait_showing(40, &["package: "], 10)?;
    let test_log = s.target.join("release-test.log");
    s.step(&format!(
        "the release publisher, fed one stream batch three times as Lambda redelivers it, on MiniStack (log: {})",
        test_log.display()
    ));
    runner
        .cmd(
            s,
            &tiers::emulator_targets(),
            Some("test(/^publisher::binary::/)"),
            Tier::Emulator,
            &[],
        )
        .env("OUTBOX_EMULATOR", "ministack")
        .env("OUTBOX_ENDPOINT", ministack)
        .env("OUTBOX_LAMBDA_DIR", &dir)
        .spawn_logged("the release publisher's test", &test_log)?
        .wait_showing(60, &SUMMARY, 3)
}

/// The five deployments, as four background jobs: the Terraform applies beside the
/// two CDK deploys (those one after the other: they share the CDK bootstrap stack).
/// None of them runs cargo (the build lock is the test build's): the shop deploys a
/// copy of the consumer built before (the test build links it again meanwhile).
pub fn start_deploys(
    s: &mut Session,
    endpoint: &str,
    state: &Path,
    assets: &Path,
) -> Result<Vec<Job>> {
    s.set_env(
        "OUTBOX_DEPLOY_STATE",
        state.join("deploy").display().to_string(),
    );
    s.set_env(
        "SHOP_DEPLOY_STATE",
        state.join("shop").display().to_string(),
    );
    let shop_built = state.join("shop-built");
    std::fs::create_dir_all(&shop_built)
        .map_err(|e| format!("cannot create {}: {e}", shop_built.display()))?;
    for bin in crate::shop::BINARIES {
        std::fs::copy(s.target.join("debug").join(bin), shop_built.join(bin))
            .map_err(|e| format!("cannot copy the shop's {bin}: {e}"))?;
    }
    let exe = this_program()?;
    let ours = |tool: &str, prefix: &str| {
        s.cmd(&exe)
            .args(["deploy", tool, "--prefix", prefix, "--endpoint", endpoint])
            .arg("--assets")
            .arg(assets)
    };
    let shop = |tool: &str, name: &str| {
        s.cmd(&exe)
            .args(["shop", tool, "--name", name, "--endpoint", endpoint])
            .arg("--built")
            .arg(&shop_built)
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

/// Waits for the deployments, printing each one's last lines.
pub fn wait_deploys(s: &Session, deploys: Vec<Job>) -> Result {
    s.step("wait for the deployments");
    for job in deploys {
        job.wait_showing(40, &["deploy-local:", "shop:"], 3)?;
    }
    Ok(())
}

/// The offline infrastructure checks, in the background: not before the deployments
/// are done (they build and read infra/cdk too). At nice 5, above the release packaging
/// and CI's static checks (nice 10): they run one command at a time, so when they were
/// the last job (ci-o, at nice 10) one core idled for their last 63 s, where the builds
/// left last can use both.
pub fn start_infra_checks(s: &Session, state: &Path) -> Result<Job> {
    let log = state.join("infra-check.log");
    s.step(&format!(
        "infrastructure checks, in the background at nice 5 (log: {})",
        log.display()
    ));
    // Its Python tools (cfn-lint, checkov) install with uv, as the emulators' do.
    let uv = crate::venv::uv(s)?;
    Cmd::niced(5, "bash")
        .dir(&s.root)
        .envs(&s.env)
        .env("OUTBOX_UV", uv)
        .arg("infra/check.sh")
        .spawn_logged("the infrastructure checks", &log)
}

/// Waits for the infrastructure checks, printing their findings.
pub fn wait_infra_checks(s: &Session, job: Job) -> Result {
    s.step("wait for the infrastructure checks");
    job.wait_showing(60, &["infra:", "infra/check.sh:"], 100)
}

/// A command as one line of shell (each word quoted).
fn shell_line(cmd: &Cmd) -> String {
    cmd.words()
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn this_program() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_profiles_overridden_settings_are_named_and_nothing_else() {
        let vars = [
            ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"),
            ("CARGO_PROFILE_DEV_DEBUG", "line-tables-only"),
            ("CARGO_PROFILE_RELEASE_LTO", "false"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        assert_eq!(
            release_profile_overrides(vars.into_iter()),
            ", lto false, opt-level 0 instead of the profile's"
        );
        assert_eq!(release_profile_overrides(std::iter::empty()), "");
    }
}
