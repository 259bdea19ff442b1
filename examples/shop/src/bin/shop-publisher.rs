//! `shop-publisher`: the outbox's publisher in the shop's own binary, written as
//! dynamodb-outbox's README shows (feature `lambda`): the table's stream in, the
//! `order-placed` messages out to the shop's queue.

use dynamodb_outbox::lambda::PublisherFunction;
use lambda_runtime::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    let function = PublisherFunction::from_env(&aws).await?;
    function.run().await
}
