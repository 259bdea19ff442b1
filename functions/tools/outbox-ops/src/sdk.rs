//! The AWS configuration the operator commands (and the dev kit, which reuses it)
//! talk to AWS with: an account through the standard chain, or an emulator.

use aws_config::{BehaviorVersion, Region, SdkConfig};

/// The region an emulator is addressed in: emulators accept any, and one fixed
/// region keeps resource ARNs the same from run to run.
const EMULATOR_REGION: &str = "us-east-1";

/// Attempts per request against an emulator (the SDK's standard mode makes 3):
/// emulators drop connections under load now and then, and a command or a test
/// should not fail for that.
const EMULATOR_MAX_ATTEMPTS: u32 = 5;

/// Loads the AWS configuration.
///
/// Without `endpoint`, the standard chain (environment, profile, SSO, instance or
/// task role) picks the account and the region, as any AWS tool does. With
/// `endpoint` — an emulator such as MiniStack or LocalStack — every request goes
/// to that address, in region `us-east-1`, with the emulators' root credentials (`test`:
/// MiniStack with IAM enforced treats that key as the account's root; moto accepts any)
/// and a few more attempts per request.
///
/// ```no_run
/// # async fn example() {
/// let account = outbox_ops::sdk_config(None).await;
/// let emulator = outbox_ops::sdk_config(Some("http://localhost:4566")).await;
/// let dynamodb = aws_sdk_dynamodb::Client::new(&emulator);
/// # let _ = (account, dynamodb);
/// # }
/// ```
pub async fn sdk_config(endpoint: Option<&str>) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(endpoint) = endpoint {
        loader = loader
            .retry_config(
                aws_config::retry::RetryConfig::standard().with_max_attempts(EMULATOR_MAX_ATTEMPTS),
            )
            .endpoint_url(endpoint)
            .region(Region::new(EMULATOR_REGION))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test", "test", None, None, "emulator",
            ));
    }
    loader.load().await
}
