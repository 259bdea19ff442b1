//! The stream publisher against the emulator: real stream records, read back from the
//! emulator's stream and shaped as Lambda delivers them, through the same handler the
//! Lambda binary calls.

mod batches;
mod binary;
mod commit_retries;
mod dead_letter_size;
mod fifo;
mod first_invocation;
mod index_writes;
pub(crate) mod keyed;
mod limits;
mod poison;
mod publish;
pub(crate) mod redelivery;
mod sweeper_index;
mod table_check;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use outbox_tests::sv;

fn business_put(table: &str, pk: &str, name: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .item("PK", sv(pk))
        .item("SK", sv("PROFILE"))
        .item("ItemType", sv("USER_PROFILE"))
        .item("Name", sv(name))
        .build()
        .expect("put");
    TransactWriteItem::builder().put(put).build()
}
