//! Fault injection itself (`outbox-faults`), against the emulator: an injected
//! failure must look to the SDK exactly like the real one.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use outbox_faults::{FaultPlan, with_plan};
use outbox_tests::{Outbox, sv};

async fn dynamodb_with(plan: &str) -> aws_sdk_dynamodb::Client {
    let plan: FaultPlan = plan.parse().expect("plan");
    let config = with_plan(outbox_tests::sdk_config().await, plan, Some(7));
    aws_sdk_dynamodb::Client::new(&config)
}

fn item(pk: &str) -> outbox_tests::Item {
    outbox_tests::Item::from([("PK".to_owned(), sv(pk)), ("SK".to_owned(), sv("X"))])
}

#[tokio::test]
async fn an_injected_lost_response_takes_effect_while_the_caller_sees_an_error() {
    // Given a client whose every PutItem takes effect but loses its answer
    let ob = Outbox::new().await;
    let client = dynamodb_with("PutItem:lost_response:1").await;
    // When it writes an item
    let result = client
        .put_item()
        .table_name(&ob.table)
        .set_item(Some(item("LOST")))
        .send()
        .await;
    // Then the caller sees a timeout (after the SDK's own retries, which wrote again)
    let err = result.expect_err("the answer was lost");
    assert!(
        matches!(&err, aws_sdk_dynamodb::error::SdkError::DispatchFailure(d) if d.is_timeout()),
        "{err:?}"
    );
    // And the write happened anyway
    assert!(ob.item("LOST", "X").await.is_some());
}

#[tokio::test]
async fn an_injected_throttle_reaches_the_caller_as_dynamodbs_own_throttling_error() {
    let ob = Outbox::new().await;
    let client = dynamodb_with("*:throttle:1").await;
    let err = client
        .put_item()
        .table_name(&ob.table)
        .set_item(Some(item("THROTTLED")))
        .send()
        .await
        .expect_err("throttled");
    assert_eq!(
        err.as_service_error().and_then(|e| e.code()),
        Some("ProvisionedThroughputExceededException")
    );
    assert!(
        ob.item("THROTTLED", "X").await.is_none(),
        "nothing happened"
    );
}

#[tokio::test]
async fn faults_touch_only_the_operations_the_plan_names() {
    let ob = Outbox::new().await;
    let client = dynamodb_with("DeleteItem:server_error:1").await;
    client
        .put_item()
        .table_name(&ob.table)
        .set_item(Some(item("UNTOUCHED")))
        .send()
        .await
        .expect("PutItem is not in the plan");
    let err = client
        .delete_item()
        .table_name(&ob.table)
        .key("PK", sv("UNTOUCHED"))
        .key("SK", sv("X"))
        .send()
        .await
        .expect_err("DeleteItem fails");
    assert_eq!(
        err.as_service_error().and_then(|e| e.code()),
        Some("InternalFailure")
    );
    assert!(ob.item("UNTOUCHED", "X").await.is_some());
}
