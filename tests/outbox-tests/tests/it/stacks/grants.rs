//! The stacks' grants, enforced: the local AWS checks IAM on every call
//! (`scripts/emulator`), so a grant a function needs and its stack left out fails here
//! as it would on AWS. This test proves the enforcement bites: the publisher's role as
//! each stack deployed it, with one grant taken out, makes the publisher fail naming
//! the denied action; the same role whole makes it publish.
//!
//! The copy runs beside the stack, not in it: the same packaged publisher, the stack's
//! environment and the stack's policy documents (read back from IAM), pointed at a
//! table and queues of this test's own, so the stack's mapping, consumer and the other
//! tests never see its messages.

use super::each_stack;
use aws_sdk_lambda::primitives::Blob;
use dynamodb_outbox::NewMessage;
use outbox_devkit::aws::Clients;
use outbox_devkit::deployment::{Deployment, emf_sum, function_logs, log_records};
use outbox_devkit::provision;
use outbox_tests::pipeline::{create_function_as, lambda_dir};
use outbox_tests::{Outbox, drain, s, unique};
use serde_json::{Value, json};

/// The grants taken out, one at a time: the status read before publishing, the send,
/// and the batched `SENT` mark (whose per-item fallback must not hide the denial).
/// What the functions log when AWS denies a call (`sdk_error::report_denied`).
const DENIAL_MESSAGE: &str = "AWS denied a call: the function's role lacks this action (docs/iam.md lists each role's grants)";

const REMOVED: &[&str] = &[
    "dynamodb:BatchGetItem",
    "sqs:SendMessage",
    "dynamodb:PartiQLUpdate",
];

#[tokio::test(flavor = "multi_thread")]
async fn each_stacks_publisher_fails_naming_the_one_grant_taken_from_its_role() {
    assert_ne!(
        std::env::var("OUTBOX_EMULATOR_IAM").as_deref(),
        Ok("off"),
        "this test needs the local AWS to check IAM (scripts/emulator's default)"
    );
    for (tool, c, d) in each_stack().await {
        let config = c
            .lambda
            .get_function_configuration()
            .function_name(&d.publisher)
            .send()
            .await
            .expect("the publisher's configuration");
        let statements = role_statements(&c, config.role().unwrap_or_default()).await;
        let mut ob = Outbox::new().await;
        let statements = retarget(&statements, &d, &ob).await;
        let env = copy_env(&config, &ob);

        // The whole role: the message is published and marked SENT.
        let outcome = run_copy(&mut ob, &format!("{tool}-whole"), &statements, &env, None).await;
        assert_eq!(outcome.failures, 0, "{tool}, the whole role: {outcome:?}");
        assert_eq!(outcome.sent, 1, "{tool}, the whole role: {outcome:?}");
        assert_eq!(
            outcome.status.as_deref(),
            Some("SENT"),
            "{tool}: {outcome:?}"
        );
        assert!(
            outcome.denied.is_empty(),
            "{tool}, the whole role: {outcome:?}"
        );

        for &action in REMOVED {
            let outcome = run_copy(&mut ob, &tool, &statements, &env, Some(action)).await;
            eprintln!("{tool} without {action}: {outcome:?}");
            assert!(
                outcome.denied.iter().any(|a| a == action),
                "{tool} without {action}: the publisher's log names no denial of it: {outcome:?}"
            );
            assert!(
                outcome.access_denied_metric > 0.0,
                "{tool} without {action}: no AccessDenied metric: {outcome:?}"
            );
        }
    }
}

/// What one invocation of a copy did.
#[derive(Debug)]
struct Outcome {
    /// Records it reported for retry.
    failures: usize,
    /// Messages on the test's queue afterwards.
    sent: usize,
    /// The message's status afterwards.
    status: Option<String>,
    /// The actions its log says AWS denied.
    denied: Vec<String>,
    /// The sum of the `AccessDenied` metric it printed.
    access_denied_metric: f64,
}

/// Deploys a copy of the publisher whose role holds `statements` less `removed`,
/// commits one message, hands the copy its stream record and reports what happened.
async fn run_copy(
    ob: &mut Outbox,
    label: &str,
    statements: &[Value],
    env: &[(String, String)],
    removed: Option<&str>,
) -> Outcome {
    let name = unique(&format!("grants-{label}"));
    let kept: Vec<Value> = match removed {
        Some(action) => without(statements, action),
        None => statements.to_vec(),
    };
    let policy = json!({ "Version": "2012-10-17", "Statement": kept });
    let role = provision::function_role(&ob.clients.iam, &name, &policy)
        .await
        .expect("the copy's role");
    let dir = lambda_dir().join("outbox-publisher");
    create_function_as(ob, &name, &dir, env.to_vec(), &role).await;

    let committed = ob
        .writer()
        .commit(
            vec![],
            &[NewMessage::new("GRANTS#1", "orders", r#"{"n":1}"#)],
        )
        .await
        .expect("commit");
    let (pk, sk) = ("GRANTS#1", committed.sort_keys[0].clone());
    let event = ob.filtered_event().await;
    assert_eq!(
        event.records.len(),
        1,
        "the committed message's stream record"
    );
    let since_ms = dynamodb_outbox_core::clock::now_ms() - 1000;
    let out = ob
        .clients
        .lambda
        .invoke()
        .function_name(&name)
        .payload(Blob::new(serde_json::to_vec(&event).expect("event JSON")))
        .send()
        .await
        .expect("invoke the copy");
    let body: Value = out
        .payload()
        .and_then(|p| serde_json::from_slice(p.as_ref()).ok())
        .unwrap_or(Value::Null);
    let failures = body["batchItemFailures"].as_array().map_or(0, Vec::len);
    let sent = drain(&ob.clients.sqs, &ob.queue.url).await.len();
    let status = ob.item(pk, &sk).await.and_then(|i| s(&i, "Status"));
    let lines = function_logs(&ob.clients, &name, since_ms)
        .await
        .expect("the copy's log");
    let denied = log_records(&lines, DENIAL_MESSAGE)
        .iter()
        .filter_map(|f| f["action"].as_str().map(str::to_owned))
        .collect();
    let access_denied_metric = emf_sum(&lines, "AccessDenied");
    Outcome {
        failures,
        sent,
        status,
        denied,
        access_denied_metric,
    }
}

/// Every statement of the role `role` (an ARN): its inline policies and the managed
/// policies attached to it.
async fn role_statements(c: &Clients, role: &str) -> Vec<Value> {
    let role_name = role.rsplit('/').next().unwrap_or_default().to_owned();
    let mut documents = Vec::new();
    let inline = c
        .iam
        .list_role_policies()
        .role_name(&role_name)
        .send()
        .await
        .expect("the role's inline policies");
    for policy in inline.policy_names() {
        let got = c
            .iam
            .get_role_policy()
            .role_name(&role_name)
            .policy_name(policy)
            .send()
            .await
            .expect("an inline policy");
        documents.push(got.policy_document().to_owned());
    }
    let attached = c
        .iam
        .list_attached_role_policies()
        .role_name(&role_name)
        .send()
        .await
        .expect("the role's attached policies");
    for policy in attached.attached_policies() {
        let arn = policy.policy_arn().unwrap_or_default();
        let meta = c
            .iam
            .get_policy()
            .policy_arn(arn)
            .send()
            .await
            .expect("policy");
        let version = meta
            .policy()
            .and_then(|p| p.default_version_id())
            .unwrap_or("v1");
        let got = c
            .iam
            .get_policy_version()
            .policy_arn(arn)
            .version_id(version)
            .send()
            .await
            .expect("a policy version");
        if let Some(doc) = got.policy_version().and_then(|v| v.document()) {
            documents.push(doc.to_owned());
        }
    }
    let mut statements = Vec::new();
    for doc in documents {
        // IAM answers policy documents URL-encoded.
        let text = urlencoding_decode(&doc);
        let parsed: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("role {role}: a policy is not JSON: {e}: {text}"));
        match &parsed["Statement"] {
            Value::Array(list) => statements.extend(list.iter().cloned()),
            single @ Value::Object(_) => statements.push(single.clone()),
            _ => {}
        }
    }
    assert!(!statements.is_empty(), "role {role} has no statements");
    statements
}

/// IAM answers policy documents URL-encoded (a document that is already JSON passes
/// unchanged).
fn urlencoding_decode(text: &str) -> String {
    if text.trim_start().starts_with('{') {
        return text.to_owned();
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// `statements` with `action` taken out of every statement that grants it; a statement
/// left with no action goes. Fails when no statement grants it by name.
fn without(statements: &[Value], action: &str) -> Vec<Value> {
    let mut found = false;
    let mut kept = Vec::new();
    for statement in statements {
        let mut statement = statement.clone();
        let actions: Vec<Value> = match &statement["Action"] {
            Value::String(a) => vec![Value::String(a.clone())],
            Value::Array(list) => list.clone(),
            _ => Vec::new(),
        };
        let left: Vec<Value> = actions
            .into_iter()
            .filter(|a| {
                let hit = a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(action));
                found |= hit;
                !hit
            })
            .collect();
        if left.is_empty() && statement.get("Action").is_some() {
            continue;
        }
        if statement.get("Action").is_some() {
            statement["Action"] = Value::Array(left);
        }
        kept.push(statement);
    }
    assert!(
        found,
        "no statement of the publisher's role grants {action} by name"
    );
    kept
}

/// The stack's statements pointed at this test's table and queues instead of the
/// stack's: the table's name and the `orders` route's and dead-letter queue's ARNs.
async fn retarget(statements: &[Value], d: &Deployment, ob: &Outbox) -> Vec<Value> {
    let queue_arn = |url: &str| {
        let name = url.rsplit('/').next().unwrap_or_default().to_owned();
        format!("arn:aws:sqs:us-east-1:000000000000:{name}")
    };
    // A route is a URL, or an object naming it as its `destination`.
    let orders = match d.routes.get("orders") {
        Some(Value::String(url)) => url.as_str(),
        Some(route) => route["destination"].as_str().unwrap_or_default(),
        None => "",
    };
    assert!(
        !orders.is_empty(),
        "the stack routes no `orders` topic: {:?}",
        d.routes
    );
    let replacements = [
        (format!("table/{}", d.table), format!("table/{}", ob.table)),
        (queue_arn(orders), queue_arn(&ob.queue.url)),
        (queue_arn(&d.dlq_url), queue_arn(&ob.dlq_url)),
    ];
    let mut text = Value::Array(statements.to_vec()).to_string();
    for (from, to) in &replacements {
        assert!(
            text.contains(&format!("{from}\"")) || text.contains(&format!("{from}/")),
            "the publisher's role names no {from}: {text}"
        );
        // A quote or a slash after the name: `table/t` must not also match `table/t2`.
        for end in ['"', '/'] {
            text = text.replace(&format!("{from}{end}"), &format!("{to}{end}"));
        }
    }
    serde_json::from_str::<Vec<Value>>(&text).expect("statements")
}

/// The stack's publisher's environment (from its `config`), with this test's table,
/// route and dead-letter queue.
fn copy_env(
    config: &aws_sdk_lambda::operation::get_function_configuration::GetFunctionConfigurationOutput,
    ob: &Outbox,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = config
        .environment()
        .and_then(|e| e.variables())
        .map(|v| v.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    env.retain(|(k, _)| {
        !matches!(
            k.as_str(),
            "OUTBOX_TABLE_NAME" | "OUTBOX_ROUTES" | "OUTBOX_DLQ_URL"
        )
    });
    env.push(("OUTBOX_TABLE_NAME".into(), ob.table.clone()));
    env.push((
        "OUTBOX_ROUTES".into(),
        json!({ "orders": ob.queue.url }).to_string(),
    ));
    env.push(("OUTBOX_DLQ_URL".into(), ob.dlq_url.clone()));
    env
}
