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
        r#"{"a":{"destination":"arn:aws:sns:eu-west-1:123456789012:t","max_message_bytes":100}}"#,
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

#[test]
fn each_destination_is_in_the_region_its_address_names() {
    let routes = Routes::parse(
        r#"{"a":"arn:aws:sns:ap-southeast-2:123456789012:orders","b":"arn:aws:events:us-west-2:123456789012:event-bus/shop","c":"https://sqs.eu-central-1.amazonaws.com/210987654321/q","d":"http://127.0.0.1:4566/000000000000/q"}"#,
        None,
    )
    .expect("valid");
    let region = |topic: &str| routes.resolve(topic).and_then(Destination::region);
    assert_eq!(region("a"), Some("ap-southeast-2"));
    assert_eq!(region("b"), Some("us-west-2"));
    assert_eq!(region("c"), Some("eu-central-1"));
    assert_eq!(
        region("d"),
        None,
        "a local endpoint: the function's own region"
    );
}

#[test]
fn an_arn_without_a_usable_region_is_refused_at_start_naming_it() {
    let err = Routes::parse(
        r#"{"a":"arn:aws:sns:eu-wset-1x:123456789012:orders"}"#,
        None,
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(matches!(err, RouteError::BadArn { .. }), "{err:?}");
    assert!(
        text.contains("arn:aws:sns:eu-wset-1x:123456789012:orders"),
        "{text}"
    );
    assert!(text.contains("not a region name"), "{text}");
    let err = Routes::parse(
        r#"{"b":"arn:aws:events::123456789012:event-bus/shop"}"#,
        None,
    )
    .expect_err("refused");
    assert!(err.to_string().contains("region ``"), "{err}");
}
