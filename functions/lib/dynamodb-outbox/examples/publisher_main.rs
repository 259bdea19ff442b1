//! The publisher wired into a binary of your own: your SDK configuration (here with an
//! operation timeout), your configuration (read from the environment here; build a
//! `PublisherConfig` in code to route topics yourself).
//!
//! Build it as a Lambda function with `cargo lambda build --release --example
//! publisher_main --features lambda`.

use dynamodb_outbox::lambda::PublisherFunction;
use lambda_runtime::Error;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_attempt_timeout(Duration::from_secs(5))
        .build();
    let aws = aws_config::from_env().timeout_config(timeouts).load().await;
    let function = PublisherFunction::from_env(&aws).await?;
    function.run().await
}
