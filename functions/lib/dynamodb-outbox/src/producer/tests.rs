//! The producer's transactions as built: the schema, ids, the limits, the large-payload offload.

use super::check::item_size;
use super::*;
use dynamodb_outbox_core::__private::schema::{
    CREATED_AT, ITEM_TYPE, SK, STATUS, SWEEP_DUE_AT, SWEEP_SHARD,
};
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::large_payload::PayloadPointer;
use dynamodb_outbox_core::producer::MAX_ITEM_BYTES;

fn writer() -> OutboxWriter {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .build();
    OutboxWriter::new(aws_sdk_dynamodb::Client::from_conf(conf), "outbox")
        .key_schema("orders", &["id"])
}

fn put(table: &str, item: &[(&str, &str)]) -> TransactWriteItem {
    let p = Put::builder()
        .table_name(table)
        .set_item(Some(
            item.iter()
                .map(|(k, v)| ((*k).to_owned(), AttributeValue::S((*v).to_owned())))
                .collect(),
        ))
        .build()
        .expect("valid put");
    TransactWriteItem::builder().put(p).build()
}

#[test]
fn message_items_follow_the_schema() {
    let prepared = writer()
        .prepare_at(
            vec![],
            &[NewMessage::new("USER#1", "orders", "{}").event_type("CREATED")],
            1_000,
        )
        .expect("valid");
    let committed = prepared.committed();
    let item = prepared.actions()[0].put.as_ref().expect("a put").item();
    assert_eq!(
        item.get(ITEM_TYPE),
        Some(&AttributeValue::S("PENDING_MESSAGE".into()))
    );
    assert_eq!(item.get(STATUS), Some(&AttributeValue::S("PENDING".into())));
    assert_eq!(
        item.get(CREATED_AT),
        Some(&AttributeValue::N("1000".into()))
    );
    assert_eq!(
        (item.get(SWEEP_SHARD), item.get(SWEEP_DUE_AT)),
        (None, None),
        "by default a message never enters the sparse sweeper index at commit"
    );
    let sk = format!("MESSAGE#CREATED#{}", committed.message_ids[0]);
    assert_eq!(item.get(SK), Some(&AttributeValue::S(sk)));
}

#[test]
fn a_writer_indexing_at_commit_puts_every_message_in_its_shard_due_after_the_grace() {
    let layout = SweepShards::new(64).expect("64 shards");
    let msgs = [
        NewMessage::new("USER#1", "orders", "{}"),
        NewMessage::new("USER#2", "orders", "{}").sequence(3),
    ];
    let prepared = writer()
        .sweep_shards(layout)
        .index_at_commit(true)
        .sweep_grace(Duration::from_secs(5))
        .prepare_at(vec![], &msgs, 1_000)
        .expect("valid");
    for (action, pk) in prepared.actions().iter().zip(["USER#1", "USER#2"]) {
        let item = action.put.as_ref().expect("a put").item();
        assert_eq!(
            item.get(SWEEP_SHARD),
            Some(&AttributeValue::S(layout.shard_of(pk)))
        );
        assert_eq!(
            item.get(SWEEP_DUE_AT),
            Some(&AttributeValue::N("6000".into()))
        );
    }
}

#[test]
fn two_messages_in_one_millisecond_get_distinct_time_ordered_ids() {
    let msgs: Vec<NewMessage> = (0..50)
        .map(|i| NewMessage::new("A", "t", i.to_string()))
        .collect();
    let prepared = writer().prepare_at(vec![], &msgs, 5).expect("valid");
    let committed = prepared.committed();
    let mut sorted = committed.message_ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 50);
    assert_eq!(
        sorted, committed.message_ids,
        "v7 ids sort in creation order"
    );
}

#[test]
fn each_message_names_the_one_before_it_of_its_aggregate_in_the_transaction() {
    let msgs = [
        NewMessage::new("A", "ledger", "a1"),
        NewMessage::new("B", "ledger", "b1"),
        NewMessage::new("A", "ledger", "a2"),
        NewMessage::new("A", "ledger", "a3"),
    ];
    let prepared = writer().prepare_at(vec![], &msgs, 5).expect("valid");
    let sks = &prepared.committed().sort_keys;
    let follows: Vec<Option<&AttributeValue>> = prepared
        .actions()
        .iter()
        .map(|a| a.put.as_ref().expect("a put").item().get("Follows"))
        .collect();
    let s = |i: usize| AttributeValue::S(sks[i].clone());
    assert_eq!(follows, [None, None, Some(&s(0)), Some(&s(2))]);
}

#[test]
fn sequenced_messages_get_keys_in_commit_order_with_their_place_in_the_transaction() {
    let msgs = [
        NewMessage::new("A", "ledger", "a1")
            .event_type("Placed")
            .sequence(7),
        NewMessage::new("B", "ledger", "b1").sequence(3),
        NewMessage::new("A", "ledger", "a2")
            .event_type("Paid")
            .sequence(7),
    ];
    let prepared = writer().prepare_at(vec![], &msgs, 5).expect("valid");
    let (sks, ids) = (
        &prepared.committed().sort_keys,
        &prepared.committed().message_ids,
    );
    assert_eq!(
        sks,
        &[
            format!("MESSAGE#SEQ#00000000000000000007#00#Placed#{}", ids[0]),
            format!("MESSAGE#SEQ#00000000000000000003#00#ledger#{}", ids[1]),
            format!("MESSAGE#SEQ#00000000000000000007#01#Paid#{}", ids[2]),
        ]
    );
}

#[test]
fn a_message_without_a_sequence_may_not_take_the_reserved_event_name() {
    let msgs = [NewMessage::new("A", "ledger", "{}").event_type("SEQ")];
    let err = writer().prepare_at(vec![], &msgs, 5).expect_err("reserved");
    assert!(err.to_string().contains("is reserved"), "{err}");
    let sequenced = [NewMessage::new("A", "ledger", "{}")
        .event_type("SEQ")
        .sequence(1)];
    assert!(writer().prepare_at(vec![], &sequenced, 5).is_ok());
}

#[test]
fn refuses_more_than_100_actions() {
    let business: Vec<_> = (0..99)
        .map(|i| put("orders", &[("id", &i.to_string())]))
        .collect();
    let err = writer()
        .prepare_at(
            business,
            &[
                NewMessage::new("A", "t", "{}"),
                NewMessage::new("A", "t", "{}"),
            ],
            0,
        )
        .expect_err("101 actions");
    assert!(
        matches!(err, ProducerError::TooManyActions { count: 101 }),
        "{err}"
    );
}

#[test]
fn refuses_an_item_over_400_kb_naming_the_action() {
    let big = "x".repeat(MAX_ITEM_BYTES);
    let err = writer()
        .prepare_at(vec![], &[NewMessage::new("A", "orders", big)], 0)
        .expect_err("too big");
    match err {
        ProducerError::ItemTooLarge { index, action, .. } => {
            assert_eq!(index, 0);
            assert!(action.contains("orders"), "{action}");
        }
        other => panic!("unexpected {other}"),
    }
}

fn s3() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

#[test]
fn with_a_bucket_a_payload_an_item_cannot_hold_is_committed_as_a_pointer() {
    let big = "x".repeat(MAX_ITEM_BYTES);
    let writer = writer().large_payloads(s3(), "large");
    let prepared = writer
        .prepare_at(
            vec![],
            &[
                NewMessage::new("A", "orders", big),
                NewMessage::new("A", "orders", "{}"),
            ],
            0,
        )
        .expect("offloaded");
    let id = &prepared.committed().message_ids[0];
    let pointer = PayloadPointer::for_message("large", id);
    assert_eq!(prepared.offloaded(), [&pointer]);
    let payload = |i: usize| {
        prepared.actions()[i].put.as_ref().and_then(|p| {
            p.item()
                .get(dynamodb_outbox_core::__private::schema::PAYLOAD)
                .cloned()
        })
    };
    assert_eq!(payload(0), Some(AttributeValue::S(pointer.encode())));
    let size = prepared.actions()[0].put.as_ref().and_then(|p| {
        p.item()
            .get(dynamodb_outbox_core::__private::schema::PAYLOAD_SIZE)
            .cloned()
    });
    assert_eq!(size, Some(AttributeValue::N(MAX_ITEM_BYTES.to_string())));
    assert_eq!(payload(1), Some(AttributeValue::S("{}".into())));
    let debug = format!("{prepared:?}");
    assert!(
        debug.contains("bytes: 409600"),
        "sizes, not payloads: {debug}"
    );
}

#[test]
fn above_the_threshold_a_payload_that_fits_goes_to_s3_too() {
    let writer = writer()
        .large_payloads(s3(), "large")
        .large_payload_threshold(100);
    let prepared = writer
        .prepare_at(
            vec![],
            &[NewMessage::new("A", "orders", "y".repeat(101))],
            0,
        )
        .expect("valid");
    assert_eq!(prepared.offloaded().len(), 1);
    let prepared = writer
        .prepare_at(
            vec![],
            &[NewMessage::new("A", "orders", "y".repeat(100))],
            0,
        )
        .expect("valid");
    assert!(prepared.offloaded().is_empty());
}

#[test]
fn refuses_over_4_mb_in_total() {
    let chunk = "x".repeat(300 * 1024);
    let msgs: Vec<NewMessage> = (0..14)
        .map(|_| NewMessage::new("A", "t", chunk.clone()))
        .collect();
    let err = writer()
        .prepare_at(vec![], &msgs, 0)
        .expect_err("over 4 MB");
    assert!(
        matches!(err, ProducerError::TransactionTooLarge { .. }),
        "{err}"
    );
}

#[test]
fn refuses_two_actions_on_one_item() {
    let err = writer()
        .prepare_at(
            vec![
                put("orders", &[("id", "1"), ("x", "a")]),
                put("orders", &[("id", "1"), ("x", "b")]),
            ],
            &[NewMessage::new("A", "t", "{}")],
            0,
        )
        .expect_err("same item twice");
    assert!(
        matches!(
            err,
            ProducerError::DuplicateItem {
                first: 0,
                second: 1,
                ..
            }
        ),
        "{err}"
    );
    // Different keys in a table of known schema are fine.
    writer()
        .prepare_at(
            vec![put("orders", &[("id", "1")]), put("orders", &[("id", "2")])],
            &[NewMessage::new("A", "t", "{}")],
            0,
        )
        .expect("distinct items");
}

#[test]
fn refuses_empty_topic_and_no_messages() {
    assert!(matches!(
        writer().prepare_at(vec![], &[], 0),
        Err(ProducerError::NoMessages)
    ));
    assert!(matches!(
        writer().prepare_at(vec![], &[NewMessage::new("A", " ", "{}")], 0),
        Err(ProducerError::InvalidMessage { index: 0, .. })
    ));
}

#[test]
fn item_size_counts_names_and_values() {
    let item = HashMap::from([
        ("ab".to_owned(), AttributeValue::S("xyz".into())),
        ("n".to_owned(), AttributeValue::N("12345".into())),
    ]);
    assert_eq!(item_size(&item), 2 + 3 + 1 + 4);
}

#[test]
fn a_message_keeps_its_own_trace_and_one_without_takes_the_invocations() {
    use dynamodb_outbox_core::trace::{AWS_TRACE_HEADER, TRACE_PARENT, TraceContext};
    let invocation = TraceContext::from_xray(
        "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1",
    )
    .expect("context");
    let own = TraceContext::from_w3c(
        "00-11111111111111111111111111111111-2222222222222222-01",
        None,
    )
    .expect("context");
    let messages = [
        NewMessage::new("USER#1", "orders", "{}").trace(own.clone()),
        NewMessage::new("USER#2", "orders", "{}"),
    ];
    let prepared = writer()
        .prepare_under(vec![], &messages, 1_000, Some(&invocation))
        .expect("valid");
    let attr = |i: usize, name: &str| {
        prepared.actions()[i]
            .put()
            .and_then(|p| p.item().get(name))
            .and_then(|v| v.as_s().ok())
            .cloned()
    };
    assert_eq!(attr(0, TRACE_PARENT).as_deref(), Some(own.traceparent()));
    assert_eq!(attr(0, AWS_TRACE_HEADER), Some(own.xray_header()));
    assert_eq!(
        attr(1, TRACE_PARENT).as_deref(),
        Some(invocation.traceparent())
    );
    assert_eq!(attr(1, AWS_TRACE_HEADER), Some(invocation.xray_header()));
    // No invocation, no trace: none is invented.
    let untraced = writer()
        .prepare_under(vec![], &messages[1..], 1_000, None)
        .expect("valid");
    let item = untraced.actions()[0]
        .put()
        .map(|p| p.item().clone())
        .unwrap_or_default();
    assert!(!item.contains_key(TRACE_PARENT) && !item.contains_key(AWS_TRACE_HEADER));
}

/// With the `opentelemetry` feature, a message committed inside a span carries that
/// span's context — ahead of the Lambda invocation's — and outside one, none.
#[cfg(feature = "opentelemetry")]
#[test]
fn a_message_committed_inside_an_opentelemetry_span_carries_its_context() {
    use dynamodb_outbox_core::trace::{TRACE_PARENT, TraceContext};
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::layer::SubscriberExt;

    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("producer-test"));
    let _installed = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let traceparent = |prepared: &PreparedCommit| {
        prepared.actions()[0]
            .put()
            .and_then(|p| p.item().get(TRACE_PARENT))
            .and_then(|v| v.as_s().ok())
            .cloned()
    };
    let message = [NewMessage::new("USER#1", "orders", "{}")];

    let span = tracing::info_span!("place order");
    let expected = TraceContext::from_span_context(span.context().span().span_context())
        .expect("the layer gives the span a context");
    let prepared = span
        .in_scope(|| writer().prepare_at(vec![], &message, 1_000))
        .expect("valid");
    assert_eq!(
        traceparent(&prepared).as_deref(),
        Some(expected.traceparent())
    );

    let outside = writer()
        .capture_lambda_trace(false)
        .prepare_at(vec![], &message, 1_000)
        .expect("valid");
    assert_eq!(traceparent(&outside), None, "no span, no context invented");
}

/// Each message names the region it was committed in, the replica its client writes
/// to, as its home (docs/global-tables.md); a writer told none writes none.
#[test]
fn a_message_is_homed_in_the_region_its_transaction_commits_in() {
    use dynamodb_outbox_core::home::HOME_REGION;
    let client = |region: Option<&'static str>| {
        let mut conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest());
        conf.set_region(region.map(aws_sdk_dynamodb::config::Region::from_static));
        let conf = conf.build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    };
    let home = |writer: OutboxWriter| {
        let prepared = writer
            .prepare_at(vec![], &[NewMessage::new("USER#1", "orders", "{}")], 1_000)
            .expect("valid");
        prepared.actions()[0]
            .put()
            .and_then(|p| p.item().get(HOME_REGION))
            .and_then(|v| v.as_s().ok())
            .cloned()
    };
    let in_eu = OutboxWriter::new(client(Some("eu-west-1")), "outbox");
    assert_eq!(home(in_eu.clone()).as_deref(), Some("eu-west-1"));
    assert_eq!(home(in_eu.home_region(None)), None);
    assert_eq!(home(OutboxWriter::new(client(None), "outbox")), None);
}

#[test]
fn a_home_region_the_stream_filter_would_not_match_is_refused_naming_it() {
    let writer = OutboxWriter::new(
        aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .build(),
        ),
        "outbox",
    );
    for bad in ["", " us-east-1 ", "eu-west-1\n"] {
        let err = writer
            .clone()
            .home_region(Some(bad.to_owned()))
            .prepare_at(vec![], &[NewMessage::new("USER#1", "orders", "{}")], 1_000)
            .expect_err("refused");
        assert!(
            matches!(&err, ProducerError::InvalidHomeRegion(h) if h == bad),
            "{bad:?}: {err}"
        );
        assert!(err.to_string().contains("not a region name"), "{err}");
    }
    assert!(
        writer
            .home_region(Some("eu-west-1".to_owned()))
            .prepare_at(vec![], &[NewMessage::new("USER#1", "orders", "{}")], 1_000)
            .is_ok()
    );
}
