//! The shop as deployed by its own Terraform root and its own CDK app (tests/run
//! applies both to the local AWS and names them in `SHOP_DEPLOYMENTS`,
//! `terraform:<name>,cdk:<name>`): orders placed here are shipped by the consumer,
//! once, and their outbox items end `SENT` with the shop's own TTL attribute.

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
