//! The shop as deployed by its own Terraform root and its own CDK app (tests/run
//! applies both to the local AWS and names them in `SHOP_DEPLOYMENTS`,
//! `terraform:<name>,cdk:<name>`): orders placed here are shipped by the consumer,
//! once, and their outbox items end `SENT` with the shop's own TTL attribute; and a
//! publisher told a wrong key name refuses work, leaving the message `PENDING`
//! (the plan and the synth with that name already failed: `cargo xtask shop`).

use dynamodb_outbox::aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use dynamodb_outbox::aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::aws_sdk_dynamodb::{Client, Config};
use shop::{OrderPlaced, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE};
use std::time::{Duration, Instant};

fn deployments() -> Vec<String> {
    let list = std::env::var("SHOP_DEPLOYMENTS").unwrap_or_default();
    let names: Vec<String> = list
        .split(',')
        .filter_map(|d| d.split_once(':').map(|(_, name)| name.to_owned()))
        .collect();
    assert!(
        !names.is_empty(),
        "SHOP_DEPLOYMENTS is not set: tests/run deploys the shop and names it here (terraform:<name>,cdk:<name>)"
    );
    names
}

fn client() -> Client {
    let endpoint =
        std::env::var("OUTBOX_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4566".into());
    let conf = Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "shop-test"))
        .build();
    Client::from_conf(conf)
}

async fn item(
    client: &Client,
    table: &str,
    pk: &str,
    sk: &str,
) -> Option<std::collections::HashMap<String, AttributeValue>> {
    client
        .get_item()
        .table_name(table)
        .key(PARTITION_KEY, AttributeValue::S(pk.into()))
        .key(SORT_KEY, AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .ok()
        .and_then(|out| out.item)
}

#[tokio::test(flavor = "multi_thread")]
async fn orders_placed_by_the_shop_are_shipped_and_their_messages_end_sent_under_its_own_ttl_attribute()
 {
    let client = client();
    for name in deployments() {
        // Given the shop's table (its own key names) with the outbox attached
        let table = format!("{name}-table");
        let writer = shop::writer(client.clone(), &table);
        // When it places three orders
        let mut placed = Vec::new();
        for n in 0..3u64 {
            let order = OrderPlaced {
                order_id: format!("{name}-{n}-{}", std::process::id()),
                total_cents: 1000 + n,
            };
            let committed = shop::place_order(&writer, &order)
                .await
                .expect("the order is placed");
            placed.push((order, committed));
        }
        // Then the consumer ships each once, and each outbox item ends SENT with the
        // shop's TTL attribute set
        let deadline = Instant::now() + Duration::from_secs(120);
        for (order, committed) in &placed {
            let pk = format!("ORDER#{}", order.order_id);
            let shipment = loop {
                if let Some(found) = item(&client, &table, &pk, "SHIPMENT").await {
                    break found;
                }
                assert!(
                    Instant::now() < deadline,
                    "{name}: order {} was never shipped",
                    order.order_id
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            assert_eq!(
                shipment.get("total_cents"),
                Some(&AttributeValue::N(order.total_cents.to_string())),
                "{name}: the shipment carries the order's total"
            );
            let sk = &committed.sort_keys[0];
            let outbox = loop {
                let found = item(&client, &table, &pk, sk)
                    .await
                    .expect("the outbox item exists");
                if found.get("Status") == Some(&AttributeValue::S("SENT".into())) {
                    break found;
                }
                assert!(
                    Instant::now() < deadline,
                    "{name}: the outbox item of {} never became SENT",
                    order.order_id
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            assert!(
                matches!(outbox.get(TTL_ATTRIBUTE), Some(AttributeValue::N(_))),
                "{name}: a SENT item expires by the shop's TTL attribute `{TTL_ATTRIBUTE}`: {outbox:?}"
            );
            assert!(
                !outbox.contains_key("ExpiresAt"),
                "{name}: nothing is written under the default TTL name"
            );
        }
    }
}

/// Clients of the local AWS's Lambda and CloudWatch Logs, with the test credentials.
async fn aws() -> aws_config::SdkConfig {
    let endpoint =
        std::env::var("OUTBOX_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4566".into());
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "shop-test"))
        .load()
        .await
}

/// The Terraform deployment's name (`terraform:<name>` in `SHOP_DEPLOYMENTS`).
fn terraform_deployment() -> String {
    let list = std::env::var("SHOP_DEPLOYMENTS").unwrap_or_default();
    list.split(',')
        .find_map(|d| d.strip_prefix("terraform:").map(str::to_owned))
        .expect("SHOP_DEPLOYMENTS names the shop's Terraform deployment (terraform:<name>)")
}

/// A function's environment variables.
async fn environment(
    lambda: &aws_sdk_lambda::Client,
    function: &str,
) -> std::collections::HashMap<String, String> {
    lambda
        .get_function_configuration()
        .function_name(function)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{function}: {e:?}"))
        .environment
        .and_then(|e| e.variables)
        .unwrap_or_default()
}

/// Gives `function` these environment variables and waits until the update is done
/// (the next invocation starts a process with them).
async fn set_environment(
    lambda: &aws_sdk_lambda::Client,
    function: &str,
    variables: std::collections::HashMap<String, String>,
) -> Result<(), String> {
    lambda
        .update_function_configuration()
        .function_name(function)
        .environment(
            aws_sdk_lambda::types::Environment::builder()
                .set_variables(Some(variables))
                .build(),
        )
        .send()
        .await
        .map_err(|e| format!("updating {function}: {e:?}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let conf = lambda
            .get_function_configuration()
            .function_name(function)
            .send()
            .await
            .map_err(|e| format!("{function}: {e:?}"))?;
        if conf.last_update_status() == Some(&aws_sdk_lambda::types::LastUpdateStatus::Successful) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{function}: its update never finished: {conf:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The first line of `function`'s log since `since_ms` (epoch ms) that contains every
/// one of `parts`, waiting up to `wait` for it.
async fn log_line(
    logs: &aws_sdk_cloudwatchlogs::Client,
    function: &str,
    since_ms: i64,
    parts: &[&str],
    wait: Duration,
) -> Result<String, String> {
    let group = format!("/aws/lambda/{function}");
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
    loop {
        seen.clear();
        let mut token = None;
        loop {
            let page = logs
                .filter_log_events()
                .log_group_name(&group)
                .start_time(since_ms)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| format!("reading {group}: {e:?}"))?;
            seen.extend(
                page.events()
                    .iter()
                    .filter_map(|e| e.message().map(str::to_owned)),
            );
            // The local AWS repeats the last token when nothing follows it.
            token = page.next_token().map(str::to_owned);
            if token.is_none() || page.events().is_empty() {
                break;
            }
        }
        if let Some(line) = seen.iter().find(|l| parts.iter().all(|p| l.contains(p))) {
            return Ok(line.clone());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no line of {group} has all of {parts:?} within {wait:?}; its lines:\n{}",
                seen.join("\n")
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The outbox item's `Status` (None when it cannot be read).
async fn status(client: &Client, table: &str, pk: &str, sk: &str) -> Option<String> {
    match item(client, table, pk, sk).await?.get("Status") {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Messages visible or in flight on a queue.
async fn queue_depth(sqs_url: &str, aws: &aws_config::SdkConfig) -> Result<u64, String> {
    let sqs = aws_sdk_sqs::Client::new(aws);
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(sqs_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(
            aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        )
        .send()
        .await
        .map_err(|e| format!("{sqs_url}: {e:?}"))?
        .attributes
        .unwrap_or_default();
    Ok(attributes
        .values()
        .filter_map(|v| v.parse::<u64>().ok())
        .sum())
}

/// The deliberately wrong key name of issue 39: the partition key left at the default.
const WRONG_PARTITION_KEY: &str = "PK";

/// The shop's Terraform deployment (the module sourced by absolute path, the table given
/// whole) with its publisher told a wrong partition key name — as a deployment that
/// forced the wrong name past the plan's check would have it: the publisher refuses
/// every batch, naming the setting and the table's own key, and the message stays
/// `PENDING`, nothing dead-lettered, until the configuration is right again; then it
/// is published.
#[tokio::test(flavor = "multi_thread")]
async fn a_publisher_told_a_wrong_key_name_refuses_work_naming_it_and_the_message_waits_pending_until_it_is_fixed()
 {
    let name = terraform_deployment();
    let (client, aws) = (client(), aws().await);
    let lambda = aws_sdk_lambda::Client::new(&aws);
    let logs = aws_sdk_cloudwatchlogs::Client::new(&aws);
    let publisher = format!("{name}-outbox-publisher");
    let table = format!("{name}-table");
    let right = environment(&lambda, &publisher).await;
    assert_eq!(
        right.get("OUTBOX_PARTITION_KEY").map(String::as_str),
        Some(PARTITION_KEY),
        "{publisher}: the deployment passes the shop's key names: {right:?}"
    );
    let dlq = right
        .get("OUTBOX_DLQ_URL")
        .cloned()
        .expect("the publisher names its dead-letter queue");

    // Given the publisher told the partition key is `PK` (the table's is `pk`)
    let mut wrong = right.clone();
    wrong.insert(
        "OUTBOX_PARTITION_KEY".into(),
        WRONG_PARTITION_KEY.to_owned(),
    );
    set_environment(&lambda, &publisher, wrong)
        .await
        .expect("the wrong key name is set");
    // (the configuration is put back whatever happens next: the shop's other test
    // runs on the same deployment)
    let order = OrderPlaced {
        order_id: format!("wrong-key-{}", std::process::id()),
        total_cents: 4200,
    };
    let pk = format!("ORDER#{}", order.order_id);
    // A second early: the local AWS stamps a line when it reads it.
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        - 1_000;
    let refused = async {
        // When the shop places an order
        let committed = shop::place_order(&shop::writer(client.clone(), &table), &order)
            .await
            .map_err(|e| format!("the order is placed: {e}"))?;
        let committed_at = Instant::now();
        let sk = committed.sort_keys[0].clone();
        // Then the publisher refuses its batch, naming the setting, the configured
        // name and the table's
        let line = log_line(
            &logs,
            &publisher,
            since,
            &[
                "OUTBOX_PARTITION_KEY",
                &format!("configured `{WRONG_PARTITION_KEY}`"),
                &format!("the table has `{PARTITION_KEY}`"),
            ],
            Duration::from_secs(60),
        )
        .await?;
        // And after more retries of the batch, the message is still PENDING (not
        // FAILED, not SENT), and nothing was dead-lettered. (The sweeper leaves a
        // message alone for its grace of 60 s, so this is the publisher's doing.)
        tokio::time::sleep(Duration::from_secs(3)).await;
        let pending = status(&client, &table, &pk, &sk).await;
        let elapsed = committed_at.elapsed();
        let dead = queue_depth(&dlq, &aws).await?;
        Ok::<_, String>((sk, line, pending, elapsed, dead))
    }
    .await;
    // When the configuration is right again
    set_environment(&lambda, &publisher, right)
        .await
        .expect("the configuration is restored");
    let (sk, line, pending, elapsed, dead) = refused.unwrap_or_else(|e| panic!("{e}"));
    eprintln!("the publisher's refusal: {line}");
    assert!(
        elapsed < Duration::from_secs(50),
        "the check took {elapsed:?}: within the sweeper's grace of 60 s, what is seen is the publisher's doing"
    );
    assert_eq!(pending.as_deref(), Some("PENDING"), "{pk} {sk}");
    assert_eq!(dead, 0, "nothing is dead-lettered ({dlq})");

    // Then the stream's retried batch is published, and the order shipped
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if status(&client, &table, &pk, &sk).await.as_deref() == Some("SENT") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{pk}: never SENT once the key name was right"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        item(&client, &table, &pk, "SHIPMENT").await.is_some()
            || tokio::time::timeout(Duration::from_secs(60), async {
                while item(&client, &table, &pk, "SHIPMENT").await.is_none() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
            .await
            .is_ok(),
        "{pk}: the order was never shipped"
    );
    assert_eq!(
        queue_depth(&dlq, &aws)
            .await
            .expect("the dead-letter queue"),
        0
    );
}
