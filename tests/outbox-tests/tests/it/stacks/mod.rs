//! Both stacks, applied to the local AWS by `tests/run` (`scripts/deploy-local`), read
//! back from what they created and checked against the README and infra/README.md —
//! then messages run through each.
//!
//! `OUTBOX_STACKS` names the deployments: `terraform:<prefix>,cdk:<prefix>`.

mod alarms;
mod bucket;
mod flows;
mod functions;
mod global_table;
mod grants;
mod mappings;
mod resources;

use aws_sdk_sqs::types::QueueAttributeName;
use outbox_devkit::aws::Clients;
use outbox_devkit::deployment::Deployment;
use outbox_tests::clients;
use outbox_tests::pipeline::require_ministack;
use std::collections::HashMap;

/// The deployments `tests/run` applied.
fn stacks() -> Vec<(String, String)> {
    require_ministack();
    let list = std::env::var("OUTBOX_STACKS").expect(
        "OUTBOX_STACKS is not set: tests/run applies both stacks to MiniStack and names them here (terraform:<prefix>,cdk:<prefix>)",
    );
    list.split(',')
        .filter_map(|s| s.split_once(':'))
        .map(|(tool, prefix)| (tool.to_owned(), prefix.to_owned()))
        .collect()
}

async fn each_stack() -> Vec<(String, Clients, Deployment)> {
    let mut out = Vec::new();
    for (tool, prefix) in stacks() {
        let clients = clients().await;
        let deployment = Deployment::discover(&clients, &prefix)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        out.push((tool, clients, deployment));
    }
    assert_eq!(out.len(), 2, "both stacks: {:?}", stacks());
    out
}

async fn queue_url(c: &Clients, name: &str) -> String {
    c.sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("queue {name}: {e:?}"))
        .queue_url()
        .unwrap()
        .to_owned()
}

async fn queue_attributes(c: &Clients, name: &str) -> HashMap<String, String> {
    let url = queue_url(c, name).await;
    c.sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.as_str().to_owned(), v))
        .collect()
}
