use super::*;
use aws_sdk_dynamodb::types::AttributeValue;

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

#[test]
fn a_placeholder_is_no_outbox_item_so_the_publisher_filter_drops_its_insert() {
    let place = placeholder("r1", 7);
    let (pk, sk) = key_of("r1", 7);
    assert_eq!(text(&place, "PK"), Some(pk.as_str()));
    assert_eq!(text(&place, "SK"), Some(sk.as_str()));
    assert!(!place.contains_key("ItemType") && !place.contains_key("Status"));
}

#[test]
fn a_backlog_item_is_pending_indexed_in_its_aggregates_shard_and_due() {
    let shards = SweepShards::new(32).unwrap_or_default();
    let item = pending("r1", 7, "orders", &shards, 1_700_000_000_000);
    let (pk, sk) = key_of("r1", 7);
    assert_eq!(text(&item, "SK"), Some(sk.as_str()));
    assert_eq!(text(&item, "ItemType"), Some("PENDING_MESSAGE"));
    assert_eq!(text(&item, "Status"), Some("PENDING"));
    assert_eq!(text(&item, "Topic"), Some("orders"));
    assert_eq!(
        text(&item, "SweepShard"),
        Some(shards.shard_of(&pk).as_str())
    );
    assert!(matches!(item.get("SweepDueAt"), Some(AttributeValue::N(n)) if n == "1700000000000"));
    assert!(matches!(item.get("RetryCount"), Some(AttributeValue::N(n)) if n == "0"));
    // What the sweeper itself takes for an indexed item.
    let decoded =
        dynamodb_outbox_core::schema::decode(&serde_dynamo::Item::from(item.clone()), None);
    assert!(decoded.is_ok_and(|i| i.indexed(&shards)));
}

#[test]
fn backlog_keys_are_distinct_and_spread_over_the_shards() {
    let shards = SweepShards::default();
    let keys: std::collections::BTreeSet<_> = (0..2_000).map(|i| key_of("r", i)).collect();
    assert_eq!(keys.len(), 2_000);
    let used: std::collections::BTreeSet<_> =
        keys.iter().map(|(pk, _)| shards.shard_of(pk)).collect();
    assert_eq!(used.len(), shards.all().len());
}

#[test]
fn a_single_worker_sweeps_everything_and_several_name_their_group() {
    assert_eq!(payload(0, 1), serde_json::json!({}));
    assert_eq!(
        payload(2, 4),
        serde_json::json!({"sweepGroup": 2, "sweepGroups": 4})
    );
}

#[test]
fn summary_counts_are_read_from_the_sweepers_response() {
    let response = serde_json::json!({"found": 100, "marked": 98});
    assert_eq!(summary_count(&response, "marked"), 98);
    assert_eq!(summary_count(&serde_json::Value::Null, "marked"), 0);
}

fn report(sent: usize, left: usize) -> DrainReport {
    DrainReport {
        items: 100,
        timeline: Timeline {
            no_due_seconds: 4.0,
            left_then: 2,
            empty_seconds: 8.0,
        },
        left,
        invocations: Invocations {
            marked: 98,
            index_read: 120,
            ..Invocations::default()
        },
        statuses: HashMap::from([("SENT".to_owned(), sent), ("FAILED".to_owned(), 100 - sent)]),
        raw: Some((
            RawReads {
                readers: 16,
                items: 800,
                seconds: 2.0,
                ..RawReads::default()
            },
            RawReads::default(),
        )),
        ..DrainReport::default()
    }
}

#[test]
fn the_drain_rate_is_printed_beside_the_raw_rate_and_the_end_counts_sent_items() {
    let r = report(98, 0);
    assert_eq!(r.drain_rate(), 24.5);
    assert_eq!(r.overall_rate(), 12.25);
    assert!(!r.drained());
    let text = r.render();
    assert!(
        text.contains("drain rate / raw GetItem rate: 0.061"),
        "{text}"
    );
    assert!(text.contains("raw index Query rate: none"), "{text}");
    assert!(text.contains("98 of 100 SENT, 2 FAILED"), "{text}");
    assert!(
        text.contains("120 index items read, 1.224 per item marked"),
        "{text}"
    );
    assert!(report(100, 0).drained());
    assert!(!report(100, 3).drained());
}

#[test]
fn sweeps_and_their_marks_are_counted_from_the_sweepers_log() {
    let lines = [
        "START RequestId: a",
        " INFO invoke: sweep done found=10 claimed=10 published=10 marked=9 failed=0",
        " INFO invoke: sweep done found=0 claimed=0 marked=0",
        "REPORT RequestId: a",
    ];
    assert_eq!(sweeps_in_log(lines), (2, 9));
}
