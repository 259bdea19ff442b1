//! `shop-sweeper`: the outbox's sweeper in the shop's own binary (feature `lambda`),
//! on its schedule: what the publisher did not finish.

use dynamodb_outbox::lambda::SweeperFunction;
use lambda_runtime::{Error, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    let function = SweeperFunction::from_env(&aws).await?;
    lambda_runtime::run(service_fn(|event| function.handle(event))).await
}
