//! A global table of two replicas (us-east-1, eu-west-1) in one MiniStack, the outbox
//! run in each region in process (docs/global-tables.md): each region's stream
//! publisher reads its own replica's stream and publishes only its region's messages;
//! a failover re-homes a failed region's pending messages into the other, whose sweeper
//! publishes them once; a failback returns them.
//!
//! What MiniStack does differently (docs/protocol.md's table): replication is
//! synchronous (no lag), and its PartiQL writes — the publisher's batched `SENT`
//! marks — are streamed and replicated only because the tests' launcher
//! (tests/emulator/ministack_iam.py) makes them so, as AWS does. The replica API is
//! MiniStack's (moto has none): on moto these tests say so and return.
//!
//! The two regions' publishers run concurrently on events read beforehand, so both
//! read every message's status before either marks one: the status read cannot hide a
//! duplicate, and what keeps a message from being published twice is the home-region
//! skip alone (seen failing with a publisher that owns every region).

use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::sweep::AwsSweeper;
use dynamodb_outbox::{
    AwsPublisher, Destination, FromSdkConfig, HomeRegions, KeyNames, NewMessage, OutboxWriter,
    PublisherConfig, Routes,
};
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use outbox_devkit::aws::Clients;
use outbox_devkit::provision;
use outbox_ops::{Rehome, rehome};
use outbox_tests::stream::StreamReader;
use outbox_tests::{attr, drain, indexed_item, minimal_item, s, sdk_config, unique};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

const US: &str = "us-east-1";
const EU: &str = "eu-west-1";
/// The home of messages that name none, the same in both regions' deployments.
const DEFAULT_HOME: &str = US;

/// Whether the emulator has MiniStack's replica API; prints why a test returns.
fn global_tables_supported(test: &str) -> bool {
    let kind = std::env::var("OUTBOX_EMULATOR").unwrap_or_else(|_| "ministack".into());
    if kind == "moto" {
        eprintln!(
            "{test}: skipped on moto (OUTBOX_EMULATOR=moto): it has no global tables \
             (UpdateTable ReplicaUpdates); MiniStack runs it"
        );
        return false;
    }
    true
}

/// One region's deployment of the outbox: its clients (signing with its region, which
/// is how MiniStack picks the region), its replica's stream, its destination queue
/// (created in that region: MiniStack's queue URLs name no region, so the sink sends
/// through the region's own clients) and its dead-letter queue.
struct Region {
    name: &'static str,
    clients: Clients,
    table: String,
    keys: KeyNames,
    reader: StreamReader,
    queue: String,
    dlq: String,
}

impl Region {
    /// The publisher's key names as each region's deployment sets them.
    fn keys_in(region: &str) -> KeyNames {
        KeyNames::default().regions(HomeRegions::in_region(region).default_home(DEFAULT_HOME))
    }

    fn config(&self) -> PublisherConfig {
        PublisherConfig {
            table_name: self.table.clone(),
            routes: Routes::new([("orders".to_owned(), Destination::sqs(&self.queue))], None),
            dead_letter: Destination::sqs(&self.dlq),
            ttl_days: 7,
            key_names: self.keys.clone(),
        }
    }

    fn publisher(&self) -> AwsPublisher {
        AwsPublisher::with_sink(
            self.config(),
            self.clients.dynamodb.clone(),
            self.clients.sink(),
        )
    }

    fn sweeper(&self) -> AwsSweeper {
        AwsSweeper::with_sink(
            crate::sweeper::config(self.config()),
            self.clients.dynamodb.clone(),
            self.clients.sink(),
        )
    }

    /// Sweeps at `now_ms` until a sweep publishes nothing; what was published.
    async fn sweep_all(&self, now_ms: i64) -> usize {
        let sweeper = self.sweeper();
        let mut published = 0;
        for _ in 0..10 {
            let summary = crate::sweeper::sweep_at(&sweeper, now_ms).await;
            if summary.published == 0 {
                return published;
            }
            published += summary.published;
        }
        panic!("{}: the sweeper still publishes after 10 sweeps", self.name);
    }

    /// The library producer committing in this region (`HomeRegion` = its client's
    /// region): `count` messages, one aggregate each, named `{tag}-{i}`. Indexed at
    /// commit, as docs/global-tables.md asks of a global table's producers: a failover
    /// finds a failed region's pending messages in the sweeper index.
    async fn commit(&self, tag: &str, count: usize) -> Vec<String> {
        let writer =
            OutboxWriter::new(self.clients.dynamodb.clone(), &self.table).index_at_commit(true);
        let names: Vec<String> = (0..count).map(|i| format!("{tag}-{i}")).collect();
        for chunk in names.chunks(10) {
            let msgs: Vec<NewMessage> = chunk
                .iter()
                .map(|n| NewMessage::new(format!("ORDER#{n}"), "orders", payload(n)))
                .collect();
            writer.commit(vec![], &msgs).await.expect("commit");
        }
        names
    }

    /// A minimal producer's items (no `HomeRegion`: the default home's), written here.
    async fn put_minimal(
        &self,
        tag: &str,
        count: usize,
        indexed_due_ms: Option<i64>,
    ) -> Vec<String> {
        let names: Vec<String> = (0..count).map(|i| format!("{tag}-{i}")).collect();
        for n in &names {
            let (pk, sk) = (format!("ORDER#{n}"), format!("OUTBOX#{n}"));
            let item = match indexed_due_ms {
                Some(due) => indexed_item(&pk, &sk, "orders", &payload(n), due),
                None => minimal_item(&pk, &sk, "orders", &payload(n)),
            };
            self.clients
                .dynamodb
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .send()
                .await
                .expect("put minimal item");
        }
        names
    }

    /// Everything on this region's queue (deleted): the message name each carries, by
    /// `outbox-message-id`.
    async fn published(&self) -> Vec<(String, String)> {
        drain(&self.clients.sqs, &self.queue)
            .await
            .iter()
            .map(|m| {
                let id = attr(m, ATTR_MESSAGE_ID).expect("an outbox-message-id");
                let body: serde_json::Value =
                    serde_json::from_str(m.body().expect("a body")).expect("a JSON body");
                (id, body["n"].as_str().expect("a name").to_owned())
            })
            .collect()
    }

    /// The item's `Status` as this region's replica has it.
    async fn status_here(&self, name: &str) -> Option<String> {
        let items = self
            .clients
            .dynamodb
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", outbox_tests::sv(&format!("ORDER#{name}")))
            .consistent_read(true)
            .send()
            .await
            .expect("query")
            .items
            .unwrap_or_default();
        items.iter().find_map(|i| s(i, "Status"))
    }
}

fn payload(name: &str) -> String {
    serde_json::json!({ "n": name }).to_string()
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A new outbox table in us-east-1 with a replica in eu-west-1 (`UpdateTable`
/// `ReplicaUpdates`), and each region's deployment: us-east-1's with `us_keys`,
/// eu-west-1's with `eu_keys`.
async fn global_outbox(us_keys: KeyNames, eu_keys: KeyNames) -> (Region, Region) {
    use aws_sdk_dynamodb::types::{CreateReplicationGroupMemberAction, ReplicationGroupUpdate};
    let base = sdk_config().await;
    let config_in = |region: &'static str| {
        base.to_builder()
            .region(aws_config::Region::new(region))
            .build()
    };
    let (us, eu) = (Clients::new(&config_in(US)), Clients::new(&config_in(EU)));
    let table = unique("global");
    let us_stream =
        provision::create_outbox_table_keyed(&us.dynamodb, &table, &KeyNames::default())
            .await
            .expect("create table");
    us.dynamodb
        .update_table()
        .table_name(&table)
        .replica_updates(
            ReplicationGroupUpdate::builder()
                .create(
                    CreateReplicationGroupMemberAction::builder()
                        .region_name(EU)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .expect("create the eu-west-1 replica");
    let eu_stream = StreamReader::stream_arn_of(&eu.dynamodb, &table)
        .await
        .expect("the replica's stream");
    assert_ne!(us_stream, eu_stream, "each replica has its own stream");
    let region = |name: &'static str, clients: Clients, keys: KeyNames, stream: String| {
        let table = table.clone();
        async move {
            let queue =
                provision::create_queue(&clients.sqs, &unique(&format!("orders-{name}")), 30)
                    .await
                    .expect("create queue");
            let dlq = provision::create_queue(&clients.sqs, &unique(&format!("dlq-{name}")), 30)
                .await
                .expect("create dlq");
            let reader = StreamReader::new(clients.streams.clone(), stream, name);
            Region {
                name,
                clients,
                table,
                keys,
                reader,
                queue,
                dlq,
            }
        }
    };
    (
        region(US, us, us_keys, us_stream).await,
        region(EU, eu, eu_keys, eu_stream).await,
    )
}

/// Both regions' stream publishers on everything new in their own replica's stream,
/// concurrently (events read first); returns how many inserts each stream carried.
async fn publish_both(us: &mut Region, eu: &mut Region) -> (usize, usize) {
    let us_event = us
        .reader
        .next_event(1000)
        .await
        .expect("read us-east-1's stream");
    let eu_event = eu
        .reader
        .next_event(1000)
        .await
        .expect("read eu-west-1's stream");
    let inserts = |e: &aws_lambda_events::event::dynamodb::Event| {
        e.records
            .iter()
            .filter(|r| r.event_name == "INSERT")
            .count()
    };
    let (us_pub, eu_pub) = (us.publisher(), eu.publisher());
    let ((us_resp, _), (eu_resp, _)) = tokio::join!(
        handle_stream_event(&us_pub, &us_event),
        handle_stream_event(&eu_pub, &eu_event)
    );
    assert!(us_resp.batch_item_failures.is_empty(), "{us_resp:?}");
    assert!(eu_resp.batch_item_failures.is_empty(), "{eu_resp:?}");
    (inserts(&us_event), inserts(&eu_event))
}

/// Every message each region's queue received: by message name, the regions that
/// published it (one entry per copy), and each name's one `outbox-message-id`.
async fn published_by_name(us: &Region, eu: &Region) -> BTreeMap<String, Vec<&'static str>> {
    let mut by_name: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    let mut ids: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for region in [us, eu] {
        for (id, name) in region.published().await {
            by_name.entry(name.clone()).or_default().push(region.name);
            ids.entry(name).or_default().insert(id);
        }
    }
    for (name, ids) in &ids {
        assert_eq!(ids.len(), 1, "{name}: one outbox-message-id, got {ids:?}");
    }
    by_name
}

fn count_in(by_name: &BTreeMap<String, Vec<&'static str>>, region: &str) -> usize {
    by_name.values().flatten().filter(|r| **r == region).count()
}

fn duplicates(by_name: &BTreeMap<String, Vec<&'static str>>) -> usize {
    by_name.values().filter(|regions| regions.len() > 1).count()
}

/// The mixed workload: library producers in both regions, a minimal producer in
/// eu-west-1. Returns the names committed, and of them those homed in us-east-1 (its
/// own and the minimal ones, whose default home it is).
async fn mixed_workload(us: &Region, eu: &Region) -> (Vec<String>, HashSet<String>) {
    let committed_us = us.commit("us", 30).await;
    let committed_eu = eu.commit("eu", 30).await;
    let minimal_eu = eu.put_minimal("min-eu", 10, None).await;
    let homed_us: HashSet<String> = committed_us.iter().chain(&minimal_eu).cloned().collect();
    let all = [committed_us, committed_eu, minimal_eu].concat();
    (all, homed_us)
}

#[tokio::test]
async fn a_mixed_workload_in_two_regions_is_published_once_across_both() {
    if !global_tables_supported("a_mixed_workload_in_two_regions_is_published_once_across_both") {
        return;
    }
    // Given a global table, the outbox deployed in both regions, and messages
    // committed in both (library producers, and a minimal producer in eu-west-1)
    let (mut us, mut eu) = global_outbox(Region::keys_in(US), Region::keys_in(EU)).await;
    let (all, homed_us) = mixed_workload(&us, &eu).await;
    // When each region's publisher handles its own replica's stream
    let (us_inserts, eu_inserts) = publish_both(&mut us, &mut eu).await;
    // Then both streams carried every insert (the replicated ones too)
    assert_eq!((us_inserts, eu_inserts), (all.len(), all.len()));
    // and every message was published exactly once, by its home region
    let by_name = published_by_name(&us, &eu).await;
    let (in_us, in_eu) = (count_in(&by_name, US), count_in(&by_name, EU));
    println!(
        "global, mixed workload of {}: published by us-east-1 {in_us}, by eu-west-1 {in_eu}, \
         total {}, published twice: {}",
        all.len(),
        in_us + in_eu,
        duplicates(&by_name)
    );
    for name in &all {
        let want = if homed_us.contains(name) { US } else { EU };
        assert_eq!(by_name.get(name), Some(&vec![want]), "{name}");
    }
    assert_eq!(by_name.len(), all.len());
    assert_eq!((in_us, in_eu), (homed_us.len(), all.len() - homed_us.len()));
    // and each replica has every message SENT (the marks replicated both ways)
    for name in &all {
        assert_eq!(
            us.status_here(name).await.as_deref(),
            Some("SENT"),
            "{name} in us-east-1"
        );
        assert_eq!(
            eu.status_here(name).await.as_deref(),
            Some("SENT"),
            "{name} in eu-west-1"
        );
    }
}

#[tokio::test]
async fn a_publisher_that_owns_every_region_publishes_the_others_messages_again() {
    if !global_tables_supported(
        "a_publisher_that_owns_every_region_publishes_the_others_messages_again",
    ) {
        return;
    }
    // Given the same workload, with eu-west-1's publisher configured without home
    // regions (the "publish on every replica" mutant)
    let (mut us, mut eu) = global_outbox(Region::keys_in(US), KeyNames::default()).await;
    let (all, homed_us) = mixed_workload(&us, &eu).await;
    publish_both(&mut us, &mut eu).await;
    // Then eu-west-1 published us-east-1's messages too: duplicates
    let by_name = published_by_name(&us, &eu).await;
    let twice = duplicates(&by_name);
    println!(
        "global, eu-west-1 owning every region: published by us-east-1 {}, by eu-west-1 {}, \
         published twice: {twice} (of {} homed in us-east-1)",
        count_in(&by_name, US),
        count_in(&by_name, EU),
        homed_us.len()
    );
    assert!(twice > 0, "the mutant must publish some message twice");
    assert!(
        by_name.keys().all(|n| all.contains(n)),
        "only committed messages are published"
    );
}

#[tokio::test]
async fn a_failover_publishes_the_failed_regions_pending_messages_once_and_a_failback_returns_them()
{
    if !global_tables_supported("a_failover_publishes_the_failed_regions_pending_messages_once") {
        return;
    }
    let (mut us, eu) = global_outbox(Region::keys_in(US), Region::keys_in(EU)).await;
    let later = || now_ms() + Duration::from_secs(600).as_millis() as i64;
    // Given messages us-east-1 published and marked SENT before it went down
    let sent_before = us.commit("sent-before", 10).await;
    let event = us
        .reader
        .next_event(1000)
        .await
        .expect("read us-east-1's stream");
    let (resp, summary) = handle_stream_event(&us.publisher(), &event).await;
    assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
    assert_eq!(summary.sent, sent_before.len());
    let before: Vec<String> = us.published().await.into_iter().map(|(_, n)| n).collect();
    assert_eq!(before.len(), sent_before.len());
    // (marked with PartiQL in us-east-1, the marks replicated to eu-west-1)
    for name in &sent_before {
        assert_eq!(
            eu.status_here(name).await.as_deref(),
            Some("SENT"),
            "{name}"
        );
    }
    // and messages committed in us-east-1 that it never published (its publisher and
    // sweeper not run from here on: the region is down), library producers' and a
    // minimal producer's in the sweeper index (no HomeRegion: the default home's)
    let pending = [
        us.commit("pending", 20).await,
        us.put_minimal("pending-min", 5, Some(now_ms())).await,
    ]
    .concat();
    // When eu-west-1 takes over us-east-1's messages
    let table = outbox_ops::Table::new(&eu.table).key_names(eu.keys.clone());
    let failover = Rehome::Failover {
        from: US.to_owned(),
        to: EU.to_owned(),
        from_is_default_home: true,
    };
    let report = rehome(&eu.clients.dynamodb, &table, &failover, now_ms())
        .await
        .expect("failover");
    assert_eq!(report.moved.len(), pending.len(), "{report:?}");
    // and its sweeper runs
    let swept = eu.sweep_all(later()).await;
    // Then every one of them was published once, by eu-west-1, and none us-east-1 had
    // published before
    let by_name = published_by_name(&us, &eu).await;
    println!(
        "global, failover: {} pending in us-east-1 re-homed, published by eu-west-1 {}, by \
         us-east-1 {}, published twice: {}, published again of the {} sent before: {}",
        report.moved.len(),
        count_in(&by_name, EU),
        count_in(&by_name, US),
        duplicates(&by_name),
        sent_before.len(),
        sent_before
            .iter()
            .filter(|n| by_name.contains_key(*n))
            .count()
    );
    assert_eq!(swept, pending.len());
    for name in &pending {
        assert_eq!(by_name.get(name), Some(&vec![EU]), "{name}");
    }
    assert_eq!(by_name.len(), pending.len(), "nothing else: {by_name:?}");

    // Given more messages committed in us-east-1 while it is down, failed over to
    // eu-west-1 but not swept there yet
    let returning = us.commit("returning", 10).await;
    let report = rehome(&eu.clients.dynamodb, &table, &failover, now_ms())
        .await
        .expect("second failover");
    assert_eq!(report.moved.len(), returning.len(), "{report:?}");
    // and us-east-1, back, whose mapping replays the outage's stream records before the
    // failback (their images still name it home): it publishes none of them — those
    // eu-west-1 finished are settled, those eu-west-1 owns now are reported for retry
    // (the status read reads the current home; it published all ten before)
    let replay = us
        .reader
        .next_event(1000)
        .await
        .expect("read us-east-1's stream");
    let (resp, summary) = handle_stream_event(&us.publisher(), &replay).await;
    assert_eq!(summary.sent, 0, "{summary:?}");
    assert!(
        !resp.batch_item_failures.is_empty(),
        "the re-homed ones wait: {resp:?}"
    );
    // When us-east-1 is back and they are failed back (from eu-west-1, where they were
    // failed over)
    let failback = Rehome::Failback {
        to: US.to_owned(),
        grace: Duration::from_secs(60),
        // No sweep runs beside this test's failback: nothing to wait for.
        settle: Duration::ZERO,
    };
    let report = rehome(&eu.clients.dynamodb, &table, &failback, now_ms())
        .await
        .expect("failback");
    assert_eq!(report.moved.len(), returning.len(), "{report:?}");
    // Then us-east-1's sweeper leaves them to the replay for the grace (due at once, a
    // sweep racing the replay published each twice on the deployed stack), the replay
    // retried publishes each, and neither sweeper finds anything left
    assert_eq!(us.sweep_all(now_ms()).await, 0, "due only after the grace");
    let (_, summary) = handle_stream_event(&us.publisher(), &replay).await;
    assert_eq!(summary.sent, returning.len(), "{summary:?}");
    assert_eq!(eu.sweep_all(later()).await, 0);
    assert_eq!(us.sweep_all(later()).await, 0);
    let by_name = published_by_name(&us, &eu).await;
    println!(
        "global, failback: {} returned to us-east-1, published by us-east-1 {}, by eu-west-1 {}, \
         published twice: {}",
        report.moved.len(),
        count_in(&by_name, US),
        count_in(&by_name, EU),
        duplicates(&by_name)
    );
    for name in &returning {
        assert_eq!(by_name.get(name), Some(&vec![US]), "{name}");
    }
    assert_eq!(by_name.len(), returning.len(), "nothing else: {by_name:?}");
}

/// The key of the one outbox item of the message named `name`, as `region` reads it.
async fn outbox_key(region: &Region, name: &str) -> (String, String) {
    let pk = format!("ORDER#{name}");
    let out = region
        .clients
        .dynamodb
        .query()
        .table_name(&region.table)
        .key_condition_expression("PK = :pk")
        .expression_attribute_values(":pk", outbox_tests::sv(&pk))
        .consistent_read(true)
        .send()
        .await
        .expect("query");
    let sk = out
        .items()
        .iter()
        .find_map(|i| s(i, "SK"))
        .expect("an item");
    (pk, sk)
}

/// Sets `assignment` (`SweepDueAt = :v` or `Status = :v`) on the item, as a sweep's
/// claim or its `SENT` mark would.
async fn set(region: &Region, key: &(String, String), name: &str, value: AttributeValue) {
    region
        .clients
        .dynamodb
        .update_item()
        .table_name(&region.table)
        .key("PK", outbox_tests::sv(&key.0))
        .key("SK", outbox_tests::sv(&key.1))
        .update_expression("SET #a = :v")
        .expression_attribute_names("#a", name)
        .expression_attribute_values(":v", value)
        .send()
        .await
        .expect("update");
}

#[tokio::test]
async fn a_failback_leaves_a_message_a_sweep_still_holds_whatever_the_operators_clock() {
    if !global_tables_supported("a_failback_leaves_a_message_a_sweep_still_holds") {
        return;
    }
    let (us, eu) = global_outbox(Region::keys_in(US), Region::keys_in(EU)).await;
    // Given a message of us-east-1 failed over to eu-west-1, whose sweep claimed it
    // (its due time moved to the end of the lease) and is publishing it
    let names = us.commit("held", 1).await;
    let table = outbox_ops::Table::new(&eu.table).key_names(eu.keys.clone());
    let failover = Rehome::Failover {
        from: US.to_owned(),
        to: EU.to_owned(),
        from_is_default_home: true,
    };
    let moved = rehome(&eu.clients.dynamodb, &table, &failover, now_ms())
        .await
        .expect("failover");
    assert_eq!(moved.moved.len(), 1, "{moved:?}");
    let key = outbox_key(&eu, &names[0]).await;
    let lease = now_ms() + 120_000;
    set(
        &eu,
        &key,
        "SweepDueAt",
        AttributeValue::N(lease.to_string()),
    )
    .await;
    // When an operator whose clock is an hour ahead fails us-east-1 back while the sweep
    // finishes (marks it SENT three seconds later: after the failback's reads, within
    // its settle)
    let operator_now = now_ms() + 3_600_000;
    let failback = Rehome::Failback {
        to: US.to_owned(),
        grace: Duration::from_secs(60),
        settle: Duration::from_secs(6),
    };
    let (report, ()) = tokio::join!(
        rehome(&eu.clients.dynamodb, &table, &failback, operator_now),
        async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            set(&eu, &key, "Status", outbox_tests::sv("SENT")).await;
        }
    );
    // Then the failback takes nothing: comparing the lease with its clock, it took the
    // message the sweep was publishing and us-east-1 would have published it too
    // (issue 36, finding 7)
    let report = report.expect("failback");
    assert!(report.moved.is_empty(), "{report:?}");
    assert_eq!(eu.status_here(&names[0]).await.as_deref(), Some("SENT"));
}

#[tokio::test]
async fn a_failover_takes_the_failed_regions_messages_whose_home_is_null_empty_or_padded() {
    if !global_tables_supported("a_failover_takes_the_failed_regions_messages_whose_home_is_odd") {
        return;
    }
    let (us, eu) = global_outbox(Region::keys_in(US), Region::keys_in(EU)).await;
    // Given us-east-1's pending messages (it is the default home) whose HomeRegion a
    // hand-written producer wrote as boto3's None, empty, and padded
    let homes = [
        ("null", AttributeValue::Null(true)),
        ("empty", outbox_tests::sv("")),
        ("padded", outbox_tests::sv(" us-east-1 ")),
    ];
    for (name, home) in &homes {
        let mut item = indexed_item(
            &format!("ORDER#odd-{name}"),
            &format!("OUTBOX#odd-{name}"),
            "orders",
            &payload(&format!("odd-{name}")),
            now_ms(),
        );
        item.insert("HomeRegion".to_owned(), home.clone());
        us.clients
            .dynamodb
            .put_item()
            .table_name(&us.table)
            .set_item(Some(item))
            .send()
            .await
            .expect("put");
    }
    // When eu-west-1 takes over us-east-1's messages
    let table = outbox_ops::Table::new(&eu.table).key_names(eu.keys.clone());
    let failover = Rehome::Failover {
        from: US.to_owned(),
        to: EU.to_owned(),
        from_is_default_home: true,
    };
    let report = rehome(&eu.clients.dynamodb, &table, &failover, now_ms())
        .await
        .expect("failover");
    // Then it takes all three (the condition refused them; they waited for a region
    // that was down), and eu-west-1's sweeper publishes them
    assert_eq!(report.moved.len(), homes.len(), "{report:?}");
    assert_eq!(eu.sweep_all(now_ms() + 600_000).await, homes.len());
}
