//! `cargo xtask shop terraform|cdk` (`examples/shop/deploy-local`): deploys the
//! adoption example — with its Terraform root or its CDK app — into the local AWS,
//! checking first that the outbox adds only the outbox: the resources the module plans
//! (or the stack synthesizes) are compared with `examples/shop/expected-resources/`,
//! and any difference fails the deployment before anything is applied.
//!
//! It deploys the shop as a user outside this repository would (issue 39): the
//! Terraform root sources the module by its absolute path (a module reaching outside
//! its folder fails `terraform init`), and first, a wrong partition key name (`PK`, the
//! default, on the table keyed `pk`) must fail the plan and the synthesis, naming the
//! setting and the table's key. The shop's deployed test then forces that name onto
//! the deployed publisher (examples/shop/tests/deployed.rs).
//!
//! Every function it deploys is its own binary ([`BINARIES`]: its consumer and its mains
//! of the outbox's functions), built here (debug, for the local AWS) or taken from
//! `--built` (the test suite builds them beside its tests). State lives in
//! `SHOP_DEPLOY_STATE` (default `target/shop-deploy`), per tool and name.

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
    /// A directory holding the shop's functions already built, one executable per
    /// name of [`BINARIES`] (default: built here, debug).
    #[arg(long)]
    pub built: Option<PathBuf>,
}

/// The shop's Lambda functions, each its own binary (examples/shop/src/bin).
pub const BINARIES: [&str; 4] = [
    "shop-consumer",
    "shop-publisher",
    "shop-sweeper",
    "shop-recovery",
];

/// Deploys the shop after checking what the outbox adds to it.
pub fn deploy(s: &Session, opts: &Options) -> Result {
    if !is_loopback(&opts.endpoint) {
        return Err(format!(
            "shop: --endpoint must be a local AWS on loopback (got {:?})",
            opts.endpoint
        ));
    }
    let tool = match opts.tool {
        Tool::Terraform => "terraform",
        Tool::Cdk => "cdk",
    };
    let base = std::env::var_os("SHOP_DEPLOY_STATE")
        .map_or_else(|| s.target.join("shop-deploy"), PathBuf::from);
    let state = base.join(format!("{tool}-{}", opts.name));
    std::fs::create_dir_all(&state)
        .map_err(|e| format!("cannot create {}: {e}", state.display()))?;
    let lambda_dir = function_zips(s, opts.built.as_deref(), &state)?;
    let job = Shop {
        s,
        opts,
        lambda_dir: &lambda_dir,
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

/// The shop's functions zipped as cargo lambda lays them out, `<bin>/bootstrap.zip`, in
/// the deployment's own directory (two deployments may run at once), from `built` or
/// from a debug build made here.
fn function_zips(s: &Session, built: Option<&Path>, state: &Path) -> Result<PathBuf> {
    let built = match built {
        Some(dir) => dir.to_owned(),
        None => {
            log("build the shop's functions (debug)");
            crate::package::build_workspace_binaries(s, &BINARIES)?
        }
    };
    crate::package::lay_out_built(&BINARIES, &built, &state.join("lambda"))
        .map_err(|e| format!("shop: {e}"))
}

struct Shop<'a> {
    s: &'a Session,
    opts: &'a Options,
    /// The shop's functions, `<bin>/bootstrap.zip`.
    lambda_dir: &'a Path,
    state: &'a Path,
    here: PathBuf,
}

impl Shop<'_> {
    fn terraform(&self) -> Result {
        let rc = self.state.join("terraformrc");
        let config = Cmd::new(self.s.path("scripts/tf-cli-config")).read()?;
        std::fs::write(&rc, config).map_err(|e| format!("cannot write {}: {e}", rc.display()))?;
        let root = self.root_sourcing_the_module_by_absolute_path()?;
        let tf = |dir: &Path, args: &[&str]| {
            with_test_credentials(self.s.cmd("terraform"))
                .env("GOGC", terraform_gogc())
                .env("TF_IN_AUTOMATION", "1")
                .env("TF_INPUT", "0")
                .env("TF_DATA_DIR", self.state.join("tfdata"))
                .env("TF_CLI_CONFIG_FILE", &rc)
                .arg(format!("-chdir={}", dir.display()))
                .args(args)
        };
        let vars = |cmd: Cmd| {
            cmd.args(["-var", &format!("name={}", self.opts.name)])
                .args(["-var", &format!("endpoint={}", self.opts.endpoint)])
                .args(["-var", "architecture=x86_64"])
                .args(["-var", &format!("lambda_dir={}", self.lambda_dir.display())])
        };
        let plan = self.state.join("plan");
        let tfstate = format!("-state={}", self.state.join("terraform.tfstate").display());
        tf(&root, &["init", "-input=false"]).run_logged(&self.state.join("init.log"), 40)?;
        log(&format!(
            "terraform plan with partition_key_name = \"{WRONG_PARTITION_KEY}\": the module must refuse it"
        ));
        let wrong = self.root_with_a_wrong_key_name(&root)?;
        // An empty state of its own: everything planned as new, nothing read back.
        let empty = format!("-state={}", self.state.join("wrong-key.tfstate").display());
        let refusal = self.state.join("plan-wrong-key.log");
        let planned_anyway = vars(tf(&wrong, &["plan", "-input=false", "-no-color", &empty]))
            .spawn_logged("terraform plan (wrong key name)", &refusal)?
            .wait(0)
            .is_ok();
        let said = std::fs::read_to_string(&refusal)
            .map_err(|e| format!("cannot read {}: {e}", refusal.display()))?;
        if planned_anyway || !refused_for_the_key_name(&said) {
            return Err(format!(
                "shop: partition_key_name = \"{WRONG_PARTITION_KEY}\" on a table keyed `pk` must fail the plan, naming the setting and the table's key ({}):\n{}",
                refusal.display(),
                crate::process::tail_of(&refusal, 30)
            ));
        }
        log("terraform plan: what the outbox module adds");
        vars(tf(
            &root,
            &[
                "plan",
                "-input=false",
                &format!("-out={}", plan.display()),
                &tfstate,
            ],
        ))
        .run_logged(&self.state.join("plan.log"), 40)?;
        let shown = tf(&root, &["show", "-json", &plan.display().to_string()]).read()?;
        let planned = planned_module_resources(&shown)?;
        self.compare("terraform.txt", &planned, "terraform plan of module.outbox")?;
        log(&format!("terraform apply (name {})", self.opts.name));
        tf(&root, &["apply", "-input=false", "-auto-approve", &tfstate])
            .arg(&plan)
            .run_logged(&self.state.join("apply.log"), 40)
    }

    /// A copy of `root` (initialised: its lock file is copied too) whose module call
    /// says `partition_key_name = "PK"` — the default, what a user who forgot the
    /// setting deploys with — on the table keyed `pk`.
    fn root_with_a_wrong_key_name(&self, root: &Path) -> Result<PathBuf> {
        let wrong = self.state.join("root-wrong-key");
        let found = copy_root_rewritten(root, &wrong, with_wrong_key_name)?;
        if found != 1 {
            return Err(format!(
                "shop: expected one `{KEY_SETTING}` in examples/shop/terraform, found {found}: the wrong-key plan replaces it"
            ));
        }
        Ok(wrong)
    }

    /// The shop's root as a user outside this repository has it: a copy, in the
    /// deployment's directory, whose module `source` is the module's absolute path
    /// (Terraform's `source` is a literal, so the root in examples/ keeps a relative
    /// one). An absolute source is installed as a package of its own, so a module that
    /// reaches outside its folder fails `terraform init` here ("Local module path
    /// escapes module package") as it would for them (issue 39).
    fn root_sourcing_the_module_by_absolute_path(&self) -> Result<PathBuf> {
        let module = self
            .s
            .path("infra/terraform/modules/outbox")
            .canonicalize()
            .map_err(|e| format!("shop: the outbox module's folder: {e}"))?;
        let from = self.here.join("terraform");
        let root = self.state.join("root");
        let module_path = module.display().to_string();
        let sources =
            copy_root_rewritten(&from, &root, |text| with_module_source(text, &module_path))?;
        if sources != 1 {
            return Err(format!(
                "shop: expected one `source = \"{MODULE_SOURCE}\"` in {}, found {sources}: the deployment sources the module by absolute path in its place",
                from.display()
            ));
        }
        log(&format!(
            "terraform root with the module sourced from {}",
            module.display()
        ));
        Ok(root)
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
            format!("lambdaDir={}", self.lambda_dir.display()),
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
        self.wrong_key_name_fails_synth(&cdk, &context)?;
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
        // From the assembly just synthesized: `cdk bootstrap` would run the app again
        // (it does for a named environment too, aws/aws-cdk#31255).
        npx(&[
            "cdk",
            "bootstrap",
            "aws://000000000000/us-east-1",
            "--app",
            &out_arg,
        ])
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

    /// The app run with `keyNames.partitionKey` "PK" on its table keyed `pk` must fail
    /// its synthesis, the construct's validation naming the setting and the table's
    /// key. A copy of app.ts in the deployment's directory, run as `cdk synth` runs it
    /// (tsx, the context given as the CLI gives it) but without the CLI: one process.
    fn wrong_key_name_fails_synth(&self, cdk: &Path, context: &[String]) -> Result {
        log(&format!(
            "cdk app with keyNames.partitionKey '{WRONG_PARTITION_KEY}': the construct must refuse it at synth"
        ));
        let dir = self.state.join("cdk-wrong-key");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let app = cdk.join("app.ts");
        let text = std::fs::read_to_string(&app)
            .map_err(|e| format!("cannot read {}: {e}", app.display()))?;
        let wrong = format!("keyNames: {{ partitionKey: '{WRONG_PARTITION_KEY}',");
        if text.matches(CDK_KEY_SETTING).count() != 1 {
            return Err(format!(
                "shop: expected one `{CDK_KEY_SETTING}` in {}: the wrong-key synth replaces it",
                app.display()
            ));
        }
        let copy = dir.join("app.ts");
        std::fs::write(&copy, text.replace(CDK_KEY_SETTING, &wrong))
            .map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
        let context: serde_json::Map<String, serde_json::Value> = context
            .iter()
            .filter_map(|c| c.split_once('='))
            .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v.to_owned())))
            .collect();
        let log_path = dir.join("synth.log");
        // The copy is outside the app's folder: its packages are found by NODE_PATH.
        let synthesized = Cmd::new("npx")
            .dir(cdk)
            .env("NODE_PATH", cdk.join("node_modules"))
            .env(
                "CDK_CONTEXT_JSON",
                serde_json::Value::Object(context).to_string(),
            )
            .env("CDK_OUTDIR", dir.join("cdk.out"))
            .env("CDK_DISABLE_CLI_TELEMETRY", "true")
            .args(["--no-install", "tsx"])
            .arg(&copy)
            .spawn_logged("the shop's CDK app (wrong key name)", &log_path)?
            .wait(0)
            .is_ok();
        let said = std::fs::read_to_string(&log_path)
            .map_err(|e| format!("cannot read {}: {e}", log_path.display()))?;
        let refusal = format!(
            "does not match keyNames.partitionKey: configured \"{WRONG_PARTITION_KEY}\", the table's partition key is \"pk\""
        );
        if synthesized || !said.contains(&refusal) {
            return Err(format!(
                "shop: keyNames.partitionKey '{WRONG_PARTITION_KEY}' on a table keyed `pk` must fail the synthesis with `{refusal}` ({}):\n{}",
                log_path.display(),
                crate::process::tail_of(&log_path, 30)
            ));
        }
        Ok(())
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

/// Copies the Terraform root `from` into `to`, emptied first (a file removed from the
/// root since the last run must not stay in the copy): its `*.tf` files and, once
/// initialised, its lock file, each text passed through `edit`, which returns it
/// changed and how many replacements it made. Returns their total. The root's tests
/// (tests/*.tftest.hcl) are not deployed, so not copied.
fn copy_root_rewritten(
    from: &Path,
    to: &Path,
    edit: impl Fn(&str) -> (String, usize),
) -> Result<usize> {
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| format!("cannot remove {}: {e}", to.display()))?;
    }
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let mut found = 0;
    for entry in
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?
    {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", from.display()))?
            .path();
        let name = path.file_name().unwrap_or_default();
        let of_the_root = path.extension().is_some_and(|e| e == "tf") || name == LOCK_FILE;
        if !path.is_file() || !of_the_root {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let (text, here) = edit(&text);
        found += here;
        let copy = to.join(name);
        std::fs::write(&copy, text).map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
    }
    Ok(found)
}

/// Terraform's dependency lock file, which `terraform init` writes in the root.
const LOCK_FILE: &str = ".terraform.lock.hcl";

/// The module's `source` in examples/shop/terraform, relative to the repository.
const MODULE_SOURCE: &str = "../../../infra/terraform/modules/outbox";

/// `text` with each `source = "<MODULE_SOURCE>"` made `source = "<module>"`, and how
/// many there were.
fn with_module_source(text: &str, module: &str) -> (String, usize) {
    let relative = format!("source = \"{MODULE_SOURCE}\"");
    let found = text.matches(&relative).count();
    (
        text.replace(&relative, &format!("source = \"{module}\"")),
        found,
    )
}

/// The shop root's partition key setting, which the wrong-key plan replaces.
const KEY_SETTING: &str = "partition_key_name = local.keys.partition";
/// The shop app's key names given to the construct, whose partition key the
/// wrong-key synthesis replaces.
const CDK_KEY_SETTING: &str = "keyNames: { partitionKey: 'pk',";
/// The deliberately wrong partition key name: the module's default.
const WRONG_PARTITION_KEY: &str = "PK";

/// `text` with [`KEY_SETTING`] giving [`WRONG_PARTITION_KEY`], and how many there were.
fn with_wrong_key_name(text: &str) -> (String, usize) {
    (
        text.replace(
            KEY_SETTING,
            &format!("partition_key_name = \"{WRONG_PARTITION_KEY}\""),
        ),
        text.matches(KEY_SETTING).count(),
    )
}

/// Whether a plan's output is the module's refusal of the wrong partition key name:
/// the setting, the configured name and the table's, in Terraform's wrapped box.
fn refused_for_the_key_name(output: &str) -> bool {
    let flat = output
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    flat.contains(&format!(
        "does not match partition_key_name: configured \"{WRONG_PARTITION_KEY}\", the table's partition key (hash_key) is \"pk\""
    ))
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
    fn the_module_source_becomes_the_absolute_path_and_is_counted() {
        let root =
            "module \"outbox\" {\n  source = \"../../../infra/terraform/modules/outbox\"\n}\n";
        let (text, found) = with_module_source(root, "/repo/infra/terraform/modules/outbox");
        assert_eq!(found, 1);
        assert_eq!(
            text,
            "module \"outbox\" {\n  source = \"/repo/infra/terraform/modules/outbox\"\n}\n"
        );
        assert_eq!(with_module_source("source = \"./other\"", "/x").1, 0);
    }

    #[test]
    fn the_wrong_key_plan_names_pk_and_its_refusal_is_read_through_the_wrapped_box() {
        let (text, found) = with_wrong_key_name("  partition_key_name = local.keys.partition\n");
        assert_eq!(
            (text.as_str(), found),
            ("  partition_key_name = \"PK\"\n", 1)
        );
        let refusal = "│ Error: Resource precondition failed\n│ existing_table \"shop-tf-table\" does not match\n│ partition_key_name: configured \"PK\", the table's partition key (hash_key)\n│ is \"pk\". Set partition_key_name = \"pk\", or attach the outbox table.\n";
        assert!(refused_for_the_key_name(refusal));
        assert!(!refused_for_the_key_name(
            "Error: Invalid value for variable"
        ));
    }

    #[test]
    fn a_root_copy_has_its_terraform_files_and_lock_file_edited_and_counted_and_nothing_else() {
        let base = std::env::temp_dir().join(format!("xtask-shop-copy-{}", std::process::id()));
        let (from, to) = (base.join("from"), base.join("to"));
        std::fs::create_dir_all(from.join("tests")).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        for (name, text) in [
            ("main.tf", "a a"),
            (LOCK_FILE, "a"),
            ("notes.txt", "a"),
            ("tests/t.tftest.hcl", "a"),
        ] {
            std::fs::write(from.join(name), text).unwrap();
        }
        std::fs::write(to.join("removed.tf"), "").unwrap();
        let edit = |text: &str| (text.replace('a', "b"), text.matches('a').count());
        let found = copy_root_rewritten(&from, &to, edit);
        let mut copied: Vec<String> = std::fs::read_dir(&to)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        copied.sort();
        let main = std::fs::read_to_string(to.join("main.tf")).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(found.unwrap(), 3);
        assert_eq!(copied, [LOCK_FILE, "main.tf"]);
        assert_eq!(main, "b b");
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
