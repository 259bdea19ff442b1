//! What a million published messages cost, at us-east-1 list prices
//! (`outbox_devkit::cost`), from operations counted here against the emulator and the sizes
//! of the items written: this outbox (producer transaction, batched marks, the
//! publisher and the sweeper's index queries) beside a scan-based polling worker as
//! the seed document describes it (every minute: scan the table for `PENDING`, send
//! each, mark each `SENT`), with 1,000 and 10,000 items in the table; and three more
//! rows: this outbox on a FIFO route (the order fence's index reads per message), an
//! EventBridge-Pipes-style design with no `SENT` mark (arithmetic only), and a
//! 10,000-item backlog drained through the sweeper (counted here).
//!
//! Lambda durations: the publisher's and the sweeper's billed duration per
//! invocation as measured on the deployed local stack (`outbox-devkit bench latency`
//! writes them to the file `OUTBOX_BENCH_LAMBDA` names; `scripts/bench` runs it
//! first), else this run's wall time of the handler (said so). The polling worker's
//! duration is its wall time here (emulator latency, said so).
//!
//! `scripts/bench`, or with an emulator running:
//! `OUTBOX_ENDPOINT=http://127.0.0.1:PORT cargo bench -p outbox-tests --bench cost`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::{AwsSweeper, SweeperConfig};
use dynamodb_outbox::{AwsPublisher, FromSdkConfig, NewMessage};
use dynamodb_outbox_core::clock::now_ms;
use dynamodb_outbox_core::policy::Budget;
use outbox_devkit::cost::{
    Route, US_EAST_1, Usage, bill, bill_total, billed_chunks, eventual_read_units,
    fence_read_units, floor_per_message, gb_seconds, index_at_commit_write_units, item_bytes,
    pipes_per_message, transactional_write_units, write_units,
};
use outbox_devkit::counter::LostAnswers;
use outbox_tests::stream::event_of;
use outbox_tests::{Item, Outbox, bulk_put, clients, indexed_item, minimal_item, sv};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

const MESSAGES: usize = 1000;
const BATCH: usize = 100;
const MEMORY_MB: u32 = 256;
const POLL_INTERVAL_S: f64 = 60.0;
const SWEEP_INTERVAL_S: f64 = 60.0;
const BACKLOG: usize = 10_000;
/// Each drain sweep's work window. The deployed sweeper has 60 s (its timeout); the
/// emulator answers a hundred times slower than DynamoDB, and on a loaded machine its
/// first read of the index alone could use 60 s, leaving no time to claim.
const DRAIN_WINDOW: Duration = Duration::from_secs(120);
/// Sweeps the backlog's drain may take before it is called stuck.
const MAX_DRAIN_SWEEPS: usize = 60;
/// Claims' leases the drain may wait out (each the window and a minute).
const MAX_LEASE_WAITS: usize = 4;

/// Billed duration per invocation, ms, and messages per publisher invocation, as the
/// latency bench measured them on the deployed stack.
struct Measured {
    publisher_ms: f64,
    publisher_batch: f64,
    sweeper_ms: f64,
    source: String,
}

fn measured(fallback_publisher_ms: f64) -> Measured {
    let file = std::env::var("OUTBOX_BENCH_LAMBDA").ok();
    let json: Option<serde_json::Value> = file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| serde_json::from_str(&t).ok());
    match json {
        Some(j) => Measured {
            publisher_ms: j["publisher"]["billed_ms_mean"].as_f64().unwrap_or(fallback_publisher_ms),
            publisher_batch: j["publisher"]["messages_per_invocation"].as_f64().unwrap_or(BATCH as f64),
            sweeper_ms: j["sweeper"]["billed_ms_mean"].as_f64().unwrap_or(100.0),
            source: format!("billed durations measured on the deployed local stack ({})", file.unwrap_or_default()),
        },
        None => Measured {
            publisher_ms: fallback_publisher_ms,
            publisher_batch: BATCH as f64,
            sweeper_ms: 100.0,
            source: "no deployed-stack measurement (OUTBOX_BENCH_LAMBDA): publisher = this run's handler wall time per batch of 100; sweeper = 100 ms assumed".to_owned(),
        },
    }
}

fn rate() -> f64 {
    std::env::var("OUTBOX_BENCH_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50.0)
}

/// Commits the orders of `range` as messages to `topic`, 25 to a transaction.
async fn commit_orders(
    writer: &dynamodb_outbox::OutboxWriter,
    range: std::ops::Range<usize>,
    topic: &str,
) {
    for chunk in range.collect::<Vec<_>>().chunks(25) {
        let msgs: Vec<NewMessage> = chunk
            .iter()
            .map(|i| {
                NewMessage::new(
                    format!("ORDER#{}", i % 97),
                    topic,
                    format!("{{\"order\":{i},\"lines\":3}}"),
                )
            })
            .collect();
        writer.commit(vec![], &msgs).await.expect("commit");
    }
}

/// Our path: per-message usage, per-sweep usage, the handler's wall ms per batch.
async fn outbox_usage() -> (Usage, Usage, f64) {
    let mut ob = Outbox::new().await;
    let own = clients().await;
    let writer = dynamodb_outbox::OutboxWriter::new(own.dynamodb.clone(), &ob.table);
    commit_orders(&writer, 0..MESSAGES, "orders").await;
    let pending_items = ob.all_items().await;
    let pending: Vec<u64> = pending_items.iter().map(item_bytes).collect();
    // The sweeper index's writes: an item indexed at commit enters it there and leaves
    // it at its SENT mark, one write of its KEYS_ONLY projection each way; the
    // default producer's items never enter it on the happy path (0).
    let index_units: u64 = pending_items
        .iter()
        .filter_map(index_projection_bytes)
        .map(|bytes| 2 * write_units(bytes))
        .sum();
    let event = ob.filtered_event().await;
    own.counter.reset();
    let publisher = AwsPublisher::with_sink(ob.config(), own.dynamodb.clone(), own.sink());
    let start = Instant::now();
    for chunk in event.records.chunks(BATCH) {
        let (response, _) = handle_stream_event(&publisher, &event_of(chunk.to_vec())).await;
        assert!(response.batch_item_failures.is_empty());
    }
    let handler_ms = start.elapsed().as_secs_f64() * 1000.0 / (MESSAGES / BATCH) as f64;
    let sent: Vec<u64> = ob.all_items().await.iter().map(item_bytes).collect();
    let sqs_calls = own.counter.of(&["SendMessageBatch"]) as f64;
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    let per_call_bytes = (mean(&pending) as u64) * 10; // payload + attributes < the item
    let n = MESSAGES as f64;
    let per_message = Usage {
        producer_write_units: pending
            .iter()
            .map(|b| transactional_write_units(*b))
            .sum::<u64>() as f64
            / n,
        mark_write_units: pending
            .iter()
            .zip(&sent)
            .map(|(a, b)| write_units(*a.max(b)))
            .sum::<u64>() as f64
            / n,
        index_write_units: index_units as f64 / n,
        sqs_standard_requests: sqs_calls * billed_chunks(per_call_bytes) as f64 / n,
        ..Usage::default()
    };
    println!(
        "  outbox: {MESSAGES} messages, item {:.0} B pending / {:.0} B sent; requests: {:?}",
        mean(&pending),
        mean(&sent),
        own.counter.by_operation()
    );
    own.counter.reset();
    let sweeper = AwsSweeper::with_sink(
        SweeperConfig::new(ob.config()),
        own.dynamodb.clone(),
        own.sink(),
    );
    let summary = sweeper
        .sweep(Budget::for_window(now_ms(), Duration::from_secs(60)))
        .await;
    assert_eq!(summary.found, 0);
    // Each Query of an empty index partition is billed half a unit at least.
    let queries = own.counter.of(&["Query"]) as f64;
    let per_sweep = Usage {
        finder_read_units: queries * eventual_read_units(0),
        ..Usage::default()
    };
    (per_message, per_sweep, handler_ms)
}

/// Our path on the FIFO route (`ledger`): per-message usage, the order fence's reads
/// included. Committed and published a batch at a time, as at a steady rate: the
/// index then holds the batch's own messages only when the fence reads it (all of a
/// thousand committed first would make every fence read the whole backlog).
async fn fifo_usage() -> Usage {
    let mut ob = Outbox::new().await;
    let own = clients().await;
    let writer = dynamodb_outbox::OutboxWriter::new(own.dynamodb.clone(), &ob.table);
    let publisher = AwsPublisher::with_sink(ob.config(), own.dynamodb.clone(), own.sink());
    let (mut units, mut ops) = (Usage::default(), BTreeMap::<String, u64>::new());
    let mut redeliveries = 0;
    for round in 0..MESSAGES / BATCH {
        commit_orders(&writer, round * BATCH..(round + 1) * BATCH, "ledger").await;
        let pending_items = ob.all_items().await;
        let pending: Vec<&Item> = pending_items.iter().filter(|i| is_pending(i)).collect();
        // Every pending item is this round's, so in a shard the batch touches: what
        // the fence's read of those shards returns, for items indexed at commit.
        let index_bytes: u64 = pending
            .iter()
            .filter_map(|i| index_projection_bytes(i))
            .sum();
        // Outside the index (the producer's default), an aggregate's pending messages
        // are read from its partition instead, strongly consistently: billed for
        // every item of it, the history it has sent included.
        let partition_units = partition_read_units(&pending, &pending_items);
        let event = ob.filtered_event().await;
        own.counter.reset();
        redeliveries += deliver_until_done(&publisher, event.records, round).await;
        let sent = ob.all_items().await;
        units = units.plus(happy_path_writes(&pending, &sent));
        let fence_requests = own.counter.of(&["ExecuteStatement"]);
        let partition_reads = own.counter.of(&["Query"]);
        let confirms = own.counter.of(&["BatchGetItem", "GetItem"]);
        units.fence_read_units += fence_read_units(fence_requests, index_bytes, confirms);
        if partition_reads > 0 {
            units.fence_read_units += partition_units.max(partition_reads as f64);
        }
        units.sqs_fifo_requests += own.counter.of(&["SendMessageBatch"]) as f64;
        for (op, n) in own.counter.by_operation() {
            *ops.entry(op).or_default() += n;
        }
    }
    println!(
        "  FIFO route: {MESSAGES} messages in batches of {BATCH}, committed a batch at a time, {redeliveries} batch tails delivered again (records the fence could not place, as Lambda redelivers from the lowest reported); requests: {ops:?} (a confirm read priced as one unit)"
    );
    units.scaled(1.0 / MESSAGES as f64)
}

/// Hands `records` to `publisher` until it reports none, each time from the lowest
/// reported record on, as the mapping redelivers (at most five times); the
/// redeliveries it took.
async fn deliver_until_done(
    publisher: &AwsPublisher,
    mut records: Vec<aws_lambda_events::event::dynamodb::EventRecord>,
    round: usize,
) -> usize {
    for redelivery in 0..5 {
        let (response, summary) = handle_stream_event(publisher, &event_of(records.clone())).await;
        let reported: std::collections::HashSet<String> = response
            .batch_item_failures
            .iter()
            .filter_map(|f| f.item_identifier.clone())
            .collect();
        let Some(from) = records.iter().position(|r| {
            r.change
                .sequence_number
                .as_ref()
                .is_some_and(|n| reported.contains(n))
        }) else {
            assert!(reported.is_empty(), "round {round}: {summary:?}");
            return redelivery;
        };
        records = records.split_off(from);
    }
    panic!("round {round}: records still reported after five redeliveries");
}

/// Read units of one strongly consistent read of each partition that holds a
/// `pending` item: every item of the partition in `all`, 1 unit per started 4 KB.
fn partition_read_units(pending: &[&Item], all: &[Item]) -> f64 {
    let aggregates: std::collections::BTreeSet<String> =
        pending.iter().map(|i| key_s(i, "PK")).collect();
    aggregates
        .iter()
        .map(|pk| {
            let bytes: u64 = all
                .iter()
                .filter(|i| &key_s(i, "PK") == pk)
                .map(item_bytes)
                .sum();
            2.0 * eventual_read_units(bytes)
        })
        .sum()
}

/// The index writes a message indexed at commit costs (`index_at_commit(true)`),
/// from the item the writer builds for it (no request made).
fn index_at_commit_units(table: &str) -> u64 {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .build();
    let writer =
        dynamodb_outbox::OutboxWriter::new(aws_sdk_dynamodb::Client::from_conf(conf), table)
            .index_at_commit(true);
    let message = NewMessage::new("ORDER#42", "orders", r#"{"order":42,"lines":3}"#);
    let prepared = writer.prepare(vec![], &[message]).expect("a valid message");
    let item = prepared.actions()[0]
        .put
        .as_ref()
        .expect("the outbox item's Put")
        .item();
    index_at_commit_write_units(index_projection_bytes(item).expect("indexed at commit"))
}

fn is_pending(item: &Item) -> bool {
    item.get("Status")
        .and_then(|s| s.as_s().ok())
        .map(String::as_str)
        == Some("PENDING")
}

/// The writes of messages published and marked: the producer's transaction, the
/// `SENT` mark (of the larger of before and after), the index entered and left.
fn happy_path_writes(pending: &[&Item], after: &[Item]) -> Usage {
    let bytes_after: HashMap<(String, String), u64> = after
        .iter()
        .map(|i| ((key_s(i, "PK"), key_s(i, "SK")), item_bytes(i)))
        .collect();
    let mut u = Usage::default();
    for item in pending {
        let before = item_bytes(item);
        let sent = bytes_after
            .get(&(key_s(item, "PK"), key_s(item, "SK")))
            .copied()
            .unwrap_or(before);
        u.producer_write_units += transactional_write_units(before) as f64;
        u.mark_write_units += write_units(before.max(sent)) as f64;
        u.index_write_units += index_projection_bytes(item)
            .map(|b| 2 * write_units(b))
            .unwrap_or(0) as f64;
    }
    u
}

fn key_s(item: &Item, name: &str) -> String {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

/// A backlog of BACKLOG due items in the sweeper index (as a stream outage leaves
/// them) drained by sweeps one after another: the usage of the drain, per message,
/// the producer's writes included; and the sweeps it took with their mean wall ms.
async fn backlog_usage() -> (Usage, usize, f64) {
    let ob = Outbox::new().await;
    let due = now_ms() - 1_000;
    let items: Vec<Item> = (0..BACKLOG)
        .map(|i| {
            indexed_item(
                &format!("ORDER#{}", i % 97),
                &format!("MESSAGE#ORDER_PLACED#{due}{i:06}"),
                "orders",
                &format!("{{\"order\":{i},\"lines\":3}}"),
                due,
            )
        })
        .collect();
    let bytes = item_bytes(&items[0]);
    let projection = index_projection_bytes(&items[0]).unwrap_or(0);
    let seeding = Instant::now();
    bulk_put(&ob.clients.dynamodb, &ob.table, items).await;
    let seed_s = seeding.elapsed().as_secs_f64();
    let own = clients().await;
    let lost = LostAnswers::default();
    // The sweeper's own DynamoDB client, counted as `own`'s, and its lost answers too.
    let dynamodb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&outbox_tests::sdk_config().await)
            .interceptor(own.counter.clone())
            .interceptor(lost.clone())
            .build(),
    );
    let sweeper = AwsSweeper::with_sink(SweeperConfig::new(ob.config()), dynamodb, own.sink());
    let (mut sweeps, mut published, mut index_items) = (0usize, 0usize, 0u64);
    let (mut sweeping, mut waited, mut lease_waits) = (Duration::ZERO, Duration::ZERO, 0);
    while published < BACKLOG && sweeps < MAX_DRAIN_SWEEPS {
        let started = Instant::now();
        let summary = sweeper
            .sweep(Budget::for_window(now_ms(), DRAIN_WINDOW))
            .await;
        sweeping += started.elapsed();
        sweeps += 1;
        eprintln!(
            "  drain sweep {sweeps}: found {}, claimed {}, published {}, left {}, {} index items in {} queries, {:.1} s",
            summary.found,
            summary.claimed,
            summary.published,
            summary.skipped,
            summary.index_items_read,
            summary.index_queries,
            started.elapsed().as_secs_f64()
        );
        published += summary.published;
        index_items += summary.index_items_read;
        if summary.found == 0 && published < BACKLOG {
            // Nothing due, yet not drained: items left under a claim's lease (before
            // issue 38's fix, every claim whose answer the emulator lost), and their
            // aggregates' later messages held behind them. They come due when the
            // lease ends, as a scheduled sweep would find them: wait until then.
            if lease_waits == MAX_LEASE_WAITS {
                break;
            }
            lease_waits += 1;
            let wait = until_next_due(&ob).await;
            waited += wait;
            tokio::time::sleep(wait).await;
        }
    }
    let sweep_ms = sweeping.as_secs_f64() * 1000.0 / sweeps as f64;
    assert_eq!(published, BACKLOG, "the sweeps drained the backlog");
    let claims = own.counter.of(&["UpdateItem"]);
    let queries = own.counter.of(&["Query"]);
    let n = BACKLOG as f64;
    // A claim rewrites the item (RetryCount, a lease in SweepDueAt: the index's sort
    // key, so its projection is deleted and put again); the SENT mark rewrites it and
    // takes it out of the index.
    let usage = Usage {
        producer_write_units: transactional_write_units(bytes) as f64,
        mark_write_units: (claims * write_units(bytes + 20)) as f64 / n
            + write_units(bytes + 40) as f64,
        index_write_units: (claims * 2 * write_units(projection)) as f64 / n
            + write_units(projection) as f64,
        finder_read_units: eventual_read_units(index_items * projection).max(queries as f64 * 0.5)
            / n,
        sqs_standard_requests: own.counter.of(&["SendMessageBatch"]) as f64
            * billed_chunks(bytes * 10) as f64
            / n,
        ..Usage::default()
    };
    println!(
        "  sweeper backlog: {BACKLOG} due items ({bytes} B, seeded in {seed_s:.1} s) drained by {sweeps} sweeps of a {}-s window, {sweep_ms:.0} ms wall time each on the emulator (their Lambda duration here: the emulator's own latency, not the sweeper's work, is most of it), {index_items} index items read; requests: {:?}",
        DRAIN_WINDOW.as_secs(),
        own.counter.by_operation()
    );
    println!(
        "    the emulator dropped {} answers of the sweeper's DynamoDB requests (HTTP/2 GOAWAY, broken pipes: {:?}), each sent again by the SDK; {lease_waits} waits ({:.0} s, between sweeps and not in their wall time) for items left under a lease to come due again",
        lost.total(),
        lost.by_operation(),
        waited.as_secs_f64()
    );
    (usage, sweeps, sweep_ms)
}

/// How long until the earliest pending item of `ob` is due again, read from the
/// table (not counted: the bench's bookkeeping), plus a second for the index to catch
/// up; at most a lease (the window and a minute) and 20 s.
async fn until_next_due(ob: &Outbox) -> Duration {
    let now = now_ms();
    let earliest = ob
        .all_items()
        .await
        .iter()
        .filter(|i| is_pending(i))
        .filter_map(|i| i.get("SweepDueAt")?.as_n().ok()?.parse::<i64>().ok())
        .min()
        .unwrap_or(now);
    let ms = (earliest - now + 1_000).clamp(1_000, 200_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(1_000))
}

/// A polling worker's per-message usage, per-poll usage and wall ms per poll, over a
/// table of `history` sent items and `MESSAGES / 10` pending ones.
async fn polling_usage(history: usize) -> (Usage, Usage, f64) {
    let ob = Outbox::new().await;
    let now = now_ms();
    let item = |i: usize, status: &str| -> Item {
        let mut item = minimal_item(
            &format!("ORDER#{}", i % 97),
            &format!("MESSAGE#ORDER_PLACED#{now}{i:06}"),
            "orders",
            &format!("{{\"order\":{i},\"lines\":3}}"),
        );
        item.insert("Status".to_owned(), sv(status));
        item
    };
    let fresh = MESSAGES / 10;
    let items: Vec<Item> = (0..history)
        .map(|i| item(i, "SENT"))
        .chain((history..history + fresh).map(|i| item(i, "PENDING")))
        .collect();
    let table_bytes: u64 = items.iter().map(item_bytes).sum();
    let pending_bytes = item_bytes(&items[history]);
    bulk_put(&ob.clients.dynamodb, &ob.table, items).await;
    let own = clients().await;
    let start = Instant::now();
    let (found, pages) = poll_once(&own, &ob).await;
    let poll_ms = start.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(found, fresh);
    let n = fresh as f64;
    let per_message = Usage {
        producer_write_units: transactional_write_units(pending_bytes) as f64,
        mark_write_units: own.counter.of(&["UpdateItem"]) as f64
            * write_units(pending_bytes + 20) as f64
            / n,
        sqs_standard_requests: own.counter.of(&["SendMessage"]) as f64
            * billed_chunks(pending_bytes) as f64
            / n,
        ..Usage::default()
    };
    // A Scan is billed for every item it reads, page by page (1 MB pages).
    let per_poll = Usage {
        finder_read_units: eventual_read_units(table_bytes)
            + 0.5 * (pages.saturating_sub(1)) as f64,
        ..Usage::default()
    };
    (per_message, per_poll, poll_ms)
}

/// One poll as the seed describes it: scan for PENDING, send each, mark each SENT.
async fn poll_once(own: &outbox_devkit::aws::Clients, ob: &Outbox) -> (usize, usize) {
    let (mut found, mut pages) = (0, 0);
    let mut start: Option<HashMap<String, AttributeValue>> = None;
    loop {
        let out = own
            .dynamodb
            .scan()
            .table_name(&ob.table)
            .filter_expression("#s = :p")
            .expression_attribute_names("#s", "Status")
            .expression_attribute_values(":p", sv("PENDING"))
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        pages += 1;
        for item in out.items() {
            let body = item
                .get("Payload")
                .and_then(|p| p.as_s().ok())
                .cloned()
                .unwrap_or_default();
            own.sqs
                .send_message()
                .queue_url(&ob.queue.url)
                .message_body(body)
                .send()
                .await
                .expect("send");
            own.dynamodb
                .update_item()
                .table_name(&ob.table)
                .key("PK", item["PK"].clone())
                .key("SK", item["SK"].clone())
                .update_expression("SET #s = :sent")
                .condition_expression("#s = :p")
                .expression_attribute_names("#s", "Status")
                .expression_attribute_values(":sent", sv("SENT"))
                .expression_attribute_values(":p", sv("PENDING"))
                .send()
                .await
                .expect("mark");
            found += 1;
        }
        start = out.last_evaluated_key.filter(|k| !k.is_empty());
        if start.is_none() {
            return (found, pages);
        }
    }
}

/// The size of an item's projection into the sweeper index (`KEYS_ONLY`: the table's
/// keys and the index's), or `None` when the item is not in the index.
fn index_projection_bytes(item: &Item) -> Option<u64> {
    item.get("SweepShard")?;
    let projected: Item = ["PK", "SK", "SweepShard", "SweepDueAt"]
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), item.get(*name)?.clone())))
        .collect();
    Some(item_bytes(&projected))
}

fn lambda(invocations: f64, billed_ms: f64) -> Usage {
    Usage {
        lambda_invocations: invocations,
        lambda_gb_seconds: invocations * gb_seconds(billed_ms, MEMORY_MB),
        ..Usage::default()
    }
}

fn total(usage: &Usage) -> f64 {
    bill_total(&bill(usage, &US_EAST_1))
}

/// The dollars of one line of `usage`'s bill.
fn line(usage: &Usage, item: &str) -> f64 {
    bill(usage, &US_EAST_1)
        .iter()
        .filter(|l| l.item == item)
        .map(|l| l.dollars)
        .sum()
}

/// Each route's total beside the floor on the same route (the floor's sends go where
/// ours go), their ratio, and what ordering adds on a FIFO route, by cause.
fn print_against_the_floor(standard: Usage, fifo: Usage, floor: Usage, events: f64) {
    println!(
        "against the floor (the outbox item in the producer's transaction and one SENT mark, the same sends and publisher Lambda time; no sweeper, no fence): target <= 1.1 on standard routes"
    );
    let routes = [
        ("standard SQS", Route::SqsStandard),
        ("SNS", Route::Sns),
        ("EventBridge", Route::EventBridge),
    ];
    for (name, route) in routes {
        let (ours, floor) = (
            total(&standard.sent_to(route, events)),
            total(&floor.sent_to(route, events)),
        );
        println!(
            "  {name:<13} this outbox ${ours:.4}  floor ${floor:.4}  ratio {:.3}",
            ours / floor
        );
    }
    let fifo_floor = floor.sent_to(Route::SqsFifo, events);
    let (ours, floor_fifo) = (total(&fifo), total(&fifo_floor));
    println!(
        "  {:<13} this outbox ${ours:.4}  floor ${floor_fifo:.4}  ratio {:.3}",
        "FIFO SQS",
        ours / floor_fifo
    );
    let fence = line(&fifo, "DynamoDB reads: order fence (FIFO routes)");
    let sends = line(&fifo, "SQS FIFO") - line(&standard, "SQS standard");
    println!(
        "  ordering adds ${:.4} over the standard route: ${fence:.4} of order-fence reads (before sending a batch, the publisher reads each FIFO aggregate's pending siblings so none overtakes another) and ${sends:.4} of FIFO's send price; the rest ${:.4} is the runs' other differences",
        total(&fifo) - total(&standard),
        total(&fifo) - total(&standard) - fence - sends
    );
    let half = |a: Usage, b: Usage| a.scaled(0.5).plus(b.scaled(0.5));
    let (ours, floor_mixed) = (
        total(&half(standard, fifo)),
        total(&half(floor, fifo_floor)),
    );
    println!(
        "  {:<13} this outbox ${ours:.4}  floor ${floor_mixed:.4}  ratio {:.3} (half the messages on a FIFO route)",
        "mixed",
        ours / floor_mixed
    );
}

fn print_table(columns: &[(String, Usage)]) {
    let bills: Vec<_> = columns.iter().map(|(_, u)| bill(u, &US_EAST_1)).collect();
    print!("{:<52} {:>12}", "per million published messages", "unit");
    for (name, _) in columns {
        print!(" | {name:>26}");
    }
    println!();
    for (row, line) in bills[0].iter().enumerate() {
        print!("{:<52} {:>12}", line.item, line.unit);
        for b in &bills {
            print!(" | {:>14.1} ${:>10.4}", b[row].quantity, b[row].dollars);
        }
        println!();
    }
    print!("{:<52} {:>12}", "total", "USD");
    for b in &bills {
        print!(" | {:>26}", format!("${:.4}", bill_total(b)));
    }
    println!();
}

#[tokio::main]
async fn main() {
    let rate = rate();
    let seconds = 1e6 / rate;
    println!(
        "cost per million published messages, {} list prices read {} (outbox_devkit::cost::US_EAST_1)",
        US_EAST_1.region, US_EAST_1.read_on
    );
    println!(
        "assumed: a sustained {rate} messages/s (OUTBOX_BENCH_RATE), so a million take {:.0} s; sweeper and poller every {SWEEP_INTERVAL_S} s; Lambda at {MEMORY_MB} MB; standard SQS destination",
        seconds
    );
    let (per_message, per_sweep, handler_ms) = outbox_usage().await;
    let m = measured(handler_ms);
    println!("  lambda: {}", m.source);
    println!(
        "  publisher: {:.1} ms billed per invocation, {:.1} messages per invocation; sweeper {:.1} ms",
        m.publisher_ms, m.publisher_batch, m.sweeper_ms
    );
    let sweeps = seconds / SWEEP_INTERVAL_S;
    let publishes = 1e6 / m.publisher_batch;
    let ours = per_message
        .scaled(1e6)
        .plus(per_sweep.scaled(sweeps))
        .plus(lambda(publishes, m.publisher_ms))
        .plus(lambda(sweeps, m.sweeper_ms));
    let opt_in = index_at_commit_units("orders");
    println!(
        "  index_at_commit(true), opt-in: +{opt_in} index write units per message (enters the sweeper index at commit, leaves it at the SENT mark) = +${:.4} per million, not in the table; the default's happy path writes {:.1}",
        opt_in as f64 * US_EAST_1.dynamodb_write_unit_per_million,
        per_message.index_write_units
    );
    let mut columns = vec![("this outbox".to_owned(), ours)];
    for history in [1_000usize, 10_000] {
        let (per_message, per_poll, poll_ms) = polling_usage(history).await;
        let polls = seconds / POLL_INTERVAL_S;
        println!(
            "  polling worker, {history} items in the table: one poll {poll_ms:.0} ms wall time on the emulator (its Lambda duration here)"
        );
        let usage = per_message
            .scaled(1e6)
            .plus(per_poll.scaled(polls))
            .plus(lambda(
                polls,
                poll_ms * (1e6 / polls) / (MESSAGES / 10) as f64,
            ));
        columns.push((format!("polling, {history} items"), usage));
    }
    let fifo = fifo_usage()
        .await
        .scaled(1e6)
        .plus(per_sweep.scaled(sweeps))
        .plus(lambda(publishes, m.publisher_ms))
        .plus(lambda(sweeps, m.sweeper_ms));
    columns.push(("FIFO route (order fence)".to_owned(), fifo));
    let ours_standard = ours;
    // The producer's item without the library's index attributes: what a pipe needs.
    let plain = item_bytes(&minimal_item(
        "ORDER#42",
        &format!("MESSAGE#ORDER_PLACED#{}", uuid::Uuid::now_v7()),
        "orders",
        "{\"order\":42,\"lines\":3}",
    ));
    println!(
        "  Pipes-style: item {plain} B, one pipe request and one SendMessage per message, no mark, no index, no sweeper (arithmetic, nothing run)"
    );
    columns.push((
        "Pipes-style, no SENT mark".to_owned(),
        pipes_per_message(plain).scaled(1e6),
    ));
    // The floor: the mission's two writes, the same sends and the same publisher time.
    let floor = floor_per_message(plain)
        .scaled(1e6)
        .plus(Usage {
            sqs_standard_requests: per_message.sqs_standard_requests * 1e6,
            ..Usage::default()
        })
        .plus(lambda(publishes, m.publisher_ms));
    print_against_the_floor(
        ours_standard,
        fifo,
        floor,
        1e6 * billed_chunks(plain) as f64,
    );
    let (drain, drain_sweeps, sweep_ms) = backlog_usage().await;
    let drain = drain
        .scaled(1e6)
        .plus(lambda(drain_sweeps as f64 * 1e6 / BACKLOG as f64, sweep_ms));
    columns.push((format!("sweeper, {BACKLOG} backlog"), drain));
    columns.push(("floor (standard SQS)".to_owned(), floor));
    print_table(&columns);
}
