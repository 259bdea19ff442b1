//! `shop-recovery`: the outbox's recovery in the shop's own binary (feature `lambda`):
//! the stream records Lambda gave up on, back where the sweeper finds them.

use dynamodb_outbox::lambda::RecoveryFunction;
use lambda_runtime::{Error, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_from_env().await;
    let function = RecoveryFunction::from_env(&aws)?;
    lambda_runtime::run(service_fn(|event| function.handle(event))).await
}
