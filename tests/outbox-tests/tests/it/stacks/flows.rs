//! Messages through each stack: the lab's orders, the FIFO route.

use super::{each_stack, queue_url};
use aws_sdk_dynamodb::types::AttributeValue;
use outbox_tests::drain;
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test]
async fn the_labs_orders_flow_through_each_stack_and_copies_are_suppressed() {
    for (tool, c, d) in each_stack().await {
        // Given the lab's orders written as a minimal producer writes them: one order
        // three times (a producer that retried), and another
        let run = outbox_tests::unique("lab");
        let jobs = [("dedup", 4), ("dedup", 4), ("dedup", 4), ("other", 1)];
        for (i, (name, quantity)) in jobs.iter().enumerate() {
            let id = format!("{run}-{name}");
            let item: HashMap<String, AttributeValue> = [
                ("PK", format!("ORDER#{id}")),
                ("SK", format!("MESSAGE#ORDER_PLACED#{i}")),
                ("ItemType", "PENDING_MESSAGE".to_owned()),
                ("Topic", "orders".to_owned()),
                (
                    "Payload",
                    format!(r#"{{"id":"{id}","quantity":{quantity}}}"#),
                ),
                ("Status", "PENDING".to_owned()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), AttributeValue::S(v)))
            .chain([("RetryCount".to_owned(), AttributeValue::N("0".into()))])
            .collect();
            c.dynamodb
                .put_item()
                .table_name(&d.table)
                .set_item(Some(item))
                .send()
                .await
                .unwrap();
        }
        // Then the real publisher and consumer store two orders with the lab's totals
        let wanted = [
            (format!("{run}-dedup"), 1100),
            (format!("{run}-other"), 350),
        ];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let mut found = Vec::new();
            for (id, _) in &wanted {
                let got = c
                    .dynamodb
                    .get_item()
                    .table_name(&d.orders_table)
                    .key("id", AttributeValue::S(id.clone()))
                    .consistent_read(true)
                    .send()
                    .await
                    .unwrap()
                    .item;
                if let Some(item) = got {
                    found.push((id.clone(), outbox_tests::n(&item, "total_cents").unwrap()));
                }
            }
            if found.len() == wanted.len() {
                assert_eq!(found, wanted, "{tool}");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{tool}: only {found:?} after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        // And every copy was acknowledged: nothing waits on the consumer's queue
        outbox_tests::eventually(Duration::from_secs(30), || async {
            outbox_devkit::demo::observe::queue_depth(&c, &d.consumer_queue_url)
                .await
                .unwrap()
                == 0
        })
        .await;
    }
}

#[tokio::test]
async fn each_stack_routes_orders_events_to_its_fifo_queue_with_the_aggregate_as_group() {
    for (tool, c, d) in each_stack().await {
        let writer = dynamodb_outbox::OutboxWriter::new(c.dynamodb.clone(), &d.table);
        let aggregate = outbox_tests::unique("ORDER#fifo");
        let committed = writer
            .commit(
                vec![],
                &[dynamodb_outbox::NewMessage::new(
                    &aggregate,
                    "orders-events",
                    r#"{"n":1}"#,
                )],
            )
            .await
            .unwrap();
        let url = queue_url(&c, &format!("{}-orders-events.fifo", d.prefix)).await;
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while got.is_empty() && tokio::time::Instant::now() < deadline {
            got = drain(&c.sqs, &url).await;
        }
        let [m] = &got[..] else {
            panic!("{tool}: one message on the FIFO queue, got {got:?}")
        };
        assert_eq!(
            outbox_tests::attr(m, "outbox-message-id").as_deref(),
            Some(committed.message_ids[0].as_str()),
            "{tool}"
        );
        assert_eq!(
            outbox_tests::system_attr(
                m,
                aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId
            )
            .as_deref(),
            Some(aggregate.as_str()),
            "{tool}"
        );
    }
}
