//! `cargo xtask shop terraform|cdk` (`examples/shop/deploy-local`): deploys the
//! adoption example — with its Terraform root or its CDK app — into the local AWS,
//! checking first that the outbox adds only the outbox: the resources the module plans
//! (or the stack synthesizes) are compared with `examples/shop/expected-resources/`,
//! and any difference fails the deployment before anything is applied.
//!
//! The shop's consumer is built here (debug, for the local AWS), or taken from
//! `--consumer` (an executable already built: the test suite builds it beside its
//! tests). State lives in `SHOP_DEPLOY_STATE` (default `target/shop-deploy`), per tool
//! and name.

use crate::deploy::{is_loopback, npm_ci, terraform_gogc, with_test_credentials};
use crate::process::Cmd;
use crate::{Result, session::Session};
use std::path::{Path, PathBuf};

/// How the shop is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// examples/shop/terraform: the outbox module in the shop's own root.
    Terraform,
    /// examples/shop/cdk: the construct, installed from its npm package.
    Cdk,
}

/// One deployment of the shop.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The shop's infrastructure code.
    #[arg(value_enum)]
    pub tool: Tool,
    /// The deployment's name (its resources' names start with it).
    #[arg(long, default_value = "shop")]
    pub name: String,
    /// The local AWS (default OUTBOX_ENDPOINT).
    #[arg(long, env = "OUTBOX_ENDPOINT")]
    pub endpoint: String,
    /// The outbox functions, as `cargo xtask package` laid them out.
    #[arg(long = "outbox-assets")]
    pub outbox_assets: PathBuf,
    /// The shop's consumer, already built (default: built here, debug).
    #[arg(long)]
    pub consumer: Option<PathBuf>,
}

/// Deploys the shop after checking what the outbox adds to it.
pub fn deploy(s: &Session, opts: &Options) -> Result {
    if !is_loopback(&opts.endpoint) {
        return Err(format!(
            "shop: --endpoint must be a local AWS on loopback (got {:?})",
            opts.endpoint
        ));
    }
    let assets = opts.outbox_assets.canonicalize().map_err(|e| {
        format!("shop: --outbox-assets must name the directory `cargo xtask package` filled ({e})")
    })?;
    let tool = match opts.tool {
        Tool::Terraform => "terraform",
        Tool::Cdk => "cdk",
    };
    let base = std::env::var_os("SHOP_DEPLOY_STATE")
        .map_or_else(|| s.target.join("shop-deploy"), PathBuf::from);
    let state = base.join(format!("{tool}-{}", opts.name));
    std::fs::create_dir_all(&state)
        .map_err(|e| format!("cannot create {}: {e}", state.display()))?;
    let consumer = consumer_zip(s, opts.consumer.as_deref(), &state)?;
    let job = Shop {
        s,
        opts,
        assets: &assets,
        consumer: &consumer,
        state: &state,
        here: s.path("examples/shop"),
    };
    match opts.tool {
        Tool::Terraform => job.terraform()?,
        Tool::Cdk => job.cdk()?,
    }
    log(&format!("deployed ({tool}, {})", opts.name));
    Ok(())
}

fn log(what: &str) {
    eprintln!("shop: {what}");
}

/// The consumer's `bootstrap.zip`, in the deployment's own directory (two deployments
/// may run at once), from `built` or from a debug build made here.
fn consumer_zip(s: &Session, built: Option<&Path>, state: &Path) -> Result<PathBuf> {
    let built = match built {
        Some(path) => path.to_owned(),
        None => {
            log("build the consumer (debug)");
            // Features resolved for the whole workspace, as `cargo xtask package` and
            // the tests build: one build of the AWS SDK for all of them.
            s.cargo()
                .args(["build", "--quiet", "--workspace", "--bin", "shop-consumer"])
                .run()?;
            s.target.join("debug/shop-consumer")
        }
    };
    if !built.is_file() {
        return Err(format!(
            "shop: --consumer must name the built shop-consumer executable (got {})",
            built.display()
        ));
    }
    let dir = state.join("consumer");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    crate::package::strip_into(&built, &dir)?;
    Ok(dir.join("bootstrap.zip"))
}

struct Shop<'a> {
    s: &'a Session,
    opts: &'a Options,
    assets: &'a Path,
    consumer: &'a Path,
    state: &'a Path,
    here: PathBuf,
}

impl Shop<'_> {
    fn terraform(&self) -> Result {
        let rc = self.state.join("terraformrc");
        let config = Cmd::new(self.s.path("scripts/tf-cli-config")).read()?;
        std::fs::write(&rc, config).map_err(|e| format!("cannot write {}: {e}", rc.display()))?;
        let tf = |args: &[&str]| {
            with_test_credentials(self.s.cmd("terraform"))
                .env("GOGC", terraform_gogc())
                .env("TF_IN_AUTOMATION", "1")
                .env("TF_INPUT", "0")
                .env("TF_DATA_DIR", self.state.join("tfdata"))
                .env("TF_CLI_CONFIG_FILE", &rc)
                .arg(format!("-chdir={}", self.here.join("terraform").display()))
                .args(args)
        };
        let plan = self.state.join("plan");
        let tfstate = format!("-state={}", self.state.join("terraform.tfstate").display());
        tf(&["init", "-input=false"]).run_logged(&self.state.join("init.log"), 40)?;
        log("terraform plan: what the outbox module adds");
        tf(&[
            "plan",
            "-input=false",
            &format!("-out={}", plan.display()),
            &tfstate,
        ])
        .args(["-var", &format!("name={}", self.opts.name)])
        .args(["-var", &format!("endpoint={}", self.opts.endpoint)])
        .args(["-var", "architecture=x86_64"])
        .args([
            "-var",
            &format!("outbox_asset_dir={}", self.assets.display()),
        ])
        .args(["-var", &format!("consumer_zip={}", self.consumer.display())])
        .run_logged(&self.state.join("plan.log"), 40)?;
        let shown = tf(&["show", "-json", &plan.display().to_string()]).read()?;
        let planned = planned_module_resources(&shown)?;
        self.compare("terraform.txt", &planned, "terraform plan of module.outbox")?;
        log(&format!("terraform apply (name {})", self.opts.name));
        tf(&["apply", "-input=false", "-auto-approve", &tfstate])
            .arg(&plan)
            .run_logged(&self.state.join("apply.log"), 40)
    }

    fn cdk(&self) -> Result {
        let cdk = self.here.join("cdk");
        log(
            "npm ci (examples/shop/cdk) and the construct from its package (npm pack of infra/cdk)",
        );
        npm_ci(&cdk)?;
        let packed = Cmd::new(self.s.path("infra/cdk/pack"))
            .arg(self.state)
            .read()?;
        let tarball = packed.lines().last().unwrap_or_default().trim().to_owned();
        Cmd::new("npm")
            .dir(&cdk)
            .args([
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .arg(&tarball)
            .run()?;
        let out = self.state.join("cdk.out");
        let context = [
            format!("name={}", self.opts.name),
            format!("outboxAssets={}", self.assets.display()),
            format!("consumerZip={}", self.consumer.display()),
            "architecture=x86_64".to_owned(),
        ];
        let npx = |args: &[&str]| {
            with_test_credentials(self.s.cmd("npx"))
                .dir(&cdk)
                .env("AWS_ENDPOINT_URL", &self.opts.endpoint)
                .env("CDK_DEFAULT_ACCOUNT", "000000000000")
                .env("CDK_DEFAULT_REGION", "us-east-1")
                .env("CDK_DISABLE_CLI_TELEMETRY", "true")
                .args(args)
        };
        log("cdk synth: what the Outbox construct adds");
        npx(&["--no-install", "tsc", "--noEmit", "-p", "."])
            .run()
            .map_err(|e| {
                format!("shop: the CDK app does not type-check against the construct's types: {e}")
            })?;
        let with_context = |cmd: Cmd| {
            context
                .iter()
                .fold(cmd, |cmd, c| cmd.args(["-c", c.as_str()]))
        };
        let out_arg = out.display().to_string();
        with_context(npx(&["cdk", "synth", "--quiet", "--output", &out_arg]))
            .run_logged(&self.state.join("synth.log"), 40)?;
        let template = std::fs::read_to_string(out.join("Shop.template.json"))
            .map_err(|e| format!("cannot read the shop's template: {e}"))?;
        let planned = stack_resources(&template)?;
        self.compare("cdk.txt", &planned, "cdk synth of the shop's stack")?;
        log(&format!("cdk deploy (name {})", self.opts.name));
        with_context(npx(&[
            "cdk",
            "bootstrap",
            "aws://000000000000/us-east-1",
            "--output",
            &out_arg,
        ]))
        .run_logged(&self.state.join("bootstrap.log"), 40)?;
        npx(&[
            "cdk",
            "deploy",
            "--require-approval",
            "never",
            "--app",
            &out_arg,
        ])
        .run_logged(&self.state.join("deploy.log"), 40)
    }

    /// Fails, showing the difference, unless `planned` is `expected`'s list.
    fn compare(&self, expected: &str, planned: &[String], what: &str) -> Result {
        let path = self.here.join("expected-resources").join(expected);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let diff = difference(&text, planned);
        if !diff.is_empty() {
            return Err(format!(
                "shop: {what} differs from {expected} (- expected, + planned). The outbox must add only what a user asked for:\n{}",
                diff.join("\n")
            ));
        }
        log(&format!("{what}: {} resources, as expected", planned.len()));
        Ok(())
    }
}

/// The lines of `expected` (one resource a line) that `planned` lacks, as `- line`,
/// then those `planned` adds, as `+ line`.
fn difference(expected: &str, planned: &[String]) -> Vec<String> {
    let want: Vec<&str> = expected.lines().filter(|l| !l.is_empty()).collect();
    let missing = want.iter().filter(|w| !planned.iter().any(|p| p == *w));
    let extra = planned.iter().filter(|p| !want.contains(&p.as_str()));
    missing
        .map(|m| format!("- {m}"))
        .chain(extra.map(|e| format!("+ {e}")))
        .collect()
}

/// Every resource of `module.outbox` a plan (`terraform show -json`) keeps or creates,
/// sorted: a rerun on existing state plans no-ops, which count the same.
fn planned_module_resources(plan_json: &str) -> Result<Vec<String>> {
    let plan: serde_json::Value =
        serde_json::from_str(plan_json).map_err(|e| format!("terraform show -json: {e}"))?;
    let mut found: Vec<String> = plan["resource_changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["change"]["actions"] != serde_json::json!(["delete"]))
        .filter_map(|r| r["address"].as_str())
        .filter(|a| a.starts_with("module.outbox."))
        .map(str::to_owned)
        .collect();
    found.sort();
    Ok(found)
}

/// Every resource of a synthesized stack, the shop's own included (a construct may add
/// resources at the stack's root): `<Type> <construct path>`, sorted.
fn stack_resources(template_json: &str) -> Result<Vec<String>> {
    let template: serde_json::Value =
        serde_json::from_str(template_json).map_err(|e| format!("the shop's template: {e}"))?;
    let mut found: Vec<String> = template["Resources"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(logical, r)| {
            let path = r["Metadata"]["aws:cdk:path"].as_str().unwrap_or(logical);
            format!("{} {path}", r["Type"].as_str().unwrap_or_default())
        })
        .collect();
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_lists_the_modules_resources_it_keeps_or_creates_sorted() {
        let plan = r#"{"resource_changes":[
            {"address":"module.outbox.aws_sqs_queue.b","change":{"actions":["create"]}},
            {"address":"module.outbox.aws_sqs_queue.a","change":{"actions":["no-op"]}},
            {"address":"module.outbox.aws_sqs_queue.gone","change":{"actions":["delete"]}},
            {"address":"aws_dynamodb_table.shop","change":{"actions":["create"]}}]}"#;
        assert_eq!(
            planned_module_resources(plan).unwrap(),
            [
                "module.outbox.aws_sqs_queue.a",
                "module.outbox.aws_sqs_queue.b"
            ]
        );
        assert!(planned_module_resources("not json").is_err());
    }

    #[test]
    fn a_resource_missing_or_added_is_a_difference_and_the_same_list_is_none() {
        let planned = vec!["a".to_owned(), "c".to_owned()];
        assert_eq!(difference("a\nb\n", &planned), ["- b", "+ c"]);
        assert!(difference("a\nc\n", &planned).is_empty());
    }

    #[test]
    fn a_template_lists_each_resource_by_type_and_construct_path() {
        let template = r#"{"Resources":{
            "Q1":{"Type":"AWS::SQS::Queue","Metadata":{"aws:cdk:path":"Shop/Outbox/Dlq"}},
            "Root":{"Type":"AWS::IAM::Role"}}}"#;
        assert_eq!(
            stack_resources(template).unwrap(),
            ["AWS::IAM::Role Root", "AWS::SQS::Queue Shop/Outbox/Dlq"]
        );
    }
}
