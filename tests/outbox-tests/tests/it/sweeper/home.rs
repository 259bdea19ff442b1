//! A `HomeRegion` written `NULL`, empty or padded, on a single-region deployment that
//! knows its region (as every Lambda does, from `AWS_REGION`): the sweeper owns such a
//! message and its claim must reach it (issue 36, finding 5: the claim's condition
//! refused all three, every sweep read them as held by someone else, and they stayed
//! `PENDING` for ever — no `LastError`, no dead-letter copy).

use super::{config, sweep_at, sweeper};
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox::{HomeRegions, KeyNames};
use dynamodb_outbox_core::clock::now_ms;
use outbox_tests::{Outbox, drain, indexed_item, s, sv};

#[tokio::test]
async fn a_null_empty_or_padded_home_region_is_swept_and_sent_not_parked() {
    // Given a deployment in us-east-1 and four stuck messages (indexed, due), their
    // HomeRegion as boto3 writes None, as an empty string, padded, and plain
    let keys = KeyNames::default().regions(HomeRegions::in_region("us-east-1"));
    let ob = Outbox::keyed(keys).await;
    let homes = [
        ("null", AttributeValue::Null(true)),
        ("empty", sv("")),
        ("padded", sv(" us-east-1 ")),
        ("plain", sv("us-east-1")),
    ];
    for (name, home) in &homes {
        let mut item = indexed_item(
            &format!("ORDER#{name}"),
            &format!("OUTBOX#{name}"),
            "orders",
            &format!(r#"{{"n":"{name}"}}"#),
            now_ms() - 60_000,
        );
        item.insert("HomeRegion".to_owned(), home.clone());
        ob.put_raw(item).await;
    }
    // When the sweeper runs
    let summary = sweep_at(&sweeper(&ob.clients, config(ob.config())), now_ms()).await;
    // Then each is published once and SENT
    assert_eq!(summary.published, homes.len(), "{summary:?}");
    assert_eq!(
        drain(&ob.clients.sqs, &ob.queue.url).await.len(),
        homes.len()
    );
    for (name, _) in &homes {
        let item = ob
            .item(&format!("ORDER#{name}"), &format!("OUTBOX#{name}"))
            .await
            .expect("the item");
        assert_eq!(s(&item, "Status").as_deref(), Some("SENT"), "{name}");
    }
}
