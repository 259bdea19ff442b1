//! Writes the dev kit's producers (the demo's and the chaos workload's) share: the
//! deliberate rollback and the hand-written transaction of a minimal producer.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem};

/// A condition that cannot hold: the item (`pk`, `NEVER`) must exist, and nothing
/// writes it. A transaction that carries it is refused whole, which is how the
/// workloads roll a transaction back on purpose.
pub(crate) fn never_holds(table: &str, pk: &str) -> Result<TransactWriteItem, String> {
    let never = ConditionCheck::builder()
        .table_name(table)
        .key("PK", AttributeValue::S(pk.to_owned()))
        .key("SK", AttributeValue::S("NEVER".to_owned()))
        .condition_expression("attribute_exists(PK)")
        .build()
        .map_err(|e| e.to_string())?;
    Ok(TransactWriteItem::builder().condition_check(never).build())
}

/// Sends `actions` as one transaction, as a producer without the library does.
pub(crate) async fn transact(
    client: &aws_sdk_dynamodb::Client,
    actions: Vec<TransactWriteItem>,
) -> Result<(), SdkError<TransactWriteItemsError>> {
    client
        .transact_write_items()
        .set_transact_items(Some(actions))
        .send()
        .await
        .map(|_| ())
}
