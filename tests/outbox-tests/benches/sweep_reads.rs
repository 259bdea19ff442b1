//! Table and index items read by one sweep when nothing is stuck, at 1,000 and 10,000
//! `SENT` items, beside a naive scan-based sweep (`Scan` with the filter
//! `Status = PENDING`, which reads every item whatever the filter keeps).
//!
//! `scripts/bench` (starts the emulator), or with one running:
//! `OUTBOX_ENDPOINT=http://127.0.0.1:PORT cargo bench -p outbox-tests --bench sweep_reads`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::FromSdkConfig;
use dynamodb_outbox::sweep::{AwsSweeper, ScanMode, SweeperConfig};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::policy::Budget;
use outbox_tests::{Item, Outbox, bulk_put, clients, minimal_item, nv, sv};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `count` items as the publisher leaves them once `SENT`: no index attributes.
async fn fill(ob: &Outbox, count: usize) {
    let now = now_ms();
    let items: Vec<Item> = (0..count)
        .map(|i| {
            let mut item = minimal_item(
                &format!("ORDER#{i}"),
                &format!("MESSAGE#ORDER_PLACED#{i:05}"),
                "orders",
                r#"{"order":"placed","lines":3}"#,
            );
            item.insert("Status".to_owned(), sv("SENT"));
            item.insert("SentAt".to_owned(), nv(now));
            item
        })
        .collect();
    bulk_put(&ob.clients.dynamodb, &ob.table, items).await;
}

/// The naive sweep: scan the whole table for `Status = PENDING`.
async fn naive_scan(client: &aws_sdk_dynamodb::Client, table: &str) -> (u64, u64) {
    let mut read = 0u64;
    let mut requests = 0u64;
    let mut start: Option<HashMap<String, AttributeValue>> = None;
    loop {
        let out = client
            .scan()
            .table_name(table)
            .filter_expression("#s = :p")
            .expression_attribute_names("#s", "Status")
            .expression_attribute_values(":p", sv("PENDING"))
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        requests += 1;
        read += u64::try_from(out.scanned_count()).unwrap_or(0);
        start = out.last_evaluated_key.filter(|k| !k.is_empty());
        if start.is_none() {
            return (read, requests);
        }
    }
}

#[tokio::main]
async fn main() {
    println!("items read per sweep with nothing stuck (all items SENT)");
    println!(
        "{:>12} | {:>18} {:>9} {:>9} | {:>18} {:>9} {:>9}",
        "table items",
        "sweeper items read",
        "requests",
        "emu ms",
        "naive scan read",
        "requests",
        "emu ms"
    );
    for count in [1_000usize, 10_000] {
        let ob = Outbox::new().await;
        fill(&ob, count).await;

        let own = clients().await;
        // The backstop scan's page measured too (the default, off, reads none).
        let mut config = SweeperConfig::new(ob.config());
        config.scan_mode = ScanMode::Backstop;
        let sweeper = AwsSweeper::with_sink(config, own.dynamodb.clone(), own.sink());
        let start = Instant::now();
        let summary = sweeper
            .sweep(Budget::for_window(now_ms(), Duration::from_secs(60)))
            .await;
        let sweep_ms = start.elapsed().as_millis();
        assert_eq!(summary.found, 0);
        let sweep_items = summary.index_items_read + summary.scan_items_read;
        let sweep_requests = own.counter.total();

        let start = Instant::now();
        let (naive_items, naive_requests) = naive_scan(&own.dynamodb, &ob.table).await;
        let naive_ms = start.elapsed().as_millis();
        println!(
            "{count:>12} | {sweep_items:>18} {sweep_requests:>9} {sweep_ms:>9} | {naive_items:>18} {naive_requests:>9} {naive_ms:>9}"
        );
    }
    println!(
        "sweeper: 16 Query calls on the empty partitions of the sparse index (KEYS_ONLY), plus the backstop scan's one page (at most 100 items; OUTBOX_SWEEP_SCAN_MODE=backstop; `off`, the default, reads none); naive: Scan reads every item, the filter only trims the answer"
    );
    println!(
        "emu ms is the emulator's wall time: moto answers an index query by walking the whole table in Python, so it says nothing about DynamoDB latency; items read is what DynamoDB bills"
    );
}
