//! Deploys one of our own stacks — the Terraform module or the CDK app — into the local
//! AWS (MiniStack), exactly as it deploys to an account, with the functions that
//! `cargo xtask package` laid out. Prints one JSON line describing the deployment:
//! `{"tool":"terraform","prefix":"demo","endpoint":"https://127.0.0.1:4566"}` (everything
//! else — table, queues, mappings — is read back from the functions' configuration by
//! whoever uses it).
//!
//! `terraform-global` deploys `infra/terraform/examples/global-table-local` instead: a
//! global table with replicas in us-east-1 and eu-west-1 and the outbox module in each
//! region (docs/global-tables.md); `outbox-devkit regions` drives it.
//!
//! Tool state (Terraform state, CDK output) lives in `OUTBOX_DEPLOY_STATE` (default
//! `.emulator/deploy`), per prefix, so several deployments share one local AWS. Needs
//! terraform (with the hashicorp/aws provider from the registry, or a filesystem
//! mirror: `TF_PLUGIN_MIRROR`, default /opt/tf-plugins when present) or node/npm for CDK.

use crate::process::Cmd;
use crate::{Result, session::Session};
use std::path::{Path, PathBuf};

/// Which stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// The Terraform module with the orders example (infra/terraform/examples/local).
    Terraform,
    /// The module in two regions of a global table (examples/global-table-local).
    TerraformGlobal,
    /// The CDK example app (infra/cdk).
    Cdk,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Self::Terraform => "terraform",
            Self::TerraformGlobal => "terraform-global",
            Self::Cdk => "cdk",
        }
    }
}

/// One deployment.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The stack.
    #[arg(value_enum)]
    pub tool: Tool,
    /// The deployment's prefix (its resources' names start with it).
    #[arg(long, default_value = "outbox")]
    pub prefix: String,
    /// The functions, as `cargo xtask package` laid them out (default target/lambda).
    #[arg(long)]
    pub assets: Option<PathBuf>,
    /// The local AWS (default OUTBOX_ENDPOINT).
    #[arg(long, env = "OUTBOX_ENDPOINT")]
    pub endpoint: Option<String>,
    /// A Terraform variable or CDK context `outbox:NAME`, as NAME=VALUE (repeatable).
    #[arg(long = "var")]
    pub vars: Vec<String>,
    /// Remove the deployment instead.
    #[arg(long)]
    pub destroy: bool,
}

/// Deploys (or destroys); the deployment's JSON line (empty for a destroy).
pub fn deploy(s: &Session, opts: &Options) -> Result<String> {
    let endpoint = opts.endpoint.clone().ok_or(
        "no endpoint: start the local AWS with `cargo xtask emulator start` and pass --endpoint or OUTBOX_ENDPOINT",
    )?;
    if !is_loopback(&endpoint) {
        return Err(format!(
            "{endpoint} is not a local AWS on loopback; deploy to an account with infra/README.md"
        ));
    }
    let assets = opts
        .assets
        .clone()
        .unwrap_or_else(|| s.target.join("lambda"));
    for bin in crate::package::FUNCTIONS {
        if !assets.join(bin).join("bootstrap.zip").is_file() {
            return Err(format!(
                "{}/{bin}/bootstrap.zip is missing: run `cargo xtask package --debug` (or `cargo xtask package`) first",
                assets.display()
            ));
        }
    }
    let assets = assets
        .canonicalize()
        .map_err(|e| format!("{}: {e}", assets.display()))?;
    let base = std::env::var_os("OUTBOX_DEPLOY_STATE")
        .map_or_else(|| s.path(".emulator/deploy"), PathBuf::from);
    let state = base.join(format!("{}-{}", opts.tool.name(), opts.prefix));
    std::fs::create_dir_all(&state)
        .map_err(|e| format!("cannot create {}: {e}", state.display()))?;
    let job = Deploy {
        s,
        opts,
        endpoint: &endpoint,
        assets: &assets,
        state: &state,
    };
    match opts.tool {
        Tool::Terraform => job.terraform("local")?,
        Tool::TerraformGlobal => job.terraform("global-table-local")?,
        Tool::Cdk => job.cdk()?,
    }
    if opts.destroy {
        return Ok(String::new());
    }
    Ok(format!(
        r#"{{"tool":"{}","prefix":"{}","endpoint":"{endpoint}"}}"#,
        opts.tool.name(),
        opts.prefix
    ))
}

/// Whether `url` is http(s)://127.0.0.1 or localhost, with an optional port.
pub(crate) fn is_loopback(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = rest.split_once(':').unwrap_or((rest, "1"));
    matches!(host, "127.0.0.1" | "localhost")
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
}

struct Deploy<'a> {
    s: &'a Session,
    opts: &'a Options,
    endpoint: &'a str,
    assets: &'a Path,
    state: &'a Path,
}

impl Deploy<'_> {
    fn log(&self, what: &str) {
        eprintln!("deploy-local: {what}");
    }

    fn cmd(&self, program: &str) -> Cmd {
        with_test_credentials(self.s.cmd(program))
    }

    fn terraform(&self, example: &str) -> Result {
        if !Cmd::new("terraform").arg("version").succeeds() {
            return Err(
                "terraform is not installed (https://developer.hashicorp.com/terraform/install)"
                    .into(),
            );
        }
        let dir = self.s.path("infra/terraform/examples").join(example);
        let rc = self.state.join("terraformrc");
        let config = Cmd::new(self.s.path("scripts/tf-cli-config")).read()?;
        std::fs::write(&rc, config).map_err(|e| format!("cannot write {}: {e}", rc.display()))?;
        let tf = |args: &[&str]| {
            self.cmd("terraform")
                .env("GOGC", terraform_gogc())
                .env("TF_IN_AUTOMATION", "1")
                .env("TF_INPUT", "0")
                .env("TF_DATA_DIR", self.state.join("tfdata"))
                .env("TF_CLI_CONFIG_FILE", &rc)
                .arg(format!("-chdir={}", dir.display()))
                .args(args)
        };
        self.log("terraform init");
        tf(&["init", "-input=false"]).run_logged(&self.state.join("init.log"), 60)?;
        let verb = if self.opts.destroy {
            "destroy"
        } else {
            "apply"
        };
        self.log(&format!(
            "terraform {verb} (prefix {}; the provider waits for queues to settle, about a minute)",
            self.opts.prefix
        ));
        let mut cmd = tf(&[verb, "-auto-approve", "-input=false", "-no-color"])
            .arg("-var")
            .arg(format!("endpoint={}", self.endpoint))
            .arg("-var")
            .arg(format!("prefix={}", self.opts.prefix))
            .arg("-var")
            .arg(format!("lambda_asset_dir={}", self.assets.display()))
            .arg(format!(
                "-state={}",
                self.state.join("terraform.tfstate").display()
            ));
        for var in &self.opts.vars {
            cmd = cmd.arg("-var").arg(var);
        }
        let log = self.state.join(format!("{verb}.log"));
        cmd.run_logged(&log, 40)?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        for line in text
            .lines()
            .filter(|l| l.starts_with("Apply complete") || l.starts_with("Destroy complete"))
        {
            self.log(line);
        }
        Ok(())
    }

    fn cdk(&self) -> Result {
        if !Cmd::new("npx").arg("--version").succeeds() {
            return Err("node and npm are needed for CDK (https://nodejs.org)".into());
        }
        let cdk = self.s.path("infra/cdk");
        npm_ci(&cdk)?;
        let prefix = &self.opts.prefix;
        let mut ctx = vec![
            "-c".to_owned(),
            format!("outbox:prefix={prefix}"),
            "-c".to_owned(),
            "outbox:architecture=x86_64".to_owned(),
            "-c".to_owned(),
            format!("outbox:stackName=outbox-{prefix}"),
        ];
        for var in &self.opts.vars {
            ctx.extend(["-c".to_owned(), format!("outbox:{var}")]);
        }
        let out = self.state.join("cdk.out");
        let npx = |args: &[&str]| {
            self.cdk_cli(&cdk)
                .env("OUTBOX_LAMBDA_ASSET_DIR", self.assets)
                .args(args)
                .arg("--output")
                .arg(&out)
                .args(&ctx)
        };
        if self.opts.destroy {
            self.log(&format!("cdk destroy (prefix {prefix})"));
            return npx(&["destroy", "--force"]).run_logged(&self.state.join("destroy.log"), 40);
        }
        // One synthesis, which bootstrap and deploy then read (`--app` a cloud assembly):
        // `cdk bootstrap` runs the app of cdk.json even for a named environment
        // (aws/aws-cdk#31255), and the app's synthesis with cdk-nag is ~16 CPU-s.
        self.log("cdk synth");
        npx(&["synth", "--quiet"]).run_logged(&self.state.join("synth.log"), 40)?;
        let assembly = out.display().to_string();
        self.log("cdk bootstrap");
        self.cdk_cli(&cdk)
            .args([
                "bootstrap",
                "aws://000000000000/us-east-1",
                "--app",
                &assembly,
            ])
            .run_logged(&self.state.join("bootstrap.log"), 40)?;
        self.log(&format!("cdk deploy (prefix {prefix})"));
        self.cdk_cli(&cdk)
            .args(["deploy", "--require-approval", "never", "--app", &assembly])
            .run_logged(&self.state.join("deploy.log"), 40)
    }

    /// The CDK CLI in `cdk` (the example app's folder), at the emulator's endpoint and
    /// account.
    fn cdk_cli(&self, cdk: &Path) -> Cmd {
        self.cmd("npx")
            .dir(cdk)
            .env("AWS_ENDPOINT_URL", self.endpoint)
            .env("CDK_DEFAULT_ACCOUNT", "000000000000")
            .env("CDK_DEFAULT_REGION", "us-east-1")
            .env("CDK_DISABLE_CLI_TELEMETRY", "true")
            .arg("cdk")
    }
}

/// `npm ci` in `dir` unless its node_modules were installed from the same lock file.
pub fn npm_ci(dir: &Path) -> Result {
    let lock = dir.join("package-lock.json");
    let stamp = dir.join("node_modules/.outbox-lock");
    let same = matches!((std::fs::read(&lock), std::fs::read(&stamp)), (Ok(a), Ok(b)) if a == b);
    if same {
        return Ok(());
    }
    eprintln!("deploy-local: npm ci ({}, one time)", dir.display());
    Cmd::new("npm")
        .dir(dir)
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .run()?;
    std::fs::copy(&lock, &stamp)
        .map(drop)
        .map_err(|e| format!("cannot write {}: {e}", stamp.display()))
}

/// `cmd` with test credentials: the local AWS accepts any, and a real profile must
/// never be used against it.
pub(crate) fn with_test_credentials(cmd: Cmd) -> Cmd {
    cmd.env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
}

/// The Go garbage collector's target for terraform and the AWS provider (`GOGC`): 400
/// instead of Go's 100 unless the caller set one. The provider spends much of its
/// start-up collecting garbage; at 400 a plan costs about a third less CPU for about
/// 0.25 GB more memory (measured on the module's tests, infra/check.py sets the same).
pub fn terraform_gogc() -> String {
    std::env::var("GOGC").unwrap_or_else(|_| "400".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_endpoints_are_deployed_to() {
        for url in [
            "https://127.0.0.1:4566",
            "http://localhost:4566/",
            "http://127.0.0.1",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://dynamodb.us-east-1.amazonaws.com",
            "http://127.0.0.1.evil.com:80",
            "ftp://127.0.0.1",
            "http://127.0.0.1:x",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
