//! Parsing routes: destinations, limits, sources, the large-payload offload's buckets.

use super::*;

#[test]
fn parses_plain_and_detailed_routes_and_default() {
    let routes = Routes::parse(
        r#"{"orders":"https://sqs.x/1/orders.fifo","mail":{"destination":"https://sqs.x/1/mail","max_message_bytes":262144}}"#,
        Some("https://sqs.x/1/other"),
    )
    .expect("valid");
    let orders = routes.resolve("orders").expect("routed");
    assert!(orders.is_fifo());
    assert_eq!(
        routes.resolve("mail").expect("routed").max_message_bytes(),
        262_144
    );
    assert_eq!(
        routes.resolve("anything"),
        Some(&Destination::sqs("https://sqs.x/1/other"))
    );
}

#[test]
fn parses_sns_topics_and_eventbridge_buses() {
    let routes = Routes::parse(
        r#"{"a":"arn:aws:sns:eu-west-1:123456789012:orders","b":"arn:aws:sns:eu-west-1:123456789012:ledger.fifo","c":{"destination":"arn:aws:events:eu-west-1:123456789012:event-bus/shop","source":"shop.orders"}}"#,
        None,
    )
    .expect("valid");
    assert!(matches!(routes.resolve("a"), Some(Destination::Sns { .. })));
    assert!(!routes.resolve("a").expect("a").is_fifo());
    assert!(routes.resolve("b").expect("b").is_fifo());
    assert_eq!(
        routes.resolve("c"),
        Some(&Destination::EventBridge {
            bus: "arn:aws:events:eu-west-1:123456789012:event-bus/shop".into(),
            source: "shop.orders".into()
        })
    );
    let err = Routes::parse(
        r#"{"a":{"destination":"arn:aws:sns:eu-west-1:1:t","max_message_bytes":100}}"#,
        None,
    )
    .expect_err("fixed limit");
    assert!(matches!(err, RouteError::LimitNotSupported(_)));
}

#[test]
fn a_routes_own_bucket_wins_over_the_default_bucket() {
    let routes = Routes::parse(
        r#"{"a":{"destination":"https://sqs.x/1/a","large_payload_bucket":"own-bucket"},"b":"https://sqs.x/1/b"}"#,
        Some("https://sqs.x/1/other"),
    )
    .expect("valid")
    .with_large_payloads(Some("shared-bucket".into()), Some(4096));
    assert_eq!(routes.offload("a").bucket, Some("own-bucket"));
    assert_eq!(routes.offload("b").bucket, Some("shared-bucket"));
    assert_eq!(routes.offload("unrouted").bucket, Some("shared-bucket"));
    assert_eq!(routes.offload("a").threshold, Some(4096));
    let without = Routes::parse(r#"{"b":"https://sqs.x/1/b"}"#, None).expect("valid");
    assert_eq!(without.offload("b"), Offload::default());
    let err = Routes::parse(
        r#"{"a":{"destination":"https://sqs.x/1/a","large_payload_bucket":"s3://b"}}"#,
        None,
    )
    .expect_err("not a bucket name");
    assert!(matches!(err, RouteError::BadBucket { .. }), "{err}");
}

#[test]
fn unknown_topic_without_default_has_no_route() {
    let routes = Routes::parse(r#"{"orders":"https://sqs.x/1/orders"}"#, None).expect("valid");
    assert!(routes.resolve("nope").is_none());
}

#[test]
fn rejects_what_is_not_a_destination_with_a_hint() {
    let err = Routes::parse(r#"{"orders":"orders-queue"}"#, None).expect_err("not a URL");
    assert!(err.to_string().contains("SQS queue URL"), "{err}");
    let err = Routes::parse(r#"{"o":"arn:aws:s3:::bucket"}"#, None).expect_err("not a destination");
    assert!(matches!(err, RouteError::Unrecognised(_)));
    let err = Routes::parse("[1,2]", None).expect_err("not an object");
    assert!(matches!(err, RouteError::Json(_)));
    let err = Routes::parse(
        r#"{"o":{"destination":"https://q","max_message_bytes":2000000}}"#,
        None,
    )
    .expect_err("too big");
    assert!(matches!(err, RouteError::BadLimit { .. }));
}
