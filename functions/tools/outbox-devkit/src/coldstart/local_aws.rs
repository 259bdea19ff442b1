//! The local AWS the measured functions call: a deployed stack's resources, or ones
//! made for the bench, and each function's environment at them.

use crate::aws::Clients;
use crate::{deployment, provision};
use aws_smithy_types::error::display::DisplayErrorContext;
use std::collections::BTreeMap;

/// The functions a deployment runs, as `scripts/package` lays them out.
pub const FUNCTIONS: [&str; 4] = [
    "outbox-publisher",
    "outbox-sweeper",
    "outbox-recovery",
    "orders-consumer",
];

/// The local AWS the functions call, and each function's own configuration there.
#[derive(Debug, Clone, Default)]
pub struct LocalAws {
    /// Its endpoint (`AWS_ENDPOINT_URL`).
    pub endpoint: String,
    /// Whose resources the functions use, in words, for the report.
    pub resources: String,
    /// Function (as [`FUNCTIONS`] names it) → its variables: table, routes, queues.
    pub variables: BTreeMap<String, BTreeMap<String, String>>,
    /// Tables made for the bench, removed by [`LocalAws::remove_made`].
    pub made_tables: Vec<String>,
    /// Queues made for the bench (URLs), removed likewise.
    pub made_queues: Vec<String>,
}

/// The deployed name of a function of [`FUNCTIONS`] (`outbox-publisher` →
/// `<prefix>-publisher`, `orders-consumer` → `<prefix>-orders-consumer`).
pub fn deployed_name(prefix: &str, function: &str) -> String {
    format!(
        "{prefix}-{}",
        function.strip_prefix("outbox-").unwrap_or(function)
    )
}

/// The configuration of every function of the stack deployed with `prefix` on the local
/// AWS at `endpoint`, as deployed: its table, routes and queues.
pub async fn deployed(clients: &Clients, endpoint: &str, prefix: &str) -> Result<LocalAws, String> {
    let mut variables = BTreeMap::new();
    for function in FUNCTIONS {
        let mut env = deployment::environment(clients, &deployed_name(prefix, function))
            .await
            .map_err(|e| format!("reading deployment `{prefix}` on {endpoint}: {e}"))?;
        // Only a debug build reads it; a release build has no fault injection.
        env.remove("OUTBOX_FAULTS");
        variables.insert(function.to_owned(), env);
    }
    Ok(LocalAws {
        endpoint: endpoint.to_owned(),
        resources: format!("the table and queues of deployment `{prefix}`"),
        variables,
        ..LocalAws::default()
    })
}

/// A table, an orders table and two queues made on the local AWS at `endpoint` for the
/// bench (when no stack is deployed there), and every function's configuration at them.
pub async fn provisioned(clients: &Clients, endpoint: &str) -> Result<LocalAws, String> {
    let id = format!("coldstart-{:08x}", fastrand::u32(..));
    let (table, orders) = (format!("{id}-table"), format!("{id}-orders"));
    let mut aws = LocalAws {
        endpoint: endpoint.to_owned(),
        resources: format!("table {table}, its queues and {orders}, made for the bench"),
        ..LocalAws::default()
    };
    let made = async {
        provision::create_outbox_table(&clients.dynamodb, &table).await?;
        aws.made_tables.push(table.clone());
        provision::create_keyed_table(&clients.dynamodb, &orders, "id").await?;
        aws.made_tables.push(orders.clone());
        let queue =
            provision::create_queue(&clients.sqs, &format!("{id}-orders-queue"), 30).await?;
        aws.made_queues.push(queue.clone());
        let dlq = provision::create_queue(&clients.sqs, &format!("{id}-dlq"), 30).await?;
        aws.made_queues.push(dlq.clone());
        Ok::<_, provision::ProvisionError>((queue, dlq))
    }
    .await;
    let (queue, dlq) = match made {
        Ok(urls) => urls,
        Err(e) => {
            aws.remove_made(clients).await;
            return Err(format!("making a table and queues on {endpoint}: {e}"));
        }
    };
    let vars = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>()
    };
    let routes = serde_json::json!({ "orders": queue }).to_string();
    let outbox = vars(&[
        ("OUTBOX_TABLE_NAME", &table),
        ("OUTBOX_ROUTES", &routes),
        ("OUTBOX_DLQ_URL", &dlq),
        ("OUTBOX_DEPLOYMENT", &id),
    ]);
    aws.variables = BTreeMap::from([
        ("outbox-publisher".to_owned(), outbox.clone()),
        ("outbox-sweeper".to_owned(), outbox),
        (
            "outbox-recovery".to_owned(),
            vars(&[("OUTBOX_TABLE_NAME", &table), ("OUTBOX_DEPLOYMENT", &id)]),
        ),
        (
            "orders-consumer".to_owned(),
            vars(&[("ORDERS_TABLE_NAME", &orders), ("OUTBOX_DEPLOYMENT", &id)]),
        ),
    ]);
    Ok(aws)
}

impl LocalAws {
    /// Removes what [`provisioned`] made (best effort: a failure is printed).
    pub async fn remove_made(&self, clients: &Clients) {
        for table in &self.made_tables {
            if let Err(e) = clients
                .dynamodb
                .delete_table()
                .table_name(table)
                .send()
                .await
            {
                eprintln!(
                    "bench coldstart: removing table {table}: {}",
                    DisplayErrorContext(&e)
                );
            }
        }
        for url in &self.made_queues {
            if let Err(e) = clients.sqs.delete_queue().queue_url(url).send().await {
                eprintln!(
                    "bench coldstart: removing queue {url}: {}",
                    DisplayErrorContext(&e)
                );
            }
        }
    }
}

/// The environment `name` starts with: what Lambda sets, the function's own variables
/// at the local AWS (its table, routes, queues), and that local AWS — its endpoint,
/// test credentials, region us-east-1 — over anything else.
pub fn function_env(name: &str, aws: &LocalAws) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = [
        ("AWS_LAMBDA_FUNCTION_NAME", name),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    if let Some(own) = aws.variables.get(name) {
        env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    env.extend(
        [
            ("AWS_ENDPOINT_URL", aws.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    // The local AWS may serve TLS with its own certificate (`scripts/emulator trust`).
    env.extend(crate::runtime_api::trust_env());
    env.remove("AWS_SESSION_TOKEN");
    env.remove("AWS_PROFILE");
    env.into_iter().collect()
}
