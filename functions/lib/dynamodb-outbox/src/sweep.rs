//! The sweeper, and the sweeper as the Lambda binary builds it.

pub use dynamodb_outbox_core::__private::sweep::*;

/// The sweeper on DynamoDB, SQS, SNS and EventBridge.
pub type AwsSweeper = Sweeper<crate::sink::AwsSink, crate::dynamo::DynamoStore>;
